package gpudrv

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unsafe"
)

// fakeDriver is a Driver in Go for the tests: device memory is Go memory at made-up addresses,
// a module is a text naming its kernels ("fake:add,boom"), and launches and event records are
// queued on the stream and run only when the stream or an event is waited for, as a GPU runs
// them later. It refuses what a real driver would (a copy while launches are queued and not
// waited for, since the shared code promises copies see finished work; an address outside every
// allocation) and counts what the tests check.
type fakeDriver struct {
	mem      map[uint64][]byte // allocation base -> bytes
	next     uint64
	handles  uintptr
	modules  map[uintptr][]string
	funcs    map[uintptr]string
	events   map[uintptr]float32 // event -> the clock (ms) when it ran
	streams  map[uintptr]bool
	queue    []func() error
	clock    float32
	released bool
	current  bool

	syncs    int        // StreamSync and EventSync calls
	launches []fakeCall // every launch, as enqueued
	fail     map[string]error
}

// fakeCall is a launch as the driver saw it.
type fakeCall struct {
	kernel  string
	ptrs    []uint64
	scalars []uint32
}

// fakeKernels are the kernels a fake module may name, with their parameter sizes: add(out, in,
// k, n) sets out[i] = in[i] + k for the first n 32-bit words; boom fails with
// CUDA_ERROR_LAUNCH_FAILED (719); bad fails with CUDA_ERROR_INVALID_VALUE (1); empty takes
// nothing; anon is add without parameter sizes.
var fakeKernels = map[string][]int{"add": {8, 8, 4, 4}, "boom": {}, "bad": {8, 8, 4, 4}, "empty": {}, "anon": nil}

func newFake() *fakeDriver {
	return &fakeDriver{mem: map[uint64][]byte{}, next: 0x10000, modules: map[uintptr][]string{}, funcs: map[uintptr]string{},
		events: map[uintptr]float32{}, streams: map[uintptr]bool{}, fail: map[string]error{}}
}

func fakeErr(call string, code int) error {
	return &ResultError{Call: call, Code: code, Name: fmt.Sprintf("FAKE_%d", code)}
}

func (f *fakeDriver) handle() uintptr { f.handles++; return f.handles }

func (f *fakeDriver) need(call string) error {
	if err := f.fail[call]; err != nil {
		return err
	}
	if !f.current {
		return fakeErr(call, 201) // CUDA_ERROR_INVALID_CONTEXT
	}
	return nil
}

// bytesAt returns the n bytes at device address p, or nil when they are not inside one
// allocation.
func (f *fakeDriver) bytesAt(p uint64, n int) []byte {
	for base, m := range f.mem {
		if p >= base && p+uint64(n) <= base+uint64(len(m)) {
			return m[p-base : p-base+uint64(n)]
		}
	}
	return nil
}

func (f *fakeDriver) Current() error {
	if err := f.fail["Current"]; err != nil {
		return err
	}
	f.current = true
	return nil
}

func (f *fakeDriver) Alloc(size int) (uint64, error) {
	if err := f.need("Alloc"); err != nil {
		return 0, err
	}
	p := f.next
	f.next += uint64(size+0xffff) &^ 0xffff
	m := make([]byte, size)
	for i := range m {
		m[i] = 0xAB // garbage: NewBuffer must clear it
	}
	f.mem[p] = m
	return p, nil
}

func (f *fakeDriver) Free(p uint64) error {
	if _, ok := f.mem[p]; !ok {
		return fakeErr("Free", 1)
	}
	delete(f.mem, p)
	return nil
}

func (f *fakeDriver) Zero(p uint64, n int) error {
	b := f.bytesAt(p, n)
	if b == nil {
		return fakeErr("Zero", 1)
	}
	clear(b)
	return nil
}

func (f *fakeDriver) CopyHtoD(dst uint64, src []byte) error {
	if err := f.need("CopyHtoD"); err != nil {
		return err
	}
	if len(f.queue) > 0 {
		return fakeErr("CopyHtoD (launches not waited for)", 1)
	}
	b := f.bytesAt(dst, len(src))
	if b == nil || len(src) == 0 {
		return fakeErr("CopyHtoD", 1)
	}
	copy(b, src)
	return nil
}

func (f *fakeDriver) CopyDtoH(dst []byte, src uint64) error {
	if err := f.need("CopyDtoH"); err != nil {
		return err
	}
	if len(f.queue) > 0 {
		return fakeErr("CopyDtoH (launches not waited for)", 1)
	}
	b := f.bytesAt(src, len(dst))
	if b == nil || len(dst) == 0 {
		return fakeErr("CopyDtoH", 1)
	}
	copy(dst, b)
	return nil
}

func (f *fakeDriver) LoadModule(image []byte) (uintptr, error) {
	if err := f.need("LoadModule"); err != nil {
		return 0, err
	}
	s, ok := strings.CutPrefix(string(image), "fake:")
	if !ok {
		return 0, fakeErr("LoadModule", 200) // CUDA_ERROR_INVALID_IMAGE
	}
	h := f.handle()
	f.modules[h] = strings.Split(s, ",")
	return h, nil
}

func (f *fakeDriver) UnloadModule(m uintptr) error {
	if _, ok := f.modules[m]; !ok {
		return fakeErr("UnloadModule", 400)
	}
	delete(f.modules, m)
	return nil
}

func (f *fakeDriver) Function(m uintptr, name string) (uintptr, error) {
	for _, k := range f.modules[m] {
		if _, known := fakeKernels[name]; k == name && known {
			h := f.handle()
			f.funcs[h] = name
			return h, nil
		}
	}
	return 0, fakeErr("Function", 500) // CUDA_ERROR_NOT_FOUND
}

func (f *fakeDriver) FuncInfo(fn uintptr) (FuncInfo, error) {
	if err := f.fail["FuncInfo"]; err != nil {
		return FuncInfo{}, err
	}
	name := f.funcs[fn]
	return FuncInfo{MaxThreads: 256, Registers: 16, Params: fakeKernels[name]}, nil
}

func (f *fakeDriver) Launch(fn uintptr, grid, block [3]uint32, stream uintptr, args []unsafe.Pointer) error {
	if err := f.need("Launch"); err != nil {
		return err
	}
	name, ok := f.funcs[fn]
	if !ok || !f.streams[stream] {
		return fakeErr("Launch", 400)
	}
	sizes := fakeKernels[name]
	if name == "anon" {
		sizes = fakeKernels["add"]
	}
	if len(args) != len(sizes) {
		return fakeErr("Launch (argument count)", 1)
	}
	call := fakeCall{kernel: name}
	for i, s := range sizes {
		if s == 8 {
			call.ptrs = append(call.ptrs, *(*uint64)(args[i]))
		} else {
			call.scalars = append(call.scalars, *(*uint32)(args[i]))
		}
	}
	f.launches = append(f.launches, call)
	switch name {
	case "boom":
		return fakeErr("Launch", 719)
	case "bad":
		return fakeErr("Launch", 1)
	case "empty":
		f.queue = append(f.queue, func() error { f.clock += 0.001; return nil })
		return nil
	}
	f.queue = append(f.queue, func() error {
		n := int(call.scalars[1])
		out, in := f.bytesAt(call.ptrs[0], 4*n), f.bytesAt(call.ptrs[1], 4*n)
		if out == nil || in == nil {
			return fakeErr("a kernel", 700) // CUDA_ERROR_ILLEGAL_ADDRESS
		}
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(out[4*i:], binary.LittleEndian.Uint32(in[4*i:])+call.scalars[0])
		}
		f.clock += 0.25
		return nil
	})
	return nil
}

// run runs what the stream holds.
func (f *fakeDriver) run() error {
	q := f.queue
	f.queue = nil
	for _, op := range q {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeDriver) StreamCreate() (uintptr, error) {
	if err := f.need("StreamCreate"); err != nil {
		return 0, err
	}
	h := f.handle()
	f.streams[h] = true
	return h, nil
}

func (f *fakeDriver) StreamDestroy(s uintptr) error {
	delete(f.streams, s)
	return nil
}

func (f *fakeDriver) StreamSync(s uintptr) error {
	if err := f.need("StreamSync"); err != nil {
		return err
	}
	f.syncs++
	return f.run()
}

func (f *fakeDriver) EventCreate() (uintptr, error) {
	if err := f.need("EventCreate"); err != nil {
		return 0, err
	}
	h := f.handle()
	f.events[h] = -1
	return h, nil
}

func (f *fakeDriver) EventDestroy(e uintptr) error {
	delete(f.events, e)
	return nil
}

func (f *fakeDriver) EventRecord(e, s uintptr) error {
	if _, ok := f.events[e]; !ok || !f.streams[s] {
		return fakeErr("EventRecord", 400)
	}
	f.queue = append(f.queue, func() error { f.events[e] = f.clock; return nil })
	return nil
}

func (f *fakeDriver) EventSync(e uintptr) error {
	f.syncs++
	return f.run()
}

func (f *fakeDriver) EventElapsed(start, end uintptr) (float32, error) {
	a, b := f.events[start], f.events[end]
	if a < 0 || b < 0 {
		return 0, fakeErr("EventElapsed (not recorded)", 600)
	}
	return b - a, nil
}

func (f *fakeDriver) Release() { f.released = true }

// live says what the fake still holds, for the leak checks.
func (f *fakeDriver) live() string {
	return fmt.Sprintf("%d allocations, %d modules, %d events, %d streams, released %v", len(f.mem), len(f.modules), len(f.events), len(f.streams), f.released)
}
