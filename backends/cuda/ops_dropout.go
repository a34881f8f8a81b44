package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// dropout (kernels/cuda/philox.cuh): the mask made on the device, a thread
// per block of four elements; the 16-bit floats in their own kernels.

func init() {
	elementwise(ops.Dropout, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, m ops.Mask) error {
		return named("dropout", dropout(out, in[0], m))
	})
}

// maskArgs are a dropout Mask as kernels take it (the dropout kernels and
// attention's): the key's low and high words, the least word that keeps
// and the kept factor (P = 0: the threshold 0, which keeps every word,
// and 1).
func maskArgs(m ops.Mask) []any {
	return []any{uint32(m.Key), uint32(m.Key >> 32), m.Threshold(), m.Scale()}
}

// dropout launches dropout_<dtype> where x is contiguous of out's shape,
// else dropout_strided_<dtype> over a layout of out and x.
func dropout(out, x *dispatch.Tensor, m ops.Mask) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	o, v := viewOf(out), viewOf(x)
	g, b := grid1((n + 3) / 4)
	mask := maskArgs(m)
	sfx := suffix(out.DType)
	if v.contiguous() && sameShape(v.shape, o.shape) {
		return enqueue(out.Device, "elementwise", "dropout_"+sfx, g, b, 0, append([]any{o.ptr, v.ptr, int64(n)}, mask...)...)
	}
	l, err := layoutOf(broadcastWalk(o, []view{v}))
	if err != nil {
		// Dims that do not merge to a Layout's: x copied into out first
		// (copyInto takes any rank), then dropped there in place (a
		// thread reads each element before it writes it).
		if err := copyInto(out.Device, o, v); err != nil {
			return err
		}
		return enqueue(out.Device, "elementwise", "dropout_"+sfx, g, b, 0, append([]any{o.ptr, o.ptr, int64(n)}, mask...)...)
	}
	return enqueue(out.Device, "elementwise", "dropout_strided_"+sfx, g, b, 0, append([]any{o.ptr, v.ptr, int64(n), cBytes(&l)}, mask...)...)
}
