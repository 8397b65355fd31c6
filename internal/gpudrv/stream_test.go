package gpudrv

import (
	"fmt"
	"testing"
)

// TestStreamChain runs a chain of dependent launches (b0 -> b1 -> b2 -> b3, each reading the
// previous one's output) and an independent one in one Stream: one wait for all of them, the
// results of running them one by one, the counters.
func TestStreamChain(t *testing.T) {
	d, f := openFake(t)
	k := loadFake(t, d, "add")
	const n = 8
	x := make([]uint32, n)
	for i := range x {
		x[i] = uint32(100 * i)
	}
	bufs := []*Buffer{newBuffer(t, d, words(x...))}
	for i := 0; i < 4; i++ {
		b, err := d.NewBuffer(4 * n)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	before, syncs := d.Stats(), f.syncs
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for i, add := range []uint32{1, 20, 300} {
		if err := s.Launch(k, []View{bufs[i+1].Whole(), bufs[i].Whole()}, []uint32{add, n}, one, block); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Launch(k, []View{bufs[4].Whole(), bufs[0].Whole()}, []uint32{7, n}, one, block); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 4 || len(f.launches) != 0 {
		t.Fatalf("Len %d, %d launches reached the driver before Submit", s.Len(), len(f.launches))
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Fatalf("Len after Submit = %d", s.Len())
	}
	if got := f.syncs - syncs; got != 1 {
		t.Errorf("%d waits for a chain of 4 launches, want 1", got)
	}
	after := d.Stats()
	if got := (Stats{Submits: after.Submits - before.Submits, Syncs: after.Syncs - before.Syncs, Launches: after.Launches - before.Launches}); got != (Stats{Submits: 1, Syncs: 1, Launches: 4}) {
		t.Errorf("counters moved by %+v", got)
	}
	for i, v := range readWords(t, bufs[3], 0, n) {
		if v != x[i]+321 {
			t.Fatalf("chain y[%d] = %d, want %d", i, v, x[i]+321)
		}
	}
	for i, v := range readWords(t, bufs[4], 0, n) {
		if v != x[i]+7 {
			t.Fatalf("independent y[%d] = %d, want %d", i, v, x[i]+7)
		}
	}
	if got := d.Stats(); got.HostReads != after.HostReads+2 || got.HostWrites != 1 {
		t.Errorf("host copies %+v", got)
	}
	if err := s.Submit(); err != nil { // empty: nothing happens
		t.Fatal(err)
	}
	if d.Stats().Submits != after.Submits {
		t.Error("an empty Submit submitted")
	}
}

// TestStreamViews binds byte ranges of one buffer: each launch gets the buffer's address plus
// the view's offset, the kernel sees the range as its whole buffer, and bytes outside the
// ranges it writes keep their values.
func TestStreamViews(t *testing.T) {
	d, f := openFake(t)
	k := loadFake(t, d, "add")
	const slot, slots = 64, 5 // bytes per slot: a multiple of ViewAlignment
	x := make([]uint32, slot*slots/4)
	for i := range x {
		x[i] = uint32(i)
	}
	src := newBuffer(t, d, words(x...))
	sentinel := make([]uint32, len(x))
	for i := range sentinel {
		sentinel[i] = 0xdead
	}
	dst := newBuffer(t, d, words(sentinel...))
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < slots; i++ {
		// Slot i of dst gets slot i of src plus i; only the first 3 words of a slot are written.
		if err := s.Launch(k, []View{dst.Range(i*slot, slot), src.Range(i*slot, 0)}, []uint32{uint32(i), 3}, one, block); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Submit(); err != nil {
		t.Fatal(err)
	}
	for i, c := range f.launches {
		if c.ptrs[0] != dst.Pointer()+uint64(i*slot) || c.ptrs[1] != src.Pointer()+uint64(i*slot) {
			t.Fatalf("launch %d got pointers %#x, want base+%d", i, c.ptrs, i*slot)
		}
	}
	got := readWords(t, dst, 0, len(x))
	for i, v := range got {
		want := uint32(0xdead)
		if i%(slot/4) < 3 {
			want = x[i] + uint32(i/(slot/4))
		}
		if v != want {
			t.Fatalf("word %d = %#x, want %#x", i, v, want)
		}
	}
}

// TestStreamErrors: bad views are errors naming the binding, refused launches are not queued, a
// buffer or kernel released between Launch and Submit fails the Submit before anything runs, a
// failed Submit leaves the stream empty and the device usable, and a launch that fails at
// Submit names its position and leaves nothing unwaited for.
func TestStreamErrors(t *testing.T) {
	d, f := openFake(t)
	k := loadFake(t, d, "add")
	a, _ := d.NewBuffer(256)
	b, _ := d.NewBuffer(256)
	other, _ := openFake(t)
	ob, _ := other.NewBuffer(256)
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	p := []uint32{1, 4}
	for _, c := range []struct {
		views []View
		want  string
	}{
		{[]View{a.Whole()}, `kernel "add" takes 4 parameters, got 1 buffers and 2 scalars`},
		{[]View{a.Whole(), b.Range(0, 512)}, `cuda: Stream.Launch: kernel "add": buffer 1: view [0, 0+512) outside the buffer's 256 bytes`},
		{[]View{a.Range(-16, 16), b.Whole()}, "buffer 0: view [-16, -16+16) outside"},
		{[]View{a.Range(256, 0), b.Whole()}, "buffer 0: view [256, 256+0) outside"},
		{[]View{a.Whole(), b.Range(8, 16)}, "buffer 1: view offset 8 is not a multiple of 16 bytes"},
		{[]View{{}, b.Whole()}, "buffer 0 is nil"},
		{[]View{a.Whole(), ob.Whole()}, "buffer 1 belongs to another device"},
	} {
		wantErr(t, s.Launch(k, c.views, p, one, block), c.want)
	}
	if s.Len() != 0 {
		t.Fatalf("refused launches were queued: %d", s.Len())
	}

	c, _ := d.NewBuffer(256)
	if err := s.Launch(k, []View{a.Whole(), c.Whole()}, p, one, block); err != nil {
		t.Fatal(err)
	}
	c.Release()
	wantErr(t, s.Submit(), `cuda: Stream.Submit: launch 0 (kernel "add"): buffer 1 was released`)
	if s.Len() != 0 || len(f.launches) != 0 {
		t.Fatal("a failed Submit left launches queued or enqueued some")
	}

	k2 := loadFake(t, d, "add")
	if err := s.Launch(k, []View{a.Whole(), b.Whole()}, p, one, block); err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(k2, []View{a.Whole(), b.Whole()}, p, one, block); err != nil {
		t.Fatal(err)
	}
	k2.Release()
	wantErr(t, s.Submit(), `cuda: Stream.Submit: launch 1: kernel "add" was released`)

	// A launch the driver refuses: the launches before it were enqueued; the next copy waits
	// for them first.
	bad := loadFake(t, d, "bad")
	if err := s.Launch(k, []View{a.Whole(), b.Whole()}, []uint32{5, 4}, one, block); err != nil {
		t.Fatal(err)
	}
	if err := s.Launch(bad, []View{a.Whole(), b.Whole()}, p, one, block); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.Submit(), `cuda: Stream.Submit: launch 1 (kernel "bad"): Launch: FAKE_1 (1)`)
	if got := readWords(t, a, 0, 1); got[0] != 5 {
		t.Fatalf("the launch before the failed one gave %v", got)
	}
	if err := s.Launch(k, []View{a.Whole(), b.Whole()}, p, one, block); err != nil {
		t.Fatal(err)
	}
	if err := s.Submit(); err != nil {
		t.Fatalf("the device is not usable after a failed Submit: %v", err)
	}
}

// TestStreamTimed measures every launch of a stream with events.
func TestStreamTimed(t *testing.T) {
	d, _ := openFake(t)
	k := loadFake(t, d, "add")
	b, _ := d.NewBuffer(64)
	for round := 0; round < 2; round++ { // the second reuses the events
		s, err := d.NewStream(true)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := s.Launch(k, []View{b.Whole(), b.Whole()}, []uint32{1, 16}, one, block); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Submit(); err != nil {
			t.Fatal(err)
		}
		ts := s.Times()
		if len(ts) != 3 {
			t.Fatalf("%d times, want 3", len(ts))
		}
		for i, x := range ts {
			if x != 250000 {
				t.Errorf("launch %d took %v, want 250µs", i, x)
			}
		}
		if len(d.timing) != 4 {
			t.Fatalf("%d timing events, want 4", len(d.timing))
		}
	}
	s, _ := d.NewStream(true)
	for i := 0; i < MaxTimedLaunches; i++ {
		if err := s.Launch(k, []View{b.Whole(), b.Whole()}, []uint32{1, 1}, one, one); err != nil {
			t.Fatal(err)
		}
	}
	wantErr(t, s.Launch(k, []View{b.Whole(), b.Whole()}, []uint32{1, 1}, one, one), fmt.Sprintf("at most %d launches", MaxTimedLaunches))
	s.Reset()
	if s.Len() != 0 {
		t.Fatal("Reset kept launches")
	}
}

// TestConcurrent uses one device from several goroutines, each with its own buffers and stream:
// the device serializes them (run with -race).
func TestConcurrent(t *testing.T) {
	d, _ := openFake(t)
	k := loadFake(t, d, "add")
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			errs <- func() error {
				b, err := d.NewBuffer(64)
				if err != nil {
					return err
				}
				defer b.Release()
				s, err := d.NewStream(g%2 == 0)
				if err != nil {
					return err
				}
				for i := 0; i < 20; i++ {
					if err := s.Launch(k, []View{b.Range(0, 32), b.Range(32, 0)}, []uint32{1, 8}, one, block); err != nil {
						return err
					}
					if err := s.Launch(k, []View{b.Range(32, 0), b.Range(0, 32)}, []uint32{1, 8}, one, block); err != nil {
						return err
					}
					if err := s.Submit(); err != nil {
						return err
					}
				}
				got := make([]byte, 4)
				if err := b.Read(0, got); err != nil {
					return err
				}
				if v := uint32(got[0]); v != 39 {
					return fmt.Errorf("goroutine %d: %d after 40 chained +1s", g, v)
				}
				return nil
			}()
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if s := d.Stats(); s.Submits != 80 || s.Launches != 160 {
		t.Errorf("stats %+v", s)
	}
}
