//go:build linux

package conformance

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// busyJiffies returns the machine's busy CPU time from /proc/stat (every core's user, nice,
// system, irq, softirq and steal time), in seconds.
func busyJiffies() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already in user
			break
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	return busy / 100, true // USER_HZ is 100 on Linux
}

// OtherLoad measures how many cores processes other than this one kept busy during interval
// (the machine's busy time from /proc/stat minus this process's CPU time); ok is false where it
// cannot be measured.
func OtherLoad(interval time.Duration) (cores float64, ok bool) {
	b0, ok0 := busyJiffies()
	c0 := cpuTime()
	t0 := time.Now()
	time.Sleep(interval)
	b1, ok1 := busyJiffies()
	c1 := cpuTime()
	wall := time.Since(t0).Seconds()
	if !ok0 || !ok1 || c0 < 0 || c1 < 0 || wall <= 0 {
		return 0, false
	}
	other := (b1 - b0) - (c1 - c0).Seconds()
	return max(other, 0) / wall, true
}

// memAvailable returns the memory the kernel says new allocations can use without swapping
// (MemAvailable in /proc/meminfo), in bytes.
func memAvailable() (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if v, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return v * 1024, true
				}
			}
		}
	}
	return 0, false
}
