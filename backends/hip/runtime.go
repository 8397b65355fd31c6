package hip

import (
	"fmt"
	"regexp"
	"strings"
	"unsafe"

	"github.com/onesource-go/onesource/backends/cfamily/host"
	"github.com/onesource-go/onesource/internal/gpudrv"
)

// DeviceInfo describes a HIP device: what Devices lists and what an open Device reports through
// Info. The embedded Properties are what CUDA reports too (Name from hipDeviceGetName, e.g. "AMD
// Instinct MI210"; Multiprocessors counts compute units; WarpSize is 64 on CDNA and GCN, 32 on
// RDNA; LDS is the shared memory).
type DeviceInfo struct {
	gpudrv.Properties
	Arch string // the target ID (gcnArchName), e.g. "gfx90a:sramecc+:xnack-"; "" if unknown
}

// Processor returns the target ID's processor, e.g. "gfx90a" for "gfx90a:sramecc+:xnack-".
func (i DeviceInfo) Processor() string {
	p, _, _ := strings.Cut(i.Arch, ":")
	return p
}

// hipAttrs are the hipDeviceAttribute_t numbers of the Properties. These are the numbers ROCm 5.0
// introduced and ROCm 6 and 7 keep (later releases only append and rename retired entries
// "Unused"); ROCm 4's enum was different, which device catches by checking that the warp size is
// 32 or 64.
var hipAttrs = gpudrv.AttrNumbers{
	ClockRate: 5, L2CacheSize: 19, ComputeMajor: 23, BlockDimX: 26, GridDimX: 29, MaxThreadsPerBlock: 56,
	MemoryBusWidth: 59, MemoryClockRate: 60, ComputeMinor: 61, Multiprocessors: 63, PCIBus: 67, PCIDevice: 68,
	PCIDomain: 69, SharedMemoryPerBlock: 74, WarpSize: 87,
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
	buf := make([]byte, rtPropsSize)
	if l.Do(hipGetDeviceProperties, uintptr(unsafe.Pointer(&buf[0])), uintptr(index)) != nil {
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
	p, _, err := l.Describe(index, hipAttrs, true)
	info := DeviceInfo{Properties: p}
	if err != nil {
		return info, err
	}
	if info.WarpSize != 32 && info.WarpSize != 64 {
		return info, fmt.Errorf("hipDeviceGetAttribute(hipDeviceAttributeWarpSize=%d) gives %d, not 32 or 64: %q numbers device attributes as ROCm 4 did, which this runtime does not support",
			hipAttrs.WarpSize, info.WarpSize, l.Path)
	}
	info.Arch = l.gcnArchName(index)
	return info, nil
}

// ErrUnavailable is wrapped by every error that says the HIP runtime cannot be used on this
// machine (no library, no device): errors.Is(err, ErrUnavailable). Such an error reads
// "unavailable: hip: <reason>". It is the shared internal/gpudrv value, which package cuda
// re-exports too.
var ErrUnavailable = gpudrv.ErrUnavailable

// ResultError is a HIP or HIPRTC call that returned something other than success: Call names
// the C function as resolved (e.g. "hipModuleLaunchKernel" or "hipGetDevicePropertiesR0600"),
// Code is the hipError_t or hiprtcResult value and Name its name (e.g. "hipErrorNoDevice").
type ResultError = gpudrv.ResultError

// Available reports whether the HIP runtime can be used: the runtime library loads and
// initialises, it has at least one device, and HIPRTC loads (Compile needs it). The error, when
// not nil, wraps ErrUnavailable and says why, e.g. "unavailable: hip: no HIP device (...)". The
// answer is remembered per library choice (see LibraryEnv and HIPRTCLibraryEnv). The emulated
// device (OpenEmulated) is not a HIP runtime: Available does not count it.
func Available() error { return gpudrv.Available(hipRuntime, hiprtc) }

// Devices lists the HIP devices. It needs the runtime library only (not HIPRTC).
func Devices() ([]DeviceInfo, error) {
	l, _ := hipRuntime.Ready()
	return gpudrv.List("hip", hipRuntime.Count, l.device)
}

// Device is an open HIP device: one stream that every launch goes to and events for timing: the
// shared device of internal/gpudrv (Compile, Load, NewBuffer, Launch, Bench, NewStream, Stats,
// Close) over the HIP runtime, or over the host emulation of OpenEmulated. Its methods are safe
// for concurrent use; work is submitted one call at a time. Every call makes the device current
// (hipSetDevice) on a locked OS thread for its duration, so goroutines may use a Device from any
// thread.
type Device struct {
	*gpudrv.Device
	info DeviceInfo
	lib  *hipLib // nil on the emulated device
}

// Info describes the device.
func (d *Device) Info() DeviceInfo { return d.info }

// RuntimeVersion returns hipRuntimeGetVersion of the loaded library (0 if it cannot say, and on
// the emulated device).
func (d *Device) RuntimeVersion() int {
	if d.lib == nil {
		return 0
	}
	return d.lib.runtimeVersion
}

// Open opens device index (an index into Devices): it creates a stream and two timing events on
// it. Compile builds with HIPRTC for the device's target (gcnArchName).
func Open(index int) (*Device, error) {
	l, err := hipRuntime.Device(index)
	if err != nil {
		return nil, err
	}
	info, err := l.device(index)
	if err != nil {
		return nil, fmt.Errorf("hip: Open: device %d: %w", index, err)
	}
	compile := func(src, name string, options []string) (CodeObject, error) {
		if info.Arch == "" {
			return CodeObject{}, fmt.Errorf("hip: Compile: device %d (%s) did not report its target (gcnArchName)", info.Index, info.Name)
		}
		return CompileHIPRTC(src, name, info.Arch, options...)
	}
	cfg := gpudrv.Config{Compile: compile, Driver: fmt.Sprintf("HIP runtime %d, %s", l.runtimeVersion, info.Arch)}
	return open(&gpudrv.LibraryDriver{Lib: l.Library, Handle: uintptr(index)}, info, l, cfg)
}

// open opens the shared device over drv for the device info describes, with cfg's compiler
// (HIPRTC, or the emulation's host compiler) and driver identity; the rest of cfg comes from
// info.
func open(drv gpudrv.Driver, info DeviceInfo, l *hipLib, cfg gpudrv.Config) (*Device, error) {
	cfg.Backend, cfg.Index, cfg.Name, cfg.Sticky, cfg.SourceExt = "hip", info.Index, info.Name, hipStickyErrors, ".hip"
	cfg.MaxThreadsPerBlock, cfg.MaxBlock, cfg.MaxGrid = info.MaxThreadsPerBlock, info.MaxBlock, info.MaxGrid
	d, err := gpudrv.Open(drv, cfg)
	if err != nil {
		return nil, err
	}
	return &Device{Device: d, info: info, lib: l}, nil
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

// OpenEmulated opens the emulated HIP device: the shared device over host execution of the HIP
// text on the CPU (package backends/cfamily/host, level H: slow, exact, never reported as X).
// Its buffers, kernels, launch checks, streams and counters are those of a GPU's Device; Compile
// builds the text with the host C++ compiler (cached by content hash) instead of HIPRTC, and the
// wavefront is 64 lanes wide, as on CDNA (gfx90a, the target conformance emits for). It needs a
// C++ compiler, not a GPU: without one the error wraps ErrUnavailable.
func OpenEmulated() (*Device, error) {
	opts := host.Options{SubgroupSize: 64}
	drv, err := host.NewDriver(host.HIP, opts)
	if err != nil {
		return nil, gpudrv.Unavailable("hip", "emulated device: %v", err)
	}
	cfg := gpudrv.Config{Compile: host.EmulatedCompile(host.HIP, opts), Driver: drv.Identity(), Emulated: true}
	return open(drv, DeviceInfo{Properties: drv.Properties(), Arch: "host"}, nil, cfg)
}
