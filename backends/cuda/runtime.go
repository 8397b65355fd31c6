package cuda

import (
	"errors"
	"fmt"
	"github.com/onesource-go/onesource/internal/dynlib"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// DeviceInfo describes a CUDA device: what Devices lists and what an open Device reports through
// Info.
type DeviceInfo struct {
	Index        int    // the device ordinal (Open's argument)
	Name         string // cuDeviceGetName, e.g. "NVIDIA H200"
	ComputeMajor int    // compute capability, major
	ComputeMinor int    // compute capability, minor
	Arch         string // "sm_<major><minor>", e.g. "sm_90"
	TotalMemory  uint64 // bytes (cuDeviceTotalMem_v2)
	PCIBusID     string // "domain:bus:device.0", e.g. "0000:1b:00.0"

	Multiprocessors           int       // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	WarpSize                  int       // threads per warp (32)
	MaxThreadsPerBlock        int       // threads a block may have
	MaxBlock                  [3]uint32 // largest block dimensions
	MaxGrid                   [3]uint32 // largest grid dimensions
	SharedMemoryPerBlock      int       // bytes of static shared memory a block may use
	SharedMemoryPerBlockOptin int       // bytes a kernel may use after opting in (0: not reported)
	L2CacheSize               int       // bytes
	ClockKHz                  int       // peak SM clock (0: not reported)
	MemoryClockKHz            int       // peak memory clock (0: not reported)
	MemoryBusWidth            int       // bits (0: not reported)
}

// CUdevice_attribute values the runtime reads.
const (
	cuAttrMaxThreadsPerBlock           = 1
	cuAttrMaxBlockDimX                 = 2
	cuAttrMaxGridDimX                  = 5
	cuAttrMaxSharedMemoryPerBlock      = 8
	cuAttrWarpSize                     = 10
	cuAttrClockRate                    = 13
	cuAttrMultiprocessorCount          = 16
	cuAttrPCIBusID                     = 33
	cuAttrPCIDeviceID                  = 34
	cuAttrMemoryClockRate              = 36
	cuAttrGlobalMemoryBusWidth         = 37
	cuAttrL2CacheSize                  = 38
	cuAttrPCIDomainID                  = 50
	cuAttrComputeCapabilityMajor       = 75
	cuAttrComputeCapabilityMinor       = 76
	cuAttrMaxSharedMemoryPerBlockOptin = 97
)

// attribute reads one device attribute.
func (l *cuDriver) attribute(dev int32, attr int) (int, error) {
	var v int32
	err := l.check("cuDeviceGetAttribute", dynlib.Call(l.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(dev)))
	return int(v), err
}

// deviceCount returns cuDeviceGetCount.
func (l *cuDriver) deviceCount() (int, error) {
	var n int32
	if err := l.check("cuDeviceGetCount", dynlib.Call(l.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// device returns the CUdevice of an ordinal and what it is.
func (l *cuDriver) device(index int) (int32, DeviceInfo, error) {
	info := DeviceInfo{Index: index}
	var dev int32
	if err := l.check("cuDeviceGet", dynlib.Call(l.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(index))); err != nil {
		return 0, info, err
	}
	name := make([]byte, 256)
	if err := l.check("cuDeviceGetName", dynlib.Call(l.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(dev))); err != nil {
		return 0, info, err
	}
	info.Name = dynlib.GoString(name)
	var mem uint64
	if err := l.check(l.sym("cuDeviceTotalMem"), dynlib.Call(l.cuDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(dev))); err != nil {
		return 0, info, err
	}
	info.TotalMemory = mem
	// Attributes every driver has: an error is an error.
	required := []struct {
		attr int
		dst  *int
	}{
		{cuAttrComputeCapabilityMajor, &info.ComputeMajor},
		{cuAttrComputeCapabilityMinor, &info.ComputeMinor},
		{cuAttrMultiprocessorCount, &info.Multiprocessors},
		{cuAttrWarpSize, &info.WarpSize},
		{cuAttrMaxThreadsPerBlock, &info.MaxThreadsPerBlock},
		{cuAttrMaxSharedMemoryPerBlock, &info.SharedMemoryPerBlock},
	}
	for _, a := range required {
		v, err := l.attribute(dev, a.attr)
		if err != nil {
			return 0, info, fmt.Errorf("attribute %d: %w", a.attr, err)
		}
		*a.dst = v
	}
	for i := 0; i < 3; i++ {
		b, err := l.attribute(dev, cuAttrMaxBlockDimX+i)
		if err != nil {
			return 0, info, err
		}
		g, err := l.attribute(dev, cuAttrMaxGridDimX+i)
		if err != nil {
			return 0, info, err
		}
		info.MaxBlock[i], info.MaxGrid[i] = uint32(b), uint32(g)
	}
	// Attributes a driver may have dropped (CUDA 13 deprecates the clock rates): 0 when absent.
	optional := []struct {
		attr int
		dst  *int
	}{
		{cuAttrMaxSharedMemoryPerBlockOptin, &info.SharedMemoryPerBlockOptin},
		{cuAttrL2CacheSize, &info.L2CacheSize},
		{cuAttrClockRate, &info.ClockKHz},
		{cuAttrMemoryClockRate, &info.MemoryClockKHz},
		{cuAttrGlobalMemoryBusWidth, &info.MemoryBusWidth},
	}
	for _, a := range optional {
		if v, err := l.attribute(dev, a.attr); err == nil {
			*a.dst = v
		}
	}
	dom, err1 := l.attribute(dev, cuAttrPCIDomainID)
	bus, err2 := l.attribute(dev, cuAttrPCIBusID)
	slot, err3 := l.attribute(dev, cuAttrPCIDeviceID)
	if err1 == nil && err2 == nil && err3 == nil {
		info.PCIBusID = fmt.Sprintf("%04x:%02x:%02x.0", dom, bus, slot)
	}
	info.Arch = fmt.Sprintf("sm_%d%d", info.ComputeMajor, info.ComputeMinor)
	return dev, info, nil
}

var rtAvailability struct {
	sync.Mutex
	m map[string]error // by driver path and NVRTC candidates
}

// Available reports whether the CUDA runtime can be used: the driver library loads and
// initialises, it has at least one device, and an NVRTC library loads (Compile needs it). The
// error, when not nil, wraps ErrUnavailable and says why ("unavailable: cuda: ..."). The answer is
// remembered per library choice (see LibraryEnv and NVRTCLibraryEnv).
func Available() error {
	path, _ := driverPath()
	names, _ := nvrtcCandidates()
	key := path + "\x00" + strings.Join(names, "\x00")
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
	n, err := l.deviceCount()
	if err != nil {
		return rtUnavailable("%q: %v", l.path, err)
	}
	if n == 0 {
		return rtUnavailable("no CUDA device (%q reports none)", l.path)
	}
	if _, err := loadNVRTC(); err != nil {
		return err
	}
	return nil
}

// Devices lists the CUDA devices. It needs the driver only (not NVRTC).
func Devices() ([]DeviceInfo, error) {
	l, err := rtInitialised()
	if err != nil {
		return nil, err
	}
	n, err := l.deviceCount()
	if err != nil {
		return nil, rtUnavailable("%q: %v", l.path, err)
	}
	if n == 0 {
		return nil, rtUnavailable("no CUDA device (%q reports none)", l.path)
	}
	out := make([]DeviceInfo, 0, n)
	for i := 0; i < n; i++ {
		_, info, err := l.device(i)
		if err != nil {
			return out, fmt.Errorf("cuda: device %d: %w", i, err)
		}
		out = append(out, info)
	}
	return out, nil
}

// Device is an open CUDA device: its primary context, one stream that every launch goes to, and
// two events for timing. Its methods are safe for concurrent use; work is submitted one call at a
// time. Every call makes the context current on a locked OS thread for its duration, so
// goroutines may use a Device from any thread.
type Device struct {
	mu     sync.Mutex
	lib    *cuDriver
	dev    int32   // CUdevice
	ctx    uintptr // CUcontext: the device's primary context, retained
	stream uintptr // CUstream
	events [2]uintptr
	info   DeviceInfo

	buffers map[*Buffer]struct{}
	kernels map[*Kernel]struct{}
	closed  bool
	broken  error // a sticky error (illegal address, launch failure, ...) left the context unusable
}

// Open opens device index (an index into Devices): it retains the device's primary context and
// creates a stream and two timing events in it.
func Open(index int) (*Device, error) {
	l, err := rtInitialised()
	if err != nil {
		return nil, err
	}
	n, err := l.deviceCount()
	if err != nil {
		return nil, rtUnavailable("%q: %v", l.path, err)
	}
	if n == 0 {
		return nil, rtUnavailable("no CUDA device (%q reports none)", l.path)
	}
	if index < 0 || index >= n {
		return nil, fmt.Errorf("cuda: Open: device index %d out of range: %d device(s)", index, n)
	}
	dev, info, err := l.device(index)
	if err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d: %w", index, err)
	}
	d := &Device{lib: l, dev: dev, info: info, buffers: map[*Buffer]struct{}{}, kernels: map[*Kernel]struct{}{}}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.open(); err != nil {
		d.destroy()
		return nil, fmt.Errorf("cuda: Open: device %d (%s): %w", index, info.Name, err)
	}
	return d, nil
}

func (d *Device) open() error {
	l := d.lib
	if err := l.check("cuDevicePrimaryCtxRetain", dynlib.Call(l.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&d.ctx)), uintptr(d.dev))); err != nil {
		return err
	}
	if err := l.check("cuCtxSetCurrent", dynlib.Call(l.cuCtxSetCurrent, d.ctx)); err != nil {
		return err
	}
	// Flags 0 (CU_STREAM_DEFAULT): the stream synchronises with the legacy default stream, so the
	// synchronous copies of Write and Read are ordered after the launches before them.
	if err := l.check("cuStreamCreate", dynlib.Call(l.cuStreamCreate, uintptr(unsafe.Pointer(&d.stream)), 0)); err != nil {
		return err
	}
	for i := range d.events {
		// Flags 0 (CU_EVENT_DEFAULT): timing enabled.
		if err := l.check("cuEventCreate", dynlib.Call(l.cuEventCreate, uintptr(unsafe.Pointer(&d.events[i])), 0)); err != nil {
			return err
		}
	}
	return nil
}

// destroy frees whatever exists; the context must be current on the locked thread (or never
// made). Errors are ignored: it runs on failure and at Close, when nothing better can be done.
func (d *Device) destroy() {
	l := d.lib
	for b := range d.buffers {
		if b.ptr != 0 {
			dynlib.Call(l.cuMemFree, uintptr(b.ptr))
			b.ptr = 0
		}
		b.released = true
	}
	clear(d.buffers)
	for k := range d.kernels {
		if k.module != 0 {
			dynlib.Call(l.cuModuleUnload, k.module)
			k.module, k.fn = 0, 0
		}
		k.released = true
	}
	clear(d.kernels)
	for i, e := range d.events {
		if e != 0 {
			dynlib.Call(l.cuEventDestroy, e)
			d.events[i] = 0
		}
	}
	if d.stream != 0 {
		dynlib.Call(l.cuStreamDestroy, d.stream)
		d.stream = 0
	}
	if d.ctx != 0 {
		dynlib.Call(l.cuDevicePrimaryCtxRelease, uintptr(d.dev))
		d.ctx = 0
	}
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// DriverVersion returns the driver's CUDA version (cuDriverGetVersion: 1000*major + 10*minor).
func (d *Device) DriverVersion() int { return d.lib.version }

// enter locks the device and the calling goroutine to its OS thread and makes the device's
// context current there; leave undoes both. It fails on a closed or broken device.
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
		return nil, fmt.Errorf("cuda: %s: device closed", op)
	case d.broken != nil:
		leave()
		return nil, fmt.Errorf("cuda: %s: device %d is unusable after an earlier error: %w", op, d.info.Index, d.broken)
	}
	if err := d.lib.check("cuCtxSetCurrent", dynlib.Call(d.lib.cuCtxSetCurrent, d.ctx)); err != nil {
		leave()
		return nil, fmt.Errorf("cuda: %s: %w", op, err)
	}
	return leave, nil
}

// fail records a sticky error (after which the context is unusable) and returns err.
func (d *Device) fail(err error) error {
	var re *ResultError
	if errors.As(err, &re) && cuStickyResults[re.Code] {
		d.broken = err
	}
	return err
}

// Close waits for the device's work to finish and frees everything made on it: buffers, kernels,
// the stream and the events, and releases the primary context. Closing twice is a no-op; the
// error is the wait's.
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
	if e := d.lib.check("cuCtxSetCurrent", dynlib.Call(d.lib.cuCtxSetCurrent, d.ctx)); e != nil {
		err = e
	} else if d.broken == nil {
		err = d.lib.check("cuCtxSynchronize", dynlib.Call(d.lib.cuCtxSynchronize))
	}
	d.destroy()
	if err != nil {
		return fmt.Errorf("cuda: Close: %w", err)
	}
	return nil
}

// Buffer is a region of device memory (cuMemAlloc). Write and Read copy synchronously between it
// and Go memory. A Buffer belongs to the Device that made it and is freed by Release or Close.
type Buffer struct {
	dev      *Device
	ptr      uint64 // CUdeviceptr
	size     int
	released bool
}

// NewBuffer allocates size bytes (at least 1) of device memory, zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: NewBuffer: size %d: must be positive", size)
	}
	leave, err := d.enter("NewBuffer")
	if err != nil {
		return nil, err
	}
	defer leave()
	l := d.lib
	b := &Buffer{dev: d, size: size}
	if err := l.check(l.sym("cuMemAlloc"), dynlib.Call(l.cuMemAlloc, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size))); err != nil {
		return nil, fmt.Errorf("cuda: NewBuffer(%d): %w", size, d.fail(err))
	}
	if err := l.check(l.sym("cuMemsetD8"), dynlib.Call(l.cuMemsetD8, uintptr(b.ptr), 0, uintptr(size))); err != nil {
		dynlib.Call(l.cuMemFree, uintptr(b.ptr))
		return nil, fmt.Errorf("cuda: NewBuffer(%d): %w", size, d.fail(err))
	}
	d.buffers[b] = struct{}{}
	return b, nil
}

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int { return b.size }

// Pointer returns the buffer's device address (a CUdeviceptr); 0 once released.
func (b *Buffer) Pointer() uint64 { return b.ptr }

// checkRange validates [offset, offset+n) against the buffer.
func (b *Buffer) checkRange(op string, offset, n int) error {
	if b.released {
		return fmt.Errorf("cuda: Buffer.%s: buffer released", op)
	}
	if offset < 0 || n < 0 || offset > b.size || n > b.size-offset {
		return fmt.Errorf("cuda: Buffer.%s: range [%d, %d+%d) outside the buffer's %d bytes", op, offset, offset, n, b.size)
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
	err = l.check(l.sym("cuMemcpyHtoD"), dynlib.Call(l.cuMemcpyHtoD, uintptr(b.ptr)+uintptr(offset), uintptr(unsafe.Pointer(&data[0])), uintptr(len(data))))
	if err != nil {
		return fmt.Errorf("cuda: Buffer.Write: %w", b.dev.fail(err))
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
	err = l.check(l.sym("cuMemcpyDtoH"), dynlib.Call(l.cuMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(b.ptr)+uintptr(offset), uintptr(len(dst))))
	if err != nil {
		return fmt.Errorf("cuda: Buffer.Read: %w", b.dev.fail(err))
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
	if dynlib.Call(d.lib.cuCtxSetCurrent, d.ctx) == 0 {
		dynlib.Call(d.lib.cuMemFree, uintptr(b.ptr))
	}
	b.ptr = 0
	b.released = true
	delete(d.buffers, b)
}
