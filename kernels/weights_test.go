package kernels

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/internal/testmode"
	"github.com/onesource-go/onesource/internal/vktest"
	"github.com/onesource-go/onesource/lower"
	"github.com/onesource-go/onesource/oracle"
)

// weightOps are the ops of the generic weight kernels (weights.go).
var weightOps = map[string]bool{"get_rows": true, "matvec": true, "matvec_q8": true}

// firstDiff returns the index of the first element of elem type that differs between got and
// want (f32: any NaN equals any NaN), or -1.
func firstDiff(elem string, got, want []byte) int {
	if len(got) != len(want) {
		return 0
	}
	if elem != "f32" {
		for i := range got {
			if got[i] != want[i] {
				return i
			}
		}
		return -1
	}
	return vktest.DiffF32(vktest.ToF32(got), vktest.ToF32(want))
}

// runCell compiles c at schedule s for caps and runs every case on d, failing with the cell,
// case and first differing element.
func runCell(t *testing.T, d *vulkan.Device, c Cell, s Schedule, caps lower.Caps) {
	t.Helper()
	cases, err := c.Cases(s)
	if err != nil {
		t.Fatalf("%s: cases: %v", c.Name(), err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", c.Name())
	}
	m := vktest.Compile(t, c.Build(s), caps)
	for _, cs := range cases {
		out := vktest.RunModule(t, d, m, cs.Buffers, vktest.U32s(cs.Params), cs.Groups)
		for i, b := range cs.Outputs {
			if j := firstDiff(cs.Elem[i], out[b], cs.Want[i]); j >= 0 {
				if cs.Elem[i] == "f32" && 4*j+4 <= len(out[b]) && 4*j+4 <= len(cs.Want[i]) {
					g := binary.LittleEndian.Uint32(out[b][4*j:])
					w := binary.LittleEndian.Uint32(cs.Want[i][4*j:])
					t.Errorf("%s lanes=%d case %s: output %d element %d = %g (%08x), oracle %g (%08x)",
						c.Name(), s.Lanes, cs.Name, b, j, math.Float32frombits(g), g, math.Float32frombits(w), w)
				} else {
					t.Errorf("%s lanes=%d case %s: output %d differs at %d", c.Name(), s.Lanes, cs.Name, b, j)
				}
			}
		}
	}
}

// TestWeightCells runs every get_rows, matvec and matvec_q8 cell (of every registered format)
// on the Vulkan device compiled for the device's capabilities and for the portable target (no
// packed dot, no shuffles), at 32 and 64 lanes, and requires byte-identical outputs: the device
// at 32 lanes and the portable target at 64, or every pair with ONESOURCE_FULL=1.
func TestWeightCells(t *testing.T) {
	d := vktest.Device(t)
	for _, c := range Cells() {
		if !weightOps[c.Op] {
			continue
		}
		c := c
		t.Run(c.Op+"/"+c.Type.String(), func(t *testing.T) {
			type variant struct {
				lanes int
				name  string
				c     lower.Caps
			}
			// The sample: 32 lanes for the device, 64 portable; ONESOURCE_FULL=1 both at both.
			all := []variant{{32, "device", d.Caps()}, {64, "portable", vulkan.PortableCaps}, {64, "device", d.Caps()}, {32, "portable", vulkan.PortableCaps}}
			for _, v := range testmode.Sample(all, 0, 1) {
				t.Run(fmt.Sprintf("%d/%s", v.lanes, v.name), func(t *testing.T) {
					runCell(t, d, c, Schedule{Lanes: v.lanes}, v.c)
				})
			}
		})
	}
}

// TestWeightCases checks, without a device, that every weight cell builds for lanes 32 and 64
// and that its cases fit the kernel: one buffer per binding, one word per parameter, outputs
// as large as the oracle's bytes, a non-empty dispatch.
func TestWeightCases(t *testing.T) {
	for _, c := range Cells() {
		if !weightOps[c.Op] {
			continue
		}
		for _, lanes := range []int{32, 64} {
			s := Schedule{Lanes: lanes}
			ik, err := c.Build(s).Build()
			if err != nil {
				t.Errorf("%s lanes=%d: %v", c.Name(), lanes, err)
				continue
			}
			cases, err := c.Cases(s)
			if err != nil || len(cases) == 0 {
				t.Errorf("%s lanes=%d: %d cases, %v", c.Name(), lanes, len(cases), err)
				continue
			}
			for _, cs := range cases {
				where := fmt.Sprintf("%s lanes=%d case %s", c.Name(), lanes, cs.Name)
				if len(cs.Buffers) != len(ik.Buffers) || len(cs.Params) != len(ik.Params) {
					t.Errorf("%s: %d buffers and %d params for a kernel of %d and %d", where, len(cs.Buffers), len(cs.Params), len(ik.Buffers), len(ik.Params))
					continue
				}
				if len(cs.Outputs) != len(cs.Want) || len(cs.Elem) != len(cs.Want) {
					t.Errorf("%s: %d outputs, %d wants, %d elems", where, len(cs.Outputs), len(cs.Want), len(cs.Elem))
					continue
				}
				for i, b := range cs.Outputs {
					if b < 0 || b >= len(cs.Buffers) || len(cs.Buffers[b]) != len(cs.Want[i]) {
						t.Errorf("%s: output %d does not match its oracle bytes", where, b)
					}
				}
				for i, buf := range cs.Buffers {
					if len(buf) == 0 || len(buf)%4 != 0 {
						t.Errorf("%s: buffer %d has %d bytes", where, i, len(buf))
					}
				}
				if cs.Groups[0]*cs.Groups[1]*cs.Groups[2] == 0 {
					t.Errorf("%s: empty dispatch %v", where, cs.Groups)
				}
			}
		}
	}
}

// TestWeightCellsCoverage checks that every registered format has its weight cells, and that
// matvec_q8 exists exactly for the formats with a DotQ8 and an oracle integer path.
func TestWeightCellsCoverage(t *testing.T) {
	for _, f := range Formats() {
		for _, op := range []string{"get_rows", "matvec"} {
			if _, ok := Lookup(op, f.Type); !ok {
				t.Errorf("%s/%s not registered", op, f.Type)
			}
		}
		_, intPath := oracle.ActivationType(f.Type)
		_, ok := Lookup("matvec_q8", f.Type)
		if ok != (intPath && f.DotQ8 != nil) {
			t.Errorf("matvec_q8/%s registered %v; oracle integer path %v, DotQ8 %v", f.Type, ok, intPath, f.DotQ8 != nil)
		}
		if intPath && f.DotQ8 == nil {
			t.Logf("%s: the oracle has an integer path but the format has no DotQ8", f.Type)
		}
	}
}

// TestGetRowsGGML dequantizes ggml's own blocks of every registered format (all 8 rows of
// oracle/testdata/ggml/quant/<type>.<variant>.bin) with the get_rows cell and compares with
// ggml's dequantized values, bit for bit.
func TestGetRowsGGML(t *testing.T) {
	d := vktest.Device(t)
	dir := filepath.Join("..", "oracle", "testdata", "ggml", "quant")
	for _, f := range Formats() {
		c, ok := Lookup("get_rows", f.Type)
		if !ok {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, f.Type.String()+".*.bin"))
		if len(files) == 0 {
			if f.Type != oracle.F32 {
				t.Errorf("%s: no ggml vectors in %s", f.Type, dir)
			}
			continue
		}
		s := Schedule{Lanes: 64}
		m := vktest.Compile(t, c.Build(s), d.Caps())
		var tables [][]byte
		for _, name := range f.Tables {
			b, err := TableWords(name)
			if err != nil {
				t.Fatal(err)
			}
			tables = append(tables, b)
		}
		for _, file := range files {
			w, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(file[:len(file)-len(".bin")] + ".dequant.f32")
			if os.IsNotExist(err) {
				continue // an activation quantizer's output, without ggml's dequantization
			}
			if err != nil {
				t.Fatal(err)
			}
			const rows, n = 8, 4096
			ids := make([]uint32, rows)
			for i := range ids {
				ids[i] = uint32(i)
			}
			bufs := append([][]byte{PadWords(w), vktest.U32s(ids), make([]byte, 4*rows*n)}, tables...)
			out := vktest.RunModule(t, d, m, bufs, vktest.U32s([]uint32{n}), [3]uint32{n / 64, rows, 1})
			if j := firstDiff("f32", out[2], want); j >= 0 {
				g := binary.LittleEndian.Uint32(out[2][4*j:])
				wb := binary.LittleEndian.Uint32(want[4*j:])
				t.Errorf("%s: value %d (row %d) = %08x, ggml %08x", filepath.Base(file), j, j/n, g, wb)
			}
		}
	}
}

// TestGGMLInput checks that the regenerated ggml quantizer input equals quant_input.f32, so the
// cases' "ggml" rows quantize to ggml's own blocks.
func TestGGMLInput(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("..", "oracle", "testdata", "ggml", "quant_input.f32"))
	if err != nil {
		t.Skip(err)
	}
	got := ggmlInputBytes()
	if !bytes.Equal(got, want) {
		for i := 0; i < len(want) && i < len(got); i += 4 {
			if !bytes.Equal(got[i:i+4], want[i:i+4]) {
				t.Fatalf("value %d (row %d) = %08x, file %08x", i/4, i/4/4096, binary.LittleEndian.Uint32(got[i:]), binary.LittleEndian.Uint32(want[i:]))
			}
		}
		t.Fatalf("lengths %d, %d", len(got), len(want))
	}
}

func ggmlInputBytes() []byte {
	var out []byte
	for _, r := range ggmlInput() {
		out = append(out, wF32Bytes(r)...)
	}
	return out
}

// BenchmarkWeights is the kernel-only benchmark of the weight cells on the Vulkan device
// (device capabilities, lanes 64): 256 rows of 4096 values (get_rows: all 256 rows gathered),
// reporting the weight bytes read per second. Filter with -bench Weights/matvec_q8/q4_K.
func BenchmarkWeights(b *testing.B) {
	d := vktest.Device(b)
	const rows, n = 256, 4096
	s := Schedule{Lanes: 64}
	rng := rand.New(rand.NewSource(1))
	for _, c := range Cells() {
		if !weightOps[c.Op] {
			continue
		}
		f, _ := FormatOf(c.Type)
		c := c
		b.Run(c.Op+"/"+c.Type.String(), func(b *testing.B) {
			w, err := weightRows(c.Type, weightInputsOf(c.Type), rng, 0, rows, n)
			if err != nil {
				b.Fatal(err)
			}
			x := xVector(rng, n)
			var bufs [][]byte
			groups := [3]uint32{rows, 1, 1}
			switch c.Op {
			case "get_rows":
				ids := make([]int32, rows)
				for i := range ids {
					ids[i] = int32(i)
				}
				bufs = [][]byte{PadWords(w), wI32Bytes(ids), make([]byte, 4*rows*n)}
				groups = [3]uint32{n / 64, rows, 1}
			case "matvec":
				bufs = [][]byte{PadWords(w), wF32Bytes(x), make([]byte, 4*rows)}
			default:
				act, _ := oracle.ActivationType(c.Type)
				as, _ := oracle.RowSize(act, n)
				aq := make([]byte, as)
				if err := oracle.Quantize(act, x, aq); err != nil {
					b.Fatal(err)
				}
				bufs = [][]byte{PadWords(w), PadWords(aq), make([]byte, 4*rows)}
			}
			tables, err := tableBuffers(f)
			if err != nil {
				b.Fatal(err)
			}
			bufs = append(bufs, tables...)
			m := vktest.Compile(b, c.Build(s), d.Caps())
			p, err := d.Pipeline(m)
			if err != nil {
				b.Fatal(err)
			}
			vb := make([]*vulkan.Buffer, len(bufs))
			for i, data := range bufs {
				buf, err := d.NewBuffer(len(data))
				if err != nil {
					b.Fatal(err)
				}
				defer buf.Release()
				if err := buf.Write(0, data); err != nil {
					b.Fatal(err)
				}
				vb[i] = buf
			}
			b.ResetTimer()
			res, err := d.Bench(p, vb, vktest.U32s([]uint32{n}), groups, 1, b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(w))/res.PerDispatch.Seconds()/1e9, "GB/s")
			b.ReportMetric(float64(res.PerDispatch.Microseconds()), "us/dispatch")
		})
	}
}

// stressFormat runs the weight cells of t on random blocks: get_rows over about 64K values of
// entirely random bytes (every scale class, NaN and Inf included, every code), and matvec and
// matvec_q8 over 64 rows of random blocks with tame scales, for the device's lowering and the
// portable one, against the oracle.
func stressFormat(t *testing.T, typ oracle.Type) {
	t.Helper()
	d := vktest.Device(t)
	f, ok := FormatOf(typ)
	if !ok {
		t.Fatalf("%s: no format", typ)
	}
	ti, _ := typ.Info()
	rng := rand.New(rand.NewSource(int64(typ) + 77))
	s := Schedule{Lanes: 64}
	tables, err := tableBuffers(f)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		op string
		c  Case
	}
	add := func(op string, c Case, err error) {
		if err != nil {
			t.Fatalf("%s %s: %v", op, typ, err)
		}
		c.Buffers = append(c.Buffers, tables...)
		cases = append(cases, struct {
			op string
			c  Case
		}{op, c})
	}
	{ // get_rows over random bytes
		n := max(1024, ti.BlockSize*4)
		rows := 65536 / n
		rs, _ := oracle.RowSize(typ, n)
		w := make([]byte, rows*rs)
		rng.Read(w)
		ids := make([]int32, rows)
		for i := range ids {
			ids[i] = int32(rng.Intn(rows))
		}
		c, err := getRowsCase("random_bytes", typ, w, n, ids, s)
		add("get_rows", c, err)
	}
	{ // matvec, matvec_q8 over random blocks
		in := weightInputsOf(typ)
		n := max(8*ti.BlockSize, 256)
		nb := n / ti.BlockSize
		w := randomBlocks(typ, in, rng, 64*nb)
		x := xVector(rng, n)
		c, err := matvecCase("random_blocks", typ, w, x, s)
		add("matvec", c, err)
		if _, ok := Lookup("matvec_q8", typ); ok {
			c, err := matvecQ8Case("random_blocks", typ, w, x, s)
			add("matvec_q8", c, err)
		}
	}
	for _, x := range cases {
		cell, _ := Lookup(x.op, typ)
		for _, caps := range []struct {
			name string
			c    lower.Caps
		}{{"device", d.Caps()}, {"portable", vulkan.PortableCaps}} {
			m := vktest.Compile(t, cell.Build(s), caps.c)
			out := vktest.RunModule(t, d, m, x.c.Buffers, vktest.U32s(x.c.Params), x.c.Groups)
			if j := firstDiff("f32", out[2], x.c.Want[0]); j >= 0 {
				g := binary.LittleEndian.Uint32(out[2][4*j:])
				w := binary.LittleEndian.Uint32(x.c.Want[0][4*j:])
				t.Errorf("%s %s (%s): element %d = %08x, oracle %08x", cell.Name(), x.c.Name, caps.name, j, g, w)
			}
		}
	}
}
