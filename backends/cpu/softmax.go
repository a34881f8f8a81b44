package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// softmax and log_softmax: per row along the dim, one pass for the max, one
// for the exponentials and their sum (float64, as the reductions
// accumulate), one to scale. Rows are spread over goroutines.

func init() {
	for _, name := range []string{"softmax", "log_softmax"} {
		log := name == "log_softmax"
		register(name, func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
			x := in[0]
			sc, _ := attrs.(dispatch.Scan)
			dim, err := dispatch.NormDim(sc.Dim, x.Rank(), "dim")
			if err != nil {
				return err
			}
			switch x.DType {
			case dispatch.Float32:
				softmax[float32](out, x, dim, log)
			case dispatch.Float64:
				softmax[float64](out, x, dim, log)
			default:
				return dispatch.Unsupported(out.Device, name, x.DType)
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
	rows := len(src) / n
	parallel(rows, 4*n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			base := (r/inner)*n*inner + r%inner
			softmaxRow(dst, src, base, n, inner, log)
		}
	})
}

// softmaxRow handles the n elements at base, base+s, ... The max is
// subtracted before exp so that it cannot overflow; a NaN anywhere in the
// row makes the whole row NaN, as in PyTorch.
func softmaxRow[T float](dst, src []T, base, n, s int, log bool) {
	m := src[base]
	for j := 1; j < n; j++ {
		if v := src[base+j*s]; v > m || v != v {
			m = v
		}
	}
	var sum float64
	for j := range n {
		e := math.Exp(float64(src[base+j*s] - m))
		sum += e
		if !log {
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
