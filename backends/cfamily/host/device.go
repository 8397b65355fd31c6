package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/onesource-go/onesource/internal/gpudrv"
)

// The emulated device. Driver puts host execution behind the device interface the CUDA and HIP
// runtimes share (internal/gpudrv), so that cuda.OpenEmulated and hip.OpenEmulated give a Device
// whose buffers, kernels, streams, launch checks and counters are the real ones, and only the
// kernel runs on the CPU, by emulation (level H, never reported as X):
//
//   - Device memory is Go memory at made-up 64-bit addresses; a launch finds the allocation each
//     pointer argument falls in and hands the kernel the bytes from that address to the end of
//     the allocation (so a view's kernel sees a buffer that ends where the allocation ends, and
//     an out-of-bounds access inside the allocation is not caught; one beyond its end is).
//   - A launch runs when it is enqueued, in order (one stream): a compiled harness per kernel
//     (Compile, cached by content hash), one process per launch. The buffers come back whole and
//     only the bytes the kernel changed are written back, so two arguments that point into one
//     allocation keep each other's writes; a kernel that reads through one argument what it
//     writes through another in the same launch sees the bytes as they were before the launch
//     (on a GPU that is a race anyway).
//   - Events record the device clock: the sum of the emulation's own times (Result.Elapsed) of
//     the launches so far, so a timed stream measures each launch's emulated time.
//   - An image (Image) is the kernel's source and compile options; Function compiles the harness
//     for the entry (parameters: the pointers, then the 32-bit scalars, as the emitted kernels
//     take them). Options -DNAME[=VALUE] and -I DIR go to the host compiler; the vendors' code
//     generation options (--fmad=false, -ffp-contract=off, -O3, --gpu-architecture=...) have no
//     meaning there and are recorded only: the emulation is always IEEE without contraction.
//
// Measured on a 2-core x86-64 machine: a launch costs a process start and the copies of its
// buffers through a pipe, 2.4 ms for a saxpy over 1024 elements, 5.8 ms on average over the 33
// dispatches of a step of the llama test model (10 steps in 1.93 s); building one harness with
// g++ -O2 takes 0.25 s for an 11 KB matvec q4_K text (the engine's and llama's tests build 46 in
// 19 s with an empty cache, and take 2.7 s and 8.2 s once it is warm).

// imageMagic starts an emulated device's image.
const imageMagic = "oshost-image-1\n"

// image is what an emulated device's image holds.
type image struct {
	Lang    Lang
	Source  string
	Options []string
}

// Image returns the image an emulated device loads for src compiled with options: the source
// and the options themselves (the harness is built when the entry is looked up).
func Image(lang Lang, src string, options []string) []byte {
	b, _ := json.Marshal(image{Lang: lang, Source: src, Options: options})
	return append([]byte(imageMagic), b...)
}

// parseImage reads an image Image made.
func parseImage(b []byte) (image, error) {
	var im image
	if !bytes.HasPrefix(b, []byte(imageMagic)) {
		return im, errors.New("not an emulated device's image (host.Image makes them; PTX, cubins and code objects run on a GPU only)")
	}
	// Load appends a NUL after an image (PTX needs one): drop it.
	err := json.Unmarshal(bytes.TrimRight(b[len(imageMagic):], "\x00"), &im)
	return im, err
}

// hostFlags are the options the host compiler takes: defines and include folders.
func hostFlags(options []string) []string {
	var out []string
	for i := 0; i < len(options); i++ {
		o := options[i]
		switch {
		case strings.HasPrefix(o, "-D") || strings.HasPrefix(o, "--define-macro="):
			out = append(out, "-D"+strings.TrimPrefix(strings.TrimPrefix(o, "--define-macro="), "-D"))
		case (o == "-I" || o == "--include-path") && i+1 < len(options):
			out = append(out, "-I", options[i+1])
			i++
		case strings.HasPrefix(o, "-I"):
			out = append(out, o)
		case strings.HasPrefix(o, "--include-path="):
			out = append(out, "-I", strings.TrimPrefix(o, "--include-path="))
		}
	}
	return out
}

// Signature reads the parameters of kernel in src: how many device pointers there are, then how
// many 32-bit scalars (the emitted kernels' form: the buffers, then the parameters). A kernel
// whose pointers and scalars interleave, or that is not in the text, is an error.
func Signature(src string, lang Lang, kernel string) (pointers, scalars int, err error) {
	decls, err := kernelArgs(src, lang, kernel)
	if err != nil {
		return 0, 0, err
	}
	for i, d := range decls {
		ptr := strings.Contains(d, "*")
		switch {
		case ptr && scalars > 0:
			return 0, 0, fmt.Errorf("host execution (H): kernel %s argument %d (%s) is a pointer after a scalar: the emulated device passes the buffers first, then 32-bit scalars", kernel, i, d)
		case ptr:
			pointers++
		default:
			scalars++
		}
	}
	return pointers, scalars, nil
}

// EmulatedCompile compiles src for an emulated device of lang (the hook gpudrv.Config.Compile
// takes): name is the source's name, its entry point the name without its extension. It builds
// the harness now, so a source that does not compile is a *gpudrv.CompileError with the host
// compiler's output, and returns the image the device loads.
func EmulatedCompile(lang Lang, opts Options) func(src, name string, options []string) (gpudrv.Image, error) {
	return func(src, name string, options []string) (gpudrv.Image, error) {
		img := gpudrv.Image{Format: "host", Target: "host", Options: options}
		entry := strings.TrimSuffix(name, "."+lang.ext())
		if _, err := compileEntry(lang, src, entry, options, opts); err != nil {
			if errors.Is(err, ErrUnavailable) {
				return img, err
			}
			img.Log = err.Error()
			return img, &gpudrv.CompileError{Backend: lang.backend(), Compiler: "host C++ (emulation)", Name: name,
				Target: "host", Options: options, Log: err.Error(), Err: errors.New("the host compiler refused the text")}
		}
		img.Code = Image(lang, src, options)
		return img, nil
	}
}

// backend is the dialect's backend name in errors.
func (l Lang) backend() string { return strings.ToLower(l.String()) }

// compileEntry builds the harness of entry in src (see Signature and Compile).
func compileEntry(lang Lang, src, entry string, options []string, opts Options) (*Program, error) {
	nbufs, nparams, err := Signature(src, lang, entry)
	if err != nil {
		return nil, err
	}
	o := opts
	o.Flags = append(append([]string(nil), opts.Flags...), hostFlags(options)...)
	return Compile(src, lang, entry, nbufs, nparams, o)
}

// Driver is the emulated device's half of gpudrv.Driver (see the comment above Image): memory in
// Go, kernels run by host execution. It is not safe for concurrent use; gpudrv.Device calls it
// under its lock.
type Driver struct {
	lang Lang
	opts Options

	allocs  []*allocation // by base address
	next    uint64
	handles uintptr
	modules map[uintptr]image
	funcs   map[uintptr]*Program
	events  map[uintptr]time.Duration
	streams map[uintptr]bool
	clock   time.Duration // emulated device time of every launch so far
	closed  bool
}

type allocation struct {
	base uint64
	data []byte
}

// NewDriver returns an emulated device of dialect lang (CUDA or HIP), running kernels with opts
// (SubgroupSize is warpSize). It needs a C++ compiler (an error wrapping ErrUnavailable when
// there is none).
func NewDriver(lang Lang, opts Options) (*Driver, error) {
	if lang != CUDA && lang != HIP {
		return nil, fmt.Errorf("host execution (H): an emulated device runs CUDA or HIP, not %v", lang)
	}
	if err := Available(opts); err != nil {
		return nil, err
	}
	return &Driver{lang: lang, opts: opts, next: 1 << 40, modules: map[uintptr]image{}, funcs: map[uintptr]*Program{},
		events: map[uintptr]time.Duration{}, streams: map[uintptr]bool{}}, nil
}

// Properties describes the emulated device as the runtimes describe a GPU: name "host emulation
// (H) of CUDA" (or HIP), warpSize the subgroup size, CUDA's limits (1024 threads a block, grids
// of 2^31-1 x 65535 x 65535, 48 KiB of shared memory), one multiprocessor per CPU.
func (d *Driver) Properties() gpudrv.Properties {
	sg := d.opts.SubgroupSize
	if sg == 0 {
		sg = 32
	}
	return gpudrv.Properties{
		Name: "host emulation (H) of " + d.lang.String(), TotalMemory: 1 << 34, Multiprocessors: runtime.NumCPU(),
		WarpSize: sg, MaxThreadsPerBlock: 1024, MaxBlock: [3]uint32{1024, 1024, 64},
		MaxGrid: [3]uint32{math.MaxInt32, 65535, 65535}, SharedMemoryPerBlock: 48 << 10,
	}
}

// Identity names what runs the kernels, for registry evidence: the emulation's protocol version
// and the host compiler (another compiler or emulation is another driver).
func (d *Driver) Identity() string {
	cxx, _ := compiler(d.opts)
	name := ""
	if cxx != nil {
		name = filepath.Base(cxx.Path)
	}
	return fmt.Sprintf("onesource host emulation (H) %s, %s, warp %d", formatVersion, name, d.Properties().WarpSize)
}

func (d *Driver) handle() uintptr { d.handles++; return d.handles }

// fail is an emulated driver call's error.
func fail(call, format string, args ...any) error {
	return &gpudrv.ResultError{Call: call, Code: 1, Name: "emulated: " + fmt.Sprintf(format, args...)}
}

// Current implements gpudrv.Driver: the emulated device is current until Release.
func (d *Driver) Current() error {
	if d.closed {
		return fail("Current", "the emulated device was released")
	}
	return nil
}

// Alloc implements gpudrv.Driver: size zeroed bytes of Go memory at a made-up device address,
// with a gap after it so that an address just past one allocation is in none.
func (d *Driver) Alloc(size int) (uint64, error) {
	a := &allocation{base: d.next, data: make([]byte, size)}
	d.next += (uint64(size) + 4095) &^ 4095
	d.next += 4096 // a gap: an address just past one allocation is in none
	d.allocs = append(d.allocs, a)
	return a.base, nil
}

// find returns the allocation holding address p and p's offset in it.
func (d *Driver) find(call string, p uint64, n int) (*allocation, int, error) {
	i := sort.Search(len(d.allocs), func(i int) bool { return d.allocs[i].base > p }) - 1
	if i < 0 || p-d.allocs[i].base > uint64(len(d.allocs[i].data)) {
		return nil, 0, fail(call, "address %#x is in no allocation", p)
	}
	a := d.allocs[i]
	off := int(p - a.base)
	if n > len(a.data)-off {
		return nil, 0, fail(call, "%d bytes at %#x run past the end of its %d-byte allocation", n, p, len(a.data))
	}
	return a, off, nil
}

// Free implements gpudrv.Driver.
func (d *Driver) Free(p uint64) error {
	for i, a := range d.allocs {
		if a.base == p {
			d.allocs = append(d.allocs[:i], d.allocs[i+1:]...)
			return nil
		}
	}
	return fail("Free", "%#x was not allocated", p)
}

// Zero implements gpudrv.Driver.
func (d *Driver) Zero(p uint64, n int) error {
	a, off, err := d.find("Zero", p, n)
	if err == nil {
		clear(a.data[off : off+n])
	}
	return err
}

// CopyHtoD implements gpudrv.Driver: a copy into the allocation holding dst.
func (d *Driver) CopyHtoD(dst uint64, src []byte) error {
	a, off, err := d.find("CopyHtoD", dst, len(src))
	if err == nil {
		copy(a.data[off:], src)
	}
	return err
}

// CopyDtoH implements gpudrv.Driver: a copy out of the allocation holding src.
func (d *Driver) CopyDtoH(dst []byte, src uint64) error {
	a, off, err := d.find("CopyDtoH", src, len(dst))
	if err == nil {
		copy(dst, a.data[off:])
	}
	return err
}

// LoadModule implements gpudrv.Driver: an emulated image (what the emulated compiler built).
func (d *Driver) LoadModule(img []byte) (uintptr, error) {
	im, err := parseImage(img)
	if err != nil {
		return 0, fail("LoadModule", "%v", err)
	}
	if im.Lang != d.lang {
		return 0, fail("LoadModule", "a %v image on an emulated %v device", im.Lang, d.lang)
	}
	h := d.handle()
	d.modules[h] = im
	return h, nil
}

// UnloadModule implements gpudrv.Driver.
func (d *Driver) UnloadModule(m uintptr) error {
	if _, ok := d.modules[m]; !ok {
		return fail("UnloadModule", "no module %d", m)
	}
	delete(d.modules, m)
	return nil
}

// Function builds (or finds cached) the harness of entry name in module m.
func (d *Driver) Function(m uintptr, name string) (uintptr, error) {
	im, ok := d.modules[m]
	if !ok {
		return 0, fail("Function", "no module %d", m)
	}
	p, err := compileEntry(d.lang, im.Source, name, im.Options, d.opts)
	if err != nil {
		return 0, err
	}
	h := d.handle()
	d.funcs[h] = p
	return h, nil
}

// FuncInfo reports the device's thread limit and the parameters' sizes: 8 bytes a pointer, 4 a
// scalar, from the kernel's signature.
func (d *Driver) FuncInfo(fn uintptr) (gpudrv.FuncInfo, error) {
	p, ok := d.funcs[fn]
	if !ok {
		return gpudrv.FuncInfo{}, fail("FuncInfo", "no function %d", fn)
	}
	info := gpudrv.FuncInfo{MaxThreads: 1024, Params: make([]int, 0, p.NumBuffers+p.NumParams)}
	for i := 0; i < p.NumBuffers; i++ {
		info.Params = append(info.Params, 8)
	}
	for i := 0; i < p.NumParams; i++ {
		info.Params = append(info.Params, 4)
	}
	return info, nil
}

// Launch runs fn now (see the comment above Image): the buffers the pointer arguments fall in,
// from each pointer to its allocation's end, and the scalars.
func (d *Driver) Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error {
	p, ok := d.funcs[fn]
	if !ok {
		return fail("Launch", "no function %d", fn)
	}
	if !d.streams[stream] {
		return fail("Launch", "no stream %d", stream)
	}
	if len(args) != p.NumBuffers+p.NumParams {
		return fail("Launch", "kernel %s takes %d arguments, got %d", p.Kernel, p.NumBuffers+p.NumParams, len(args))
	}
	bufs := make([][]byte, p.NumBuffers)
	for i := range bufs {
		a, off, err := d.find("Launch", *(*uint64)(args[i]), 0)
		if err != nil {
			return fmt.Errorf("kernel %s: argument %d: %w", p.Kernel, i, err)
		}
		bufs[i] = a.data[off:]
	}
	params := make([]uint32, p.NumParams)
	for i := range params {
		params[i] = *(*uint32)(args[p.NumBuffers+i])
	}
	res, err := p.Run(bufs, params, grid, block, d.opts)
	if err != nil {
		return err
	}
	// Find every change first, then write them: bufs alias device memory, and two arguments may
	// point into one allocation.
	type change struct {
		dst, src []byte
	}
	var changes []change
	const chunk = 4096 // compared whole first: most of a launch's bytes are its inputs
	for i, out := range res.Buffers {
		in := bufs[i]
		for c := 0; c < len(in); c += chunk {
			end := min(c+chunk, len(in))
			if bytes.Equal(in[c:end], out[c:end]) {
				continue
			}
			for lo := c; lo < end; {
				if in[lo] == out[lo] {
					lo++
					continue
				}
				hi := lo + 1
				for hi < end && in[hi] != out[hi] {
					hi++
				}
				changes = append(changes, change{in[lo:hi], out[lo:hi]})
				lo = hi
			}
		}
	}
	for _, c := range changes {
		copy(c.dst, c.src)
	}
	d.clock += res.Elapsed
	return nil
}

// StreamCreate implements gpudrv.Driver.
func (d *Driver) StreamCreate() (uintptr, error) {
	h := d.handle()
	d.streams[h] = true
	return h, nil
}

// StreamDestroy implements gpudrv.Driver.
func (d *Driver) StreamDestroy(s uintptr) error {
	delete(d.streams, s)
	return nil
}

// StreamSync has nothing to wait for: launches ran when they were enqueued.
func (d *Driver) StreamSync(s uintptr) error {
	if !d.streams[s] {
		return fail("StreamSync", "no stream %d", s)
	}
	return nil
}

// EventCreate implements gpudrv.Driver.
func (d *Driver) EventCreate() (uintptr, error) {
	h := d.handle()
	d.events[h] = 0
	return h, nil
}

// EventDestroy implements gpudrv.Driver.
func (d *Driver) EventDestroy(e uintptr) error {
	delete(d.events, e)
	return nil
}

// EventRecord implements gpudrv.Driver: the event takes the emulated clock (the launches
// before it ran when they were enqueued).
func (d *Driver) EventRecord(e, s uintptr) error {
	if _, ok := d.events[e]; !ok {
		return fail("EventRecord", "no event %d", e)
	}
	d.events[e] = d.clock
	return nil
}

// EventSync implements gpudrv.Driver: there is nothing to wait for.
func (d *Driver) EventSync(e uintptr) error { return nil }

// EventElapsed implements gpudrv.Driver: milliseconds of the emulated clock between the events.
func (d *Driver) EventElapsed(start, end uintptr) (float32, error) {
	return float32(float64(d.events[end]-d.events[start]) / 1e6), nil
}

// Release frees the memory and forgets the modules.
func (d *Driver) Release() {
	d.closed = true
	d.allocs, d.modules, d.funcs = nil, nil, nil
}
