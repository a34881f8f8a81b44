package cuda

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Copies made of the strided copy (cast_<t>_<t>, elementwise.cu), as on the
// cpu (backends/cpu/copy.go): flip reads its input with negated strides from
// the far end, concat writes each input through a view of its slice of the
// output, pad fills the output and copies the part of the input that the
// crops leave into the part of the output inside the pads. Each runs on
// float16 and bfloat16 tensors as they are (elementwise's native path:
// cast_<t>_<t> and fill_<t> have 16-bit kernels), with no float32
// temporary.

func init() {
	elementwise(ops.Flip, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.FlipDims) error {
		x := in[0]
		src := viewOf(x)
		src.strides = slices.Clone(x.Strides)
		if x.Numel() > 0 {
			for _, d := range a.Of(x) {
				src = src.moved((x.Shape[d] - 1) * x.Strides[d])
				src.strides[d] = -x.Strides[d]
			}
		}
		return named("flip", copyInto(out.Device, viewOf(out), src))
	})
	elementwise(ops.Concat, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConcatDim) error {
		d := a.Of(in)
		o := viewOf(out)
		at := 0
		for _, t := range in {
			if t.Numel() > 0 {
				dst := o.moved(at * out.Strides[d])
				dst.shape = t.Shape
				if err := copyInto(out.Device, dst, viewOf(t)); err != nil {
					return named("concat", err)
				}
			}
			at += t.Shape[d]
		}
		return nil
	})
	elementwise(ops.Pad, dtypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Padding) error {
		x := in[0]
		if err := fill(out, a.Value); err != nil {
			return named("pad", err)
		}
		shape, xSkip, outSkip, ok := layout.PadRegion(x, out, a.Pads)
		if !ok {
			return nil // everything of x is cropped away
		}
		src, dst := viewOf(x).moved(xSkip), viewOf(out).moved(outSkip)
		src.shape, dst.shape = shape, shape
		return named("pad", copyInto(out.Device, dst, src))
	})
}

// fill sets every element of out (contiguous) to v, which Infer has checked
// out's dtype holds exactly: fill_<dtype>(out, n, v).
func fill(out *dispatch.Tensor, v float64) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	o := viewOf(out)
	return forChunks(n, denseChunk(n, nil), func(start, m int) error { // 32-bit index: chunks past 2^31
		g, b := gridDense(out.Device, m, o, nil)
		return enqueue(out.Device, "elementwise", "fill_"+suffix(out.DType), g, b, 0, o.moved(start).ptr, int64(m), v)
	})
}
