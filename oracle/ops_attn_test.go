package oracle

import (
	"math"
	"math/rand"
	"testing"
)

// attnInput draws q, k and v of shape p from seed: N(0,1) values, the padding of each cache
// position (beyond NKVHeads*HeadDim) NaN, so that reading it would show.
func attnInput(seed int64, p AttnDecodeParams) (q, k, v []float32) {
	rng := rand.New(rand.NewSource(seed))
	q = make([]float32, p.NHeads*p.HeadDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	cache := func() []float32 {
		c := make([]float32, p.NKV*p.KVStride)
		for i := range c {
			if i%p.KVStride >= p.NKVHeads*p.HeadDim {
				c[i] = float32(math.NaN())
			} else {
				c[i] = float32(rng.NormFloat64())
			}
		}
		return c
	}
	return q, cache(), cache()
}

// attnRef64 is the attention in float64, an independent reference for the tolerance check.
func attnRef64(q, k, v []float32, p AttnDecodeParams) []float64 {
	D, group := p.HeadDim, p.NHeads/p.NKVHeads
	out := make([]float64, p.NHeads*D)
	s := make([]float64, p.NKV)
	for h := 0; h < p.NHeads; h++ {
		g := h / group
		m := math.Inf(-1)
		for t := range s {
			dot := 0.0
			for i := 0; i < D; i++ {
				dot += float64(q[h*D+i]) * float64(k[t*p.KVStride+g*D+i])
			}
			s[t] = dot * float64(p.Scale)
			m = math.Max(m, s[t])
		}
		sum := 0.0
		for t := range s {
			s[t] = math.Exp(s[t] - m)
			sum += s[t]
		}
		for d := 0; d < D; d++ {
			acc := 0.0
			for t := range s {
				acc += s[t] * float64(v[t*p.KVStride+g*D+d])
			}
			out[h*D+d] = acc / sum
		}
	}
	return out
}

func attnRun(t *testing.T, q, k, v []float32, p AttnDecodeParams) []float32 {
	t.Helper()
	out := make([]float32, p.NHeads*p.HeadDim)
	if err := AttnDecodeF32(out, q, k, v, p); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameBits reports whether a and b are equal bit for bit, any NaN equal to any NaN.
func sameBits(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i, false
		}
	}
	return 0, true
}

func TestAttnDecodeAgainstFloat64(t *testing.T) {
	for i, p := range []AttnDecodeParams{
		{HeadDim: 64, NHeads: 4, NKVHeads: 4, NKV: 1, KVStride: 256},
		{HeadDim: 5, NHeads: 3, NKVHeads: 1, NKV: 7, KVStride: 6},
		{HeadDim: 128, NHeads: 8, NKVHeads: 2, NKV: 3*RowWidth + 5, KVStride: 2*128 + 32},
		{HeadDim: 64, NHeads: 4, NKVHeads: 4, NKV: 300, KVStride: 256},
		{HeadDim: 128, NHeads: 4, NKVHeads: 1, NKV: 1000, KVStride: 128},
	} {
		p.Scale = float32(1 / math.Sqrt(float64(p.HeadDim)))
		q, k, v := attnInput(int64(i+1), p)
		got := attnRun(t, q, k, v, p)
		ref := attnRef64(q, k, v, p)
		for j, r := range ref {
			// The output is a convex combination of N(0,1) values: an absolute bound.
			if d := math.Abs(float64(got[j]) - r); !(d <= 1e-5*(1+math.Abs(r))) {
				t.Errorf("%+v: out[%d] = %g, float64 reference %g (diff %g)", p, j, got[j], r, d)
				break
			}
		}
	}
}

// TestAttnDecodeExact checks properties that hold bit for bit.
func TestAttnDecodeExact(t *testing.T) {
	inf := float32(math.Inf(1))

	// n_kv = 1: the weight is Exp(0) = 1 and the sum 1, so out is the value row of the head's kv
	// head exactly (the GQA mapping with it).
	p := AttnDecodeParams{HeadDim: 7, NHeads: 8, NKVHeads: 2, NKV: 1, KVStride: 20, Scale: 0.25}
	q, k, v := attnInput(10, p)
	out := attnRun(t, q, k, v, p)
	for h := 0; h < p.NHeads; h++ {
		g := h / 4
		if i, ok := sameBits(out[h*7:(h+1)*7], v[g*7:(g+1)*7]); !ok {
			t.Errorf("n_kv = 1: head %d out[%d] = %g, want v of kv head %d: %g", h, i, out[h*7+i], g, v[g*7+i])
		}
	}

	// GQA: the same as MHA over a cache whose heads repeat each kv head group times.
	p = AttnDecodeParams{HeadDim: 16, NHeads: 8, NKVHeads: 2, NKV: 3*RowWidth + 5, KVStride: 2*16 + 3, Scale: 0.25}
	q, k, v = attnInput(11, p)
	gqa := attnRun(t, q, k, v, p)
	mha := AttnDecodeParams{HeadDim: 16, NHeads: 8, NKVHeads: 8, NKV: p.NKV, KVStride: 8 * 16, Scale: 0.25}
	expand := func(c []float32) []float32 {
		x := make([]float32, p.NKV*mha.KVStride)
		for tt := 0; tt < p.NKV; tt++ {
			for h := 0; h < 8; h++ {
				copy(x[tt*mha.KVStride+h*16:][:16], c[tt*p.KVStride+(h/4)*16:][:16])
			}
		}
		return x
	}
	if i, ok := sameBits(gqa, attnRun(t, q, expand(k), expand(v), mha)); !ok {
		t.Errorf("GQA 4:1 differs from MHA over the repeated kv heads at %d", i)
	}

	// The padding of kv_stride is never read (attnInput fills it with NaN): the same bits as a
	// compact cache.
	compact := AttnDecodeParams{HeadDim: 16, NHeads: 8, NKVHeads: 2, NKV: p.NKV, KVStride: 32, Scale: 0.25}
	pack := func(c []float32) []float32 {
		x := make([]float32, p.NKV*32)
		for tt := 0; tt < p.NKV; tt++ {
			copy(x[tt*32:][:32], c[tt*p.KVStride:][:32])
		}
		return x
	}
	if i, ok := sameBits(gqa, attnRun(t, q, pack(k), pack(v), compact)); !ok {
		t.Errorf("kv_stride padding changes out[%d]", i)
	}

	// Zero queries: every score 0, every weight 1, the sum n_kv = 4: out is the mean of small
	// integers, exactly.
	p = AttnDecodeParams{HeadDim: 3, NHeads: 1, NKVHeads: 1, NKV: 4, KVStride: 3, Scale: 1}
	v = []float32{1, 2, 3, 5, -2, 7, 0, 4, 1, 2, 0, 5}
	out = attnRun(t, make([]float32, 3), make([]float32, 12), v, p)
	if want := []float32{2, 1, 4}; out[0] != want[0] || out[1] != want[1] || out[2] != want[2] {
		t.Errorf("zero queries: %v, want %v", out, want)
	}

	// Specials, as softmax: a -Inf score weighs exactly 0 (the same bits as leaving the last
	// position out), all -Inf or one +Inf gives NaN, a NaN in q makes its head NaN and only it.
	p = AttnDecodeParams{HeadDim: 8, NHeads: 4, NKVHeads: 4, NKV: 300, KVStride: 32, Scale: 0.5}
	q, k, v = attnInput(12, p)
	for h := 0; h < 4; h++ {
		q[h*8] = 1.5
	}
	base := attnRun(t, q, k, v, p)
	last := p.NKV - 1
	k2 := append([]float32(nil), k...)
	k2[last*32+0*8] = -inf // head 0: the last position's score is -Inf
	for tt := 0; tt < p.NKV; tt++ {
		k2[tt*32+1*8] = -inf // head 1: every score -Inf
	}
	k2[5*32+2*8] = inf // head 2: one score +Inf
	q2 := append([]float32(nil), q...)
	q2[3*8+5] = float32(math.NaN()) // head 3: NaN in q
	got := attnRun(t, q2, k2, v, p)
	short := p
	short.NKV--
	shortOut := attnRun(t, q, k[:last*32], v[:last*32], short)
	if i, ok := sameBits(got[0:8], shortOut[0:8]); !ok {
		t.Errorf("a -Inf score: out[%d] = %g, without the position %g", i, got[i], shortOut[i])
	}
	for i := 8; i < 32; i++ {
		if got[i] == got[i] {
			t.Errorf("head %d (all -Inf, a +Inf score, NaN in q): out[%d] = %g, want NaN", i/8, i, got[i])
		}
	}
	// Head 3 alone changed in q: the other heads' bits are those of the run without the NaN.
	got = attnRun(t, q2, k, v, p)
	if i, ok := sameBits(got[:24], base[:24]); !ok {
		t.Errorf("a NaN in head 3's query changes out[%d]", i)
	}
	// A weight of exactly 0 times an infinite value is NaN (IEEE): head 0, the -Inf position.
	v2 := append([]float32(nil), v...)
	v2[last*32+0*8+2] = inf
	got = attnRun(t, q, k2, v2, p)
	if got[2] == got[2] || got[3] != got[3] {
		t.Errorf("0*Inf: out[2] = %g (want NaN), out[3] = %g (want a number)", got[2], got[3])
	}
}

func TestAttnDecodeErrors(t *testing.T) {
	good := AttnDecodeParams{HeadDim: 4, NHeads: 4, NKVHeads: 2, NKV: 3, KVStride: 8, Scale: 1}
	q, k, v := attnInput(13, good)
	out := make([]float32, 16)
	if err := AttnDecodeF32(out, q, k, v, good); err != nil {
		t.Fatalf("good parameters: %v", err)
	}
	// The cache only needs what is read: the last position up to n_kv_heads*head_dim.
	if err := AttnDecodeF32(out, q, k[:2*8+8], v[:2*8+8], good); err != nil {
		t.Errorf("a cache of exactly the values read: %v", err)
	}
	edit := func(f func(p *AttnDecodeParams)) AttnDecodeParams { p := good; f(&p); return p }
	for name, c := range map[string]struct {
		p          AttnDecodeParams
		out, q, kk []float32
	}{
		"head_dim 0":          {edit(func(p *AttnDecodeParams) { p.HeadDim = 0 }), out, q, k},
		"n_heads 0":           {edit(func(p *AttnDecodeParams) { p.NHeads = 0 }), out, q, k},
		"n_kv_heads 0":        {edit(func(p *AttnDecodeParams) { p.NKVHeads = 0 }), out, q, k},
		"n_kv 0":              {edit(func(p *AttnDecodeParams) { p.NKV = 0 }), out, q, k},
		"negative kv_stride":  {edit(func(p *AttnDecodeParams) { p.KVStride = -8 }), out, q, k},
		"huge n_kv":           {edit(func(p *AttnDecodeParams) { p.NKV = math.MaxInt32 + 1 }), out, q, k},
		"heads not multiple":  {edit(func(p *AttnDecodeParams) { p.NKVHeads = 3 }), out, q, k},
		"kv_stride too small": {edit(func(p *AttnDecodeParams) { p.KVStride = 7 }), out, q, k},
		"short q":             {good, out, q[:15], k},
		"short out":           {good, out[:15], q, k},
		"short k":             {good, out, q, k[:2*8+7]},
		"more positions":      {edit(func(p *AttnDecodeParams) { p.NKV = 4 }), out, q, k},
	} {
		if err := AttnDecodeF32(c.out, c.q, c.kk, v, c.p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := AttnDecodeF32(out, q, k, v[:2*8+7], good); err == nil {
		t.Errorf("short v: accepted")
	}
}
