package cpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// argcumextreme: the index of the running maximum or minimum of each
// line, in one pass (torch's loop), where lathe's composite doubles over
// (value, index) pairs in O(n log n) launches. The narrow dtypes reach it
// widened (registerFor), exactly, so their order is their values'.

func init() {
	registerFor(ops.ArgCumExtreme, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.CumExtreme) error {
		x := in[0]
		dim, err := ops.NormDim(a.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		switch x.DType {
		case dispatch.Float32:
			cumExtremeLines(out, x, dim, later[float32](a.Max, true))
		case dispatch.Float64:
			cumExtremeLines(out, x, dim, later[float64](a.Max, true))
		case dispatch.Int32:
			cumExtremeLines(out, x, dim, later[int32](a.Max, false))
		case dispatch.Int64:
			cumExtremeLines(out, x, dim, later[int64](a.Max, false))
		case dispatch.Bool:
			cumExtremeLines(out, x, dim, func(v, best bool) bool { return v == best || v == a.Max })
		default:
			return dispatch.Unsupported(out.Device, ops.ArgCumExtreme.Name, x.DType)
		}
		return nil
	})
}

// later is whether v, later in a line, takes the running extreme from
// best: at least as large (as small) for max (min), or for floats a NaN.
// A NaN best is then kept by all but a later NaN, as v >= NaN is false.
func later[T int32 | int64 | float32 | float64](max, float bool) func(v, best T) bool {
	switch {
	case max && float:
		return func(v, best T) bool { return v >= best || v != v }
	case float:
		return func(v, best T) bool { return v <= best || v != v }
	case max:
		return func(v, best T) bool { return v >= best }
	}
	return func(v, best T) bool { return v <= best }
}

// cumExtremeLines writes, along each line of x, the index of the element
// that the running extreme last came from.
func cumExtremeLines[T any](out, x *dispatch.Tensor, dim int, takes func(v, best T) bool) {
	d, o := elems[T](x), elems[int64](out)
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		at, best := 0, d[xo]
		for i := range n {
			if v := d[xo+i*xs]; takes(v, best) {
				at, best = i, v
			}
			o[oo+i*os] = int64(at)
		}
	})
}
