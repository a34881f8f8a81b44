package cuda

import "github.com/lathe-ml/lathe/dispatch"

// softmax and log_softmax (kernels/cuda/softmax.cu): one block per row
// along the dim, fused (max, sum of exponentials, write).

func init() {
	for _, name := range []string{"softmax", "log_softmax"} {
		kernel(name, func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
			x := in[0]
			if !x.DType.IsFloat() {
				return dispatch.Unsupported(out.Device, name, x.DType)
			}
			sc, _ := attrs.(dispatch.Scan)
			dim, err := dispatch.NormDim(sc.Dim, x.Rank(), "dim")
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
