package cpu

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/onesource-go/onesource/ir"
)

// site is a memory instruction as an out-of-bounds error names it.
type site struct {
	pos    ir.Pos
	op     string
	array  string
	shared bool
}

// oob stops the workgroup with an *OutOfBoundsError (recovered by the frame's runner).
func (f *frame) oob(s *site, idx int64, n, lane int) {
	panic(&OutOfBoundsError{Kernel: f.c.k.Name, Pos: s.pos, Op: s.op, Array: s.array, Shared: s.shared,
		Index: idx, Len: n, Workgroup: f.wg, Invocation: lane})
}

// index reads an index word: an i32 index as its signed value (a negative one is out of bounds).
func index(x uint32, signed bool) int64 {
	if signed {
		return int64(int32(x))
	}
	return int64(x)
}

// firstLane is the lowest running invocation (the frame runs at least one).
func (f *frame) firstLane() int {
	for i, w := range f.exec {
		if w != 0 {
			return i<<6 | bits.TrailingZeros64(w)
		}
	}
	return 0
}

// element reads and writes one scalar element of width bits at byte offset off, widening a
// narrow one to 32 bits (sign-extending a signed one) and narrowing (wrapping) a stored word.
func readElem(b []byte, off, width int, signed bool) uint32 {
	switch width {
	case 8:
		if signed {
			return uint32(int32(int8(b[off])))
		}
		return uint32(b[off])
	case 16:
		v := binary.LittleEndian.Uint16(b[off:])
		if signed {
			return uint32(int32(int16(v)))
		}
		return uint32(v)
	}
	return binary.LittleEndian.Uint32(b[off:])
}

func writeElem(b []byte, off, width int, v uint32) {
	switch width {
	case 8:
		b[off] = byte(v)
	case 16:
		binary.LittleEndian.PutUint16(b[off:], uint16(v))
	default:
		binary.LittleEndian.PutUint32(b[off:], v)
	}
}

// mem compiles a load, store or atomic.
func (c *compiler) mem(in *ir.Inst) step {
	if in.Mem == ir.MemVar {
		return c.varAccess(in)
	}
	elem := c.elem(in)
	s := &site{pos: in.Pos, op: in.Op.String()}
	shared, ref := in.Mem == ir.MemShared, in.Ref
	shLen := 0
	if shared {
		s.array, s.shared, shLen = c.k.Shared[ref].Name, true, c.k.Shared[ref].Len
	} else {
		s.array = c.k.Buffers[ref].Name
	}
	arr := func(f *frame) ([]byte, int) {
		if shared {
			return f.sh[ref], shLen
		}
		return f.bufs[ref], f.blen[ref]
	}
	ix := c.part(in.Args[0])
	signed := in.Args[0].Type.Scalar == ir.I32
	stride, comps := elem.Stride(), int(elem.Lanes)
	width, sext := elem.Scalar.Bits(), elem.Scalar.IsSigned()
	mi := ix.m()
	if !shared && c.out.bufs[ref].atomic && in.Op != ir.OpAtomic {
		// Other workgroups (goroutines) update this buffer atomically: its plain loads and
		// stores are atomic too (its elements are 32-bit scalars, and aligned), as the words
		// of a device buffer are.
		return c.atomicWord(in, s, ref, ix, signed)
	}
	switch in.Op {
	case ir.OpLoad:
		d := c.part(in)
		if ix.n == 1 { // one element, the same for every invocation
			return func(f *frame) {
				b, n := arr(f)
				i := index(f.w[ix.off], signed)
				if uint64(i) >= uint64(n) {
					f.oob(s, i, n, f.firstLane())
				}
				for k := 0; k < comps; k++ {
					f.w[d.off+k] = readElem(b, int(i)*stride+4*k, width, sext)
				}
			}
		}
		if comps == 1 && width == 32 {
			return func(f *frame) {
				b, n := arr(f)
				idx := f.w[ix.off : ix.off+ix.n]
				dst := f.w[d.off : d.off+d.n]
				for wi, word := range f.exec {
					for word != 0 {
						l := wi<<6 | bits.TrailingZeros64(word)
						word &= word - 1
						i := index(idx[l], signed)
						if uint64(i) >= uint64(n) {
							f.oob(s, i, n, l)
						}
						dst[l] = binary.LittleEndian.Uint32(b[4*i:])
					}
				}
			}
		}
		return func(f *frame) {
			b, n := arr(f)
			idx := f.w[ix.off : ix.off+ix.n]
			for wi, word := range f.exec {
				for word != 0 {
					l := wi<<6 | bits.TrailingZeros64(word)
					word &= word - 1
					i := index(idx[l], signed)
					if uint64(i) >= uint64(n) {
						f.oob(s, i, n, l)
					}
					for k := 0; k < comps; k++ {
						f.w[d.off+k*d.n+l] = readElem(b, int(i)*stride+4*k, width, sext)
					}
				}
			}
		}
	case ir.OpStore:
		v := c.part(in.Args[1])
		mv := v.m()
		if ix.n == 1 && v.n == 1 { // every invocation stores the same value to the same element
			return func(f *frame) {
				b, n := arr(f)
				i := index(f.w[ix.off], signed)
				if uint64(i) >= uint64(n) {
					f.oob(s, i, n, f.firstLane())
				}
				for k := 0; k < comps; k++ {
					writeElem(b, int(i)*stride+4*k, width, f.w[v.off+k])
				}
			}
		}
		if comps == 1 && width == 32 {
			return func(f *frame) {
				b, n := arr(f)
				idx := f.w[ix.off : ix.off+ix.n]
				val := f.w[v.off : v.off+v.n]
				for wi, word := range f.exec {
					for word != 0 {
						l := wi<<6 | bits.TrailingZeros64(word)
						word &= word - 1
						i := index(idx[l&mi], signed)
						if uint64(i) >= uint64(n) {
							f.oob(s, i, n, l)
						}
						binary.LittleEndian.PutUint32(b[4*i:], val[l&mv])
					}
				}
			}
		}
		return func(f *frame) {
			b, n := arr(f)
			idx := f.w[ix.off : ix.off+ix.n]
			for wi, word := range f.exec {
				for word != 0 {
					l := wi<<6 | bits.TrailingZeros64(word)
					word &= word - 1
					i := index(idx[l&mi], signed)
					if uint64(i) >= uint64(n) {
						f.oob(s, i, n, l)
					}
					for k := 0; k < comps; k++ {
						writeElem(b, int(i)*stride+4*k, width, f.w[v.off+k*v.n+l&mv])
					}
				}
			}
		}
	}
	// OpAtomic: one invocation after another, in local index order.
	op := ir.AtomicOp(in.Aux)
	d := c.part(in)
	val := c.part(in.Args[len(in.Args)-1])
	cmp := val
	if op == ir.AtomicCmpXchg {
		cmp = c.part(in.Args[1])
	}
	mv, mc := val.m(), cmp.m()
	kind := elem.Scalar
	return func(f *frame) {
		b, n := arr(f)
		idx := f.w[ix.off : ix.off+ix.n]
		vv, cc := f.w[val.off:val.off+val.n], f.w[cmp.off:cmp.off+cmp.n]
		dst := f.w[d.off : d.off+d.n]
		for wi, word := range f.exec {
			for word != 0 {
				l := wi<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				i := index(idx[l&mi], signed)
				if uint64(i) >= uint64(n) {
					f.oob(s, i, n, l)
				}
				var old uint32
				if shared {
					old = plainAtomic(op, kind, b[4*i:], vv[l&mv], cc[l&mc])
				} else {
					old = bufferAtomic(op, kind, (*uint32)(unsafe.Pointer(&b[4*i])), vv[l&mv], cc[l&mc])
				}
				dst[l] = old
			}
		}
	}
}

// plainAtomic is an atomic on a shared array: the workgroup's invocations run one after
// another, so a read-modify-write is atomic as it is. It returns the old value.
func plainAtomic(op ir.AtomicOp, kind ir.Scalar, b []byte, v, cmp uint32) uint32 {
	old := binary.LittleEndian.Uint32(b)
	binary.LittleEndian.PutUint32(b, atomicNew(op, kind, old, v, cmp))
	return old
}

// atomicNew is the value an atomic op leaves in an element holding old.
func atomicNew(op ir.AtomicOp, kind ir.Scalar, old, v, cmp uint32) uint32 {
	switch op {
	case ir.AtomicAdd:
		if kind == ir.F32 {
			return addF32(old, v)
		}
		return old + v
	case ir.AtomicMin:
		if kind == ir.I32 {
			return minI32(old, v)
		}
		return minU32(old, v)
	case ir.AtomicMax:
		if kind == ir.I32 {
			return maxI32(old, v)
		}
		return maxU32(old, v)
	case ir.AtomicExchange:
		return v
	case ir.AtomicCmpXchg:
		if old == cmp {
			return v
		}
		return old
	case ir.AtomicAnd:
		return old & v
	case ir.AtomicOr:
		return old | v
	case ir.AtomicXor:
		return old ^ v
	}
	return old
}

// bufferAtomic is an atomic on a buffer element, which other workgroups (other goroutines) may
// be updating: a compare-and-swap loop of atomicNew (a swap, add, and, or directly). It returns
// the old value.
func bufferAtomic(op ir.AtomicOp, kind ir.Scalar, p *uint32, v, cmp uint32) uint32 {
	switch {
	case op == ir.AtomicAdd && kind != ir.F32:
		return atomic.AddUint32(p, v) - v
	case op == ir.AtomicExchange:
		return atomic.SwapUint32(p, v)
	case op == ir.AtomicAnd:
		return atomic.AndUint32(p, v)
	case op == ir.AtomicOr:
		return atomic.OrUint32(p, v)
	}
	for {
		old := atomic.LoadUint32(p)
		nv := atomicNew(op, kind, old, v, cmp)
		if nv == old || atomic.CompareAndSwapUint32(p, old, nv) {
			return old
		}
	}
}

// varAccess compiles a load or store of an invocation's variable.
func (c *compiler) varAccess(in *ir.Inst) step {
	vl := c.varLoc[in.Ref]
	t := c.k.Vars[in.Ref].Type
	comps := int(t.Lanes)
	words := comps
	if !vl.uni {
		words *= c.L
	}
	L := c.L
	wide := vl.wide
	if in.Op == ir.OpLoad {
		d := c.part(in)
		if vl.uni {
			if wide {
				return func(f *frame) { copy(f.d[d.off:d.off+words], f.d[vl.off:vl.off+words]) }
			}
			return func(f *frame) { copy(f.w[d.off:d.off+words], f.w[vl.off:vl.off+words]) }
		}
		v := part{vl.off, L} // the running invocations' words of each component
		if wide {
			return func(f *frame) {
				for k := 0; k < comps; k++ {
					copy(d.span64(f, k), v.span64(f, k))
				}
			}
		}
		return func(f *frame) {
			for k := 0; k < comps; k++ {
				copy(d.span(f, k), v.span(f, k))
			}
		}
	}
	v := c.part(in.Args[0])
	if vl.uni {
		if v.n != 1 {
			c.errf(in.Pos, "internal error: a varying value stored to uniform variable %s", c.k.Vars[in.Ref].Name)
			return nil
		}
		if wide {
			return func(f *frame) { copy(f.d[vl.off:vl.off+comps], f.d[v.off:v.off+comps]) }
		}
		return func(f *frame) { copy(f.w[vl.off:vl.off+comps], f.w[v.off:v.off+comps]) }
	}
	mv := v.m()
	return func(f *frame) {
		full := f.isFull()
		for k := 0; k < comps; k++ {
			do, so := vl.off+k*L, v.off+k*v.n
			if wide {
				dst, src := f.d[do:do+L], f.d[so:so+v.n]
				if full && v.n == L {
					copy(dst, src)
					continue
				}
				for wi, word := range f.exec {
					for word != 0 {
						l := wi<<6 | bits.TrailingZeros64(word)
						word &= word - 1
						dst[l] = src[l&mv]
					}
				}
				continue
			}
			dst, src := f.w[do:do+L], f.w[so:so+v.n]
			if full && v.n == L {
				copy(dst, src)
				continue
			}
			for wi, word := range f.exec {
				for word != 0 {
					l := wi<<6 | bits.TrailingZeros64(word)
					word &= word - 1
					dst[l] = src[l&mv]
				}
			}
		}
	}
}

// atomicWord compiles a plain load or store of a buffer the kernel also accesses atomically: one
// atomic 32-bit load or store per invocation, so a plain read racing another workgroup's atomic
// (the first read of a compare-exchange loop) reads a whole word, and the Go memory model holds.
func (c *compiler) atomicWord(in *ir.Inst, s *site, ref int, ix part, signed bool) step {
	mi := ix.m()
	word := func(f *frame, l int) *uint32 {
		i := index(f.w[ix.off+l&mi], signed)
		if n := f.blen[ref]; uint64(i) >= uint64(n) {
			f.oob(s, i, n, l)
		}
		return (*uint32)(unsafe.Pointer(&f.bufs[ref][4*i]))
	}
	if in.Op == ir.OpLoad {
		d := c.part(in)
		if d.n == 1 {
			return func(f *frame) { f.w[d.off] = atomic.LoadUint32(word(f, f.firstLane())) }
		}
		return func(f *frame) {
			for wi, w := range f.exec {
				for w != 0 {
					l := wi<<6 | bits.TrailingZeros64(w)
					w &= w - 1
					f.w[d.off+l] = atomic.LoadUint32(word(f, l))
				}
			}
		}
	}
	v := c.part(in.Args[1])
	mv := v.m()
	return func(f *frame) {
		for wi, w := range f.exec {
			for w != 0 {
				l := wi<<6 | bits.TrailingZeros64(w)
				w &= w - 1
				atomic.StoreUint32(word(f, l), f.w[v.off+l&mv])
			}
		}
	}
}
