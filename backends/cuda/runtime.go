package cuda

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
	"github.com/onesource-go/onesource/internal/gpudrv"
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

// deviceCount returns cuDeviceGetCount; no device is an unavailable error.
func (l *cuDriver) deviceCount() (int, error) {
	var n int32
	if err := l.check("cuDeviceGetCount", dynlib.Call(l.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))); err != nil {
		return 0, rtUnavailable("%q: %v", l.path, err)
	}
	if n <= 0 {
		return 0, rtUnavailable("no CUDA device (%q reports none)", l.path)
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
	get := func(attr int) (int, error) { return l.attribute(dev, attr) }
	// Attributes every driver has: an error is an error. Attributes a driver may have dropped
	// (CUDA 13 deprecates the clock rates): 0 when absent.
	err := gpudrv.ReadAttrs(get, []gpudrv.Attr{
		{ID: cuAttrComputeCapabilityMajor, Dst: &info.ComputeMajor},
		{ID: cuAttrComputeCapabilityMinor, Dst: &info.ComputeMinor},
		{ID: cuAttrMultiprocessorCount, Dst: &info.Multiprocessors},
		{ID: cuAttrWarpSize, Dst: &info.WarpSize},
		{ID: cuAttrMaxThreadsPerBlock, Dst: &info.MaxThreadsPerBlock},
		{ID: cuAttrMaxSharedMemoryPerBlock, Dst: &info.SharedMemoryPerBlock},
	}, []gpudrv.Attr{
		{ID: cuAttrMaxSharedMemoryPerBlockOptin, Dst: &info.SharedMemoryPerBlockOptin},
		{ID: cuAttrL2CacheSize, Dst: &info.L2CacheSize},
		{ID: cuAttrClockRate, Dst: &info.ClockKHz},
		{ID: cuAttrMemoryClockRate, Dst: &info.MemoryClockKHz},
		{ID: cuAttrGlobalMemoryBusWidth, Dst: &info.MemoryBusWidth},
	})
	if err != nil {
		return 0, info, err
	}
	if info.MaxBlock, info.MaxGrid, err = gpudrv.ReadDims(get, cuAttrMaxBlockDimX, cuAttrMaxGridDimX); err != nil {
		return 0, info, err
	}
	info.PCIBusID = gpudrv.PCIBusID(get, cuAttrPCIDomainID, cuAttrPCIBusID, cuAttrPCIDeviceID)
	info.Arch = fmt.Sprintf("sm_%d%d", info.ComputeMajor, info.ComputeMinor)
	return dev, info, nil
}

// rtAvailability remembers Available's answer per library choice.
var rtAvailability gpudrv.Memo[struct{}]

// Available reports whether the CUDA runtime can be used: the driver library loads and
// initialises, it has at least one device, and an NVRTC library loads (Compile needs it). The
// error, when not nil, wraps ErrUnavailable and says why ("unavailable: cuda: ..."). The answer is
// remembered per library choice (see LibraryEnv and NVRTCLibraryEnv).
func Available() error {
	path, _ := driverPath()
	names, _ := nvrtcCandidates()
	_, err := rtAvailability.Get(path+"\x00"+strings.Join(names, "\x00"), func() (struct{}, error) { return struct{}{}, rtAvailable() })
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
		return nil, err
	}
	return gpudrv.List("cuda", n, func(i int) (DeviceInfo, error) {
		_, info, err := l.device(i)
		return info, err
	})
}

// Device is an open CUDA device: its primary context, one stream that every launch goes to, and
// events for timing (the shared device of internal/gpudrv over the CUDA driver API). Its methods
// are safe for concurrent use; work is submitted one call at a time. Every call makes the context
// current on a locked OS thread for its duration, so goroutines may use a Device from any thread.
type Device struct {
	d    *gpudrv.Device
	lib  *cuDriver
	info DeviceInfo
}

// Buffer is a region of device memory (cuMemAlloc). Write and Read copy synchronously between it
// and Go memory; Whole and Range make Views of it. A Buffer belongs to the Device that made it
// and is freed by Release or Close.
type Buffer = gpudrv.Buffer

// View is a byte range of a Buffer, passed to a Stream launch as the buffer's device address
// plus Offset; Size 0 means to the end of the buffer, and Offset must be a multiple of
// ViewAlignment.
type View = gpudrv.View

// ViewAlignment is what a View's offset must be a multiple of (16 bytes).
const ViewAlignment = gpudrv.ViewAlignment

// Stats counts what a device did since it was opened: submissions, waits, launches, host
// copies.
type Stats = gpudrv.Stats

// Open opens device index (an index into Devices): it retains the device's primary context and
// creates a stream and two timing events in it.
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
		return nil, fmt.Errorf("cuda: Open: device index %d out of range: %d device(s)", index, n)
	}
	dev, info, err := l.device(index)
	if err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d: %w", index, err)
	}
	drv := &cuDevice{l: l, dev: dev}
	if err := l.check("cuDevicePrimaryCtxRetain", dynlib.Call(l.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&drv.ctx)), uintptr(dev))); err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d (%s): %w", index, info.Name, err)
	}
	d, err := gpudrv.Open(drv, gpudrv.Config{
		Backend: "cuda", Index: index, Name: info.Name, MaxThreadsPerBlock: info.MaxThreadsPerBlock,
		MaxBlock: info.MaxBlock, MaxGrid: info.MaxGrid, Sticky: cuStickyResults,
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d (%s): %w", index, info.Name, err)
	}
	return &Device{d: d, lib: l, info: info}, nil
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// DriverVersion returns the driver's CUDA version (cuDriverGetVersion: 1000*major + 10*minor).
func (d *Device) DriverVersion() int { return d.lib.version }

// Close waits for the device's work to finish and frees everything made on it: buffers, kernels,
// the stream and the events, and releases the primary context. Closing twice is a no-op; the
// error is the wait's.
func (d *Device) Close() error { return d.d.Close() }

// NewBuffer allocates size bytes (at least 1) of device memory, zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) { return d.d.NewBuffer(size) }

// Stats returns the device's counters.
func (d *Device) Stats() Stats { return d.d.Stats() }

// cuDevice is the CUDA driver API for one open device: gpudrv.Driver over its primary context.
type cuDevice struct {
	l   *cuDriver
	dev int32   // CUdevice
	ctx uintptr // CUcontext: the primary context, retained
}

func (c *cuDevice) Current() error {
	return c.l.check("cuCtxSetCurrent", dynlib.Call(c.l.cuCtxSetCurrent, c.ctx))
}

func (c *cuDevice) Alloc(size int) (uint64, error) {
	var p uint64 // CUdeviceptr
	err := c.l.check(c.l.sym("cuMemAlloc"), dynlib.Call(c.l.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size)))
	return p, err
}

func (c *cuDevice) Free(p uint64) error {
	return c.l.check(c.l.sym("cuMemFree"), dynlib.Call(c.l.cuMemFree, uintptr(p)))
}

func (c *cuDevice) Zero(p uint64, n int) error {
	return c.l.check(c.l.sym("cuMemsetD8"), dynlib.Call(c.l.cuMemsetD8, uintptr(p), 0, uintptr(n)))
}

// CopyHtoD is synchronous; the device's stream (CU_STREAM_DEFAULT) is ordered with the legacy
// default stream the copy goes to.
func (c *cuDevice) CopyHtoD(dst uint64, src []byte) error {
	return c.l.check(c.l.sym("cuMemcpyHtoD"), dynlib.Call(c.l.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))))
}

func (c *cuDevice) CopyDtoH(dst []byte, src uint64) error {
	return c.l.check(c.l.sym("cuMemcpyDtoH"), dynlib.Call(c.l.cuMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst))))
}

// LoadModule loads PTX, a cubin or a fatbin; PTX must be NUL-terminated, and the extra byte is
// harmless after a cubin.
func (c *cuDevice) LoadModule(image []byte) (uintptr, error) {
	img := make([]byte, len(image)+1)
	copy(img, image)
	var m uintptr
	err := c.l.check("cuModuleLoadData", dynlib.Call(c.l.cuModuleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&img[0]))))
	return m, err
}

func (c *cuDevice) UnloadModule(m uintptr) error {
	return c.l.check("cuModuleUnload", dynlib.Call(c.l.cuModuleUnload, m))
}

func (c *cuDevice) Function(m uintptr, name string) (uintptr, error) {
	var fn uintptr
	err := c.l.check("cuModuleGetFunction", dynlib.Call(c.l.cuModuleGetFunction, uintptr(unsafe.Pointer(&fn)), m, uintptr(unsafe.Pointer(dynlib.CBytes(name)))))
	return fn, err
}

// CUfunction_attribute values the runtime reads.
const (
	cuFuncAttrMaxThreadsPerBlock = 0
	cuFuncAttrSharedSizeBytes    = 1
	cuFuncAttrNumRegs            = 4
)

// FuncInfo reads the attributes (the thread limit is required) and the parameter sizes
// (cuFuncGetParamInfo, CUDA 12.4+).
func (c *cuDevice) FuncInfo(fn uintptr) (gpudrv.FuncInfo, error) {
	attr := func(a int) (int, error) {
		var v int32
		err := c.l.check("cuFuncGetAttribute", dynlib.Call(c.l.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), fn))
		return int(v), err
	}
	var info gpudrv.FuncInfo
	var err error
	if info.MaxThreads, err = attr(cuFuncAttrMaxThreadsPerBlock); err != nil {
		return info, err
	}
	info.Registers, _ = attr(cuFuncAttrNumRegs)
	info.SharedMemory, _ = attr(cuFuncAttrSharedSizeBytes)
	info.Params = c.l.paramSizes(fn)
	return info, nil
}

// paramSizes lists a function's parameter sizes through cuFuncGetParamInfo, or nil when the
// driver lacks it or cannot say.
func (l *cuDriver) paramSizes(fn uintptr) []int {
	if l.cuFuncGetParamInfo == 0 {
		return nil
	}
	sizes := []int{}
	for i := 0; i < 4096; i++ {
		var off, size uint64
		r := dynlib.Call(l.cuFuncGetParamInfo, fn, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r == 1 { // CUDA_ERROR_INVALID_VALUE: past the last parameter
			return sizes
		}
		if r != 0 {
			return nil
		}
		sizes = append(sizes, int(size))
	}
	return nil
}

func (c *cuDevice) Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error {
	var params uintptr
	if len(args) > 0 {
		params = uintptr(unsafe.Pointer(&args[0]))
	}
	r := dynlib.Call(c.l.cuLaunchKernel, fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		0, stream, params, 0)
	return c.l.check("cuLaunchKernel", r)
}

// StreamCreate makes a CU_STREAM_DEFAULT stream (flags 0): it synchronises with the legacy
// default stream, so the synchronous copies are ordered after the launches before them.
func (c *cuDevice) StreamCreate() (uintptr, error) {
	var s uintptr
	err := c.l.check("cuStreamCreate", dynlib.Call(c.l.cuStreamCreate, uintptr(unsafe.Pointer(&s)), 0))
	return s, err
}

func (c *cuDevice) StreamDestroy(s uintptr) error {
	return c.l.check(c.l.sym("cuStreamDestroy"), dynlib.Call(c.l.cuStreamDestroy, s))
}

func (c *cuDevice) StreamSync(s uintptr) error {
	return c.l.check("cuStreamSynchronize", dynlib.Call(c.l.cuStreamSynchronize, s))
}

// EventCreate makes a CU_EVENT_DEFAULT event (flags 0): timing enabled.
func (c *cuDevice) EventCreate() (uintptr, error) {
	var e uintptr
	err := c.l.check("cuEventCreate", dynlib.Call(c.l.cuEventCreate, uintptr(unsafe.Pointer(&e)), 0))
	return e, err
}

func (c *cuDevice) EventDestroy(e uintptr) error {
	return c.l.check(c.l.sym("cuEventDestroy"), dynlib.Call(c.l.cuEventDestroy, e))
}

func (c *cuDevice) EventRecord(e, s uintptr) error {
	return c.l.check("cuEventRecord", dynlib.Call(c.l.cuEventRecord, e, s))
}

func (c *cuDevice) EventSync(e uintptr) error {
	return c.l.check("cuEventSynchronize", dynlib.Call(c.l.cuEventSynchronize, e))
}

func (c *cuDevice) EventElapsed(start, end uintptr) (float32, error) {
	var ms float32
	err := c.l.check(c.l.sym("cuEventElapsedTime"), dynlib.Call(c.l.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start, end))
	return ms, err
}

// Release releases the primary context Open retained.
func (c *cuDevice) Release() {
	if c.ctx != 0 {
		dynlib.Call(c.l.cuDevicePrimaryCtxRelease, uintptr(c.dev))
		c.ctx = 0
	}
}
