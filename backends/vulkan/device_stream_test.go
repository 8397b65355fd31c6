package vulkan

import (
	"math/rand"
	"strings"
	"testing"
)

// TestStreamChain runs a chain of dependent dispatches (x -> a -> b -> c, each reading the
// previous one's output) plus an independent one in one Stream: one submission, the results of
// running them one by one, a barrier exactly where a dispatch reads what an earlier one wrote.
func TestStreamChain(t *testing.T) {
	d := openDevice(t, Options{})
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	x := make([]float32, n)
	rng := rand.New(rand.NewSource(1))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	bufs := make([]*Buffer, 5)
	for i := range bufs {
		if bufs[i], err = d.NewBuffer(4 * n); err != nil {
			t.Fatal(err)
		}
	}
	if err := bufs[0].Write(0, f32bytes(x)); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	groups := [3]uint32{(n + 63) / 64, 1, 1}
	scales := []float32{2, 0.5, -1}
	for i, sc := range scales {
		if err := s.Dispatch(p, []View{bufs[i].Whole(), bufs[i+1].Whole()}, sharedPush(n, sc), groups); err != nil {
			t.Fatal(err)
		}
	}
	// Independent of the chain's last step: reads x, writes its own buffer.
	if err := s.Dispatch(p, []View{bufs[0].Whole(), bufs[4].Whole()}, sharedPush(n, 3), groups); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 {
		t.Fatalf("Len = %d, want 4", s.Len())
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Fatalf("Len after Submit = %d", s.Len())
	}
	after := d.Stats()
	if got := after.Submits - before.Submits; got != 1 {
		t.Errorf("%d submissions, want 1", got)
	}
	if got := after.Dispatches - before.Dispatches; got != 4 {
		t.Errorf("%d dispatches, want 4", got)
	}
	// a->b and b->c depend on the previous dispatch; the last one reads x, which nobody wrote
	// since the last barrier, and writes a buffer nobody read.
	if got := after.Barriers - before.Barriers; got != 2 {
		t.Errorf("%d barriers, want 2", got)
	}
	want := x
	for _, sc := range scales {
		want = sharedWant(want, n, sc, n)
	}
	got := make([]byte, 4*n)
	if err := bufs[3].Read(0, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32(got) {
		if v != want[i] {
			t.Fatalf("chain y[%d] = %v, want %v", i, v, want[i])
		}
	}
	want4 := sharedWant(x, n, 3, n)
	if err := bufs[4].Read(0, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesF32(got) {
		if v != want4[i] {
			t.Fatalf("independent y[%d] = %v, want %v", i, v, want4[i])
		}
	}
	if err := s.Submit(); err != nil { // empty: nothing happens
		t.Fatal(err)
	}
	if d.Stats().Submits != after.Submits {
		t.Error("an empty Submit submitted")
	}
}

// TestStreamViews binds byte ranges of one buffer: the kernel sees each range as its whole
// buffer, and bytes outside the written range keep their values. Many distinct views of one
// pipeline in one stream (more descriptor sets than a pipeline keeps between submissions) all
// stay valid until the stream is done.
func TestStreamViews(t *testing.T) {
	d := openDevice(t, Options{})
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	align := int(max(d.Info().MinStorageBufferOffsetAlignment, 4))
	const n = 64 // values per slot
	slot := ((4*n + align - 1) / align) * align
	slots := descriptorSetsPerPool*maxDescriptorPools + 10
	src, err := d.NewBuffer(slot * slots)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := d.NewBuffer(slot * slots)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, slot*slots/4)
	for i := range x {
		x[i] = float32(i%977) - 400
	}
	if err := src.Write(0, f32bytes(x)); err != nil {
		t.Fatal(err)
	}
	sentinel := make([]float32, len(x))
	for i := range sentinel {
		sentinel[i] = -7
	}
	if err := dst.Write(0, f32bytes(sentinel)); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < slots; k++ {
		// Slot k of dst gets slot k of src, scaled by k; only the first n-1 values are written.
		if err := s.Dispatch(p, []View{src.Range(k*slot, 4*n), dst.Range(k*slot, 4*n)}, sharedPush(n-1, float32(k)), [3]uint32{1, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, dst.Size())
	if err := dst.Read(0, got); err != nil {
		t.Fatal(err)
	}
	y := bytesF32(got)
	for k := 0; k < slots; k++ {
		base := k * slot / 4
		want := sharedWant(x[base:base+n], n-1, float32(k), n)
		for i := 0; i < slot/4; i++ {
			w := float32(-7)
			if i < n-1 {
				w = want[i]
			}
			if y[base+i] != w {
				t.Fatalf("slot %d value %d = %v, want %v", k, i, y[base+i], w)
			}
		}
	}
}

// TestStreamErrors: a bad view, a misaligned offset, a buffer released between Dispatch and
// Submit, and a pipeline of another device are errors that name what is wrong, and a failed
// Submit leaves the stream empty and the device usable.
func TestStreamErrors(t *testing.T) {
	d := openDevice(t, Options{})
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.NewBuffer(256)
	b, _ := d.NewBuffer(256)
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	push := sharedPush(64, 1)
	one := [3]uint32{1, 1, 1}
	for _, c := range []struct {
		views []View
		want  string
	}{
		{[]View{a.Whole()}, "has 2 buffer bindings, got 1"},
		{[]View{a.Range(0, 512), b.Whole()}, "outside the buffer's 256 bytes"},
		{[]View{a.Range(-4, 4), b.Whole()}, "outside"},
		{[]View{{}, b.Whole()}, "is nil"},
	} {
		if err := s.Dispatch(p, c.views, push, one); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Dispatch(%v): %v, want an error containing %q", c.views, err, c.want)
		}
	}
	if al := d.Info().MinStorageBufferOffsetAlignment; al > 1 {
		if err := s.Dispatch(p, []View{a.Range(int(al)/2, 64), b.Whole()}, push, one); err == nil || !strings.Contains(err.Error(), "minStorageBufferOffsetAlignment") {
			t.Errorf("misaligned view: %v", err)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("failed dispatches were queued: %d", s.Len())
	}
	c, _ := d.NewBuffer(256)
	if err := s.Dispatch(p, []View{a.Whole(), c.Whole()}, push, one); err != nil {
		t.Fatal(err)
	}
	c.Release()
	if err := s.Submit(); err == nil || !strings.Contains(err.Error(), "was released") {
		t.Errorf("Submit with a released buffer: %v", err)
	}
	if s.Len() != 0 {
		t.Error("a failed Submit left dispatches queued")
	}
	if err := s.Dispatch(p, []View{a.Whole(), b.Whole()}, push, one); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(); err != nil {
		t.Fatalf("the device is not usable after a failed Submit: %v", err)
	}
}

// TestStreamTimed measures every dispatch of a stream.
func TestStreamTimed(t *testing.T) {
	d := openDevice(t, Options{})
	if !d.Info().Timestamps {
		t.Skip("the device has no timestamps")
	}
	p, err := d.Pipeline(sharedModule(t))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.NewBuffer(4 << 16)
	b, _ := d.NewBuffer(4 << 16)
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := s.Dispatch(p, []View{a.Whole(), b.Whole()}, sharedPush(1<<16, 1), [3]uint32{1 << 10, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	before := d.Stats().Barriers
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().Barriers - before; got != 2 {
		t.Errorf("a timed stream of 3 dispatches recorded %d barriers, want 2", got)
	}
	ts := s.Times()
	if len(ts) != 3 {
		t.Fatalf("%d times, want 3", len(ts))
	}
	for i, x := range ts {
		if x <= 0 {
			t.Errorf("dispatch %d took %v", i, x)
		}
	}
}
