package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/onesource-go/onesource/internal/cbuild"
)

// Lang is the dialect of the kernel text.
type Lang int

// The dialects.
const (
	CUDA Lang = iota + 1 // .cu: extern "C" __global__ kernels
	HIP                  // .hip: the same shape, HIP spellings and AMD builtins
	MSL                  // .metal: kernel functions with [[...]] argument attributes
)

// String returns the name of Lang as messages and reports print it.
func (l Lang) String() string {
	switch l {
	case CUDA:
		return "CUDA"
	case HIP:
		return "HIP"
	case MSL:
		return "MSL"
	}
	return fmt.Sprintf("Lang(%d)", int(l))
}

func (l Lang) ext() string {
	switch l {
	case CUDA:
		return "cu"
	case HIP:
		return "hip"
	}
	return "metal"
}

func (l Lang) header() string {
	if l == MSL {
		return "oshost_msl.h"
	}
	return "oshost_cuda.h"
}

// Order is the order lanes run in within each round of the scheduler.
type Order uint32

// Lane orders. A correct kernel gives the same bytes in every order; a kernel that reads shared
// memory another lane writes without a barrier between them does not.
const (
	Ascending  Order = iota // lane 0 first
	Descending              // the last lane first
	Shuffled                // a fresh pseudo-random permutation every round (Options.Seed)
)

// Options configure compiling and running. The zero value is ready to use.
type Options struct {
	// SubgroupSize is the lanes per warp / SIMD-group (warpSize, threads_per_simdgroup), a
	// power of two; 0 means 32. Lanes group into subgroups by flattened local index; the last
	// subgroup of a workgroup whose size is not a multiple of it has fewer lanes.
	SubgroupSize int
	// Order and Seed choose the lane order within a scheduling round.
	Order Order
	Seed  uint32
	// Repeat runs the whole grid this many times (0 means once); Result.Elapsed covers them
	// all. Buffers are not reset between repeats.
	Repeat int
	// StackBytes is each lane's fiber stack (0 means 64 KiB).
	StackBytes int
	// Timeout bounds one run of the compiled program (0 means 2 minutes).
	Timeout time.Duration

	// Compiler is the C++ compiler. Empty means $ONESOURCE_HOST_CXX when set, else the first of
	// g++, clang++, clang++-16 on PATH.
	Compiler string
	// CacheDir keeps compiled programs. Empty means $ONESOURCE_HOST_CACHE when set, else
	// internal/cachedir's "host" directory ($ONESOURCE_CACHE/host, else
	// os.UserCacheDir()/onesource/host), else (ONESOURCE_CACHE=off, no user cache directory) a
	// temporary directory of the process's own.
	CacheDir string
	// Flags are extra compiler flags (they are part of the cache key).
	Flags []string
}

// ErrUnavailable is wrapped by the errors returned when host execution cannot run here (no C++
// compiler); their text starts with "unavailable:".
var ErrUnavailable = errors.New("unavailable")

// ExecError is a failed run of a compiled program: the emulation's own report (deadlock, bad
// exchange, out-of-bounds access, arithmetic trap) or a crash or timeout.
type ExecError struct {
	Kernel   string
	Lang     Lang
	ExitCode int    // 2: emulation error, 3: fault inside the kernel, -1: killed or timed out
	Message  string // what the program printed on stderr, or why it was stopped
	Program  string // the compiled program's path
}

// Error implements error.
func (e *ExecError) Error() string {
	msg := strings.TrimSpace(e.Message)
	prefix := "host execution (H) of " + e.Kernel + ": "
	msg = strings.TrimPrefix(msg, prefix)
	return fmt.Sprintf("host execution (H) of %s %s (%s): %s", e.Lang, e.Kernel, e.Program, msg)
}

// Deadlock reports whether the run stopped because no lane could proceed.
func (e *ExecError) Deadlock() bool { return strings.Contains(e.Message, "deadlock") }

// Program is a compiled harness for one kernel of one source text.
type Program struct {
	Lang       Lang
	Kernel     string
	NumBuffers int
	NumParams  int
	Path       string // the executable
	Dir        string // holds the generated harness.cpp, the kernel text and the headers
}

// Result is what a run returns.
type Result struct {
	Buffers    [][]byte      // every buffer's contents after the run, in binding order
	Elapsed    time.Duration // time inside the program running the grid Repeat times
	Workgroups int           // workgroups run (grid size times Repeat)
}

//go:embed include
var includeFS embed.FS

// formatVersion changes when the harness protocol or flags change in a way the headers do not
// show (it is part of the cache key).
const formatVersion = "oshost-1"

// Available reports whether host execution can run with opts (a C++ compiler is present),
// returning an error wrapping ErrUnavailable when not.
func Available(opts Options) error {
	_, err := compiler(opts)
	return err
}

func compiler(opts Options) (*cbuild.Compiler, error) {
	cands := []string{"g++", "clang++", "clang++-16"}
	if opts.Compiler != "" {
		cands = []string{opts.Compiler}
	} else if env := os.Getenv("ONESOURCE_HOST_CXX"); env != "" {
		cands = []string{env}
	}
	c, err := cbuild.FindCompiler(cands...)
	if err != nil {
		return nil, fmt.Errorf("%w: host execution (H) needs a C++17 compiler; none of %s found on PATH", ErrUnavailable, strings.Join(cands, ", "))
	}
	return c, nil
}

func cacheDir(opts Options) string {
	if opts.CacheDir != "" {
		return opts.CacheDir
	}
	if env := os.Getenv("ONESOURCE_HOST_CACHE"); env != "" {
		return env
	}
	// internal/cachedir's "host" directory; with the caches off, a directory of this process's
	// own (the program is an executable: it has to live in a file).
	return cbuild.Root("host")
}

// compileStats counts the programs built and found built (CompileStats).
var compileStats cbuild.Stats

// CompileStats returns how many programs this process compiled and how many Compile found
// already built in the cache directory (Options.CacheDir): what a second start reuses.
func CompileStats() (built, cached int) { return compileStats.Counts() }

var (
	headersOnce sync.Once
	headersSum  []byte
)

// headersHash is the hash of the embedded headers (part of every cache key).
func headersHash() []byte {
	headersOnce.Do(func() {
		h := sha256.New()
		_ = fs.WalkDir(includeFS, "include", func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := includeFS.ReadFile(p)
				fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
				h.Write(b)
			}
			return nil
		})
		headersSum = h.Sum(nil)
	})
	return headersSum
}

// flags are the compiler flags every program is built with.
func flags(cxx *cbuild.Compiler) []string {
	f := []string{
		"-std=c++17", "-O2",
		"-ffp-contract=off", "-fno-fast-math", "-fno-math-errno", // IEEE: one rounding per op
		"-fwrapv", "-fno-strict-aliasing", // integers wrap; bit casts through pointers
		"-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics",
	}
	if runtime.GOARCH == "amd64" {
		f = append(f, "-fcf-protection=none") // the fiber switch has no endbr64
	}
	if cxx.Clang {
		f = append(f, "-Xclang", "-ffloat16-excess-precision=none", "-Wno-unknown-attributes")
	} else {
		f = append(f, "-Wno-attributes")
	}
	return f
}

// Compile builds the harness for kernel (the name of the kernel function in src) taking
// nbufs buffers and nparams 32-bit parameters, or returns the cached build of the same inputs
// (package internal/cbuild keeps them, keyed by the compiler and its version, the flags, the
// headers, the text and the harness). Compiler errors come back with the compiler's output and
// the paths of the generated files.
func Compile(src string, lang Lang, kernel string, nbufs, nparams int, opts Options) (*Program, error) {
	if lang != CUDA && lang != HIP && lang != MSL {
		return nil, fmt.Errorf("host execution (H): unknown dialect %v", lang)
	}
	cxx, err := compiler(opts)
	if err != nil {
		return nil, err
	}
	text := src
	if lang == MSL {
		text = rewriteThreadgroup(src)
	}
	harness, err := generateHarness(text, lang, kernel, nbufs, nparams)
	if err != nil {
		return nil, err
	}
	args := append(flags(cxx), opts.Flags...)
	key := cbuild.Key(formatVersion, cxx.ID(), lang.String(), fmt.Sprintf("%q", args), string(headersHash()), text, harness)
	kfile := "kernel." + lang.ext()
	job := cbuild.Job{
		Root: cacheDir(opts), Key: key, Output: "prog",
		Compiler: cxx, Args: append(append([]string{}, args...), "-I", "include", "-o", "prog", "harness.cpp"),
		Write: func(dir string) error { return writeTree(dir, kfile, text, harness) },
		Stats: &compileStats,
	}
	if opts.CacheDir == "" && os.Getenv("ONESOURCE_HOST_CACHE") == "" {
		job.Fallback = filepath.Join(os.TempDir(), "onesource-host") // the user cache is not writable
	}
	path, err := cbuild.Build(job)
	if err != nil {
		var be *cbuild.Error
		if errors.As(err, &be) {
			return nil, fmt.Errorf("host execution (H) of %s %s: %s failed compiling %s (kernel text %s, headers in %s): %v\n%s",
				lang, kernel, filepath.Base(cxx.Path), filepath.Join(be.Dir, "harness.cpp"), filepath.Join(be.Dir, kfile),
				filepath.Join(be.Dir, "include"), be.Err, be.Output)
		}
		return nil, fmt.Errorf("host execution (H): %w", err)
	}
	return &Program{Lang: lang, Kernel: kernel, NumBuffers: nbufs, NumParams: nparams, Path: path, Dir: filepath.Dir(path)}, nil
}

func writeTree(dir, kfile, text, harness string) error {
	err := fs.WalkDir(includeFS, "include", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := includeFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, kfile), []byte(text), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "harness.cpp"), []byte(harness), 0o644)
	}
	if err != nil {
		return fmt.Errorf("host execution (H): writing the build files: %w", err)
	}
	return nil
}

// Run executes the program once over groups workgroups of workgroup lanes each. bufs holds
// every buffer's initial bytes in binding order (its length is the buffer's size); params the
// 32-bit parameters in order (float parameters as math.Float32bits). bufs is not modified.
func (p *Program) Run(bufs [][]byte, params []uint32, groups, workgroup [3]uint32, opts Options) (*Result, error) {
	if len(bufs) != p.NumBuffers || len(params) != p.NumParams {
		return nil, fmt.Errorf("host execution (H) of %s: built for %d buffers and %d parameters, given %d and %d",
			p.Kernel, p.NumBuffers, p.NumParams, len(bufs), len(params))
	}
	for i, d := range workgroup {
		if d == 0 {
			return nil, fmt.Errorf("host execution (H) of %s: workgroup dimension %d is 0", p.Kernel, i)
		}
	}
	sg := opts.SubgroupSize
	if sg == 0 {
		sg = 32
	}
	if sg < 1 || sg > 1024 || sg&(sg-1) != 0 {
		return nil, fmt.Errorf("host execution (H): subgroup size %d is not a power of two from 1 to 1024", sg)
	}
	repeat := opts.Repeat
	if repeat <= 0 {
		repeat = 1
	}
	stack := opts.StackBytes
	if stack <= 0 {
		stack = 64 << 10
	}
	var in bytes.Buffer
	le := binary.LittleEndian
	w32 := func(v uint32) { in.Write(le.AppendUint32(nil, v)) }
	w32(0x3148534f)
	w32(uint32(len(bufs)))
	w32(uint32(len(params)))
	for _, v := range groups {
		w32(v)
	}
	for _, v := range workgroup {
		w32(v)
	}
	w32(uint32(sg))
	w32(uint32(repeat))
	w32(uint32(opts.Order))
	w32(opts.Seed)
	in.Write(le.AppendUint64(nil, uint64(stack)))
	total := 0
	for _, b := range bufs {
		in.Write(le.AppendUint64(nil, uint64(len(b))))
		total += len(b)
	}
	for _, b := range bufs {
		in.Write(b)
	}
	for _, v := range params {
		w32(v)
	}

	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Path)
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	stdout.Grow(total + 64)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil, &ExecError{Kernel: p.Kernel, Lang: p.Lang, ExitCode: -1, Program: p.Path,
			Message: fmt.Sprintf("stopped after %v (an endless loop, or raise Options.Timeout)\n%s", timeout, stderr.String())}
	}
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		msg := stderr.String()
		if msg == "" {
			msg = err.Error()
		}
		return nil, &ExecError{Kernel: p.Kernel, Lang: p.Lang, ExitCode: code, Message: msg, Program: p.Path}
	}
	out := stdout.Bytes()
	if len(out) != 4+8+8+total || le.Uint32(out) != 0x3148534f {
		return nil, &ExecError{Kernel: p.Kernel, Lang: p.Lang, ExitCode: 0, Program: p.Path,
			Message: fmt.Sprintf("protocol error: %d bytes of output, want %d (the kernel wrote to stdout?)", len(out), 4+8+8+total)}
	}
	res := &Result{
		Elapsed:    time.Duration(le.Uint64(out[4:])),
		Workgroups: int(le.Uint64(out[12:])),
		Buffers:    make([][]byte, len(bufs)),
	}
	off := 20
	for i, b := range bufs {
		res.Buffers[i] = append([]byte(nil), out[off:off+len(b)]...)
		off += len(b)
	}
	return res, nil
}

// Run compiles src (or reuses its cached build) and runs kernel once: groups workgroups of
// workgroup lanes, buffers bufs in binding order, 32-bit parameters params. It returns every
// buffer's bytes afterwards. See Compile and Program.Run.
func Run(src string, lang Lang, kernel string, bufs [][]byte, params []uint32, groups, workgroup [3]uint32, opts Options) ([][]byte, error) {
	p, err := Compile(src, lang, kernel, len(bufs), len(params), opts)
	if err != nil {
		return nil, err
	}
	r, err := p.Run(bufs, params, groups, workgroup, opts)
	if err != nil {
		return nil, err
	}
	return r.Buffers, nil
}
