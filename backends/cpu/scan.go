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
			cumExtremeLines[float32](out, x, dim, a.Max)
		case dispatch.Float64:
			cumExtremeLines[float64](out, x, dim, a.Max)
		case dispatch.Int32:
			cumExtremeLines[int32](out, x, dim, a.Max)
		case dispatch.Int64:
			cumExtremeLines[int64](out, x, dim, a.Max)
		case dispatch.Bool:
			cumExtremeBools(out, x, dim, a.Max)
		default:
			return dispatch.Unsupported(out.Device, ops.ArgCumExtreme.Name, x.DType)
		}
		return nil
	})
}

// cumExtremeLines writes, along each line of x, the index of the element
// that the running extreme last came from: a later element takes it where
// it is at least as large (as small, for the minimum), or for floats where
// it is a NaN; a NaN extreme is then kept by all but a later NaN, as v >=
// NaN is false. (v != v is false for the integers.)
func cumExtremeLines[T int32 | int64 | float32 | float64](out, x *dispatch.Tensor, dim int, max bool) {
	d, o := elems[T](x), elems[int64](out)
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		at, best := 0, d[xo]
		for i := range n {
			v := d[xo+i*xs]
			if max && (v >= best || v != v) || !max && (v <= best || v != v) {
				at, best = i, v
			}
			o[oo+i*os] = int64(at)
		}
	})
}

// cumExtremeBools is cumExtremeLines for bool, false below true: a later
// element takes the extreme where it equals it or is the extreme kind
// (true for the maximum).
func cumExtremeBools(out, x *dispatch.Tensor, dim int, max bool) {
	d, o := elems[bool](x), elems[int64](out)
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		at, best := 0, d[xo]
		for i := range n {
			if v := d[xo+i*xs]; v == best || v == max {
				at, best = i, v
			}
			o[oo+i*os] = int64(at)
		}
	})
}
