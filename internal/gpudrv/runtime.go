package gpudrv

import (
	"maps"
	"strings"
)

// Lib returns l: a backend's library type, which embeds *Library, satisfies Loaded through it.
func (l *Library) Lib() *Library { return l }

// Loaded is a backend's loaded library: a type that embeds *Library and adds the functions and
// facts only that backend has.
type Loaded interface{ Lib() *Library }

// Runtime loads one backend library (a driver, a run-time compiler) once per choice of library:
// the candidates are read on every call, so a changed environment variable takes effect, and a
// library once loaded (or refused) is remembered. The backend supplies its names and two hooks.
type Runtime[T Loaded] struct {
	Backend string // "cuda", "hip"
	What    string // the library in messages: "CUDA driver library", "HIPRTC library"
	Env     string // the environment variable that names the library
	// Candidates returns the libraries to try and where the list came from (Env or "default").
	Candidates func() ([]string, string)
	Symbols    Symbols
	// New returns an empty T (its *Library not yet set).
	New func() T
	// Init runs once the library is loaded: it stores lib in the T (whose *Library New left nil)
	// and reads versions and initialises. An error refuses the library; a library that loads but
	// cannot run (no device) sets Library.InitErr instead.
	Init func(v T, lib *Library) error
	// NoDevice reports the device-count results that mean there is no device.
	NoDevice func(code int) bool

	memo Memo[T]
}

// Key is the choice of library Load would load now.
func (r *Runtime[T]) Key() string {
	names, _ := r.Candidates()
	return strings.Join(names, "\x00")
}

// Load loads and initialises the library (see Runtime), once per Key.
func (r *Runtime[T]) Load() (T, error) {
	names, source := r.Candidates()
	return r.memo.Get(strings.Join(names, "\x00"), func() (T, error) {
		v := r.New()
		lib, err := OpenLibrary(r.Backend, r.What, names, source, r.Env, r.Symbols)
		if err != nil {
			return v, err
		}
		return v, r.Init(v, lib)
	})
}

// Ready returns the library after a successful initialisation, or why it cannot run.
func (r *Runtime[T]) Ready() (T, error) {
	v, err := r.Load()
	if err == nil && v.Lib().InitErr != nil {
		err = v.Lib().InitErr
	}
	return v, err
}

// Count returns the number of devices of the initialised library; none is an unavailable error.
func (r *Runtime[T]) Count() (int, error) {
	v, err := r.Ready()
	if err != nil {
		return 0, err
	}
	return v.Lib().DeviceCount(r.NoDevice)
}

// Device returns the initialised library for opening device index, after checking that the
// device exists.
func (r *Runtime[T]) Device(index int) (T, error) {
	v, err := r.Ready()
	if err == nil {
		err = CheckIndex(r.Backend, r.Count, index)
	}
	return v, err
}

// availability remembers Available's answers, by the driver's and the compiler's keys.
var availability Memo[struct{}]

// Available reports whether a backend can run kernels here: its driver library loads and
// initialises, it has a device, and its run-time compiler loads. The answer is remembered per
// choice of libraries.
func Available[D, C Loaded](drv *Runtime[D], rtc *Runtime[C]) error {
	key := drv.Backend + "\x01" + drv.Key() + "\x01" + rtc.Key()
	_, err := availability.Get(key, func() (struct{}, error) {
		if _, err := drv.Count(); err != nil {
			return struct{}{}, err
		}
		_, err := rtc.Load()
		return struct{}{}, err
	})
	return err
}

// LoadBoth loads a backend's driver and compiler libraries for a report (cuda.Libraries,
// hip.Libraries): err is the driver's error; the compiler's is cerr, apart; symbols merges what
// both resolved.
func LoadBoth[D, C Loaded](drv *Runtime[D], rtc *Runtime[C]) (d D, c C, symbols map[string]string, cerr, err error) {
	if d, err = drv.Load(); err != nil {
		return d, c, nil, nil, err
	}
	symbols = maps.Clone(d.Lib().Symbols)
	if c, cerr = rtc.Load(); cerr == nil {
		maps.Copy(symbols, c.Lib().Symbols)
	}
	return d, c, symbols, cerr, nil
}

// OpenDevice opens a backend's device the way its callers choose it (package engine, package
// prebuilt): with emulated, the emulated device (openEmulated); otherwise, once available says
// the runtime can be used, device index (open).
func OpenDevice[D any](emulated bool, index int, openEmulated func() (D, error), available func() error, open func(int) (D, error)) (D, error) {
	if emulated {
		return openEmulated()
	}
	if err := available(); err != nil {
		var zero D
		return zero, err
	}
	return open(index)
}
