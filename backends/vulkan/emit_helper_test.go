package vulkan_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/onesource-go/onesource/ir"
)

// kb builds IR kernels by hand for the emitter tests: a tiny stand-in for package dsl.
type kb struct {
	k      *ir.Kernel
	blocks []*ir.Block // innermost last
	line   int
}

func newKB(name string, wg ...uint32) *kb {
	size := [3]uint32{1, 1, 1}
	copy(size[:], wg)
	body := &ir.Block{}
	return &kb{k: &ir.Kernel{Name: name, Pos: ir.Pos{File: "kernels_test.go", Line: 1}, WorkgroupSize: size, Body: body}, blocks: []*ir.Block{body}, line: 1}
}

func (b *kb) pos() ir.Pos {
	b.line++
	return ir.Pos{File: "kernels_test.go", Line: b.line}
}

func (b *kb) add(in *ir.Inst) *ir.Inst {
	in.Pos = b.pos()
	b.blocks[len(b.blocks)-1].Append(in)
	return in
}

func (b *kb) buffer(name string, elem ir.Type, acc ir.Access) int {
	b.k.Buffers = append(b.k.Buffers, &ir.Buffer{Name: name, Elem: elem, Access: acc, Pos: b.pos()})
	return len(b.k.Buffers) - 1
}

func (b *kb) param(name string, t ir.Type) int {
	b.k.Params = append(b.k.Params, &ir.Param{Name: name, Type: t, Pos: b.pos()})
	return len(b.k.Params) - 1
}

func (b *kb) shared(name string, elem ir.Type, n int) int {
	b.k.Shared = append(b.k.Shared, &ir.Shared{Name: name, Elem: elem, Len: n, Pos: b.pos()})
	return len(b.k.Shared) - 1
}

func (b *kb) local(name string, t ir.Type) int {
	b.k.Vars = append(b.k.Vars, &ir.Var{Name: name, Type: t, Pos: b.pos()})
	return len(b.k.Vars) - 1
}

// c is a constant of type t with value v (splat for vectors).
func (b *kb) c(t ir.Type, v float64) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: ir.ConstBits(t.Elem(), v)})
}

func (b *kb) cbits(t ir.Type, bits uint64) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpConst, Type: t, Aux: bits})
}

func (b *kb) u32(v uint32) *ir.Inst { return b.cbits(ir.TU32, uint64(v)) }
func (b *kb) i32(v int32) *ir.Inst  { return b.cbits(ir.TI32, uint64(uint32(v))) }
func (b *kb) f32(v float32) *ir.Inst {
	return b.c(ir.TF32, float64(v))
}

func (b *kb) op(op ir.Op, t ir.Type, args ...*ir.Inst) *ir.Inst {
	return b.add(&ir.Inst{Op: op, Type: t, Args: args})
}

// un and bin type their result like their operand (compares give bools).
func (b *kb) un(op ir.Op, x *ir.Inst) *ir.Inst { return b.op(op, x.Type, x) }

func (b *kb) bin(op ir.Op, x, y *ir.Inst) *ir.Inst {
	t := x.Type
	if op.IsCompare() {
		t = ir.Type{Scalar: ir.Bool, Lanes: x.Type.Lanes}
	}
	return b.op(op, t, x, y)
}

func (b *kb) name(in *ir.Inst, n string) *ir.Inst {
	in.Name = n
	return in
}

func (b *kb) builtin(bi ir.Builtin, dim int) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpBuiltin, Type: ir.TU32, Aux: uint64(bi), Ref: dim})
}

func (b *kb) gid() *ir.Inst { return b.builtin(ir.GlobalID, 0) }

func (b *kb) p(i int) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpParam, Type: b.k.Params[i].Type, Ref: i})
}

func (b *kb) elem(mem ir.Mem, ref int) ir.Type {
	switch mem {
	case ir.MemBuffer:
		return b.k.Buffers[ref].Elem
	case ir.MemShared:
		return b.k.Shared[ref].Elem
	}
	return b.k.Vars[ref].Type
}

func (b *kb) load(mem ir.Mem, ref int, idx ...*ir.Inst) *ir.Inst {
	e := b.elem(mem, ref)
	return b.add(&ir.Inst{Op: ir.OpLoad, Mem: mem, Ref: ref, Type: ir.Type{Scalar: e.Scalar.Widened(), Lanes: e.Lanes}, Args: idx})
}

func (b *kb) store(mem ir.Mem, ref int, args ...*ir.Inst) {
	b.add(&ir.Inst{Op: ir.OpStore, Mem: mem, Ref: ref, Type: ir.TVoid, Args: args})
}

func (b *kb) ld(buf int, idx *ir.Inst) *ir.Inst    { return b.load(ir.MemBuffer, buf, idx) }
func (b *kb) st(buf int, idx, v *ir.Inst)          { b.store(ir.MemBuffer, buf, idx, v) }
func (b *kb) getv(v int) *ir.Inst                  { return b.load(ir.MemVar, v) }
func (b *kb) setv(v int, x *ir.Inst)               { b.store(ir.MemVar, v, x) }
func (b *kb) conv(t ir.Type, x *ir.Inst) *ir.Inst  { return b.op(ir.OpConvert, t, x) }
func (b *kb) bcast(t ir.Type, x *ir.Inst) *ir.Inst { return b.op(ir.OpBitcast, t, x) }

func (b *kb) atomic(mem ir.Mem, ref int, aop ir.AtomicOp, args ...*ir.Inst) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpAtomic, Mem: mem, Ref: ref, Aux: uint64(aop), Type: b.elem(mem, ref), Args: args})
}

func (b *kb) nested(f func()) *ir.Block {
	blk := &ir.Block{}
	if f != nil {
		b.blocks = append(b.blocks, blk)
		f()
		b.blocks = b.blocks[:len(b.blocks)-1]
	}
	return blk
}

func (b *kb) ifElse(cond *ir.Inst, then, els func()) {
	in := b.add(&ir.Inst{Op: ir.OpIf, Type: ir.TVoid, Args: []*ir.Inst{cond}})
	in.Blocks = []*ir.Block{b.nested(then), b.nested(els)}
}

func (b *kb) loop(body, cont func()) {
	in := b.add(&ir.Inst{Op: ir.OpLoop, Type: ir.TVoid})
	in.Blocks = []*ir.Block{b.nested(body), b.nested(cont)}
}

// forN emits `for i := 0; i < n; i++ { body(i) }` with the counter in variable v (u32).
func (b *kb) forN(v int, n *ir.Inst, body func(i *ir.Inst)) {
	b.setv(v, b.u32(0))
	b.loop(func() {
		i := b.getv(v)
		b.ifElse(b.bin(ir.OpGe, i, n), func() { b.brk() }, nil)
		body(i)
	}, func() {
		b.setv(v, b.bin(ir.OpAdd, b.getv(v), b.u32(1)))
	})
}

func (b *kb) brk()     { b.op(ir.OpBreak, ir.TVoid) }
func (b *kb) cont()    { b.op(ir.OpContinue, ir.TVoid) }
func (b *kb) ret()     { b.op(ir.OpReturn, ir.TVoid) }
func (b *kb) barrier() { b.op(ir.OpBarrier, ir.TVoid) }

// done verifies the kernel.
func (b *kb) done(t testing.TB) *ir.Kernel {
	t.Helper()
	if err := ir.Verify(b.k); err != nil {
		t.Fatalf("kernel %s does not verify: %v\n%s", b.k.Name, err, b.k)
	}
	return b.k
}

// spirv-tools.

var (
	spvToolsOnce sync.Once
	spvToolsErr  error
)

// spirvTools says why spirv-val or spirv-dis cannot be used, or nil.
func spirvTools() error {
	spvToolsOnce.Do(func() {
		for _, tool := range []string{"spirv-val", "spirv-dis"} {
			if _, err := exec.LookPath(tool); err != nil {
				spvToolsErr = fmt.Errorf("%s not found (install spirv-tools): %v", tool, err)
				return
			}
		}
	})
	return spvToolsErr
}

// needSPIRVTools skips the test when spirv-val or spirv-dis is missing.
func needSPIRVTools(t testing.TB) {
	t.Helper()
	if err := spirvTools(); err != nil {
		t.Skip(err)
	}
}

func wordsBytes(words []uint32) []byte {
	buf := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(buf[4*i:], w)
	}
	return buf
}

// writeSPV writes words to a temporary file and returns its path.
func writeSPV(t testing.TB, words []uint32) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "*.spv")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(wordsBytes(words)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// spirvVal runs spirv-val --target-env vulkan1.3 on words; the error carries the validator's
// message and the disassembly.
func spirvVal(t testing.TB, words []uint32) error {
	t.Helper()
	path := writeSPV(t, words)
	out, err := exec.Command("spirv-val", "--target-env", "vulkan1.3", path).CombinedOutput()
	if err != nil {
		dis, _ := spirvDis(t, words, true)
		return fmt.Errorf("spirv-val: %v\n%s\n--- disassembly ---\n%s", err, out, dis)
	}
	return nil
}

// spirvDis returns the spirv-dis text of words, with numeric ids when raw, else with the
// names the module gives (OpName) and spirv-dis's names for types and constants.
func spirvDis(t testing.TB, words []uint32, raw bool) (string, error) {
	t.Helper()
	path := writeSPV(t, words)
	args := []string{path}
	if raw {
		args = append(args, "--raw-id")
	}
	cmd := exec.Command("spirv-dis", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("spirv-dis: %v: %s", err, errb.String())
	}
	return out.String(), nil
}

// goldenPath is the golden file of a test kernel.
func goldenPath(name string) string {
	return filepath.Join("testdata", strings.ReplaceAll(name, "/", "_")+".spvasm")
}

// ext extracts lane of vector x.
func (b *kb) ext(x *ir.Inst, lane int) *ir.Inst {
	return b.add(&ir.Inst{Op: ir.OpExtract, Type: x.Type.Elem(), Args: []*ir.Inst{x}, Aux: uint64(lane)})
}
