package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// grid_sampler (kernels/cuda/grid.cu), as the cpu computes it
// (backends/cpu/grid.go): one thread per output element over row-major x
// and grid (strided ones are copied first). Its gradient is a composite of
// other ops (autodiff/rules_grid.go), so there is no backward kernel.

func init() {
	kernel(ops.GridSampler, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.GridSample) error {
		return named("grid_sampler", gridSample(out, in[0], in[1], a))
	})
}

func gridSample(out, x, g *dispatch.Tensor, a ops.GridSample) error {
	total := out.Numel()
	if total == 0 {
		return nil
	}
	xv, freeX, err := rowMajor(x)
	if err != nil {
		return err
	}
	defer freeX()
	gv, freeG, err := rowMajor(g)
	if err != nil {
		return err
	}
	defer freeG()
	k := x.Rank() - 2
	var size [3]int64
	for j := range k {
		size[j] = int64(x.Shape[k+1-j])
	}
	c := out.Shape[1]
	gr, b := grid1(total)
	return enqueue(out.Device, "grid", "grid_sample_"+suffix(out.DType), gr, b, 0, addressOf(out), xv.ptr, gv.ptr,
		int64(total), int64(c), int64(total/(out.Shape[0]*c)), int32(k), size[0], size[1], size[2],
		int32(a.Mode), int32(a.Padding), boolArg(a.AlignCorners))
}
