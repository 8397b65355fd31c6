package native

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/klauspost/cpuid/v2"

	"github.com/onesource-go/onesource/internal/cbuild"
	"github.com/onesource-go/onesource/internal/dynlib"
)

// formatVersion changes when the emitted C, its ABI with run.go or the build flags change in a
// way the source text does not show (it is part of the cache key).
const formatVersion = "native-1"

// CompilerEnv names the C compiler to use instead of the first of compilerNames found on PATH.
const CompilerEnv = "ONESOURCE_NATIVE_CC"

// compilerNames are the C compilers tried, in order: clang first (its code for the lockstep
// vectors was the faster, see the package documentation), then gcc.
var compilerNames = []string{"clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "gcc", "cc"}

// compiler is the C compiler the backend builds with.
func compiler() (*cbuild.Compiler, error) {
	names := compilerNames
	if env := os.Getenv(CompilerEnv); env != "" {
		names = []string{env}
	}
	c, err := cbuild.FindCompiler(names...)
	if err != nil {
		return nil, fmt.Errorf("%w: native CPU code needs a C compiler (clang or gcc); none of %s found on PATH (set %s to choose one)",
			ErrUnavailable, strings.Join(names, ", "), CompilerEnv)
	}
	return c, nil
}

// Available reports whether the backend can run here: a C compiler on PATH and a platform where
// Go loads shared objects without cgo. The error wraps ErrUnavailable and says why not.
func Available() error {
	if !dynlib.CanLoad {
		return fmt.Errorf("%w: native CPU code: this platform cannot load a shared object without cgo", ErrUnavailable)
	}
	_, err := compiler()
	return err
}

// Compiler describes the compiler the backend builds with ("clang-16 (Debian clang version
// 16.0.6 ...)"), or says why there is none.
func Compiler() (string, error) {
	c, err := compiler()
	if err != nil {
		return "", err
	}
	return c.Name(), nil
}

// Flags are the compiler flags every kernel is built with: the numeric contract (no contraction
// into FMA, no fast math; math functions without errno so that sqrt stays one instruction),
// wrapping integers, bit casts through memory, and code for this machine's CPU (its vector
// width). -Wall -Wextra: the emitted C compiles without a warning (the tests hold it to that).
var Flags = []string{
	"-std=c11", "-O2", "-march=native", "-fPIC", "-shared",
	"-ffp-contract=off", "-fno-fast-math", "-fno-math-errno",
	"-fwrapv", "-fno-strict-aliasing",
	"-Wall", "-Wextra",
}

// cpuName is the processor's name as cpuid reads it.
func cpuName() string {
	if n := strings.TrimSpace(cpuid.CPU.BrandName); n != "" {
		return n
	}
	return "unknown CPU"
}

// cpuKey identifies the CPU for the cache key: -march=native makes code for this one.
func cpuKey() string {
	return fmt.Sprintf("%s|%s|%d.%d.%d|%s", cpuid.CPU.BrandName, cpuid.CPU.VendorString, cpuid.CPU.Family, cpuid.CPU.Model, cpuid.CPU.Stepping,
		strings.Join(cpuid.CPU.FeatureSet(), ","))
}

// buildStats counts the kernels built and found built (BuildStats).
var buildStats cbuild.Stats

// BuildStats returns how many kernels this process compiled and how many it found already
// built in the cache: what a second start reuses.
func BuildStats() (built, cached int) { return buildStats.Counts() }

// buildKey names the cache entry of src built by cc.
func buildKey(cc *cbuild.Compiler, src string) string {
	return cbuild.Key(formatVersion, cc.ID(), fmt.Sprintf("%q", Flags), cpuKey(), src)
}

// library is a loaded shared object of one kernel.
type library struct {
	path      string
	run       uintptr // int32_t os_run(const uint64_t*, uint64_t*, void*)
	frameSize int
}

var (
	libMu sync.Mutex
	libs  = map[string]*library{} // by path: a shared object is loaded once and never unloaded
)

// build compiles src (or finds it built) and loads it.
func build(kernel, src string) (*library, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	cc, _ := compiler()
	key := buildKey(cc, src)
	args := append(append([]string{}, Flags...), "-o", "kernel.so", "kernel.c", "-lm")
	job := cbuild.Job{
		Root: cbuild.Root("native"), Fallback: filepath.Join(os.TempDir(), "onesource-native"),
		Key: key, Output: "kernel.so", Compiler: cc, Args: args, Stats: &buildStats,
		Write: func(dir string) error { return os.WriteFile(filepath.Join(dir, "kernel.c"), []byte(src), 0o644) },
	}
	for attempt := 0; ; attempt++ {
		path, err := cbuild.Build(job)
		if err != nil {
			var be *cbuild.Error
			if errors.As(err, &be) {
				return nil, fmt.Errorf("native: kernel %s: %s failed compiling %s: %v\n%s", kernel, filepath.Base(cc.Path),
					filepath.Join(be.Dir, "kernel.c"), be.Err, be.Output)
			}
			return nil, fmt.Errorf("native: kernel %s: %w", kernel, err)
		}
		lib, err := load(path)
		if err == nil || attempt > 0 {
			return lib, err
		}
		// A cached shared object that does not load (damaged, or written by something else) is
		// not trusted: it is removed, with a warning, and built again once.
		fmt.Fprintf(os.Stderr, "native: warning: ignoring the cached %s (%v); building it again\n", path, err)
		if rerr := os.RemoveAll(filepath.Dir(path)); rerr != nil {
			return nil, fmt.Errorf("native: kernel %s: %w (and removing the entry: %v)", kernel, err, rerr)
		}
	}
}

func load(path string) (*library, error) {
	libMu.Lock()
	defer libMu.Unlock()
	if l, ok := libs[path]; ok {
		return l, nil
	}
	h, err := dynlib.Open(path)
	if err != nil {
		return nil, fmt.Errorf("native: loading %s: %w", path, err)
	}
	l := &library{path: path, run: dynlib.Symbol(h, "os_run")}
	size := dynlib.Symbol(h, "os_frame_size")
	if l.run == 0 || size == 0 {
		return nil, fmt.Errorf("native: %s lacks os_run or os_frame_size (a foreign file in the cache?)", path)
	}
	l.frameSize = int(dynlib.Call(size))
	libs[path] = l
	return l, nil
}

// CompilerOrWhy is the compiler's description (Compiler), or why there is none.
func CompilerOrWhy() string {
	c, err := Compiler()
	if err != nil {
		return err.Error()
	}
	return c
}
