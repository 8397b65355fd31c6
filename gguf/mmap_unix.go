//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gguf

import (
	"math"
	"os"
	"syscall"
)

// mapFile maps the whole file read-only. It falls back to reading the file when the mapping
// fails (an empty file, a file system without mmap) and returns the function that releases it.
func mapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size > 0 && size <= math.MaxInt {
		b, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
		if err == nil {
			return b, func() error { return syscall.Munmap(b) }, nil
		}
	}
	b, err := readAll(fh, size)
	return b, nil, err
}
