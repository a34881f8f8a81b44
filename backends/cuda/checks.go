package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The checks that depend on a tensor's values, which the cpu backend makes
// as it reads them: an index out of range, an integer pow's negative
// exponent. A kernel cannot return an error, and one that skipped a bad
// index would hand back a result that is silently wrong, so these ops read
// the values on the host first. That waits for the stream, once per such
// op: correct first; a device-side flag read at the next sync would keep
// the stream running, at the price of an error that arrives late.

// hostInts reads an integer tensor's elements in row-major order.
func hostInts(t *dispatch.Tensor) ([]int64, error) {
	if !t.IsContiguous() {
		c, err := dispatch.Call(ops.Contiguous, dispatch.None{}, t)
		if err != nil {
			return nil, err
		}
		defer c.Release()
		t = c
	}
	data, err := dispatch.ReadHost(t)
	if err != nil {
		return nil, err
	}
	switch v := data.(type) {
	case []int64:
		return v, nil
	case []int32:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out, nil
	}
	return nil, dispatch.Unsupported(t.Device, "index", t.DType)
}

// checkIndices checks index's values against [0, size) of dim d (d < 0:
// one_hot's classes), as the cpu does.
func checkIndices(index *dispatch.Tensor, arg string, d, size int) error {
	if index.Numel() == 0 {
		return nil
	}
	vals, err := readInts(index)
	if err != nil {
		return err
	}
	return ops.CheckIndices(vals, arg, d, size)
}

// checkPlaneIndices checks pooling indices against a plane of spatial sizes.
func checkPlaneIndices(index *dispatch.Tensor, spatial []int) error {
	if index.Numel() == 0 {
		return nil
	}
	vals, err := readInts(index)
	if err != nil {
		return err
	}
	n := int64(dispatch.Numel(spatial))
	for _, v := range vals {
		if v < 0 || v >= n {
			return ops.PlaneError(v, spatial)
		}
	}
	return nil
}

// checkExponents refuses a negative exponent of an integer pow.
func checkExponents(exp *dispatch.Tensor) error {
	if !exp.DType.IsInt() || exp.Numel() == 0 {
		return nil
	}
	vals, err := readInts(exp)
	if err != nil {
		return err
	}
	for _, v := range vals {
		if v < 0 {
			return ops.NegativeExponentError()
		}
	}
	return nil
}
