package wgpu

import (
	"fmt"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// softmax and log_softmax (softmax.wgsl): one workgroup per line along the
// dim, or one invocation per line where lines are many and short or the
// adapter is a CPU (perItemRowsFit), reading the strided input where it
// lies. A few long lines would leave the device idle, so they take
// logsumexp's split reduction and an elementwise pass instead.

func init() {
	register(ops.Softmax, floatTypes, softmaxKernel(ops.Softmax.Name, false))
	register(ops.LogSoftmax, floatTypes, softmaxKernel(ops.LogSoftmax.Name, true))
}

// softmaxKernel is softmax's kernel, or log_softmax's where log is set.
func softmaxKernel(op string, log bool) dispatch.Kernel[ops.Scan] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
		x := in[0]
		dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		if out.Numel() == 0 {
			return nil
		}
		p, lines, err := lineParams(out, x, dim)
		if err != nil {
			return err
		}
		if x.Rank() > 0 && lines < splitBelowRows && x.Shape[dim] >= 2*partLen {
			return softmaxSplit(op, out, x, dim, log)
		}
		perItem := x.Rank() > 0 && perItemRowsFit(lines, x.Shape[dim], false)
		sh, err := shaderFor(fmt.Sprintf("%s/peritem=%v", op, perItem), "softmax", struct{ Log, PerItem bool }{log, perItem})
		if err != nil {
			return err
		}
		if perItem {
			return launch(op, sh, grid(lines), p, out, x)
		}
		return launch(op, sh, grid(lines*workgroup), p, out, x)
	}
}

// softmaxSplit is softmax over few long lines: each line's logsumexp
// State (its maximum m and the sum s of exp(x - m)), in parts, then
// exp(x - m) / s, or (x - m) - log(s), elementwise, as the fused kernel
// computes them. The finished m + log(s), rounded to float32, would cost
// the result an ulp of it: tens of ulp of softmax where |m| is large.
func softmaxSplit(op string, out, x *dispatch.Tensor, dim int, log bool) error {
	shape := append([]int{}, x.Shape...)
	shape[dim] = 1
	words := stateWords["logsumexp"]
	states, err := dispatch.Empty(out.Device, dispatch.Float32, []int{dispatch.Numel(shape) * words})
	if err != nil {
		return err
	}
	defer states.Release()
	if err := reduceTo("logsumexp", states, x, []int{dim}, 0, "partials"); err != nil {
		return err
	}
	// Each line's State seen as one element (its first word) of a tensor
	// broadcast along dim.
	strides := dispatch.ContiguousStrides(shape)
	for d := range strides {
		strides[d] *= words
	}
	line := states.View(shape, strides, 0)
	defer line.Release()
	sh, err := shaderFor(op+"/scale", "softmaxScale", struct{ Log bool }{log})
	if err != nil {
		return err
	}
	return launchStrided(op, sh, out, x, line)
}
