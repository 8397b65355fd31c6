package engine

import (
	"fmt"
	"math"

	"github.com/onesource-go/onesource/kernels"
	"github.com/onesource-go/onesource/oracle"
)

// The ops that pick from logits on the device (kernels' argmax, argmin, topk and sample cells),
// so that a decode step reads back a token id, not the logits. Their results are (value,
// index) pairs, two 32-bit words each (the value's f32 bits, the index), held in I32 tensors.

// argChunk is the most values one workgroup reduces: a longer input runs as two passes, one
// workgroup per chunk and then one over their pairs. 8192 values at the default 256 lanes keep
// every invocation's loops far below lavapipe's limit of 65535 iterations in all (a top-k of 40
// passes: 1280), and spread a vocabulary of 152000 logits over 19 workgroups.
const argChunk = 8192

// ArgMax writes to out (I32, 2 values) the largest value of x (F32) and its lowest index
// (oracle.ArgMax: a NaN beats every number, the first NaN winning): greedy decoding.
func (e *Engine) ArgMax(out, x *Tensor) error { return e.topK("argmax", out, x, 1) }

// ArgMin is ArgMax with the smallest value (oracle.ArgMin).
func (e *Engine) ArgMin(out, x *Tensor) error { return e.topK("argmin", out, x, 1) }

// TopK writes to out (I32, 2k values) the k best pairs of x (F32) in oracle.TopK's order (a NaN
// first, then the larger value, equal values by the lower index), padded with (-Inf,
// oracle.NoIndex) past x's values.
func (e *Engine) TopK(out, x *Tensor, k int) error {
	if k < 1 || k > 1024 {
		return fmt.Errorf("engine: topk: k = %d: want 1 to 1024", k)
	}
	return e.topK("topk", out, x, k)
}

// topK serves argmax, argmin (k = 1) and topk: one pass when x fits a chunk, else a pass per
// chunk into a scratch tensor and one over its pairs.
func (e *Engine) topK(op string, out, x *Tensor, k int) error {
	if err := operand(op, "x", x, oracle.F32, 0); err != nil {
		return err
	}
	n := x.Len()
	if err := operand(op, "out", out, I32, 2*k); err != nil {
		return err
	}
	if err := e.sameEngine(op, out, x); err != nil {
		return err
	}
	pass := func(dst, src *Tensor, items, chunk int, pairs uint32) error {
		groups := (items + chunk - 1) / chunk
		params := map[string]uint32{"n": uint32(items), "chunk": uint32(chunk), "pairs": pairs}
		vars := map[string]float64{"n": float64(items), "chunk": float64(chunk)}
		if op == "topk" {
			params["k"], vars["k"] = uint32(k), float64(k)
		}
		return e.run(&call{
			op: op, typ: oracle.F32,
			operands: map[string]view{"x": src.view(), "out": dst.view()},
			params:   params,
			groups:   func(kernels.Schedule) [3]uint32 { return [3]uint32{uint32(groups), 1, 1} },
			vars:     vars,
			bytes:    src.Size() + 8*k*groups,
		})
	}
	if n <= argChunk {
		return pass(out, x, n, max(n, 1), 0)
	}
	groups := (n + argChunk - 1) / argChunk
	if groups*k > argChunk {
		return fmt.Errorf("engine: %s: %d values, %d best of each of %d chunks: more than one pass over them can take (%d)", op, n, k, groups, argChunk)
	}
	partials, err := e.scratchI32(op, 2*k*groups)
	if err != nil {
		return err
	}
	if err := pass(partials, x, n, argChunk, 0); err != nil {
		return err
	}
	return pass(out, partials, k*groups, k*groups, 1)
}

// Sample writes to out (I32, 2 values) the position among cands (I32, 2k values: TopK's out)
// and the index of a draw with temperature temp and nucleus topP, u the caller's uniform draw in
// [0, 1) (oracle.Sample: the same u gives the same token on every backend). temp <= 0 is greedy.
func (e *Engine) Sample(out, cands *Tensor, temp, topP, u float32) error {
	const op = "sample"
	if err := operand(op, "cands", cands, I32, 0); err != nil {
		return err
	}
	k := cands.Len() / 2
	if k < 1 || cands.Len()%2 != 0 {
		return fmt.Errorf("engine: sample: cands holds %d values: want 2 per candidate", cands.Len())
	}
	if err := operand(op, "out", out, I32, 2); err != nil {
		return err
	}
	if err := e.sameEngine(op, out, cands); err != nil {
		return err
	}
	if !(u >= 0 && u < 1) {
		return fmt.Errorf("engine: sample: u = %v: want a draw in [0, 1)", u)
	}
	return e.run(&call{
		op: op, typ: oracle.F32,
		operands: map[string]view{"cands": cands.view(), "out": out.view()},
		params: map[string]uint32{"k": uint32(k), "temp": math.Float32bits(temp), "top_p": math.Float32bits(topP),
			"u": math.Float32bits(u)},
		groups: func(kernels.Schedule) [3]uint32 { return [3]uint32{1, 1, 1} },
		vars:   map[string]float64{"k": float64(k), "temp": float64(temp), "top_p": float64(topP), "u": float64(u)},
		bytes:  cands.Size() + 8,
	})
}

// scratchI32 is the engine's scratch tensor of n I32 values (n even: pairs) for op, reused by
// later calls (the device orders the calls that write and read it). One it outgrows stays
// allocated until Close: queued calls may still use it.
func (e *Engine) scratchI32(op string, n int) (*Tensor, error) {
	e.mu.Lock()
	t := e.scratch[op]
	e.mu.Unlock()
	if t == nil || t.Len() < n {
		var err error
		if t, err = e.NewTensor(I32, n/2, 2); err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.scratch[op] = t
		e.mu.Unlock()
	}
	return t.Slice(0, n/2)
}
