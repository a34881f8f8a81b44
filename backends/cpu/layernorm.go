package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Fused layer norm (ops.LayerNorm, ops.LayerNormBackward) over the rows of
// a [rows, D] x. A row's mean and variance are two passes over it (the
// centred second pass, not Σx² - (Σx)²/D, which cancels), accumulated in
// float64 for float32 rows too: the error is bounded by D·2⁻⁵³ relative,
// below torch's float32 cascade sum. The backward recomputes them with the
// same code, so they are the forward's bit for bit.
//
// The backward is torch's layer_norm_backward (aten/src/ATen/native/cpu/
// layer_norm_kernel.cpp; derivatives.yaml's native_layer_norm entry): with
// x̂ = (x - mean)·rstd and dx̂ = g·w per element of a row,
//
//	dx = rstd·(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂))    dw = Σrows g·x̂    db = Σrows g
//
// dw and db are sums over rows: each chunk of lnChunk rows sums its own
// partials (float64), and the partials are added in chunk order after, so
// the result does not depend on how many goroutines ran.

// lnChunkElems is about how many elements of x a chunk of the backward
// covers: enough that its partial sums (2·D float64s) cost little to add.
const lnChunkElems = 1 << 13

func init() {
	registerFor(ops.LayerNorm, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "bias", false, a)
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			layerNormForward[float32](out, in, rows, d, a.Eps)
		} else {
			layerNormForward[float64](out, in, rows, d, a.Eps)
		}
		return nil
	})
	registerFor(ops.LayerNormBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "grad", true, a)
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			layerNormBackward[float32](out, in, rows, d, a.Eps)
		} else {
			layerNormBackward[float64](out, in, rows, d, a.Eps)
		}
		return nil
	})
}

// lnStats is a row's mean and 1/√(var + eps), var the biased variance.
func lnStats[T float](row []T, eps float64) (mean, rstd float64) {
	s := 0.0
	for _, v := range row {
		s += float64(v)
	}
	n := float64(len(row))
	mean = s / n
	q := 0.0
	for _, v := range row {
		c := float64(v) - mean
		q += c * c
	}
	return mean, 1 / math.Sqrt(q/n+eps)
}

func layerNormForward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, rows, d int, eps float64) {
	if rows == 0 || d == 0 {
		return
	}
	x, rx := dense[T](in[0])
	defer rx()
	w, rw := dense[T](in[1])
	defer rw()
	b, rb := dense[T](in[2])
	defer rb()
	y := span[T](out)
	parallel(rows, 3*d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, yr := x[r*d:(r+1)*d], y[r*d:(r+1)*d]
			mean, rstd := lnStats(xr, eps)
			for j, v := range xr {
				yr[j] = T((float64(v)-mean)*rstd*float64(w[j]) + float64(b[j]))
			}
		}
	})
}

func layerNormBackward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, rows, d int, eps float64) {
	dst := span[T](out)
	dx, dw, db := dst[:rows*d], dst[rows*d:(rows+1)*d], dst[(rows+1)*d:]
	if d == 0 {
		return
	}
	if rows == 0 {
		clear(dst)
		return
	}
	x, rx := dense[T](in[0])
	defer rx()
	w, rw := dense[T](in[1])
	defer rw()
	g, rg := dense[T](in[2])
	defer rg()
	chunk := max(1, lnChunkElems/d)
	chunks := (rows + chunk - 1) / chunk
	partial := make([]float64, chunks*2*d) // per chunk: Σ g·x̂, then Σ g
	parallel(chunks, chunk*d*6, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			pw, pb := partial[c*2*d:(c*2+1)*d], partial[(c*2+1)*d:(c+1)*2*d]
			for r := c * chunk; r < min(rows, (c+1)*chunk); r++ {
				xr, gr, dxr := x[r*d:(r+1)*d], g[r*d:(r+1)*d], dx[r*d:(r+1)*d]
				mean, rstd := lnStats(xr, eps)
				s1, s2 := 0.0, 0.0 // Σ dx̂, Σ dx̂·x̂
				for j, v := range xr {
					xh := (float64(v) - mean) * rstd
					gj := float64(gr[j])
					dxh := gj * float64(w[j])
					s1 += dxh
					s2 += dxh * xh
					pw[j] += gj * xh
					pb[j] += gj
				}
				m1, m2 := s1/float64(d), s2/float64(d)
				for j, v := range xr {
					xh := (float64(v) - mean) * rstd
					dxr[j] = T(rstd * (float64(gr[j])*float64(w[j]) - m1 - xh*m2))
				}
			}
		}
	})
	for j := range d {
		sw, sb := 0.0, 0.0
		for c := range chunks {
			sw += partial[c*2*d+j]
			sb += partial[(c*2+1)*d+j]
		}
		dw[j], db[j] = T(sw), T(sb)
	}
}
