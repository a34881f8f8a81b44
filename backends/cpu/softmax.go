package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// softmax and log_softmax: per row along the dim, one pass for the max, one
// for the exponentials and their sum (float64, as the reductions
// accumulate), one to scale. Rows are spread over goroutines.

func init() {
	for op, log := range map[*dispatch.Op[ops.Scan]]bool{ops.Softmax: false, ops.LogSoftmax: true} {
		registerFor(op, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
			x := in[0]
			dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
			if err != nil {
				return err
			}
			if x.DType == dispatch.Float32 {
				softmax[float32](out, x, dim, log)
			} else {
				softmax[float64](out, x, dim, log)
			}
			return nil
		})
	}
}

// softmax writes softmax (or log_softmax) of x along dim into out, which
// is contiguous. x is read contiguous (copied first if it is not), as
// outer × n × inner with the dim in the middle.
func softmax[T float](out, x *dispatch.Tensor, dim int, log bool) {
	if !x.IsContiguous() {
		x = contiguous(x)
		defer x.Release()
	}
	n, inner := 1, 1
	if x.Rank() > 0 {
		n = x.Shape[dim]
		for _, s := range x.Shape[dim+1:] {
			inner *= s
		}
	}
	if n == 0 || inner == 0 {
		return
	}
	src, dst := span[T](x), span[T](out)
	if d, ok := any(dst).([]float32); ok && inner >= 8 {
		softmaxCols(d, any(src).([]float32), n, inner, log)
		return
	}
	rows := len(src) / n
	parallel(rows, 4*n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if inner == 1 {
				// The vector loops take the rows up to one they leave to
				// the general path (a NaN, an infinite max).
				if d, ok := any(dst).([]float32); ok {
					r += softmaxRowsFloat32(d[r*n:hi*n], any(src).([]float32)[r*n:hi*n], n, log)
				} else {
					r += softmaxRowsFloat64(any(dst).([]float64)[r*n:hi*n], any(src).([]float64)[r*n:hi*n], n, log)
				}
				if r == hi {
					break
				}
			}
			softmaxRowGo(dst, src, (r/inner)*n*inner+r%inner, n, inner, log)
		}
	})
}

// softmaxCols is softmax for a dim that is not the last, in float32: each
// outer block of n × inner values goes eight columns at a time through C's
// lanes (softmaxColsFloat32), blocks of columns spread over goroutines,
// and the columns past the last eight through softmaxRowGo.
func softmaxCols(dst, src []float32, n, inner int, log bool) {
	const block = 64 // columns per task: whole vectors, a few per pass
	outer := len(src) / (n * inner)
	perOuter := (inner + block - 1) / block
	parallel(outer*perOuter, 4*n*block, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			o, b := t/perOuter, t%perOuter
			base := o * n * inner
			c0, c1 := b*block, min((b+1)*block, inner)
			vec := c0 + (c1-c0)/8*8
			if vec == c0 || !softmaxColsFloat32(dst[base:], src[base:], n, inner, c0, vec, log) {
				vec = c0
			}
			for c := vec; c < c1; c++ {
				softmaxRowGo(dst, src, base+c, n, inner, log)
			}
		}
	})
}

// softmaxRowGo handles the n elements at base, base+s, ... The max is
// subtracted before exp so that it cannot overflow; a NaN anywhere in the
// row makes the whole row NaN, as in PyTorch.
func softmaxRowGo[T float](dst, src []T, base, n, s int, log bool) {
	m := src[base]
	for j := 1; j < n; j++ {
		if v := src[base+j*s]; v > m || v != v {
			m = v
		}
	}
	// exp32 is called directly, not through a function value, so that it
	// inlines: the exponentials are most of softmax's time.
	var sum float64
	if isFloat32[T]() {
		for j := range n {
			e := exp32(float64(src[base+j*s] - m))
			sum += e
			dst[base+j*s] = T(e)
		}
	} else {
		for j := range n {
			e := math.Exp(float64(src[base+j*s] - m))
			sum += e
			dst[base+j*s] = T(e)
		}
	}
	if log {
		ls := math.Log(sum)
		for j := range n {
			p := base + j*s
			dst[p] = T(float64(src[p]-m) - ls)
		}
		return
	}
	for j := range n {
		p := base + j*s
		dst[p] = T(float64(dst[p]) / sum)
	}
}

func isFloat32[T float]() bool {
	var z T
	_, ok := any(z).(float32)
	return ok
}

// exp32 is e^x to float32's precision for the x ≤ 0 that softmax gives
// (the max is subtracted): x = k·ln2 + r with |r| ≤ ln2/2, e^r from its
// Taylor series to r⁷ (the remainder, under 6e-9 relative, is below half a
// float32 ulp), times 2^k built from its bits. It is about four times as
// fast as math.Exp, which carries float64's precision that float32 output
// rounds away.
func exp32(x float64) float64 {
	if !(x >= -745) { // -inf and below, or NaN
		if x != x {
			return x
		}
		return 0
	}
	k := float64(int64(x*math.Log2E - 0.5)) // round to nearest: x ≤ 0 and int64 truncates
	r := x - k*math.Ln2
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	if k < -1022 {
		return p * math.Ldexp(1, int(k))
	}
	return p * math.Float64frombits(uint64(int64(k)+1023)<<52)
}
