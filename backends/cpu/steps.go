package cpu

import (
	"github.com/onesource-go/onesource/ir"
)

// step runs one instruction for the running invocations of a workgroup (frame.exec).
type step func(f *frame)

// block is a compiled block: its steps, and which of them may stop invocations (so the block
// checks, after them, whether any invocation still runs it).
type block struct {
	steps []step
	stops []bool
}

func (b *block) run(f *frame) {
	for i, s := range b.steps {
		s(f)
		if b.stops[i] && f.idle() {
			return
		}
	}
}

// part is where one value's components are: component c at off + c*n, n words (1 for a
// uniform value, L for a varying one).
type part struct{ off, n int }

func (c *compiler) part(in *ir.Inst) part {
	l := c.locs[in]
	if l.uni {
		return part{l.off, 1}
	}
	return part{l.off, c.L}
}

// m is the index mask of a part: i&m is the word of invocation i within a component.
func (p part) m() int {
	if p.n == 1 {
		return 0
	}
	return -1
}

// span is component i of p for the running invocations: the word of a uniform value, else the
// words of the invocations from the first running one to the last (frame.lo, frame.hi; no
// invocation outside that run runs the step, so its words are never read).
func (p part) span(f *frame, i int) []uint32 {
	if p.n == 1 {
		return f.w[p.off+i : p.off+i+1]
	}
	s := p.off + i*p.n
	return f.w[s+f.lo : s+f.hi]
}

// span64 is span for f64 values (frame.d).
func (p part) span64(f *frame, i int) []uint64 {
	if p.n == 1 {
		return f.d[p.off+i : p.off+i+1]
	}
	s := p.off + i*p.n
	return f.d[s+f.lo : s+f.hi]
}

func (c *compiler) block(b *ir.Block) *block {
	out := &block{}
	for _, in := range b.Insts {
		if s := c.inst(in); s != nil {
			stops := in.Op == ir.OpBreak || in.Op == ir.OpContinue || in.Op == ir.OpReturn || c.exits[in]
			out.steps = append(out.steps, s)
			out.stops = append(out.stops, stops)
		}
		if in.Op.IsTerminator() {
			break
		}
	}
	return out
}

// inst compiles one instruction; nil when it takes no step.
func (c *compiler) inst(in *ir.Inst) step {
	if _, ok := c.view[in]; ok {
		return nil
	}
	switch in.Op {
	case ir.OpConst, ir.OpParam, ir.OpLen, ir.OpBuiltin, ir.OpBarrier:
		// Static places; a barrier is where every invocation already is (lockstep).
		return nil
	case ir.OpLoad, ir.OpStore, ir.OpAtomic:
		return c.mem(in)
	case ir.OpSelect:
		return c.sel(in)
	case ir.OpConvert:
		return c.convert(in)
	case ir.OpBitcast:
		return c.bitcast(in)
	case ir.OpCompose:
		return c.compose(in)
	case ir.OpDotI8x4:
		return c.dot(in)
	case ir.OpNative:
		return c.native(in)
	case ir.OpFma:
		return c.fma(in)
	case ir.OpShuffleXor, ir.OpShuffle:
		return c.shuffle(in)
	case ir.OpSubgroupReduce:
		return c.subgroupReduce(in)
	case ir.OpIf:
		return c.ifStep(in)
	case ir.OpLoop:
		return c.loopStep(in)
	case ir.OpBreak:
		act := c.loops[len(c.loops)-1]
		return func(f *frame) {
			a := f.mask(act)
			for i, e := range f.exec {
				a[i] &^= e
				f.exec[i] = 0
			}
			f.lo, f.hi = 0, 0
		}
	case ir.OpContinue:
		return func(f *frame) {
			clear(f.exec)
			f.lo, f.hi = 0, 0
		}
	case ir.OpReturn:
		return func(f *frame) {
			for i, e := range f.exec {
				f.alive[i] &^= e
				f.exec[i] = 0
			}
			f.lo, f.hi = 0, 0
		}
	}
	if in.Op.IsUnary() || in.Op.IsBinary() || in.Op.IsCompare() {
		return c.elementwise(in)
	}
	c.errf(in.Pos, "operation %s is not supported by the CPU executor", in.Op)
	return nil
}

// elementwise compiles unary, binary and compare ops from the loops of ops_gen.go.
func (c *compiler) elementwise(in *ir.Inst) step {
	s := in.Args[0].Type.Scalar
	key := opKind{in.Op, s}
	n := int(in.Type.Lanes)
	d := c.part(in)
	a := c.part(in.Args[0])
	if len(in.Args) == 1 {
		if s == ir.F64 {
			if k := un64[key]; k != nil {
				return unary64(k, n, d, a)
			}
		} else if k := un32[key]; k != nil {
			return unary32(k, n, d, a)
		}
		c.errf(in.Pos, "%s on %s is not supported by the CPU executor", in.Op, in.Args[0].Type)
		return nil
	}
	b := c.part(in.Args[1])
	v := 0 // both varying, or all uniform
	switch {
	case d.n == 1:
	case b.n == 1:
		v = 1
	case a.n == 1:
		v = 2
	}
	switch {
	case s == ir.F64 && in.Type.Scalar == ir.Bool:
		if k, ok := cmp64[key]; ok {
			return cmpStep64(k[v], n, d, a, b)
		}
	case s == ir.F64:
		if k, ok := bin64[key]; ok {
			return binStep64(k[v], n, d, a, b)
		}
	default:
		if k, ok := bin32[key]; ok {
			return binStep32(k[v], n, d, a, b)
		}
	}
	c.errf(in.Pos, "%s on %s is not supported by the CPU executor", in.Op, in.Args[0].Type)
	return nil
}

func unary32(k func(d, a []uint32), n int, d, a part) step {
	if n == 1 {
		return func(f *frame) { k(d.span(f, 0), a.span(f, 0)) }
	}
	return func(f *frame) {
		for i := 0; i < n; i++ {
			k(d.span(f, i), a.span(f, i))
		}
	}
}

func unary64(k func(d, a []uint64), n int, d, a part) step {
	return func(f *frame) {
		for i := 0; i < n; i++ {
			k(d.span64(f, i), a.span64(f, i))
		}
	}
}

func binStep32(k func(d, a, b []uint32), n int, d, a, b part) step {
	if n == 1 {
		return func(f *frame) { k(d.span(f, 0), a.span(f, 0), b.span(f, 0)) }
	}
	return func(f *frame) {
		for i := 0; i < n; i++ {
			k(d.span(f, i), a.span(f, i), b.span(f, i))
		}
	}
}

func binStep64(k func(d, a, b []uint64), n int, d, a, b part) step {
	return func(f *frame) {
		for i := 0; i < n; i++ {
			k(d.span64(f, i), a.span64(f, i), b.span64(f, i))
		}
	}
}

func cmpStep64(k func(d []uint32, a, b []uint64), n int, d, a, b part) step {
	return func(f *frame) {
		for i := 0; i < n; i++ {
			k(d.span(f, i), a.span64(f, i), b.span64(f, i))
		}
	}
}

// sel compiles select: a scalar condition chooses whole vectors, a vector one lane by lane.
func (c *compiler) sel(in *ir.Inst) step {
	n := int(in.Type.Lanes)
	cp, a, b, d := c.part(in.Args[0]), c.part(in.Args[1]), c.part(in.Args[2]), c.part(in)
	cstep := cp.n // component stride of the condition: 0 for a scalar condition
	if in.Args[0].Type.Lanes == 1 {
		cstep = 0
	}
	mc, ma, mb := cp.m(), a.m(), b.m()
	if in.Type.Scalar == ir.F64 {
		return func(f *frame) {
			for i := 0; i < n; i++ {
				dd, cc := d.span64(f, i), cp.span(f, i*min(cstep, 1))
				aa, bb := a.span64(f, i), b.span64(f, i)
				for j := range dd {
					if cc[j&mc] != 0 {
						dd[j] = aa[j&ma]
					} else {
						dd[j] = bb[j&mb]
					}
				}
			}
		}
	}
	return func(f *frame) {
		for i := 0; i < n; i++ {
			sel32(d.span(f, i), cp.span(f, i*min(cstep, 1)), a.span(f, i), b.span(f, i), mc, ma, mb)
		}
	}
}

// sel32 is d[i] = c[i] ? a[i] : b[i] without a branch (a bool word is 0 or 1), each operand
// indexed through its mask (0: uniform, one word).
func sel32(d, c, a, b []uint32, mc, ma, mb int) {
	if mc&ma&mb == -1 {
		c, a, b = c[:len(d)], a[:len(d)], b[:len(d)]
		i := 0
		for ; i+4 <= len(d); i += 4 {
			dd, cc, aa, bb := d[i:i+4:i+4], c[i:i+4:i+4], a[i:i+4:i+4], b[i:i+4:i+4]
			dd[0] = bb[0] ^ (aa[0]^bb[0])&-cc[0]
			dd[1] = bb[1] ^ (aa[1]^bb[1])&-cc[1]
			dd[2] = bb[2] ^ (aa[2]^bb[2])&-cc[2]
			dd[3] = bb[3] ^ (aa[3]^bb[3])&-cc[3]
		}
		for ; i < len(d); i++ {
			x, y := a[i], b[i]
			d[i] = y ^ (x^y)&-c[i]
		}
		return
	}
	for i := range d {
		x, y := a[i&ma], b[i&mb]
		d[i] = y ^ (x^y)&-c[i&mc]
	}
}

// convert compiles a value conversion (the ones that keep the bits are views).
func (c *compiler) convert(in *ir.Inst) step {
	from, to := in.Args[0].Type.Scalar, in.Type.Scalar
	n := int(in.Type.Lanes)
	d, a := c.part(in), c.part(in.Args[0])
	key := [2]ir.Scalar{from, to}
	switch {
	case from == ir.F64 && to == ir.F64:
	case from == ir.F64:
		if k := cvtFrom64[key]; k != nil {
			return func(f *frame) {
				for i := 0; i < n; i++ {
					k(d.span(f, i), a.span64(f, i))
				}
			}
		}
	case to == ir.F64:
		if k := cvtTo64[key]; k != nil {
			return func(f *frame) {
				for i := 0; i < n; i++ {
					k(d.span64(f, i), a.span(f, i))
				}
			}
		}
	default:
		if k := cvt32[key]; k != nil {
			return unary32(k, n, d, a)
		}
	}
	c.errf(in.Pos, "convert %s to %s is not supported by the CPU executor", in.Args[0].Type, in.Type)
	return nil
}

// bitcast compiles a reinterpretation between layouts (vec2<f16> and u32, f64 and vec2<u32>,
// ...): the source's components are laid end to end, lowest first, and cut into the result's.
func (c *compiler) bitcast(in *ir.Inst) step {
	from, to := in.Args[0].Type, in.Type
	fb, tb := from.Scalar.Bits(), to.Scalar.Bits()
	fn, tn := int(from.Lanes), int(to.Lanes)
	fw, tw := from.Scalar == ir.F64, to.Scalar == ir.F64
	a, d := c.part(in.Args[0]), c.part(in)
	fmask := uint64(1)<<uint(fb) - 1
	if fb == 64 {
		fmask = ^uint64(0)
	}
	tmask := uint64(1)<<uint(tb) - 1
	if tb == 64 {
		tmask = ^uint64(0)
	}
	return func(f *frame) {
		lo, hi := f.lo, f.hi
		if d.n == 1 {
			lo, hi = 0, 1
		}
		for l := lo; l < hi; l++ {
			var buf [4]uint64
			for i := 0; i < fn; i++ {
				var v uint64
				if fw {
					v = f.d[a.off+i*a.n+l]
				} else {
					v = uint64(f.w[a.off+i*a.n+l])
				}
				p := i * fb
				buf[p>>6] |= (v & fmask) << uint(p&63)
			}
			for j := 0; j < tn; j++ {
				p := j * tb
				v := buf[p>>6] >> uint(p&63) & tmask
				if tw {
					f.d[d.off+j*d.n+l] = v
				} else {
					f.w[d.off+j*d.n+l] = uint32(v)
				}
			}
		}
	}
}

// compose compiles a vector built from scalars.
func (c *compiler) compose(in *ir.Inst) step {
	d := c.part(in)
	srcs := make([]part, len(in.Args))
	for i, a := range in.Args {
		srcs[i] = c.part(a)
	}
	if in.Type.Scalar == ir.F64 {
		return func(f *frame) {
			for i, s := range srcs {
				dd := d.span64(f, i)
				if s.n == d.n {
					copy(dd, s.span64(f, 0))
				} else {
					v := f.d[s.off]
					for j := range dd {
						dd[j] = v
					}
				}
			}
		}
	}
	return func(f *frame) {
		for i, s := range srcs {
			dd := d.span(f, i)
			if s.n == d.n {
				copy(dd, s.span(f, 0))
			} else {
				v := f.w[s.off]
				for j := range dd {
					dd[j] = v
				}
			}
		}
	}
}

// fma compiles the fused multiply-add of f32 scalars (one rounding).
func (c *compiler) fma(in *ir.Inst) step {
	d, a, b, e := c.part(in), c.part(in.Args[0]), c.part(in.Args[1]), c.part(in.Args[2])
	ma, mb, me := a.m(), b.m(), e.m()
	return func(f *frame) {
		dd := d.span(f, 0)
		aa, bb, ee := a.span(f, 0), b.span(f, 0), e.span(f, 0)
		for i := range dd {
			dd[i] = fmaF32(aa[i&ma], bb[i&mb], ee[i&me])
		}
	}
}

// dot compiles the packed 4 x i8 dot product.
func (c *compiler) dot(in *ir.Inst) step {
	d, a, b := c.part(in), c.part(in.Args[0]), c.part(in.Args[1])
	ma, mb := a.m(), b.m()
	return func(f *frame) {
		dd := d.span(f, 0)
		aa, bb := a.span(f, 0), b.span(f, 0)
		for i := range dd {
			dd[i] = dotI8x4(aa[i&ma], bb[i&mb])
		}
	}
}

// shuffle compiles OpShuffleXor (partner lane = lane ^ mask) and OpShuffle (partner lane given):
// an invocation reads the value of the invocation at the partner lane of its subgroup (S
// consecutive local indices). Where that invocation does not exist (a lane past the subgroup or
// the workgroup) or is not running this instruction, an invocation reads its own value: the
// result never depends on a previous workgroup's leftovers.
func (c *compiler) shuffle(in *ir.Inst) step {
	v, m, d := c.part(in.Args[0]), c.part(in.Args[1]), c.part(in)
	if v.n == 1 { // every invocation holds the value: each reads it back
		return func(f *frame) {
			x := f.w[v.off]
			dd := f.w[d.off : d.off+d.n]
			for i := range dd {
				dd[i] = x
			}
		}
	}
	L, S := c.L, c.S
	xor := in.Op == ir.OpShuffleXor
	mm := m.m()
	return func(f *frame) {
		src := f.w[v.off : v.off+L]
		dst := f.w[d.off : d.off+L]
		mk := f.w[m.off : m.off+m.n]
		exec := f.exec
		for l := 0; l < L; l++ {
			x := mk[l&mm]
			sl := l & (S - 1)
			pl := x
			if xor {
				pl = uint32(sl) ^ x
			}
			r := src[l]
			if pl < uint32(S) {
				if p := l - sl + int(pl); p < L && exec[p>>6]>>(uint(p)&63)&1 != 0 {
					r = src[p]
				}
			}
			dst[l] = r
		}
	}
}

// subgroupReduce compiles a reduction over clusters of W (Ref) lanes of a subgroup, natively, in
// the order lower.LegalizeSubgroupReduce expands it to (and with this executor's shuffle rule
// for invocations that do not run it): at strides 1, 2, ..., W/2 each invocation combines its
// value with its partner's (lane ^ stride), a sum as value + partner's, an f32 max as
// max(lower lane's, higher lane's), an integer max either way. The bits are those of the
// expanded form.
func (c *compiler) subgroupReduce(in *ir.Inst) step {
	v, d := c.part(in.Args[0]), c.part(in)
	tmp := c.alloc(ir.TU32, false).off
	W, L, S := in.Ref, c.L, c.S
	var comb func(x, y uint32) uint32
	ordered := false
	switch {
	case ir.ReduceOp(in.Aux) == ir.ReduceSum && in.Type.Scalar == ir.F32:
		comb = addF32
	case ir.ReduceOp(in.Aux) == ir.ReduceSum:
		comb = addI32
	case in.Type.Scalar == ir.F32:
		comb, ordered = maxF32, true
	case in.Type.Scalar == ir.I32:
		comb = maxI32
	default:
		comb = maxU32
	}
	return func(f *frame) {
		cur, t := f.w[d.off:d.off+L], f.w[tmp:tmp+L]
		if v.n == 1 {
			for l := range cur {
				cur[l] = f.w[v.off]
			}
		} else {
			copy(cur, f.w[v.off:v.off+L])
		}
		exec := f.exec
		for s := 1; s < W; s <<= 1 {
			for l := 0; l < L; l++ {
				y := cur[l]
				if pl := l&(S-1) ^ s; pl < S {
					if p := l - l&(S-1) + pl; p < L && exec[p>>6]>>(uint(p)&63)&1 != 0 {
						y = cur[p]
					}
				}
				t[l] = y
			}
			for l := 0; l < L; l++ {
				x, y := cur[l], t[l]
				if ordered && l&s != 0 {
					x, y = y, x
				}
				cur[l] = comb(x, y)
			}
		}
	}
}

// ifStep compiles an if. A uniform condition runs one branch for every running invocation; a
// varying one runs each branch (that some invocation takes) for its invocations, then merges
// the invocations that fell through both.
func (c *compiler) ifStep(in *ir.Inst) step {
	cond := c.part(in.Args[0])
	then, els := c.block(in.Blocks[0]), c.block(in.Blocks[1])
	if cond.n == 1 {
		co := cond.off
		return func(f *frame) {
			if f.w[co] != 0 {
				then.run(f)
			} else {
				els.run(f)
			}
		}
	}
	save, tm, cb := c.newMask(), c.newMask(), c.newMask()
	nw, L := c.nw, c.L
	hasElse := len(els.steps) > 0
	return func(f *frame) {
		sv, t, cm := f.mask(save), f.mask(tm), f.mask(cb)
		copy(sv, f.exec)
		cw := f.w[cond.off : cond.off+L]
		var anyT, anyF uint64
		for wi := 0; wi < nw; wi++ {
			var bits uint64
			base := wi << 6
			lim := min(L-base, 64)
			for j := 0; j < lim; j++ {
				// &1: the word of an invocation outside [lo, hi) is stale, not a bool.
				bits |= uint64(cw[base+j]&1) << uint(j)
			}
			cm[wi] = bits
			t[wi] = sv[wi] & bits
			anyT |= t[wi]
			anyF |= sv[wi] &^ bits
		}
		if anyT != 0 {
			copy(f.exec, t)
			f.setRange()
			then.run(f)
			if anyF == 0 {
				return
			}
			copy(t, f.exec) // what fell through the then branch
		}
		for wi := range f.exec {
			f.exec[wi] = sv[wi] &^ cm[wi]
		}
		f.setRange()
		if hasElse {
			els.run(f)
		}
		for wi := range f.exec {
			f.exec[wi] |= t[wi]
		}
		f.setRange()
	}
}

// loopStep compiles a loop: it runs the body, then the continuing block, for the invocations
// still in the loop (not broken out, not returned; those that continued rejoin for the
// continuing block), until none is.
func (c *compiler) loopStep(in *ir.Inst) step {
	act, ent := c.newMask(), c.newMask()
	c.loops = append(c.loops, act)
	body := c.block(in.Blocks[0])
	c.loops = c.loops[:len(c.loops)-1]
	cont := c.block(in.Blocks[1])
	hasCont := len(cont.steps) > 0
	return func(f *frame) {
		a, e := f.mask(act), f.mask(ent)
		copy(a, f.exec)
		copy(e, f.exec)
		for {
			body.run(f)
			if !keepAlive(a, f.alive) {
				break
			}
			if hasCont {
				copy(f.exec, a)
				f.setRange()
				cont.run(f)
				if !keepAlive(a, f.alive) {
					break
				}
			}
			if f.cancel.Load() {
				panic(errCanceled)
			}
			copy(f.exec, a)
			f.setRange()
		}
		for wi := range f.exec {
			f.exec[wi] = e[wi] & f.alive[wi]
		}
		f.setRange()
	}
}

// keepAlive removes the invocations that returned from a and reports whether any is left.
func keepAlive(a, alive []uint64) bool {
	var any uint64
	for i := range a {
		a[i] &= alive[i]
		any |= a[i]
	}
	return any != 0
}
