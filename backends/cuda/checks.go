package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// dispatch's value checks (an index out of range, an integer pow's
// negative exponent), here on the host: the values are read back first.

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
