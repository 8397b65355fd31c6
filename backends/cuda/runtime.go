package cuda

import (
	"fmt"
	"unsafe"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DeviceInfo describes a CUDA device: what Devices lists and what an open Device reports through
// Info. The embedded Properties are what HIP reports too (Name from cuDeviceGetName, e.g.
// "NVIDIA H200"; TotalMemory from cuDeviceTotalMem_v2; WarpSize 32; the compute capability).
type DeviceInfo struct {
	gpudrv.Properties
	Arch                      string // "sm_<major><minor>", e.g. "sm_90"
	SharedMemoryPerBlockOptin int    // bytes a kernel may use after opting in (0: not reported)
}

// cuAttrs are the CUdevice_attribute numbers of the Properties.
var cuAttrs = gpudrv.AttrNumbers{
	MaxThreadsPerBlock: 1, BlockDimX: 2, GridDimX: 5, SharedMemoryPerBlock: 8, WarpSize: 10, ClockRate: 13,
	Multiprocessors: 16, PCIBus: 33, PCIDevice: 34, MemoryClockRate: 36, MemoryBusWidth: 37, L2CacheSize: 38,
	PCIDomain: 50, ComputeMajor: 75, ComputeMinor: 76,
}

// cuAttrMaxSharedMemoryPerBlockOptin is the attribute number of SharedMemoryPerBlockOptin.
const cuAttrMaxSharedMemoryPerBlockOptin = 97

// device returns the CUdevice of an ordinal and what it is.
func (l *cuDriver) device(index int) (int32, DeviceInfo, error) {
	p, d, err := l.Describe(index, cuAttrs, false)
	info := DeviceInfo{Properties: p}
	if err != nil {
		return 0, info, err
	}
	info.SharedMemoryPerBlockOptin, _ = d.Attr(cuAttrMaxSharedMemoryPerBlockOptin)
	info.Arch = fmt.Sprintf("sm_%d%d", info.ComputeMajor, info.ComputeMinor)
	return d.Handle, info, nil
}

// ErrUnavailable is wrapped by every error that says the CUDA runtime cannot be used on this
// machine (no driver library, no NVRTC, no device): errors.Is(err, ErrUnavailable). Such an error
// reads "unavailable: cuda: <reason>". It is the shared internal/gpudrv value, which package hip
// re-exports too.
var ErrUnavailable = gpudrv.ErrUnavailable

// ResultError is a CUDA driver or NVRTC call that returned something other than success: Call
// names the C function (e.g. "cuLaunchKernel" or "nvrtcCompileProgram"), Code is the CUresult
// or nvrtcResult value and Name its name (e.g. "CUDA_ERROR_INVALID_VALUE").
type ResultError = gpudrv.ResultError

// Available reports whether the CUDA runtime can be used: the driver library loads and
// initialises, it has at least one device, and an NVRTC library loads (Compile needs it). The
// error, when not nil, wraps ErrUnavailable and says why ("unavailable: cuda: ..."). The answer is
// remembered per library choice (see LibraryEnv and NVRTCLibraryEnv). The emulated device
// (OpenEmulated) is not a CUDA runtime: Available does not count it.
func Available() error { return gpudrv.Available(cudaDriver, nvrtc) }

// Devices lists the CUDA devices. It needs the driver only (not NVRTC).
func Devices() ([]DeviceInfo, error) {
	return gpudrv.List("cuda", cudaDriver.Count, func(i int) (DeviceInfo, error) {
		l, _ := cudaDriver.Ready()
		_, info, err := l.device(i)
		return info, err
	})
}

// Open opens device index (an index into Devices): it retains the device's primary context and
// creates a stream and two timing events in it. Compile builds with NVRTC for the device's
// architecture.
func Open(index int) (*Device, error) {
	l, err := cudaDriver.Device(index)
	if err != nil {
		return nil, err
	}
	handle, info, err := l.device(index)
	if err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d: %w", index, err)
	}
	drv := &gpudrv.LibraryDriver{Lib: l.Library, ThreadLimitRequired: true}
	if err := l.Do(cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&drv.Handle)), uintptr(handle)); err != nil {
		return nil, fmt.Errorf("cuda: Open: device %d (%s): %w", index, info.Name, err)
	}
	drv.OnClose = func() { l.Do(cuDevicePrimaryCtxRelease, uintptr(handle)) }
	sm := info.ComputeMajor*10 + info.ComputeMinor
	return open(drv, info, l, func(src, name string, options []string) (Image, error) {
		return CompileNVRTC(src, name, sm, options...)
	}, "")
}

// OpenEmulated opens the emulated CUDA device: the shared device over host execution of the CUDA
// text on the CPU (package backends/cfamily/host, level H: slow, exact, never reported as X).
// Its buffers, kernels, launch checks, streams and counters are those of a GPU's Device; Compile
// builds the text with the host C++ compiler (cached by content hash) instead of NVRTC, and
// warpSize is 32. It needs a C++ compiler, not a GPU: without one the error wraps
// ErrUnavailable.
func OpenEmulated() (*Device, error) {
	opts := host.Options{SubgroupSize: 32}
	drv, err := host.NewDriver(host.CUDA, opts)
	if err != nil {
		return nil, gpudrv.Unavailable("cuda", "emulated device: %v", err)
	}
	info := DeviceInfo{Properties: drv.Properties(), Arch: "host"}
	return open(drv, info, nil, host.EmulatedCompile(host.CUDA, opts), drv.Identity())
}

// Device is an open CUDA device: its primary context, one stream that every launch goes to, and
// events for timing: the shared device of internal/gpudrv (Compile, Load, NewBuffer, Launch,
// Bench, NewStream, Stats, Close) over the CUDA driver API, or over the host emulation of
// OpenEmulated. Its methods are safe for concurrent use; work is submitted one call at a time.
// Every call makes the context current on a locked OS thread for its duration, so goroutines may
// use a Device from any thread.
type Device struct {
	*gpudrv.Device
	lib  *cuDriver // nil on the emulated device
	info DeviceInfo
}

// open opens the shared device over drv for the device info describes, compiling with compile
// (NVRTC, or the emulation's host compiler). emulated names an emulated device's driver (""
// for a GPU, whose driver is the CUDA version and architecture).
func open(drv gpudrv.Driver, info DeviceInfo, l *cuDriver, compile func(src, name string, options []string) (Image, error), emulated string) (*Device, error) {
	driver := emulated
	if l != nil {
		driver = fmt.Sprintf("CUDA driver %d, %s", l.version, info.Arch)
	}
	d, err := gpudrv.Open(drv, gpudrv.Config{
		Backend: "cuda", Index: info.Index, Name: info.Name, MaxThreadsPerBlock: info.MaxThreadsPerBlock,
		MaxBlock: info.MaxBlock, MaxGrid: info.MaxGrid, Sticky: cuStickyResults, Compile: compile, SourceExt: ".cu",
		Driver: driver, Emulated: emulated != "",
	})
	if err != nil {
		return nil, err
	}
	return &Device{Device: d, lib: l, info: info}, nil
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// DriverVersion returns the driver's CUDA version (cuDriverGetVersion: 1000*major + 10*minor); 0
// on the emulated device.
func (d *Device) DriverVersion() int {
	if d.lib == nil {
		return 0
	}
	return d.lib.version
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
