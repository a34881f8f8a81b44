package ops

import "github.com/lathe-ml/lathe/dispatch"

// AddScaled is lhs + α·rhs, broadcast, of floats of one dtype: torch.add's
// alpha, the update of every optimizer (p - lr·d) in one pass over memory
// instead of a scaled temporary and a second. The product and the sum
// round once, as a fused multiply-add: PyTorch's vectorised add with alpha
// (Vectorized::fmadd on the cpu; nvcc's contraction of a + alpha * b on a
// GPU); WGSL's fma may round twice, and lavapipe's does. α is rounded to
// the compute dtype first (float32 for float32 and the 16-bit floats), as
// torch's opmath alpha is.
var AddScaled = dispatch.Register(&dispatch.Op[Scale]{Schema: dispatch.Schema{Name: "add_scaled", Args: []string{"lhs", "rhs"}},
	Infer: func(in []*dispatch.Tensor, _ Scale) (dispatch.DType, []int, error) {
		names := func(i int) string { return [...]string{"lhs", "rhs"}[i] }
		for i, t := range in {
			if err := checkDType(t, names(i), Floats); err != nil {
				return 0, nil, err
			}
		}
		if err := sameDType(in, names, 0); err != nil {
			return 0, nil, err
		}
		shape, err := broadcastAll(in, names)
		if err != nil {
			return 0, nil, err
		}
		return in[0].DType, shape, nil
	}})

// Scale is add_scaled's attribute: the factor α of its rhs.
type Scale struct{ Alpha float64 }
