package ir

import "math"

// Walk calls f for every instruction of b in program order, entering nested blocks after the
// instruction that owns them. f returning false skips the instruction's nested blocks.
func Walk(b *Block, f func(*Inst) bool) {
	for _, in := range b.Insts {
		if f(in) {
			for _, nb := range in.Blocks {
				Walk(nb, f)
			}
		}
	}
}

// Clone returns a deep copy of k: new instructions, blocks and resource descriptors, so passes can
// rewrite the copy without touching the user's kernel.
func (k *Kernel) Clone() *Kernel {
	c := *k
	c.Buffers = cloneSlice(k.Buffers)
	c.Params = cloneSlice(k.Params)
	c.Shared = cloneSlice(k.Shared)
	c.Vars = cloneSlice(k.Vars)
	m := make(map[*Inst]*Inst, countInsts(k.Body))
	c.Body = cloneBlock(k.Body, m)
	return &c
}

func cloneSlice[T any](s []*T) []*T {
	out := make([]*T, len(s))
	for i, p := range s {
		v := *p
		out[i] = &v
	}
	return out
}

func cloneBlock(b *Block, m map[*Inst]*Inst) *Block {
	if b == nil {
		return nil
	}
	nb := &Block{Insts: make([]*Inst, len(b.Insts))}
	for i, in := range b.Insts {
		c := *in
		if in.Args != nil {
			c.Args = make([]*Inst, len(in.Args))
			for j, a := range in.Args {
				if r, ok := m[a]; ok {
					c.Args[j] = r
				} else {
					c.Args[j] = a // out of scope: the verifier reports it
				}
			}
		}
		if in.Blocks != nil {
			c.Blocks = make([]*Block, len(in.Blocks))
			m[in] = &c // a block cannot refer to its owner, but keep the map complete first
			for j, sb := range in.Blocks {
				c.Blocks[j] = cloneBlock(sb, m)
			}
		}
		m[in] = &c
		nb.Insts[i] = &c
	}
	return nb
}

// ConstBits returns the bit pattern of the scalar constant v of type t (one lane).
func ConstBits(t Type, v float64) uint64 {
	switch t.Scalar {
	case F32:
		return uint64(math.Float32bits(float32(v)))
	case F64:
		return math.Float64bits(v)
	case F16:
		return uint64(f32ToF16(float32(v)))
	case BF16:
		return uint64(BF16Bits(v))
	case I8, I16, I32:
		return uint64(uint32(int32(v))) & (1<<t.Scalar.Bits() - 1)
	case U8, U16:
		return uint64(uint32(v)) & (1<<t.Scalar.Bits() - 1)
	case U32:
		return uint64(uint32(v))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return uint64(v)
}

// ConstFloat returns the value of a constant's bit pattern as float64 (exact for every kind).
func ConstFloat(t Type, bits uint64) float64 {
	switch t.Scalar {
	case F32:
		return float64(math.Float32frombits(uint32(bits)))
	case F64:
		return math.Float64frombits(bits)
	case F16:
		return float64(f16ToF32(uint16(bits)))
	case BF16:
		return BF16Float(uint16(bits))
	case I8:
		return float64(int8(bits))
	case I16:
		return float64(int16(bits))
	case I32:
		return float64(int32(uint32(bits)))
	case U32:
		return float64(uint32(bits))
	case Bool:
		if bits != 0 {
			return 1
		}
		return 0
	}
	return float64(bits)
}

// f32ToF16 rounds to nearest even (the IR's constant conversion; the oracle holds the reference).
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint(14 - e)
		h := man >> shift
		rem := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := int(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp == 0:
		if man == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(man) / 1024 / 16384
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | man<<13)
}
