package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// softmax and log_softmax (kernels/cuda/softmax.cu): one block per row
// along the dim, fused (max, sum of exponentials, write).

func init() {
	for _, op := range []*dispatch.Op[ops.Scan]{ops.Softmax, ops.LogSoftmax} {
		name := op.Name
		kernel(op, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
			x := in[0]
			dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
			if err != nil {
				return err
			}
			r, nrows, n, err := alongRows(out, x, dim)
			if err != nil || nrows*n == 0 {
				return named(name, err)
			}
			g, b := gridRows(nrows, n)
			return named(name, enqueue(out.Device, "softmax", name+"_"+suffix(x.DType), g, b, 0,
				addressOf(out), addressOf(x), cBytes(&r), int64(nrows), int64(n)))
		})
	}
}
