package vulkan

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"
)

// spinGLSL spins until the host writes 1 to the stop flag, then writes 7: over 8192 workgroups,
// a dispatch that would run for seconds to minutes on its own (5e8 atomic adds on one word).
const spinGLSL = `#version 450
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) coherent volatile buffer Flag { uint stop; uint spins; };
layout(std430, set = 0, binding = 1) writeonly buffer Out { uint y[]; };
void main() {
	// llvmpipe ends a loop after 65535 iterations: the dispatch is long by its many workgroups
	// (run with 8192 of them), each spinning up to 60000 times.
	for (uint j = 0u; j < 60000u && atomicCompSwap(stop, 1u, 1u) != 1u; j++) {
		atomicAdd(spins, 1u);
	}
	y[0] = 7u;
}
`

// TestRunContextAbandons: a dispatch that does not finish can be abandoned with a deadline; the
// call returns with the context's error at once, the work goes on, and the next use of the device
// waits for it (here, once the host lets the kernel finish) and works.
func TestRunContextAbandons(t *testing.T) {
	d := openDevice(t, Options{})
	m := &Module{Name: "main", Words: compileGLSL(t, spinGLSL),
		Bindings: []Binding{{Name: "flag", ElemSize: 4}, {Name: "y", ElemSize: 4}}, WorkgroupSize: [3]uint32{1, 1, 1}}
	p, err := d.Pipeline(m)
	if err != nil {
		t.Fatal(err)
	}
	flag, _ := d.NewBuffer(8)
	out, _ := d.NewBuffer(4)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = d.RunContext(ctx, p, []*Buffer{flag, out}, nil, [3]uint32{8192, 1, 1})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "next use waits") {
		g := make([]byte, 4)
		out.Read(0, g)
		f := make([]byte, 8)
		flag.Read(0, f)
		t.Fatalf("RunContext of a spinning kernel: %v (y %v flag %v after %v)", err, g, f, time.Since(start))
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("RunContext returned only after %v", waited)
	}
	// Let the kernel finish; the next call waits for it, then runs.
	if err := flag.Write(0, binary.LittleEndian.AppendUint32(nil, 1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(p, []*Buffer{flag, out}, nil, [3]uint32{1, 1, 1}); err != nil {
		t.Fatalf("the device after an abandoned wait: %v", err)
	}
	got := make([]byte, 4)
	if err := out.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(got) != 7 {
		t.Fatalf("y = %d, want 7", binary.LittleEndian.Uint32(got))
	}
	// A context already done abandons a stream's wait too.
	s, _ := d.NewStream(false)
	if err := s.Dispatch(p, []View{flag.Whole(), out.Whole()}, nil, [3]uint32{1, 1, 1}); err != nil {
		t.Fatal(err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if err := s.SubmitContext(done); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("SubmitContext with a cancelled context: %v", err)
	}
}

// TestNextCallHonoursItsContext: after a wait was abandoned, the next RunContext and
// BenchContext wait for the work left in flight under their own contexts: each returns at its
// deadline while the spinning dispatch still runs (they waited with context.Background(),
// holding the device's lock, until the old work ended: up to the 10-minute fence timeout).
func TestNextCallHonoursItsContext(t *testing.T) {
	d := openDevice(t, Options{})
	m := &Module{Name: "main", Words: compileGLSL(t, spinGLSL),
		Bindings: []Binding{{Name: "flag", ElemSize: 4}, {Name: "y", ElemSize: 4}}, WorkgroupSize: [3]uint32{1, 1, 1}}
	p, err := d.Pipeline(m)
	if err != nil {
		t.Fatal(err)
	}
	flag, _ := d.NewBuffer(8)
	out, _ := d.NewBuffer(4)
	defer flag.Write(0, binary.LittleEndian.AppendUint32(nil, 1)) // let the spin end whatever happens
	short := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), 300*time.Millisecond)
	}
	ctx, cancel := short()
	err = d.RunContext(ctx, p, []*Buffer{flag, out}, nil, [3]uint32{8192, 1, 1})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the spinning dispatch: %v", err)
	}
	for _, call := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"RunContext", func(ctx context.Context) error {
			return d.RunContext(ctx, p, []*Buffer{flag, out}, nil, [3]uint32{1, 1, 1})
		}},
		{"BenchContext", func(ctx context.Context) error {
			_, err := d.BenchContext(ctx, p, []*Buffer{flag, out}, nil, [3]uint32{1, 1, 1}, 1, 1)
			return err
		}},
	} {
		ctx, cancel := short()
		start := time.Now()
		err := call.run(ctx)
		cancel()
		if waited := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || waited > 10*time.Second {
			t.Errorf("%s after an abandoned wait: %v after %v, want its own deadline's error at once", call.name, err, waited)
		}
	}
	if err := flag.Write(0, binary.LittleEndian.AppendUint32(nil, 1)); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(p, []*Buffer{flag, out}, nil, [3]uint32{1, 1, 1}); err != nil {
		t.Fatalf("the device once the spin ends: %v", err)
	}
}
