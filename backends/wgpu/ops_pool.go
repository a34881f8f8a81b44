package wgpu

import "github.com/lathe-ml/lathe/dispatch"

// Average pooling, sliding and adaptive, and the backward passes
// (pool.wgsl): one kernel over up to three spatial dims for each, the
// backward pass a gather over the windows that read each input place, so
// it needs no float atomics.
func init() {
	register("avg_pool", poolKernel("avg_pool", "avg", false))
	register("avg_pool_backward", poolKernel("avg_pool_backward", "avg_backward", false))
	register("adaptive_avg_pool", poolKernel("adaptive_avg_pool", "avg", true))
	register("adaptive_avg_pool_backward", poolKernel("adaptive_avg_pool_backward", "avg_backward", true))
}

// poolKernel is the kernel of op: kind avg or avg_backward, over the
// sliding window of an AvgPool (AvgPoolBackward for the backward pass) or,
// with adaptive, adaptive pooling's windows.
func poolKernel(op, kind string, adaptive bool) dispatch.Kernel {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, attrs any) error {
		if out.DType != dispatch.Float32 {
			return dispatch.Unsupported(out.Device, op, out.DType)
		}
		n := out.Numel()
		if n == 0 {
			return nil
		}
		src := in[0]
		// The pooling's input and output spatial sizes, whichever way
		// this kernel runs.
		pooled, pooling := src.Shape[2:], out.Shape[2:]
		if kind == "avg_backward" {
			pooled, pooling = out.Shape[2:], src.Shape[2:]
		}
		var avg dispatch.AvgPool
		switch a := attrs.(type) {
		case dispatch.AvgPool:
			avg = a
		case dispatch.AvgPoolBackward:
			avg = a.AvgPool
		}
		params := make([]uint32, 28)
		params[0] = uint32(n)
		params[1] = uint32(out.Shape[1])
		lead := spatialDims - len(pooled)
		for d := range spatialDims {
			size, pos, k, s, pad, dil := 1, 1, 1, 1, 0, 1
			if j := d - lead; j >= 0 {
				size, pos = pooled[j], pooling[j]
				if !adaptive {
					k, s, pad, dil = avg.Kernel[j], avg.Stride[j], avg.Padding[j], avg.Dilation[j]
				}
			}
			for f, v := range []int{size, pos, k, s, pad, dil} {
				params[2+3*f+d] = uint32(v)
			}
		}
		if avg.ExcludePadding {
			params[20] = 1
		}
		params[21] = uint32(int32(avg.Divisor))
		params[22] = uint32(int32(src.Offset))
		copy(params[23:28], windowStrides(src, false))
		sh, err := shaderFor("pool/"+op, "pool", struct {
			Op       string
			Adaptive bool
		}{kind, adaptive})
		if err != nil {
			return err
		}
		return launch(op, sh, grid(n), params, out, src)
	}
}
