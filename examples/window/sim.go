package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/onesource-go/onesource/backends/vulkan"
	"github.com/onesource-go/onesource/dsl"
)

// The simulation: Gray-Scott reaction-diffusion on a gridW x gridH torus, stepsPerFrame steps a
// frame, then a colour map scaled (nearest cell) to the window's pixels.
const (
	gridW         = 256
	gridH         = 256
	stepsPerFrame = 8
	wg            = 8 // workgroups are wg x wg invocations
)

// Model parameters (Pearson's "mitosis"-like regime) with dt = 1.
const (
	diffU = float32(0.2097)
	diffV = float32(0.105)
	feed  = float32(0.0367)
	kill  = float32(0.0649)
	dt    = float32(1)
)

// StepKernel builds one Gray-Scott step: for the cell (x, y) with its four neighbours on the
// torus, in this order and rounding every operation (no FMA):
//
//	lapU = (((uL + uR) + uU) + uD) - u*4            (lapV likewise)
//	uvv  = (u*v)*v
//	u'   = u + (((Du*lapU) - uvv) + F*(1-u)) * dt
//	v'   = v + (((Dv*lapV) + uvv) - (F+k)*v) * dt
func StepKernel() *dsl.Kernel {
	k := dsl.New("gray_scott_step", wg, wg)
	uIn := k.Buffer("u_in", dsl.F32, dsl.Read)
	vIn := k.Buffer("v_in", dsl.F32, dsl.Read)
	uOut := k.Buffer("u_out", dsl.F32, dsl.Write)
	vOut := k.Buffer("v_out", dsl.F32, dsl.Write)
	w := k.Param("w", dsl.U32)
	h := k.Param("h", dsl.U32)
	du := k.Param("du", dsl.F32)
	dv := k.Param("dv", dsl.F32)
	f := k.Param("feed", dsl.F32)
	kl := k.Param("kill", dsl.F32)
	step := k.Param("dt", dsl.F32)
	x := k.GlobalID(dsl.X).Named("x")
	y := k.GlobalID(dsl.Y).Named("y")
	k.If(x.Lt(w).And(y.Lt(h)), func() {
		xl := k.Select(x.Eq(0), w.Sub(1), x.Sub(1))
		xr := k.Select(x.Eq(w.Sub(1)), k.U32(0), x.Add(1))
		yu := k.Select(y.Eq(0), h.Sub(1), y.Sub(1))
		yd := k.Select(y.Eq(h.Sub(1)), k.U32(0), y.Add(1))
		row := y.Mul(w)
		i := row.Add(x).Named("i")
		lap := func(a dsl.Array, c dsl.Value) dsl.Value {
			s := a.Load(row.Add(xl)).Add(a.Load(row.Add(xr)))
			s = s.Add(a.Load(yu.Mul(w).Add(x)))
			s = s.Add(a.Load(yd.Mul(w).Add(x)))
			return s.Sub(c.Mul(float32(4)))
		}
		u := uIn.Load(i).Named("u")
		v := vIn.Load(i).Named("v")
		uvv := u.Mul(v).Mul(v).Named("uvv")
		dU := du.Mul(lap(uIn, u)).Sub(uvv).Add(f.Mul(k.F32(1).Sub(u)))
		dV := dv.Mul(lap(vIn, v)).Add(uvv).Sub(f.Add(kl).Mul(v))
		uOut.Store(i, u.Add(dU.Mul(step)))
		vOut.Store(i, v.Add(dV.Mul(step)))
	})
	return k
}

// ColourKernel builds the colour map: the pixel (x, y) of an ow x oh image shows the cell
// (x*gw/ow, y*gh/oh); with s = min(max(v*3, 0), 1) its channels are
//
//	r = u32((s*s)*255), g = u32(s*255), b = u32(64 + s*191), a = 255
//
// packed little-endian as R, G, B, A bytes, or B, G, R, A when bgra is not 0.
func ColourKernel() *dsl.Kernel {
	k := dsl.New("colour_map", wg, wg)
	vIn := k.Buffer("v", dsl.F32, dsl.Read)
	out := k.Buffer("pixels", dsl.U32, dsl.Write)
	gw := k.Param("gw", dsl.U32)
	gh := k.Param("gh", dsl.U32)
	ow := k.Param("ow", dsl.U32)
	oh := k.Param("oh", dsl.U32)
	bgra := k.Param("bgra", dsl.U32)
	x := k.GlobalID(dsl.X).Named("x")
	y := k.GlobalID(dsl.Y).Named("y")
	k.If(x.Lt(ow).And(y.Lt(oh)), func() {
		sx := x.Mul(gw).Div(ow)
		sy := y.Mul(gh).Div(oh)
		t := vIn.Load(sy.Mul(gw).Add(sx))
		s := t.Mul(float32(3)).Max(float32(0)).Min(float32(1)).Named("s")
		r := s.Mul(s).Mul(float32(255)).U32()
		g := s.Mul(float32(255)).U32()
		b := k.F32(64).Add(s.Mul(float32(191))).U32()
		alpha := k.U32(255).Shl(24)
		rgba := r.Or(g.Shl(8)).Or(b.Shl(16)).Or(alpha)
		bgr := b.Or(g.Shl(8)).Or(r.Shl(16)).Or(alpha)
		out.Store(y.Mul(ow).Add(x), k.Select(bgra.Ne(0), bgr, rgba))
	})
	return k
}

// InitialState is the grid before the first step: u = 1, v = 0, with a few square seeds of
// u = 0.5, v = 0.25 placed by a fixed linear congruential sequence.
func InitialState() (u, v []float32) {
	u = make([]float32, gridW*gridH)
	v = make([]float32, gridW*gridH)
	for i := range u {
		u[i] = 1
	}
	seed := uint32(12345)
	next := func(n int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>8) % n
	}
	for s := 0; s < 12; s++ {
		cx, cy, r := next(gridW), next(gridH), 3+next(6)
		for y := cy - r; y <= cy+r; y++ {
			for x := cx - r; x <= cx+r; x++ {
				i := ((y+gridH)%gridH)*gridW + (x+gridW)%gridW
				u[i], v[i] = 0.5, 0.25
			}
		}
	}
	return u, v
}

// sim is the simulation on a Vulkan device: the two grids (ping-pong) and the pixel buffer.
type sim struct {
	d       *vulkan.Device
	step    *vulkan.Pipeline
	colour  *vulkan.Pipeline
	u, v    [2]*vulkan.Buffer
	cur     int // u[cur], v[cur] hold the current state
	pixels  *vulkan.Buffer
	pw, ph  int
	stream  *vulkan.Stream
	timed   bool
	kernels time.Duration // device time of the last frame's kernels (host time without timestamps)
}

func newSim(d *vulkan.Device) (s *sim, err error) {
	s = &sim{d: d, timed: d.Info().Timestamps}
	defer func() {
		if err != nil {
			s.release()
			s = nil
		}
	}()
	for _, p := range []struct {
		k   *dsl.Kernel
		dst **vulkan.Pipeline
	}{{StepKernel(), &s.step}, {ColourKernel(), &s.colour}} {
		ik, err := p.k.Build()
		if err != nil {
			return nil, err
		}
		m, err := d.Compile(ik)
		if err != nil {
			return nil, err
		}
		if *p.dst, err = d.Pipeline(m); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 2; i++ {
		if s.u[i], err = d.NewBuffer(4 * gridW * gridH); err != nil {
			return nil, err
		}
		if s.v[i], err = d.NewBuffer(4 * gridW * gridH); err != nil {
			return nil, err
		}
	}
	if s.stream, err = d.NewStream(s.timed); err != nil {
		return nil, err
	}
	return s, s.reset()
}

// reset loads InitialState.
func (s *sim) reset() error {
	u, v := InitialState()
	s.cur = 0
	if err := s.u[0].Write(0, f32Bytes(u)); err != nil {
		return err
	}
	return s.v[0].Write(0, f32Bytes(v))
}

// frame runs steps simulation steps (0 while paused) and the colour map into a pixel buffer of
// ow x oh pixels, which it returns.
func (s *sim) frame(steps, ow, oh int, bgra bool) (*vulkan.Buffer, error) {
	if s.pixels == nil || s.pw != ow || s.ph != oh {
		if s.pixels != nil {
			s.pixels.Release()
			s.pixels = nil
		}
		b, err := s.d.NewBuffer(4 * ow * oh)
		if err != nil {
			return nil, err
		}
		s.pixels, s.pw, s.ph = b, ow, oh
	}
	stepPush := push(uint32(gridW), uint32(gridH), diffU, diffV, feed, kill, dt)
	groups := [3]uint32{(gridW + wg - 1) / wg, (gridH + wg - 1) / wg, 1}
	for i := 0; i < steps; i++ {
		a, b := s.cur, 1-s.cur
		views := []vulkan.View{s.u[a].Whole(), s.v[a].Whole(), s.u[b].Whole(), s.v[b].Whole()}
		if err := s.stream.Dispatch(s.step, views, stepPush, groups); err != nil {
			return nil, err
		}
		s.cur = b
	}
	flag := uint32(0)
	if bgra {
		flag = 1
	}
	cpush := push(uint32(gridW), uint32(gridH), uint32(ow), uint32(oh), flag)
	cgroups := [3]uint32{uint32(ow+wg-1) / wg, uint32(oh+wg-1) / wg, 1}
	if err := s.stream.Dispatch(s.colour, []vulkan.View{s.v[s.cur].Whole(), s.pixels.Whole()}, cpush, cgroups); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := s.stream.Submit(); err != nil {
		return nil, err
	}
	s.kernels = time.Since(start)
	if s.timed {
		s.kernels = 0
		for _, t := range s.stream.Times() {
			s.kernels += t
		}
	}
	return s.pixels, nil
}

// release returns the buffers to the device (pipelines go with the device).
func (s *sim) release() {
	for _, b := range append(s.u[:], s.v[0], s.v[1], s.pixels) {
		if b != nil {
			b.Release()
		}
	}
}

// push packs 32-bit push constants.
func push(vals ...any) []byte {
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		switch v := v.(type) {
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, v)
		case float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		default:
			panic(fmt.Sprintf("push: %T", v))
		}
	}
	return b
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}
