package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Fused layer norm (ops.LayerNorm, ops.LayerNormBackward) over the rows of
// an x of shape [..., D] (read contiguous, copied first if it is not). A row's mean and variance are two passes over it (the
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
// Each sum runs in four lanes (elements j mod 4), added at the end: one
// float64 accumulator would wait on the latency of every add before it.
func lnStats[T float](row []T, eps float64) (mean, rstd float64) {
	n := len(row)
	var a0, a1, a2, a3 float64
	j := 0
	for ; j+4 <= n; j += 4 {
		r := row[j : j+4 : j+4]
		a0 += float64(r[0])
		a1 += float64(r[1])
		a2 += float64(r[2])
		a3 += float64(r[3])
	}
	for ; j < n; j++ {
		a0 += float64(row[j])
	}
	mean = (a0 + a1 + a2 + a3) / float64(n)
	a0, a1, a2, a3 = 0, 0, 0, 0
	j = 0
	for ; j+4 <= n; j += 4 {
		r := row[j : j+4 : j+4]
		c0, c1, c2, c3 := float64(r[0])-mean, float64(r[1])-mean, float64(r[2])-mean, float64(r[3])-mean
		a0 += c0 * c0
		a1 += c1 * c1
		a2 += c2 * c2
		a3 += c3 * c3
	}
	for ; j < n; j++ {
		c := float64(row[j]) - mean
		a0 += c * c
	}
	return mean, 1 / math.Sqrt((a0+a1+a2+a3)/float64(n)+eps)
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
		yr, xr := y[lo*d:hi*d], x[lo*d:hi*d]
		if y32, ok := any(yr).([]float32); ok && layerNormRowsFloat32(y32, any(xr).([]float32), any(w).([]float32), any(b).([]float32), d, eps) {
			return
		}
		layerNormRows(yr, xr, w, b, d, eps)
	})
}

// layerNormRows writes the layer norm of the rows of d values of x to y.
func layerNormRows[T float](y, x, w, b []T, d int, eps float64) {
	for r := 0; r+d <= len(x); r += d {
		xr, yr := x[r:r+d], y[r:r+d]
		mean, rstd := lnStats(xr, eps)
		for j, v := range xr {
			yr[j] = T((float64(v)-mean)*rstd*float64(w[j]) + float64(b[j]))
		}
	}
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
	// Per chunk: Σ g·x̂, then Σ g. Scratch from the pool: made new at
	// each call (a MB at [512, 1024]) its pages faulted in at about 10 µs
	// each, nine times the kernel's own time.
	ps := getScratch[float64](chunks * 2 * d)
	defer putScratch(ps)
	partial := *ps
	clear(partial)
	parallel(chunks, chunk*d*6, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			pw, pb := partial[c*2*d:(c*2+1)*d], partial[(c*2+1)*d:(c+1)*2*d]
			r0, r1 := c*chunk*d, min(rows, (c+1)*chunk)*d
			xc, gc, dxc := x[r0:r1], g[r0:r1], dx[r0:r1]
			if dx32, ok := any(dxc).([]float32); ok &&
				layerNormBackwardRowsFloat32(dx32, pw, pb, any(xc).([]float32), any(w).([]float32), any(gc).([]float32), d, eps) {
				continue
			}
			layerNormBackwardRows(dxc, pw, pb, xc, w, gc, d, eps)
		}
	})
	// The chunks' sums added in chunk order, into chunk 0's, a row of
	// each at a time (a column at a time strode through a MB).
	sw, sb := partial[:d], partial[d:2*d]
	for j := range d {
		sw[j], sb[j] = 0+sw[j], 0+sb[j] // as a sum from 0: -0 becomes +0
	}
	for c := 1; c < chunks; c++ {
		pw, pb := partial[c*2*d:(c*2+1)*d], partial[(c*2+1)*d:(c+1)*2*d]
		for j := range d {
			sw[j] += pw[j]
			sb[j] += pb[j]
		}
	}
	for j := range d {
		dw[j], db[j] = T(sw[j]), T(sb[j])
	}
}

// layerNormBackwardRows writes the gradient of x of the rows of d values
// of x and g to dx, and adds their g·x̂ to pw and g to pb.
func layerNormBackwardRows[T float](dx []T, pw, pb []float64, x, w, g []T, d int, eps float64) {
	for r := 0; r+d <= len(x); r += d {
		xr, gr, dxr := x[r:r+d], g[r:r+d], dx[r:r+d]
		mean, rstd := lnStats(xr, eps)
		// Σ dx̂ and Σ dx̂·x̂ in two lanes each (even and odd j), so that
		// each add need not wait for the one before.
		var s1, s2, t1, t2 float64
		j := 0
		for ; j+2 <= d; j += 2 {
			xh0, xh1 := (float64(xr[j])-mean)*rstd, (float64(xr[j+1])-mean)*rstd
			g0, g1 := float64(gr[j]), float64(gr[j+1])
			dxh0, dxh1 := g0*float64(w[j]), g1*float64(w[j+1])
			s1 += dxh0
			t1 += dxh1
			s2 += dxh0 * xh0
			t2 += dxh1 * xh1
			pw[j] += g0 * xh0
			pw[j+1] += g1 * xh1
			pb[j] += g0
			pb[j+1] += g1
		}
		if j < d {
			xh, gj := (float64(xr[j])-mean)*rstd, float64(gr[j])
			dxh := gj * float64(w[j])
			s1 += dxh
			s2 += dxh * xh
			pw[j] += gj * xh
			pb[j] += gj
		}
		m1, m2 := (s1+t1)/float64(d), (s2+t2)/float64(d)
		for j, v := range xr {
			xh := (float64(v) - mean) * rstd
			dxr[j] = T(rstd * (float64(gr[j])*float64(w[j]) - m1 - xh*m2))
		}
	}
}
