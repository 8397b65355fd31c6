package oracle

import "fmt"

// quantizers holds, per type, ggml's reference quantizer for whole blocks (the type's
// from_float_ref, e.g. quantize_row_q8_0_ref): len(src) is a multiple of the block size and
// len(dst) = len(src)/BlockSize*TypeSize.
var quantizers = map[Type]func(src []float32, dst []byte){}

// weightedQuantizers holds, per type, the quantizer ggml_quantize_chunk runs for ONE row when it is
// given an importance matrix (ggml's quantize_row_<t>_impl): src is one row, imatrix has one
// weight per column of that row.
var weightedQuantizers = map[Type]func(src []float32, dst []byte, imatrix []float32){}

// chunkQuantizers holds the types whose ggml_quantize_chunk without an importance matrix differs
// from their from_float_ref (iq4_nl: a scale search); the function quantizes whole blocks.
var chunkQuantizers = map[Type]func(src []float32, dst []byte){}

// Quantize encodes n = len(src) values as type t into dst with ggml's reference quantizer, the
// type's from_float_ref (quantize_row_<t>_ref: for q8_0, q8_1 and q8_K what kernels produce at run
// time for activations), byte-identical to ggml. For iq4_nl this is the from_float_ref variant
// (no scale search); QuantizeChunk gives what llama-quantize writes. It returns an error when dst
// is not exactly the bytes of n values, n is not a whole number of blocks, or the oracle has no
// reference quantizer for t (the codebook i-quants iq1_s, iq1_m, iq2_xxs, iq2_xs, iq2_s, iq3_xxs,
// iq3_s).
func Quantize(t Type, src []float32, dst []byte) error {
	size, err := RowSize(t, len(src))
	if err != nil {
		return err
	}
	if len(dst) != size {
		return fmt.Errorf("oracle: %s: %d values need %d bytes, got %d", t, len(src), size, len(dst))
	}
	f, ok := quantizers[t]
	if !ok {
		return fmt.Errorf("oracle: %s: no reference quantizer", t)
	}
	f(src, dst)
	return nil
}

// QuantizeChunk reproduces ggml_quantize_chunk(t, src, dst, 0, nrows, nPerRow, imatrix): src holds
// nrows = len(src)/nPerRow rows of nPerRow values. With a nil imatrix it is Quantize except for
// iq4_nl (ggml_quantize_chunk searches the block scale; from_float_ref does not). With an
// imatrix (nPerRow weights, one per column) it runs ggml's importance-weighted quantizer where the
// type has one (q4_0, q4_1, q5_0, q5_1, q2_K..q6_K, iq4_nl, iq4_xs) and ignores it where ggml does
// (f16, bf16, q8_0, q1_0, q2_0, tq1_0, tq2_0, mxfp4, nvfp4). q8_1 and q8_K, which ggml's
// quantize_chunk does not accept, are quantized with their reference quantizers.
func QuantizeChunk(t Type, src []float32, dst []byte, nPerRow int, imatrix []float32) error {
	rowSize, err := RowSize(t, nPerRow)
	if err != nil {
		return err
	}
	if nPerRow <= 0 || len(src)%nPerRow != 0 {
		return fmt.Errorf("oracle: %s: %d values are not whole rows of %d", t, len(src), nPerRow)
	}
	nrows := len(src) / nPerRow
	if len(dst) != nrows*rowSize {
		return fmt.Errorf("oracle: %s: %d rows need %d bytes, got %d", t, nrows, nrows*rowSize, len(dst))
	}
	if imatrix != nil {
		if len(imatrix) != nPerRow {
			return fmt.Errorf("oracle: %s: imatrix has %d weights, rows have %d values", t, len(imatrix), nPerRow)
		}
		if wq, ok := weightedQuantizers[t]; ok {
			for r := 0; r < nrows; r++ {
				wq(src[r*nPerRow:(r+1)*nPerRow], dst[r*rowSize:(r+1)*rowSize], imatrix)
			}
			return nil
		}
	}
	if cq, ok := chunkQuantizers[t]; ok {
		cq(src, dst)
		return nil
	}
	f, ok := quantizers[t]
	if !ok {
		return fmt.Errorf("oracle: %s: no quantizer", t)
	}
	f(src, dst)
	return nil
}

// HasQuantizer reports whether Quantize supports t, and whether QuantizeChunk uses an
// importance-weighted quantizer for t when given an imatrix.
func HasQuantizer(t Type) (ref, weighted bool) {
	_, ref = quantizers[t]
	_, weighted = weightedQuantizers[t]
	return ref, weighted
}
