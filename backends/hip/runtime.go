package hip

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/internal/dynlib"
	"github.com/onesource-go/onesource/internal/gpudrv"
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
	get := func(attr int) (int, error) { return l.attribute(index, attr) }
	err := gpudrv.ReadAttrs(get, []gpudrv.Attr{
		{ID: hipAttrWarpSize, Dst: &info.WarpSize},
		{ID: hipAttrComputeCapabilityMajor, Dst: &info.ComputeMajor},
		{ID: hipAttrComputeCapabilityMinor, Dst: &info.ComputeMinor},
		{ID: hipAttrMultiprocessorCount, Dst: &info.Multiprocessors},
		{ID: hipAttrMaxThreadsPerBlock, Dst: &info.MaxThreadsPerBlock},
		{ID: hipAttrMaxSharedMemoryPerBlock, Dst: &info.SharedMemoryPerBlock},
	}, []gpudrv.Attr{
		{ID: hipAttrL2CacheSize, Dst: &info.L2CacheSize},
		{ID: hipAttrClockRate, Dst: &info.ClockKHz},
		{ID: hipAttrMemoryClockRate, Dst: &info.MemoryClockKHz},
		{ID: hipAttrMemoryBusWidth, Dst: &info.MemoryBusWidth},
	})
	if err != nil {
		return info, err
	}
	if info.WarpSize != 32 && info.WarpSize != 64 {
		return info, fmt.Errorf("hipDeviceGetAttribute(hipDeviceAttributeWarpSize=%d) gives %d, not 32 or 64: %q numbers device attributes as ROCm 4 did, which this runtime does not support",
			hipAttrWarpSize, info.WarpSize, l.path)
	}
	if info.MaxBlock, info.MaxGrid, err = gpudrv.ReadDims(get, hipAttrMaxBlockDimX, hipAttrMaxGridDimX); err != nil {
		return info, err
	}
	info.PCIBusID = gpudrv.PCIBusID(get, hipAttrPCIDomainID, hipAttrPCIBusID, hipAttrPCIDeviceID)
	info.Arch = l.gcnArchName(index)
	return info, nil
}

// rtAvailability remembers Available's answer per library choice.
var rtAvailability gpudrv.Memo[struct{}]

// Available reports whether the HIP runtime can be used: the runtime library loads and
// initialises, it has at least one device, and HIPRTC loads (Compile needs it). The error, when
// not nil, wraps ErrUnavailable and says why, e.g. "unavailable: hip: no HIP device (...)". The
// answer is remembered per library choice (see LibraryEnv and HIPRTCLibraryEnv).
func Available() error {
	names, _ := dynlib.Candidates(LibraryEnv, rtHIPNames, rtROCmLibDirs)
	rtcNames, _ := dynlib.Candidates(HIPRTCLibraryEnv, rtHIPRTCNames, rtROCmLibDirs)
	key := strings.Join(names, "\x00") + "\x01" + strings.Join(rtcNames, "\x00")
	_, err := rtAvailability.Get(key, func() (struct{}, error) { return struct{}{}, rtAvailable() })
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
	return gpudrv.List("hip", n, l.device)
}

// Device is an open HIP device: one stream that every launch goes to and events for timing (the
// shared device of internal/gpudrv over the HIP runtime). Its methods are safe for concurrent
// use; work is submitted one call at a time. Every call makes the device current (hipSetDevice)
// on a locked OS thread for its duration, so goroutines may use a Device from any thread.
type Device struct {
	d    *gpudrv.Device
	lib  *hipLib
	info DeviceInfo
}

// Buffer is a region of device memory (hipMalloc). Write and Read copy synchronously between it
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
	d, err := gpudrv.Open(&hipDevice{l: l, index: index}, gpudrv.Config{
		Backend: "hip", Index: index, Name: info.Name, MaxThreadsPerBlock: info.MaxThreadsPerBlock,
		MaxBlock: info.MaxBlock, MaxGrid: info.MaxGrid, Sticky: hipStickyErrors,
	})
	if err != nil {
		return nil, fmt.Errorf("hip: Open: device %d (%s): %w", index, info.Name, err)
	}
	return &Device{d: d, lib: l, info: info}, nil
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// RuntimeVersion returns hipRuntimeGetVersion of the loaded library (0 if it cannot say).
func (d *Device) RuntimeVersion() int { return d.lib.runtimeVersion }

// Close waits for the device's work to finish and frees everything made on it: buffers,
// kernels, the stream and the events. Closing twice is a no-op; the error is the wait's.
func (d *Device) Close() error { return d.d.Close() }

// NewBuffer allocates size bytes (at least 1) of device memory, zero-filled.
func (d *Device) NewBuffer(size int) (*Buffer, error) { return d.d.NewBuffer(size) }

// Stats returns the device's counters.
func (d *Device) Stats() Stats { return d.d.Stats() }

// hipDevice is the HIP runtime for one open device: gpudrv.Driver over its ordinal.
type hipDevice struct {
	l     *hipLib
	index int
}

func (h *hipDevice) Current() error {
	return h.l.check("hipSetDevice", dynlib.Call(h.l.hipSetDevice, uintptr(h.index)))
}

func (h *hipDevice) Alloc(size int) (uint64, error) {
	var p uintptr
	err := h.l.check("hipMalloc", dynlib.Call(h.l.hipMalloc, uintptr(unsafe.Pointer(&p)), uintptr(size)))
	return uint64(p), err
}

func (h *hipDevice) Free(p uint64) error {
	return h.l.check("hipFree", dynlib.Call(h.l.hipFree, uintptr(p)))
}

func (h *hipDevice) Zero(p uint64, n int) error {
	return h.l.check("hipMemset", dynlib.Call(h.l.hipMemset, uintptr(p), 0, uintptr(n)))
}

// CopyHtoD is synchronous with the null stream; the device's stream is a blocking one, so
// earlier launches finish first.
func (h *hipDevice) CopyHtoD(dst uint64, src []byte) error {
	return h.l.check("hipMemcpyHtoD", dynlib.Call(h.l.hipMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src))))
}

func (h *hipDevice) CopyDtoH(dst []byte, src uint64) error {
	return h.l.check("hipMemcpyDtoH", dynlib.Call(h.l.hipMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst))))
}

func (h *hipDevice) LoadModule(code []byte) (uintptr, error) {
	img := slices.Clone(code)
	var m uintptr
	err := h.l.check("hipModuleLoadData", dynlib.Call(h.l.hipModuleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&img[0]))))
	return m, err
}

func (h *hipDevice) UnloadModule(m uintptr) error {
	return h.l.check("hipModuleUnload", dynlib.Call(h.l.hipModuleUnload, m))
}

func (h *hipDevice) Function(m uintptr, name string) (uintptr, error) {
	var fn uintptr
	err := h.l.check("hipModuleGetFunction", dynlib.Call(h.l.hipModuleGetFunction, uintptr(unsafe.Pointer(&fn)), m, uintptr(unsafe.Pointer(dynlib.CBytes(name)))))
	return fn, err
}

// hipFunction_attribute values the runtime reads.
const (
	hipFuncAttrMaxThreadsPerBlock = 0
	hipFuncAttrSharedSizeBytes    = 1
	hipFuncAttrNumRegs            = 4
)

// FuncInfo reads what hipFuncGetAttribute reports, where the library has it; every attribute is
// optional (the thread limit falls back to the device's). HIP cannot list parameter sizes.
func (h *hipDevice) FuncInfo(fn uintptr) (gpudrv.FuncInfo, error) {
	var info gpudrv.FuncInfo
	if h.l.hipFuncGetAttribute == 0 {
		return info, nil
	}
	attr := func(a int) (int, bool) {
		var v int32
		ok := dynlib.Call(h.l.hipFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), fn) == 0
		return int(v), ok
	}
	if v, ok := attr(hipFuncAttrMaxThreadsPerBlock); ok && v > 0 {
		info.MaxThreads = v
	}
	info.Registers, _ = attr(hipFuncAttrNumRegs)
	info.SharedMemory, _ = attr(hipFuncAttrSharedSizeBytes)
	return info, nil
}

func (h *hipDevice) Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error {
	var params uintptr
	if len(args) > 0 {
		params = uintptr(unsafe.Pointer(&args[0]))
	}
	r := dynlib.Call(h.l.hipModuleLaunchKernel, fn,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		0, stream, params, 0)
	return h.l.check("hipModuleLaunchKernel", r)
}

func (h *hipDevice) StreamCreate() (uintptr, error) {
	var s uintptr
	err := h.l.check("hipStreamCreate", dynlib.Call(h.l.hipStreamCreate, uintptr(unsafe.Pointer(&s))))
	return s, err
}

func (h *hipDevice) StreamDestroy(s uintptr) error {
	return h.l.check("hipStreamDestroy", dynlib.Call(h.l.hipStreamDestroy, s))
}

func (h *hipDevice) StreamSync(s uintptr) error {
	return h.l.check("hipStreamSynchronize", dynlib.Call(h.l.hipStreamSynchronize, s))
}

func (h *hipDevice) EventCreate() (uintptr, error) {
	var e uintptr
	err := h.l.check("hipEventCreate", dynlib.Call(h.l.hipEventCreate, uintptr(unsafe.Pointer(&e))))
	return e, err
}

func (h *hipDevice) EventDestroy(e uintptr) error {
	return h.l.check("hipEventDestroy", dynlib.Call(h.l.hipEventDestroy, e))
}

func (h *hipDevice) EventRecord(e, s uintptr) error {
	return h.l.check("hipEventRecord", dynlib.Call(h.l.hipEventRecord, e, s))
}

func (h *hipDevice) EventSync(e uintptr) error {
	return h.l.check("hipEventSynchronize", dynlib.Call(h.l.hipEventSynchronize, e))
}

func (h *hipDevice) EventElapsed(start, end uintptr) (float32, error) {
	var ms float32
	err := h.l.check("hipEventElapsedTime", dynlib.Call(h.l.hipEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start, end))
	return ms, err
}

// Release does nothing: HIP's device needs no handle held.
func (h *hipDevice) Release() {}
