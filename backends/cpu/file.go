package cpu

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/lower"
)

// The cpu backend's file: what `onesource gen -backends cpu` writes (<kernel>.cpu.json) and a
// program embeds, so that package prebuilt can run the kernel with no compiler and no driver.
// It holds the kernel lowered for Caps, as JSON: the resources, then the body, every instruction
// an object in program order whose operands name earlier instructions by their index in that
// order (the first instruction is 0, an if's or loop's blocks follow it). Operations, types,
// memory spaces and access modes are written by their IR text names, and source positions as
// "dir/file.go:line" (the file's directory and base name only), so the file does not depend on
// where the source tree lives and the same kernel always gives the same bytes.

// FileFormat is the format name a file starts with; Decode refuses any other.
const FileFormat = "onesource-cpu-ir/1"

// FileExt is the extension of the files Emit writes.
const FileExt = ".cpu.json"

type fileKernel struct {
	Format    string       `json:"format"`
	Name      string       `json:"kernel"`
	Pos       string       `json:"pos"`
	Workgroup [3]uint32    `json:"workgroup"`
	Buffers   []fileBuffer `json:"buffers,omitempty"`
	Params    []fileVar    `json:"params,omitempty"`
	Shared    []fileShared `json:"shared,omitempty"`
	Vars      []fileVar    `json:"vars,omitempty"`
	Body      []fileInst   `json:"body"`
}

type fileBuffer struct {
	Name   string `json:"name"`
	Elem   string `json:"elem"`
	Access string `json:"access"`
	Pos    string `json:"pos"`
}

type fileVar struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Pos  string `json:"pos"`
}

type fileShared struct {
	Name string `json:"name"`
	Elem string `json:"elem"`
	Len  int    `json:"len"`
	Pos  string `json:"pos"`
}

type fileInst struct {
	Op     string       `json:"op"`
	Type   string       `json:"type,omitempty"`
	Args   []int        `json:"args,omitempty"`
	Aux    uint64       `json:"aux,omitempty"`
	Ref    int          `json:"ref,omitempty"`
	Mem    string       `json:"mem,omitempty"`
	Blocks [][]fileInst `json:"blocks,omitempty"`
	Name   string       `json:"name,omitempty"`
	Pos    string       `json:"pos"`
}

// Emit lowers k for Caps and returns the cpu backend's file of it (see Encode). It checks that
// the executor can run it (CompileLowered).
func Emit(k *ir.Kernel) ([]byte, error) {
	if k == nil {
		return nil, fmt.Errorf("cpu: Emit: nil kernel")
	}
	low, err := lower.Run(k, Caps)
	if err != nil {
		return nil, err
	}
	if _, err := CompileLowered(low); err != nil {
		return nil, err
	}
	return Encode(low)
}

// Load reads a file Emit wrote and compiles the kernel it holds.
func Load(data []byte) (*Program, error) {
	k, err := Decode(data)
	if err != nil {
		return nil, err
	}
	return CompileLowered(k)
}

// Encode writes k (a verified kernel, normally lowered for Caps) in the file format.
func Encode(k *ir.Kernel) ([]byte, error) {
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	f := fileKernel{Format: FileFormat, Name: k.Name, Pos: posText(k.Pos), Workgroup: k.WorkgroupSize}
	for _, b := range k.Buffers {
		f.Buffers = append(f.Buffers, fileBuffer{b.Name, b.Elem.String(), b.Access.String(), posText(b.Pos)})
	}
	for _, p := range k.Params {
		f.Params = append(f.Params, fileVar{p.Name, p.Type.String(), posText(p.Pos)})
	}
	for _, s := range k.Shared {
		f.Shared = append(f.Shared, fileShared{s.Name, s.Elem.String(), s.Len, posText(s.Pos)})
	}
	for _, v := range k.Vars {
		f.Vars = append(f.Vars, fileVar{v.Name, v.Type.String(), posText(v.Pos)})
	}
	ids := map[*ir.Inst]int{}
	var enc func(b *ir.Block) []fileInst
	enc = func(b *ir.Block) []fileInst {
		out := []fileInst{}
		for _, in := range b.Insts {
			ids[in] = len(ids)
			fi := fileInst{Op: in.Op.String(), Aux: in.Aux, Ref: in.Ref, Name: in.Name, Pos: posText(in.Pos)}
			if in.Type != ir.TVoid {
				fi.Type = in.Type.String()
			}
			for _, a := range in.Args {
				fi.Args = append(fi.Args, ids[a])
			}
			if in.Op == ir.OpLoad || in.Op == ir.OpStore || in.Op == ir.OpAtomic {
				fi.Mem = in.Mem.String()
			}
			for _, nb := range in.Blocks {
				fi.Blocks = append(fi.Blocks, enc(nb))
			}
			out = append(out, fi)
		}
		return out
	}
	f.Body = enc(k.Body)
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads a file Encode wrote and returns its kernel, verified.
func Decode(data []byte) (*ir.Kernel, error) {
	var f fileKernel
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("cpu: not a cpu kernel file: %w", err)
	}
	if f.Format != FileFormat {
		return nil, fmt.Errorf("cpu: kernel file format %q, this executor reads %q (regenerate with this version of onesource)", f.Format, FileFormat)
	}
	r := &reader{}
	k := &ir.Kernel{Name: f.Name, Pos: r.pos(f.Pos), WorkgroupSize: f.Workgroup}
	for _, b := range f.Buffers {
		k.Buffers = append(k.Buffers, &ir.Buffer{Name: b.Name, Elem: r.typ(b.Elem), Access: r.access(b.Access), Pos: r.pos(b.Pos)})
	}
	for _, p := range f.Params {
		k.Params = append(k.Params, &ir.Param{Name: p.Name, Type: r.typ(p.Type), Pos: r.pos(p.Pos)})
	}
	for _, s := range f.Shared {
		k.Shared = append(k.Shared, &ir.Shared{Name: s.Name, Elem: r.typ(s.Elem), Len: s.Len, Pos: r.pos(s.Pos)})
	}
	for _, v := range f.Vars {
		k.Vars = append(k.Vars, &ir.Var{Name: v.Name, Type: r.typ(v.Type), Pos: r.pos(v.Pos)})
	}
	k.Body = r.block(f.Body)
	if r.err != nil {
		return nil, fmt.Errorf("cpu: kernel file of %s: %w", f.Name, r.err)
	}
	if err := ir.Verify(k); err != nil {
		return nil, fmt.Errorf("cpu: kernel file of %s does not verify: %w", f.Name, err)
	}
	return k, nil
}

// reader turns a file's names back into IR values; the first error stops it.
type reader struct {
	insts []*ir.Inst
	err   error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) block(fs []fileInst) *ir.Block {
	b := &ir.Block{}
	for _, fi := range fs {
		op, ok := opByName[fi.Op]
		if !ok {
			r.fail("unknown operation %q (the file is newer than this executor: update onesource)", fi.Op)
			return b
		}
		in := &ir.Inst{Op: op, Aux: fi.Aux, Ref: fi.Ref, Name: fi.Name, Pos: r.pos(fi.Pos)}
		if fi.Type != "" {
			in.Type = r.typ(fi.Type)
		}
		for _, a := range fi.Args {
			if a < 0 || a >= len(r.insts) {
				r.fail("%s at %s: operand %d does not name an earlier instruction", fi.Op, fi.Pos, a)
				return b
			}
			in.Args = append(in.Args, r.insts[a])
		}
		if fi.Mem != "" {
			m, ok := memByName[fi.Mem]
			if !ok {
				r.fail("unknown memory space %q", fi.Mem)
			}
			in.Mem = m
		}
		r.insts = append(r.insts, in)
		for _, nb := range fi.Blocks {
			in.Blocks = append(in.Blocks, r.block(nb))
		}
		b.Insts = append(b.Insts, in)
	}
	return b
}

func (r *reader) typ(s string) ir.Type {
	lanes := 1
	name := s
	if rest, ok := strings.CutPrefix(s, "vec"); ok && len(rest) > 3 && rest[1] == '<' && strings.HasSuffix(rest, ">") {
		lanes = int(rest[0] - '0')
		name = rest[2 : len(rest)-1]
	}
	sc, ok := scalarByName[name]
	if !ok || lanes < 1 || lanes > 4 {
		r.fail("unknown type %q", s)
	}
	return ir.Type{Scalar: sc, Lanes: uint8(lanes)}
}

func (r *reader) access(s string) ir.Access {
	for _, a := range []ir.Access{ir.ReadOnly, ir.WriteOnly, ir.ReadWrite} {
		if a.String() == s {
			return a
		}
	}
	r.fail("unknown access mode %q", s)
	return ir.ReadOnly
}

func (r *reader) pos(s string) ir.Pos {
	if s == "?" || s == "" {
		return ir.Pos{}
	}
	i := strings.LastIndexByte(s, ':')
	line, err := strconv.Atoi(s[i+1:])
	if i < 0 || err != nil {
		r.fail("bad source position %q", s)
		return ir.Pos{}
	}
	return ir.Pos{File: s[:i], Line: line}
}

// posText is a position as the file records it: lower.ShortPos, "dir/file.go:line".
func posText(p ir.Pos) string { return lower.ShortPos(p) }

var (
	opByName     = map[string]ir.Op{}
	scalarByName = map[string]ir.Scalar{}
	memByName    = map[string]ir.Mem{}
)

func init() {
	for i := 1; i < 256; i++ {
		if s := ir.Op(i).String(); !strings.HasPrefix(s, "op(") {
			opByName[s] = ir.Op(i)
		}
		if s := ir.Scalar(i).String(); !strings.HasPrefix(s, "scalar(") {
			scalarByName[s] = ir.Scalar(i)
		}
	}
	for _, m := range []ir.Mem{ir.MemBuffer, ir.MemShared, ir.MemVar} {
		memByName[m.String()] = m
	}
}
