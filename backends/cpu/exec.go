package cpu

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/onesource-go/onesource/ir"
)

// frame is one worker's state: the values of the workgroup it runs, which invocations run the
// current instruction (exec) and which have not returned (alive), the scratch masks of the ifs
// and loops, the workgroup's shared arrays, and the dispatch's buffers.
type frame struct {
	c      *code
	w      []uint32
	d      []uint64
	exec   []uint64
	alive  []uint64
	full   []uint64 // every invocation
	m      []uint64
	sh     [][]byte
	bufs   [][]byte
	blen   []int
	lo, hi int // the first running invocation and one past the last (setRange)
	wg     [3]uint32
	groups [3]uint32
	cancel *atomic.Bool
}

// errCanceled is the panic a loop raises when the dispatch is canceled.
var errCanceled = errors.New("cpu: canceled")

func (f *frame) idle() bool {
	for _, w := range f.exec {
		if w != 0 {
			return false
		}
	}
	return true
}

// setRange finds lo and hi after exec changed.
func (f *frame) setRange() {
	f.lo, f.hi = 0, 0
	for i, w := range f.exec {
		if w != 0 {
			f.lo = i<<6 | bits.TrailingZeros64(w)
			break
		}
	}
	for i := len(f.exec) - 1; i >= 0; i-- {
		if w := f.exec[i]; w != 0 {
			f.hi = i<<6 + 64 - bits.LeadingZeros64(w)
			break
		}
	}
}

func (f *frame) isFull() bool {
	for i, w := range f.exec {
		if w != f.full[i] {
			return false
		}
	}
	return true
}

func (f *frame) mask(i int) []uint64 {
	nw := len(f.exec)
	return f.m[i*nw : i*nw+nw]
}

// newFrame makes a frame with its constants and per-invocation builtins in place.
func (c *code) newFrame() *frame {
	f := &frame{c: c, w: make([]uint32, c.wsize), d: make([]uint64, c.dsize),
		exec: make([]uint64, c.nw), alive: make([]uint64, c.nw), full: make([]uint64, c.nw),
		m: make([]uint64, c.nmasks*c.nw)}
	for l := 0; l < c.L; l++ {
		f.full[l>>6] |= 1 << uint(l&63)
	}
	for _, s := range c.shared {
		f.sh = append(f.sh, make([]byte, s))
	}
	for _, x := range c.init.w32 {
		f.w[x.off] = x.val
	}
	for _, x := range c.init.w64 {
		f.d[x.off] = x.val
	}
	wg := c.k.WorkgroupSize
	for _, x := range c.init.lanes {
		for l := 0; l < c.L; l++ {
			var v uint32
			switch x.b {
			case ir.LocalID:
				v = localID(uint32(l), wg, x.dim)
			case ir.LocalIndex:
				v = uint32(l)
			case ir.SubgroupLane:
				v = uint32(l % c.S)
			case ir.SubgroupID:
				v = uint32(l / c.S)
			}
			f.w[x.off+l] = v
		}
	}
	return f
}

func localID(l uint32, wg [3]uint32, dim int) uint32 {
	switch dim {
	case 0:
		return l % wg[0]
	case 1:
		return l / wg[0] % wg[1]
	}
	return l / (wg[0] * wg[1])
}

// run is Program.RunContext.
func (c *code) run(ctx context.Context, workers int, bufs [][]byte, params []uint32, groups [3]uint32) error {
	k := c.k
	if len(bufs) != len(c.bufs) {
		return fmt.Errorf("cpu: kernel %s: %d buffers given, the kernel has %d", k.Name, len(bufs), len(c.bufs))
	}
	if len(params) != c.params {
		return fmt.Errorf("cpu: kernel %s: %d parameters given, the kernel has %d", k.Name, len(params), c.params)
	}
	if groups[0] == 0 || groups[1] == 0 || groups[2] == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	orig := bufs
	bufs = append([][]byte(nil), bufs...)
	blen := make([]int, len(bufs))
	var copied []int
	for i, b := range bufs {
		blen[i] = len(b) / c.bufs[i].stride
		if c.bufs[i].atomic && len(b) >= 4 && uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
			// Atomics need aligned words: run on an aligned copy.
			w := make([]uint32, (len(b)+3)/4)
			a := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(b))
			copy(a, b)
			bufs[i] = a
			copied = append(copied, i)
		}
	}
	total := uint64(groups[0]) * uint64(groups[1]) * uint64(groups[2])
	if uint64(workers) > total {
		workers = int(total)
	}
	workers = max(workers, 1)
	var cancel atomic.Bool
	stop := context.AfterFunc(ctx, func() { cancel.Store(true) })
	defer stop()
	var next atomic.Uint64
	var failAt atomic.Uint64 // the lowest workgroup that failed; none past it is started
	failAt.Store(math.MaxUint64)
	type failure struct {
		g   uint64
		err error
	}
	fails := make([]failure, workers)
	work := func(wi int) {
		f := c.newFrame()
		f.bufs, f.blen, f.groups, f.cancel = bufs, blen, groups, &cancel
		c.dispatchInit(f, params)
		fails[wi].g = math.MaxUint64
		for {
			g := next.Add(1) - 1
			if g >= total || g > failAt.Load() || cancel.Load() {
				return
			}
			if err := f.group(g); err != nil {
				fails[wi] = failure{g, err}
				for {
					cur := failAt.Load()
					if g >= cur || failAt.CompareAndSwap(cur, g) {
						break
					}
				}
				return
			}
		}
	}
	if workers == 1 {
		work(0)
	} else {
		var wg sync.WaitGroup
		for i := 0; i < workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(i)
			}()
		}
		wg.Wait()
	}
	for _, i := range copied {
		copy(orig[i], bufs[i])
	}
	first := failure{g: math.MaxUint64}
	for _, fl := range fails {
		if fl.err != nil && fl.g < first.g {
			first = fl
		}
	}
	if first.err != nil {
		if errors.Is(first.err, errCanceled) && ctx.Err() != nil {
			return ctx.Err()
		}
		return first.err
	}
	if cancel.Load() && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// dispatchInit fills the places that hold the dispatch's parameters, buffer lengths and
// workgroup counts.
func (c *code) dispatchInit(f *frame, params []uint32) {
	for _, x := range c.init.params {
		f.w[x.off] = params[x.ref]
	}
	for _, x := range c.init.lens {
		f.w[x.off] = uint32(min(f.blen[x.ref], math.MaxUint32))
	}
	for _, x := range c.init.numWG {
		f.w[x.off] = f.groups[x.ref]
	}
}

// group runs workgroup g (x fastest, then y, then z) to its end: every invocation starts with
// its variables and the shared arrays zeroed, so no result depends on which worker ran what
// before. A panic (an out-of-bounds access, a cancellation, a fault of the executor) becomes
// the error.
func (f *frame) group(g uint64) (err error) {
	c := f.c
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case *OutOfBoundsError:
				err = e
			case error:
				if errors.Is(e, errCanceled) {
					err = e
					return
				}
				err = fmt.Errorf("cpu: kernel %s: internal error in workgroup %v: %v\n%s", c.k.Name, f.wg, e, debug.Stack())
			default:
				err = fmt.Errorf("cpu: kernel %s: internal error in workgroup %v: %v\n%s", c.k.Name, f.wg, r, debug.Stack())
			}
		}
	}()
	gx, gy := uint64(f.groups[0]), uint64(f.groups[1])
	f.wg = [3]uint32{uint32(g % gx), uint32(g / gx % gy), uint32(g / (gx * gy))}
	for _, x := range c.init.wgID {
		f.w[x.off] = f.wg[x.ref]
	}
	wgs := c.k.WorkgroupSize
	for _, x := range c.init.gID {
		base := f.wg[x.ref] * wgs[x.ref]
		for l := 0; l < c.L; l++ {
			f.w[x.off+l] = base + localID(uint32(l), wgs, x.ref)
		}
	}
	clear(f.w[c.vars[0][0]:c.vars[0][1]])
	clear(f.d[c.vars[1][0]:c.vars[1][1]])
	for _, s := range f.sh {
		clear(s)
	}
	copy(f.exec, f.full)
	copy(f.alive, f.full)
	f.lo, f.hi = 0, c.L
	c.body.run(f)
	return nil
}
