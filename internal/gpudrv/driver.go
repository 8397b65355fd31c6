// Package gpudrv is the one driver that the CUDA and HIP runtimes (backends/cuda, backends/hip)
// are: an open device with one driver stream and two timing events (Device), device memory
// (Buffer) and byte ranges of it (View), kernels compiled or loaded (Kernel, Image), the checks
// made before a launch, Launch, the Bench loop timed by events, Streams of launches that are
// synchronized once, the device's counters (Stats); and, below them, the driver library itself:
// loading it once per choice of library (Runtime, Library), the calls both libraries make
// (Call, LibraryDriver: the HIP runtime mirrors the CUDA driver API call for call), the device
// properties both report (Properties, Describe), and the program calls of the run-time
// compilers (NVRTC, HIPRTC: Library.Compile).
//
// It is written once against Driver, the few calls a device needs. LibraryDriver implements it
// over a loaded library for a GPU; package backends/cfamily/host implements it by host emulation
// of the C-family text (level H), so the same Device, Stream and launch checks serve there too.
// What differs between the vendors stays in the backends, as data and a few hooks: the library
// names and symbol spellings (Spelling), the error enum (NameResult), the attribute numbers
// (AttrNumbers), the sticky errors, initialisation (cuInit's and hipInit's results), and the
// compiler's options and targets (Config.Compile). The backends re-export Buffer, View, Kernel,
// Stream, Image, CompileError, BenchResult, Stats and ResultError as type aliases and embed
// Device in their own Device, which adds the vendor's DeviceInfo.
//
// Contract: every error names the backend ("cuda: ...", "hip: ...") and the operation, and a
// launch error names the kernel and the binding at fault; nothing panics across the API. A
// Device's methods are safe for concurrent use: each holds the device's lock and runs on a
// locked OS thread with the device current (Driver.Current). Work goes to one driver stream;
// launches on one stream run in order, so a Stream needs no barriers between its launches.
package gpudrv

import (
	"fmt"
	"unsafe"
)

// Driver is the set of driver calls the shared code makes on one open device: the CUDA driver
// API with the device's primary context, or the HIP runtime with the device's ordinal. The calls
// are made with the Device's lock held, on an OS thread where Current succeeded (only the frees
// after a failed Open or Current may come without). An error should be a *ResultError naming the
// C function.
type Driver interface {
	// Current makes the device current on the calling OS thread (cuCtxSetCurrent, hipSetDevice).
	Current() error
	// Alloc allocates size bytes of device memory (cuMemAlloc, hipMalloc).
	Alloc(size int) (uint64, error)
	// Free frees memory Alloc returned (cuMemFree, hipFree).
	Free(p uint64) error
	// Zero sets n bytes at p to zero (cuMemsetD8, hipMemset).
	Zero(p uint64, n int) error
	// CopyHtoD copies src (not empty) to device address dst and returns when it is done.
	CopyHtoD(dst uint64, src []byte) error
	// CopyDtoH copies len(dst) (not 0) bytes from device address src and returns when done.
	CopyDtoH(dst []byte, src uint64) error
	// LoadModule loads a module from image (cuModuleLoadData, hipModuleLoadData); the driver
	// adds whatever the call needs (CUDA's terminating NUL after PTX).
	LoadModule(image []byte) (uintptr, error)
	// UnloadModule unloads a module (cuModuleUnload, hipModuleUnload).
	UnloadModule(module uintptr) error
	// Function returns a module's kernel entry (cuModuleGetFunction, hipModuleGetFunction).
	Function(module uintptr, name string) (uintptr, error)
	// FuncInfo reads a function's attributes; an error means the kernel cannot be used.
	FuncInfo(fn uintptr) (FuncInfo, error)
	// Launch enqueues fn over grid blocks of block threads on stream, with args the
	// kernelParams array (nil for none): one pointer per parameter to its value
	// (cuLaunchKernel, hipModuleLaunchKernel).
	Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error
	// StreamCreate makes a stream ordered after the copies of CopyHtoD and CopyDtoH.
	StreamCreate() (uintptr, error)
	// StreamDestroy destroys a stream.
	StreamDestroy(stream uintptr) error
	// StreamSync waits for everything enqueued on stream.
	StreamSync(stream uintptr) error
	// EventCreate makes an event that records timing.
	EventCreate() (uintptr, error)
	// EventDestroy destroys an event.
	EventDestroy(event uintptr) error
	// EventRecord enqueues event on stream.
	EventRecord(event, stream uintptr) error
	// EventSync waits for event.
	EventSync(event uintptr) error
	// EventElapsed returns the milliseconds between two completed events.
	EventElapsed(start, end uintptr) (float32, error)
	// Release gives up what the backend took for the device before Open (CUDA's primary
	// context); it runs last, at Close or when Open fails.
	Release()
}

// FuncInfo is what a driver reports about a kernel function.
type FuncInfo struct {
	MaxThreads   int   // the most threads a block may have (0: the device's limit)
	Registers    int   // registers per thread (0: not reported)
	SharedMemory int   // bytes of static shared memory per block (0: not reported)
	Params       []int // byte size of each parameter; nil when the driver cannot say
}

// Config describes the device Open opens: what the launch checks need and how errors read.
type Config struct {
	Backend            string       // "cuda" or "hip": the first word of every error
	Index              int          // the device ordinal
	Name               string       // the device's name, for messages
	MaxThreadsPerBlock int          // the device's limit (a kernel's own may be lower)
	MaxBlock, MaxGrid  [3]uint32    // the largest block and grid dimensions
	Sticky             map[int]bool // result codes after which the device's context is unusable
	// Compile builds source for the device (Device.Compile): NVRTC or HIPRTC for the device's
	// architecture on a GPU, the host compiler on an emulated device. name is the source's
	// name in diagnostics. Nil: Device.Compile is an error.
	Compile func(src, name string, options []string) (Image, error)
	// SourceExt is the extension Device.Compile names a source with (".cu", ".hip").
	SourceExt string
	// Driver names the driver as registry evidence does ("CUDA driver 13000, sm_90"; the
	// emulation and its compiler on an emulated device); Emulated marks an emulated device (its
	// results are level H, never X).
	Driver   string
	Emulated bool
}

// ResultError is a driver or runtime-compiler call that returned something other than success.
type ResultError struct {
	Call string // the C function as resolved, e.g. "cuMemAlloc_v2" or "hipModuleLaunchKernel"
	Code int    // the result value (CUresult, hipError_t, nvrtcResult, hiprtcResult)
	Name string // the value's name, e.g. "CUDA_ERROR_OUT_OF_MEMORY" or "hipErrorNoDevice"
}

// Error names the call and the result, e.g. "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)".
func (e *ResultError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// Check turns a C function's 32-bit result r into an error naming the call and the value (nil
// for 0, success); name names a non-zero value.
func Check(call string, r uintptr, name func(code int) string) error {
	code := int(int32(uint32(r)))
	if code == 0 {
		return nil
	}
	return &ResultError{Call: call, Code: code, Name: name(code)}
}

// NameResult names result code of a backend's enum typ ("CUresult", "hipError_t"): its entry in
// table, else the library's own name for it (name; "" when it has none), else "typ(code)"
// followed by the library's description of it (describe; "" when none). name and describe may
// be nil.
func NameResult(code int, table map[int]string, typ string, name, describe func(code int) string) string {
	if s, ok := table[code]; ok {
		return s
	}
	if name != nil {
		if s := name(code); s != "" {
			return s
		}
	}
	out := fmt.Sprintf("%s(%d)", typ, code)
	if describe != nil {
		if s := describe(code); s != "" {
			out += " " + s
		}
	}
	return out
}
