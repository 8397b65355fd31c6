package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// String returns the stable text form of k: resources first, then the body with values
// numbered %0, %1, ... in program order. Source positions are left out so the text of a kernel
// does not change when the Go file around it does; names are kept as comments.
func (k *Kernel) String() string {
	var p printer
	p.ids = map[*Inst]int{}
	fmt.Fprintf(&p.sb, "kernel %s workgroup(%d, %d, %d)\n", k.Name, k.WorkgroupSize[0], k.WorkgroupSize[1], k.WorkgroupSize[2])
	for i, b := range k.Buffers {
		fmt.Fprintf(&p.sb, "  buffer %d %s: %s %s\n", i, b.Name, b.Elem, b.Access)
	}
	for i, x := range k.Params {
		fmt.Fprintf(&p.sb, "  param %d %s: %s\n", i, x.Name, x.Type)
	}
	for i, s := range k.Shared {
		fmt.Fprintf(&p.sb, "  shared %d %s: %s[%d]\n", i, s.Name, s.Elem, s.Len)
	}
	for i, x := range k.Vars {
		fmt.Fprintf(&p.sb, "  var %d %s: %s\n", i, x.Name, x.Type)
	}
	p.sb.WriteString("{\n")
	if k.Body != nil {
		p.block(k.Body, 1)
	}
	p.sb.WriteString("}\n")
	return p.sb.String()
}

// String returns the text form of every kernel of m, in order.
func (m *Module) String() string {
	var parts []string
	for _, k := range m.Kernels {
		parts = append(parts, k.String())
	}
	return strings.Join(parts, "\n")
}

type printer struct {
	sb  strings.Builder
	ids map[*Inst]int
}

func (p *printer) ref(in *Inst) string {
	if id, ok := p.ids[in]; ok {
		return "%" + strconv.Itoa(id)
	}
	return "%?"
}

// maxTextIndent is the deepest indentation of the text form, in nesting levels (two spaces
// each): deeper blocks stay at this indentation, so the text grows linearly with the kernel.
const maxTextIndent = 64

var textIndent = strings.Repeat("  ", maxTextIndent)

func (p *printer) block(b *Block, depth int) {
	ind := textIndent[:2*min(depth, maxTextIndent)]
	for _, in := range b.Insts {
		p.sb.WriteString(ind)
		if in.Type != TVoid {
			id := len(p.ids)
			p.ids[in] = id
			fmt.Fprintf(&p.sb, "%%%d = ", id)
		}
		p.sb.WriteString(in.Op.String())
		switch in.Op {
		case OpConst:
			fmt.Fprintf(&p.sb, " %s", FormatConst(in.Type, in.Aux))
		case OpBuiltin:
			b := Builtin(in.Aux)
			p.sb.WriteString(" " + b.String())
			if b.PerDim() {
				p.sb.WriteString("." + "xyz"[in.Ref:in.Ref+1])
			}
		case OpParam:
			fmt.Fprintf(&p.sb, " %d", in.Ref)
		case OpLoad, OpStore, OpAtomic:
			if in.Op == OpAtomic {
				p.sb.WriteString("." + AtomicOp(in.Aux).String())
			}
			fmt.Fprintf(&p.sb, " %s %d", in.Mem, in.Ref)
		case OpLen:
			fmt.Fprintf(&p.sb, " buf %d", in.Ref)
		case OpExtract:
			fmt.Fprintf(&p.sb, " lane %d", in.Aux)
		case OpReduce:
			p.sb.WriteString("." + ReduceOp(in.Aux).String())
		case OpNative:
			p.sb.WriteString("." + NativeFunc(in.Aux).String())
		case OpIsland:
			c := DecodeIsland(in.Aux)
			fmt.Fprintf(&p.sb, ".%s a=shared %d b=shared %d d=shared %d", c.Island, c.A, c.B, c.D)
			if c.Accumulate {
				p.sb.WriteString(" acc")
			}
		}
		for i, a := range in.Args {
			if i == 0 && in.Op != OpConst {
				p.sb.WriteString(" ")
			} else {
				p.sb.WriteString(", ")
			}
			p.sb.WriteString(p.ref(a))
		}
		if in.Type != TVoid {
			fmt.Fprintf(&p.sb, " : %s", in.Type)
		}
		if in.Name != "" {
			fmt.Fprintf(&p.sb, "  // %s", in.Name)
		}
		switch in.Op {
		case OpIf:
			p.sb.WriteString(" {\n")
			p.block(in.Blocks[0], depth+1)
			if len(in.Blocks[1].Insts) > 0 {
				p.sb.WriteString(ind + "} else {\n")
				p.block(in.Blocks[1], depth+1)
			}
			p.sb.WriteString(ind + "}")
		case OpIsland:
			p.sb.WriteString(" portable {\n")
			p.block(in.Blocks[0], depth+1)
			p.sb.WriteString(ind + "}")
		case OpLoop:
			p.sb.WriteString(" {\n")
			p.block(in.Blocks[0], depth+1)
			if len(in.Blocks[1].Insts) > 0 {
				p.sb.WriteString(ind + "} continuing {\n")
				p.block(in.Blocks[1], depth+1)
			}
			p.sb.WriteString(ind + "}")
		}
		p.sb.WriteString("\n")
	}
}

// FormatConst writes a constant of type t with lane bits as text: decimal for integers and
// finite floats (shortest form that reads back exactly), bit patterns for NaN and infinities.
func FormatConst(t Type, bits uint64) string {
	prefix := ""
	if t.IsVector() {
		prefix = "splat "
	}
	switch t.Scalar {
	case F32, F64, F16, BF16:
		f := ConstFloat(t, bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("%s0x%x", prefix, bits)
		}
		size := 32
		if t.Scalar == F64 {
			size = 64
		}
		s := strconv.FormatFloat(f, 'g', -1, size)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return prefix + s
	case Bool:
		return prefix + strconv.FormatBool(bits != 0)
	case I32:
		return prefix + strconv.Itoa(int(int32(uint32(bits))))
	case I8, I16:
		return prefix + strconv.Itoa(int(ConstFloat(t, bits)))
	}
	return prefix + strconv.FormatUint(bits, 10)
}
