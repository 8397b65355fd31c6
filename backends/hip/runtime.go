package hip

import (
	"errors"
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// DeviceInfo describes a HIP device: what Devices lists and what an open Device reports through
// Info.
type DeviceInfo struct {
	Index        int    // the device ordinal (Open's argument)
	Name         string // hipDeviceGetName, e.g. "AMD Instinct MI210"
	Arch         string // the target ID (gcnArchName), e.g. "gfx90a:sramecc+:xnack-"; "" if unknown
	ComputeMajor int    // hipDeviceAttributeComputeCapabilityMajor
	ComputeMinor int    // hipDeviceAttributeComputeCapabilityMinor
	TotalMemory  uint64 // bytes (hipDeviceTotalMem)
	PCIBusID     string // "domain:bus:device.0"

	Multiprocessors      int       // compute units (hipDeviceAttributeMultiprocessorCount)
	WarpSize             int       // 64 on CDNA and GCN, 32 on RDNA
	MaxThreadsPerBlock   int       // threads a block may have
	MaxBlock             [3]uint32 // largest block dimensions
	MaxGrid              [3]uint32 // largest grid dimensions
	SharedMemoryPerBlock int       // bytes of LDS a block may use
	L2CacheSize          int       // bytes (0: not reported)
	ClockKHz             int       // peak clock (0: not reported)
	MemoryClockKHz       int       // peak memory clock (0: not reported)
	MemoryBusWidth       int       // bits (0: not reported)
}

// Processor returns the target ID's processor, e.g. "gfx90a" for "gfx90a:sramecc+:xnack-".
func (i DeviceInfo) Processor() string {
	p, _, _ := strings.Cut(i.Arch, ":")
	return p
}

// hipDeviceAttribute_t values the runtime reads. These are the numbers ROCm 5.0 introduced and
// ROCm 6 and 7 keep (later releases only append and rename retired entries "Unused"); ROCm 4's
// enum was different, which device catches by checking that the warp size is 32 or 64.
const (
	hipAttrClockRate               = 5
	hipAttrL2CacheSize             = 19
	hipAttrComputeCapabilityMajor  = 23
	hipAttrMaxBlockDimX            = 26
	hipAttrMaxGridDimX             = 29
	hipAttrMaxThreadsPerBlock      = 56
	hipAttrMemoryBusWidth          = 59
	hipAttrMemoryClockRate         = 60
	hipAttrComputeCapabilityMinor  = 61
	hipAttrMultiprocessorCount     = 63
	hipAttrPCIBusID                = 67
	hipAttrPCIDeviceID             = 68
	hipAttrPCIDomainID             = 69
	hipAttrMaxSharedMemoryPerBlock = 74
	hipAttrWarpSize                = 87
)

// attribute reads one device attribute.
func (l *hipLib) attribute(index, attr int) (int, error) {
	var v int32
	err := l.check("hipDeviceGetAttribute", dynlib.Call(l.hipDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(index)))
	return int(v), err
}

// deviceCount returns hipGetDeviceCount; no device is an unavailable error.
func (l *hipLib) deviceCount() (int, error) {
	var n int32
	if err := l.check("hipGetDeviceCount", dynlib.Call(l.hipGetDeviceCount, uintptr(unsafe.Pointer(&n)))); err != nil {
		var re *ResultError
		if errors.As(err, &re) && hipNoDevice(re.Code) {
			return 0, rtUnavailable("no HIP device (%s: %v)", l.path, err)
		}
		return 0, rtUnavailable("%q: %v", l.path, err)
	}
	if n <= 0 {
		return 0, rtUnavailable("no HIP device (%s reports none)", l.path)
	}
	return int(n), nil
}

// rtPropsSize is the buffer hipGetDeviceProperties writes into: larger than any hipDeviceProp_t
// (792 bytes in ROCm 5, about 1.5 KiB for R0600), so neither layout needs mirroring.
const rtPropsSize = 16 << 10

// rtArchPattern finds a target ID in the raw hipDeviceProp_t bytes.
var rtArchPattern = regexp.MustCompile(`gfx[0-9a-f]{3,5}(:[a-z0-9_]+[+-])*\x00`)

// gcnArchName returns the device's target ID from hipDeviceProp_t.gcnArchName without relying on
// the struct's layout, which differs between ROCm 5 and ROCm 6 (R0600): the properties are read
// into a large zeroed buffer and the first NUL-terminated "gfx..." string after the 256-byte name
// is taken. "" when the library lacks the function or the string is not there.
func (l *hipLib) gcnArchName(index int) string {
	if l.hipGetDeviceProperties == 0 {
		return ""
	}
	buf := make([]byte, rtPropsSize)
	if dynlib.Call(l.hipGetDeviceProperties, uintptr(unsafe.Pointer(&buf[0])), uintptr(index)) != 0 {
		return ""
	}
	return rtFindArch(buf)
}

// rtFindArch returns the first target ID at or after byte 256 of a hipDeviceProp_t (the name
// field comes first and may itself mention an architecture), else anywhere, else "".
func rtFindArch(props []byte) string {
	for _, from := range []int{256, 0} {
		if from > len(props) {
			continue
		}
		if m := rtArchPattern.Find(props[from:]); m != nil {
			return string(m[:len(m)-1])
		}
	}
	return ""
}

// device returns what device index is.
func (l *hipLib) device(index int) (DeviceInfo, error) {
	info := DeviceInfo{Index: index}
	var dev int32
	if err := l.check("hipDeviceGet", dynlib.Call(l.hipDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(index))); err != nil {
		return info, err
	}
	name := make([]byte, 256)
	if err := l.check("hipDeviceGetName", dynlib.Call(l.hipDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(dev))); err != nil {
		return info, err
	}
	info.Name = dynlib.GoString(name)
	var mem uint64
	if err := l.check("hipDeviceTotalMem", dynlib.Call(l.hipDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(dev))); err != nil {
		return info, err
	}
	info.TotalMemory = mem
	required := []struct {
		attr int
		dst  *int
	}{
		{hipAttrWarpSize, &info.WarpSize},
		{hipAttrComputeCapabilityMajor, &info.ComputeMajor},
		{hipAttrComputeCapabilityMinor, &info.ComputeMinor},
		{hipAttrMultiprocessorCount, &info.Multiprocessors},
		{hipAttrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{hipAttrMaxSharedMemoryPerBlock, &info.SharedMemoryPerBlock},
	}
	for _, a := range required {
		v, err := l.attribute(index, a.attr)
		if err != nil {
			return info, fmt.Errorf("attribute %d: %w", a.attr, err)
		}
		*a.dst = v
	}
	if info.WarpSize != 32 && info.WarpSize != 64 {
		return info, fmt.Errorf("hipDeviceGetAttribute(hipDeviceAttributeWarpSize=%d) gives %d, not 32 or 64: %q numbers device attributes as ROCm 4 did, which this runtime does not support",
			hipAttrWarpSize, info.WarpSize, l.path)
	}
	for i := 0; i < 3; i++ {
		b, err := l.attribute(index, hipAttrMaxBlockDimX+i)
		if err != nil {
			return info, err
		}
		g, err := l.attribute(index, hipAttrMaxGridDimX+i)
		if err != nil {
			return info, err
		}
		info.MaxBlock[i], info.MaxGrid[i] = uint32(b), uint32(g)
	}
	optional := []struct {
		attr int
		dst  *int
	}{
		{hipAttrL2CacheSize, &info.L2CacheSize},
		{hipAttrClockRate, &info.ClockKHz},
		{hipAttrMemoryClockRate, &info.MemoryClockKHz},
		{hipAttrMemoryBusWidth, &info.MemoryBusWidth},
	}
	for _, a := range optional {
		if v, err := l.attribute(index, a.attr); err == nil {
			*a.dst = v
		}
	}
	dom, err1 := l.attribute(index, hipAttrPCIDomainID)
	bus, err2 := l.attribute(index, hipAttrPCIBusID)
	slot, err3 := l.attribute(index, hipAttrPCIDeviceID)
	if err1 == nil && err2 == nil && err3 == nil {
		info.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", dom, bus, slot)
	}
	info.Arch = l.gcnArchName(index)
	return info, nil
}

var rtAvailability struct {
	sync.Mutex
	m map[string]error
}

// Available reports whether the HIP runtime can be used: the runtime library loads and
// initialises, it has at least one device, and HIPRTC loads (Compile needs it). The error, when
// not nil, wraps ErrUnavailable and says why, e.g. "unavailable: hip: no HIP device (...)". The
// answer is remembered per library choice (see LibraryEnv and HIPRTCLibraryEnv).
func Available() error {
	names, _ := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs)
	rtcNames, _ := dynlib.Candidates(HIPRTCLibraryEnv, rtHIPRTCNames, rtROCmLibDirs)
	key := strings.Join(names, "\x00") + "\x01" + strings.Join(rtcNames, "\x00")
	rtAvailability.Lock()
	defer rtAvailability.Unlock()
	if err, ok := rtAvailability.m[key]; ok {
		return err
	}
	err := rtAvailable()
	if rtAvailability.m == nil {
		rtAvailability.m = map[string]error{}
	}
	rtAvailability.m[key] = err
	return err
}

func rtAvailable() error {
	l, err := rtInitialised()
	if err != nil {
		return err
	}
	if _, err := l.deviceCount(); err != nil {
		return err
	}
	if _, err := loadHIPRTC(); err != nil {
		return err
	}
	return nil
}

// Devices lists the HIP devices. It needs the runtime library only (not HIPRTC).
func Devices() ([]DeviceInfo, error) {
	l, err := rtInitialised()
	if err != nil {
		return nil, err
	}
	n, err := l.deviceCount()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		info, err := l.device(i)
		if err != nil {
			return out, fmt.Errorf("hip: device %d: %w", i, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// Device is an open HIP device: one stream that every launch goes to and two events for timing.
// Its methods are safe for concurrent use; work is submitted one call at a time. Every call makes
// the device current (hipSetDevice) on a locked OS thread for its duration, so goroutines may use
// a Device from any thread.
type Device struct {
	mu     sync.Mutex
	lib    *hipLib
	index  int
	stream uintptr // hipStream_t
	events [2]uintptr
	info   DeviceInfo

	buffers map[*Buffer]struct{}
	kernels map[*Kernel]struct{}
	closed  bool
	broken  error // a sticky error left the device unusable
}

// Open opens device index (an index into Devices): it creates a stream and two timing events on
// it.
func Open(index int) (*Device, error) {
	l, err := rtInitialised()
	if err != nil {
		return nil, err
	}
	n, err := l.deviceCount()
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("hip: Open: device index %d out of range: %d device(s)", index, n)
	}
	info, err := l.device(index)
	if err != nil {
		return nil, fmt.Errorf("hip: Open: device %d: %w", index, err)
	}
	d := &Device{lib: l, index: index, info: info, buffers: map[*Buffer]struct{}{}, kernels: map[*Kernel]struct{}{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.open(); err != nil {
		d.destroy()
		return nil, fmt.Errorf("hip: Open: device %d (%s): %w", index, info.Name, err)
	}
	return d, nil
}

func (d *Device) open() error {
	l := d.lib
	if err := l.check("hipSetDevice", dynlib.Call(l.hipSetDevice, uintptr(d.index))); err != nil {
		return err
	}
	if err := l.check("hipStreamCreate", dynlib.Call(l.hipStreamCreate, uintptr(unsafe.Pointer(&d.stream)))); err != nil {
		return err
	}
	for i := range d.events {
		if err := l.check("hipEventCreate", dynlib.Call(l.hipEventCreate, uintptr(unsafe.Pointer(&d.events[i])))); err != nil {
			return err
		}
	}
	return nil
}

// destroy frees whatever exists; the device must be current on the locked thread. Errors are
// ignored: it runs on failure and at Close, when nothing better can be done.
func (d *Device) destroy() {
	l := d.lib
	for b := range d.buffers {
		if b.ptr != 0 {
			dynlib.Call(l.hipFree, b.ptr)
			b.ptr = 0
		}
		b.released = true
	}
	clear(d.buffers)
	for k := range d.kernels {
		if k.module != 0 {
			dynlib.Call(l.hipModuleUnload, k.module)
			k.module, k.fn = 0, 0
		}
		k.released = true
	}
	clear(d.kernels)
	for i, e := range d.events {
		if e != 0 {
			dynlib.Call(l.hipEventDestroy, e)
			d.events[i] = 0
		}
	}
	if d.stream != 0 {
		dynlib.Call(l.hipStreamDestroy, d.stream)
		d.stream = 0
	}
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// RuntimeVersion returns hipRuntimeGetVersion of the loaded library (0 if it cannot say).
func (d *Device) RuntimeVersion() int { return d.lib.runtimeVersion }

// enter locks the device and the calling goroutine to its OS thread and makes the device
// current there; leave undoes both. It fails on a closed or broken device.
func (d *Device) enter(op string) (leave func(), err error) {
	d.mu.Lock()
	runtime.LockOSThread()
	leave = func() {
		runtime.UnlockOSThread()
		d.mu.Unlock()
	}
	switch {
	case d.closed:
		leave()
		return nil, fmt.Errorf("hip: %s: device closed", op)
	case d.broken != nil:
		leave()
		return nil, fmt.Errorf("hip: %s: device %d is unusable after an earlier error: %w", op, d.index, d.broken)
	}
	if err := d.lib.check("hipSetDevice", dynlib.Call(d.lib.hipSetDevice, uintptr(d.index))); err != nil {
		leave()
		return nil, fmt.Errorf("hip: %s: %w", op, err)
	}
	return leave, nil
}

// fail records a sticky error (after which the device is unusable) and returns err.
func (d *Device) fail(err error) error {
	var re *ResultError
	if errors.As(err, &re) && hipStickyErrors[re.Code] {
		d.broken = err
	}
	return err
}

// Close waits for the device's work to finish and frees everything made on it: buffers,
// kernels, the stream and the events. Closing twice is a no-op; the error is the wait's.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var err error
	if e := d.lib.check("hipSetDevice", dynlib.Call(d.lib.hipSetDevice, uintptr(d.index))); e != nil {
		err = e
	} else if d.broken == nil && d.stream != 0 {
		err = d.lib.check("hipStreamSynchronize", dynlib.Call(d.lib.hipStreamSynchronize, d.stream))
	}
	d.destroy()
	if err != nil {
		return fmt.Errorf("hip: Close: %w", err)
	}
	return nil
}

// Buffer is a region of device memory (hipMalloc). Write and Read copy synchronously between it
// and Go memory. A Buffer belongs to the Device that made it and is freed by Release or Close.
type Buffer struct {
	dev      *Device
	ptr      uintptr // device address
	size     int
	released bool
}

// NewBuffer allocates size bytes (at least 1) of device memory, zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("hip: NewBuffer: size %d: must be positive", size)
	}
	leave, err := d.enter("NewBuffer")
	if err != nil {
		return nil, err
	}
	defer leave()
	l := d.lib
	b := &Buffer{dev: d, size: size}
	if err := l.check("hipMalloc", dynlib.Call(l.hipMalloc, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size))); err != nil {
		return nil, fmt.Errorf("hip: NewBuffer(%d): %w", size, d.fail(err))
	}
	if err := l.check("hipMemset", dynlib.Call(l.hipMemset, b.ptr, 0, uintptr(size))); err != nil {
		dynlib.Call(l.hipFree, b.ptr)
		return nil, fmt.Errorf("hip: NewBuffer(%d): %w", size, d.fail(err))
	}
	d.buffers[b] = struct{}{}
	return b, nil
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Pointer returns the buffer's device address; 0 once released.
func (b *Buffer) Pointer() uint64 { return uint64(b.ptr) }

// checkRange validates [offset, offset+n) against the buffer.
func (b *Buffer) checkRange(op string, offset, n int) error {
	if b.released {
		return fmt.Errorf("hip: Buffer.%s: buffer released", op)
	}
	if offset < 0 || n < 0 || offset > b.size || n > b.size-offset {
		return fmt.Errorf("hip: Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, offset, offset, n, b.size)
	}
	return nil
}

// Write copies data into the buffer at offset and returns when the copy is done. The range must
// lie inside the buffer.
func (b *Buffer) Write(offset int, data []byte) error {
	leave, err := b.dev.enter("Buffer.Write")
	if err != nil {
		return err
	}
	defer leave()
	if err := b.checkRange("Write", offset, len(data)); err != nil || len(data) == 0 {
		return err
	}
	l := b.dev.lib
	// Synchronous with the null stream; the device's stream is a blocking one, so earlier
	// launches finish first.
	if err := l.check("hipMemcpyHtoD", dynlib.Call(l.hipMemcpyHtoD, b.ptr+uintptr(offset), uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)))); err != nil {
		return fmt.Errorf("hip: Buffer.Write: %w", b.dev.fail(err))
	}
	return nil
}

// Read copies len(dst) bytes of the buffer from offset into dst, after the work launched before
// it has finished. The range must lie inside the buffer.
func (b *Buffer) Read(offset int, dst []byte) error {
	leave, err := b.dev.enter("Buffer.Read")
	if err != nil {
		return err
	}
	defer leave()
	if err := b.checkRange("Read", offset, len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	l := b.dev.lib
	if err := l.check("hipStreamSynchronize", dynlib.Call(l.hipStreamSynchronize, b.dev.stream)); err != nil {
		return fmt.Errorf("hip: Buffer.Read: %w", b.dev.fail(err))
	}
	if err := l.check("hipMemcpyDtoH", dynlib.Call(l.hipMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), b.ptr+uintptr(offset), uintptr(len(dst)))); err != nil {
		return fmt.Errorf("hip: Buffer.Read: %w", b.dev.fail(err))
	}
	return nil
}

// Release frees the buffer. Releasing twice, or after the device was closed, is a no-op.
func (b *Buffer) Release() {
	d := b.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.released || d.closed {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if dynlib.Call(d.lib.hipSetDevice, uintptr(d.index)) == 0 {
		dynlib.Call(d.lib.hipFree, b.ptr)
	}
	b.ptr = 0
	b.released = true
	delete(d.buffers, b)
}
