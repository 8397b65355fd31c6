// Package conformance runs every cell of the kernel matrix (package kernels) on every available
// backend and judges it against the oracle byte for byte.
//
// For each (cell, backend) it records the levels reached — E emitted, V validated by the vendor
// toolchain, X executed on a real driver, H executed by host emulation of the emitted source
// (never reported as X), B bit-exact against the oracle on every case — and, where a case is not
// bit-exact, the largest difference in ULP and relative error. A report never claims a level
// that was not reached; a backend that is not available here says "unavailable" with the reason.
//
// # Inexact cells
//
// A cell whose cases declare tolerances (kernels.Case.Tol: outputs computed with a device's own
// functions, dsl.Value.Native) is never bit-exact and never gets B. Each such output is measured
// against the oracle in float32 ULPs (CompareULP: a NaN must meet a NaN, an infinity the same
// infinity), the other outputs byte for byte; the run passes (Result.Within, Result.Passed) when
// every measured maximum is within its declared bound, and is reported as "inexact, max ULP N"
// with the measured N per output (Result.InexactOutputs), in the matrix, the JSON and the
// progress lines. Such cells are left out of the same-bytes-everywhere check (Inconsistent):
// their bytes differ between devices by design.
//
// # Checked mode
//
// Cells run in checked mode unless it is turned off (SetChecked, Vulkan.Unchecked, `onesource
// conform -checked=false`): the Vulkan and C-family targets run the kernel that lower.RunChecked
// makes of the cell's kernel (lowered, then instrumented), which compares every buffer index that
// may be out of bounds with the bound buffer's element count, skips an access that is out of bounds
// (a load gives 0) and records the first such access in a 16-byte report buffer bound after the
// cell's own bindings. The target reads the report after each case; a run whose kernel recorded a
// violation fails (Result.OutOfBounds; Reason "out of bounds at kernels/ops_norm.go:57: store
// y[4096] outside its 4096 elements (case NAME)"), whatever its outputs. The checked kernel
// computes the same bytes as the unchecked one, so bit-exactness is judged as before. The suite's
// Vulkan target (Targets) also opens its device with robustBufferAccess where the device has it.
// Only this package checks: production paths (packages engine, prebuilt, generate and `onesource
// gen`) emit and run unchecked kernels, byte for byte what they were.
package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/onesource-go/onesource/ir"
	"github.com/onesource-go/onesource/kernels"
)

// Target is one backend as the suite drives it.
type Target interface {
	// Name is the backend's name as in reports: "vulkan", "cuda", "hip", "metal".
	Name() string
	// Open makes the backend ready; an error is the reason it is unavailable here.
	Open() error
	// Run emits and validates k for this backend, executes every case and returns the outcome.
	// Levels holds the levels reached before any error (E, V, then X or H).
	Run(k *ir.Kernel, s kernels.Schedule, cases []kernels.Case) Outcome
	// Close releases what Open acquired.
	Close()
}

// Outcome is what a target did with one cell.
type Outcome struct {
	Levels  string     // e.g. "EVX"
	Outputs [][][]byte // per case, the bytes of each of its Outputs bindings
	Err     error      // the first failure; Levels says how far it got
	Notes   []string   // extra facts for the report ("host check, not Apple's compiler")
	Timing  time.Duration
	// Checked says the kernel ran bounds-checked (checked mode); OutOfBounds is then the first
	// out-of-bounds access it recorded ("kernels/ops_norm.go:57: store y[4096] outside its 4096
	// elements (case rows=3)"), "" when none. Outputs are the cases' outputs either way.
	Checked     bool
	OutOfBounds string
	// Phases is where the target's time went (Judge adds the build).
	Phases Phases
	// Islands names the body each intrinsic island of the kernel ran with ("mma_i8_16x16x32:
	// portable"), nil when it has none.
	Islands []string
}

// Phases is where one run's time went, in seconds. A phase the target does not have stays 0.
type Phases struct {
	Build    float64 `json:"build"`    // the DSL kernel built into IR, and its cases
	Lower    float64 `json:"lower"`    // lowering for the target (and checked-mode instrumentation)
	Emit     float64 `json:"emit"`     // SPIR-V words, C-family text or WGSL written
	Validate float64 `json:"validate"` // the toolchain's check: spirv-val, clang or hipcc, naga
	// Driver is the driver's or host compiler's part before anything runs: pipeline creation
	// on Vulkan (Mesa's lavapipe compiles at the first dispatch instead, which Run then holds),
	// the host compile of C-family text.
	Driver float64 `json:"driver"`
	Run    float64 `json:"run"` // the cases dispatched and their outputs read back
}

// String is "build 1ms lower 4ms emit 2ms validate 30ms driver 5ms run 300ms".
func (p Phases) String() string {
	ms := func(s float64) string { return fmt.Sprintf("%.0fms", s*1e3) }
	return fmt.Sprintf("build %s lower %s emit %s validate %s driver %s run %s",
		ms(p.Build), ms(p.Lower), ms(p.Emit), ms(p.Validate), ms(p.Driver), ms(p.Run))
}

// clock times the phases of a run: each call of lap returns the seconds since the last.
type clock struct{ t time.Time }

func newClock() *clock { return &clock{time.Now()} }

func (c *clock) lap() float64 {
	now := time.Now()
	d := now.Sub(c.t).Seconds()
	c.t = now
	return d
}

// Result is the verdict on one (cell, backend, schedule): a row of the JSON report.
type Result struct {
	Op       string `json:"op"`
	Type     string `json:"type"`
	Backend  string `json:"backend"`
	Schedule string `json:"schedule"` // kernels.Schedule.String(): "lanes=64,blocked"
	Lanes    int    `json:"lanes"`
	Width    int    `json:"width,omitempty"` // the cell's canonical width W (0: no reduction)
	Levels   string `json:"levels"`
	BitExact bool   `json:"bitexact"`
	// Digest is the SHA-256 of the outputs of every case, NaNs canonicalized (any NaN equals
	// any NaN in f32 outputs): equal digests mean equal bytes under the contract's comparison.
	// Empty when the cell did not run to the end.
	Digest  string  `json:"digest,omitempty"`
	Cases   int     `json:"cases"`
	MaxULP  float64 `json:"max_ulp"`
	MaxRel  float64 `json:"max_rel"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds"`
	Phases  Phases  `json:"phases"`
	Ran     bool    `json:"ran"`
	// Perf is the kernel-only measurement at the op's realistic shape (level P), when the run
	// was measured (conform -bench; Vulkan only).
	Perf *CellBench `json:"perf,omitempty"`
	// Checked says the cell ran in checked mode (bounds-checked kernel). OutOfBounds is the
	// first out-of-bounds access it recorded, "FILE:LINE: store y[4096] outside its 4096
	// elements (case NAME)"; such a run fails (not bit-exact, Reason "out of bounds at ...").
	Checked     bool   `json:"checked,omitempty"`
	OutOfBounds string `json:"out_of_bounds,omitempty"`
	// Islands names the body each intrinsic island of the kernel ran with on this run, native
	// or portable ("mma_i8_16x16x32: mma.sync.m16n8k32.s8 x2"); empty when it has none.
	Islands []string `json:"islands,omitempty"`
	// Inexact says the cell declares inexact outputs (kernels.Case.Tol: a device's own
	// functions): it is never bit-exact; Within says every inexact output stayed within its
	// declared bound (and every other output was bit-exact), so the cell passes as "inexact, max
	// ULP N", N being MaxULP. InexactOutputs gives each inexact output's measured maximum and
	// bound over all cases.
	Inexact        bool            `json:"inexact,omitempty"`
	Within         bool            `json:"within_tolerance,omitempty"`
	InexactOutputs []InexactOutput `json:"inexact_outputs,omitempty"`
}

// InexactOutput is the verdict on one declared-inexact output of a cell.
type InexactOutput struct {
	Name   string  `json:"name"`    // kernels.Tolerance.Name
	MaxULP float64 `json:"max_ulp"` // the largest distance measured, over every case
	Bound  float64 `json:"bound"`   // kernels.Tolerance.MaxULP
}

// Passed reports whether the run met the contract: bit-exact, or, for a cell with declared
// inexact outputs, every output within its bound and the rest bit-exact.
func (r Result) Passed() bool { return r.BitExact || (r.Inexact && r.Within) }

// inexactSummary is "inexact, max ULP N (exp 3 <= 32, log 1 <= 8, ...)".
func inexactSummary(r Result) string {
	parts := make([]string, len(r.InexactOutputs))
	worst := 0.0
	for i, o := range r.InexactOutputs {
		if o.MaxULP > worst || math.IsNaN(o.MaxULP) {
			worst = o.MaxULP
		}
		parts[i] = fmt.Sprintf("%s %g <= %g", o.Name, o.MaxULP, o.Bound)
		if !(o.MaxULP <= o.Bound) {
			parts[i] = fmt.Sprintf("%s %g > %g", o.Name, o.MaxULP, o.Bound)
		}
	}
	return fmt.Sprintf("inexact, max ULP %g (%s)", worst, strings.Join(parts, ", "))
}

// Judge runs one cell on one open target at schedule s and returns the verdict.
func Judge(t Target, c kernels.Cell, s kernels.Schedule) Result {
	start := time.Now()
	r := Result{Op: c.Op, Type: c.Type.String(), Backend: t.Name(), Schedule: s.String(), Lanes: s.Lanes, Width: c.Width, Ran: true}
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	k, err := c.Build(s).Build()
	if err != nil {
		r.Reason = "kernel does not build: " + err.Error()
		r.Seconds = time.Since(start).Seconds()
		return r
	}
	cases, err := c.Cases(s)
	if err != nil {
		r.Reason = "cases: " + err.Error()
		r.Seconds = time.Since(start).Seconds()
		return r
	}
	r.Cases = len(cases)
	built := time.Since(start).Seconds()
	o := t.Run(k, s, cases)
	r.Phases = o.Phases
	r.Phases.Build = built
	r.Levels = o.Levels
	r.Checked = o.Checked
	r.Islands = o.Islands
	if o.Err != nil {
		r.Reason = o.Err.Error()
		r.Seconds = time.Since(start).Seconds()
		return r
	}
	exact, within := true, true
	var why []string
	inexactAt := map[string]int{} // InexactOutputs index by name
	for i, cs := range cases {
		for j, want := range cs.Want {
			got := o.Outputs[i][j]
			elem := "f32"
			if j < len(cs.Elem) {
				elem = cs.Elem[j]
			}
			if j < len(cs.Tol) && cs.Tol[j] != nil {
				tol := cs.Tol[j]
				r.Inexact = true
				at, seen := inexactAt[tol.Name]
				if !seen {
					at = len(r.InexactOutputs)
					inexactAt[tol.Name] = at
					r.InexactOutputs = append(r.InexactOutputs, InexactOutput{Name: tol.Name, Bound: tol.MaxULP})
				}
				u, first := CompareULP(got, want)
				io := &r.InexactOutputs[at]
				if u > io.MaxULP || math.IsNaN(u) {
					io.MaxULP = u
				}
				if u > r.MaxULP {
					r.MaxULP = u
				}
				if !(u <= tol.MaxULP) {
					within = false
					if len(why) < 3 {
						why = append(why, fmt.Sprintf("case %s output %d (%s): %g ULP over the bound %g: %s", cs.Name, cs.Outputs[j], tol.Name, u, tol.MaxULP, first))
					}
				}
				continue
			}
			d := Compare(got, want, elem)
			if !d.Exact {
				exact = false
				if d.ULP > r.MaxULP {
					r.MaxULP = d.ULP
				}
				if d.Rel > r.MaxRel {
					r.MaxRel = d.Rel
				}
				if len(why) < 3 {
					why = append(why, fmt.Sprintf("case %s output %d: %s", cs.Name, cs.Outputs[j], d.First))
				}
			}
		}
	}
	switch {
	case o.OutOfBounds != "":
		// A kernel that indexes out of bounds fails whatever its outputs: no B, and no digest
		// (its bytes are not a schedule's or backend's to compare).
		r.OutOfBounds = o.OutOfBounds
		r.Reason = "out of bounds at " + o.OutOfBounds
		if !exact {
			r.Reason += "; not bit-exact: " + strings.Join(why, "; ")
		}
	case exact && !r.Inexact:
		r.Digest = OutputDigest(cases, o.Outputs)
		r.BitExact = true
		r.Levels += "B"
	case exact && within:
		// Declared inexact and within every bound: a pass, never called bit-exact (no B).
		r.Digest = OutputDigest(cases, o.Outputs)
		r.Within = true
		r.Reason = inexactSummary(r)
	case exact:
		r.Digest = OutputDigest(cases, o.Outputs)
		r.Reason = inexactSummary(r) + ": over the declared bound: " + strings.Join(why, "; ")
	default:
		r.Digest = OutputDigest(cases, o.Outputs)
		r.Reason = "not bit-exact: " + strings.Join(why, "; ")
		if r.Inexact {
			r.Reason += "; " + inexactSummary(r)
		}
	}
	if len(o.Notes) > 0 {
		if r.Reason != "" {
			r.Reason += "; "
		}
		r.Reason += strings.Join(o.Notes, "; ")
	}
	r.Seconds = time.Since(start).Seconds()
	return r
}

// OutputDigest is the SHA-256 (hex) of the outputs of cases (outs[i][j]: case i's output j),
// with every NaN of an f32 output (elem "f32") and of a q8_1 block's f16 scales replaced by one
// canonical NaN, so that it identifies the bytes up to the contract's comparison.
func OutputDigest(cases []kernels.Case, outs [][][]byte) string {
	h := sha256.New()
	for i, cs := range cases {
		for j := range cs.Outputs {
			if i >= len(outs) || j >= len(outs[i]) {
				continue
			}
			b := append([]byte(nil), outs[i][j]...)
			elem := "f32"
			if j < len(cs.Elem) {
				elem = cs.Elem[j]
			}
			switch {
			case elem == "f32" && len(b)%4 == 0:
				for k := 0; k < len(b); k += 4 {
					if f := math.Float32frombits(le32(b[k:])); f != f {
						copy(b[k:], []byte{0x00, 0x00, 0xc0, 0x7f})
					}
				}
			case elem == "q8_1" && len(b)%36 == 0:
				for k := 0; k < len(b); k += 36 {
					for _, f := range []int{k, k + 2} {
						if isNaN16(b[f:]) {
							b[f], b[f+1] = 0x00, 0x7e
						}
					}
				}
			}
			fmt.Fprintf(h, "%d:%d:%d\n", i, j, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Diff describes how two outputs differ.
type Diff struct {
	Exact bool
	ULP   float64 // largest difference in units in the last place (f32 outputs)
	Rel   float64 // largest relative error |got-want|/|want| (f32 outputs)
	First string  // the first differing element, described
}

// Compare compares output bytes with the oracle's: byte for byte, except that any NaN equals any
// NaN for float fields. elem is "f32", "q8_1" (36-byte blocks whose two leading f16 fields compare
// NaN-equal, quants byte for byte) or another element name (compared as raw bytes).
func Compare(got, want []byte, elem string) Diff {
	if len(got) != len(want) {
		return Diff{First: fmt.Sprintf("%d bytes, want %d", len(got), len(want)), ULP: math.Inf(1), Rel: math.Inf(1)}
	}
	d := Diff{Exact: true}
	if elem == "q8_1" && len(got)%36 == 0 {
		for i := range got {
			if got[i] == want[i] {
				continue
			}
			if o := i % 36; o < 4 {
				f := i - o%2 // the f16 field this byte belongs to
				if isNaN16(got[f:]) && isNaN16(want[f:]) {
					continue
				}
			}
			d.Exact = false
			d.ULP, d.Rel = math.Inf(1), math.Inf(1)
			d.First = fmt.Sprintf("block %d byte %d = %#02x, want %#02x", i/36, i%36, got[i], want[i])
			return d
		}
		return d
	}
	if elem != "f32" || len(got)%4 != 0 {
		for i := range got {
			if got[i] != want[i] {
				if d.Exact {
					d.First = fmt.Sprintf("byte %d = %#02x, want %#02x", i, got[i], want[i])
				}
				d.Exact = false
				d.ULP, d.Rel = math.Inf(1), math.Inf(1)
			}
		}
		return d
	}
	for i := 0; i < len(got); i += 4 {
		g := le32(got[i:])
		w := le32(want[i:])
		if g == w {
			continue
		}
		gf, wf := math.Float32frombits(g), math.Float32frombits(w)
		if gf != gf && wf != wf {
			continue
		}
		if d.Exact {
			d.First = fmt.Sprintf("element %d = %g (%08x), want %g (%08x)", i/4, gf, g, wf, w)
		}
		d.Exact = false
		u := ulpDiff(g, w)
		if u > d.ULP {
			d.ULP = u
		}
		rel := math.Inf(1)
		if !math.IsNaN(float64(gf)) && !math.IsNaN(float64(wf)) {
			rel = math.Abs(float64(gf)-float64(wf)) / math.Max(math.Abs(float64(wf)), math.SmallestNonzeroFloat32)
		}
		if rel > d.Rel {
			d.Rel = rel
		}
	}
	return d
}

// CompareULP measures an inexact f32 output against the oracle's: the largest distance in ULPs
// on the ordered integer line (adjacent floats 1 apart, +0 and -0 too), infinite where a NaN
// meets a number or an infinity meets anything but the same infinity, and the first element at
// that largest distance, described. Outputs of different lengths are infinitely far apart.
func CompareULP(got, want []byte) (maxULP float64, first string) {
	if len(got) != len(want) || len(got)%4 != 0 {
		return math.Inf(1), fmt.Sprintf("%d bytes, want %d", len(got), len(want))
	}
	for i := 0; i < len(got); i += 4 {
		g, w := le32(got[i:]), le32(want[i:])
		gf, wf := math.Float32frombits(g), math.Float32frombits(w)
		var u float64
		switch {
		case gf != gf && wf != wf:
			continue
		case gf != gf || wf != wf, math.IsInf(float64(gf), 0) || math.IsInf(float64(wf), 0):
			if g == w {
				continue
			}
			u = math.Inf(1)
		default:
			u = ulpDiff(g, w)
		}
		if u > maxULP {
			maxULP = u
			first = fmt.Sprintf("element %d = %g (%08x), want %g (%08x)", i/4, gf, g, wf, w)
		}
	}
	return maxULP, first
}

func isNaN16(b []byte) bool {
	h := uint16(b[0]) | uint16(b[1])<<8
	return h&0x7c00 == 0x7c00 && h&0x3ff != 0
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// ulpDiff is the distance between two f32 bit patterns on the ordered integer line (+0 and -0
// adjacent at distance 1, a NaN infinitely far).
func ulpDiff(a, b uint32) float64 {
	fa, fb := math.Float32frombits(a), math.Float32frombits(b)
	if fa != fa || fb != fb {
		return math.Inf(1)
	}
	ord := func(u uint32) int64 {
		if u&0x80000000 != 0 {
			return -int64(u & 0x7fffffff)
		}
		return int64(u) + 1
	}
	d := ord(a) - ord(b)
	if d < 0 {
		d = -d
	}
	return float64(d)
}
