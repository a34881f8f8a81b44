package wgpu

import (
	"math"

	"fmt"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Pooling (pool.wgsl): one kernel over up to three spatial dims for each
// op. The backward pass of average pooling is a gather over the windows
// that read each input place, so it needs no float atomics. Max pooling's
// ops address places by int64 indices, as on every device;
// max_pool_backward, whose indices
// may name one place from several windows (or anything, from a caller),
// adds by a compare-exchange loop, and max_unpool picks the last item per
// place by an atomic max, as the cpu's last write does.
func init() {
	register(ops.AvgPool, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolParams) error {
		return windowPool(ops.AvgPool.Name, "avg", out, in[0], a, false)
	})
	register(ops.AvgPoolBackward, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolBackwardParams) error {
		return windowPool(ops.AvgPoolBackward.Name, "avg_backward", out, in[0], a.AvgPoolParams, false)
	})
	register(ops.AdaptiveAvgPool, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.AdaptivePool) error {
		return windowPool(ops.AdaptiveAvgPool.Name, "avg", out, in[0], ops.AvgPoolParams{}, true)
	})
	register(ops.AdaptiveAvgPoolBackward, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.AdaptivePoolBackward) error {
		return windowPool(ops.AdaptiveAvgPoolBackward.Name, "avg_backward", out, in[0], ops.AvgPoolParams{}, true)
	})
	register(ops.MaxPoolIndices, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, w layout.Window) error {
		return windowPool(ops.MaxPoolIndices.Name, "argmax", out, in[0], ops.AvgPoolParams{Window: w, ExcludePadding: true}, false)
	})
	register(ops.AdaptiveMaxPoolIndices, floatTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.AdaptivePool) error {
		return windowPool(ops.AdaptiveMaxPoolIndices.Name, "argmax", out, in[0], ops.AvgPoolParams{}, true)
	})
	register(ops.PoolGather, floatTypes, poolGather)
	register(ops.MaxPoolBackward, floatTypes, maxPoolBackward)
	register(ops.MaxUnpool, floatTypes, maxUnpool)
}

// poolDims refuses a pooling over more spatial dims than the kernels take.
func poolDims(op string, t *dispatch.Tensor) error {
	if k := t.Rank() - 2; k > spatialDims {
		return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: fmt.Sprintf("pools over %d spatial dims on wgpu:0, which takes up to %d", k, spatialDims),
			Fix:    "pool on the cpu, or over fewer dims"}
	}
	return nil
}

// windowPool runs the pooling of kind avg, avg_backward or argmax of src into
// out, over the sliding window of avg (with its divisor and padding rule)
// or, with adaptive, adaptive pooling's windows.
func windowPool(op, kind string, out, src *dispatch.Tensor, avg ops.AvgPoolParams, adaptive bool) error {
	if err := poolDims(op, src); err != nil {
		return err
	}
	n := out.Numel()
	if n == 0 {
		return nil
	}
	// The pooling's input and output spatial sizes, whichever way
	// this kernel runs.
	pooled, pooling := src.Shape[2:], out.Shape[2:]
	if kind == "avg_backward" {
		pooled, pooling = out.Shape[2:], src.Shape[2:]
	}
	for j := range pooled {
		fits := !adaptive && fitsI32(pooled[j], pooling[j], avg.Kernel[j], avg.Stride[j], avg.Padding[j], avg.Dilation[j])
		if adaptive {
			// pool.wgsl's window forms (o+1)·n for o < m.
			p, ok := dispatch.CheckedMul(pooled[j]+1, pooling[j]+1)
			fits = ok && p <= math.MaxInt32
		}
		if !fits {
			return &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported, Found: dispatch.FormatShape(avg.Kernel),
				Detail: "wgpu:0: a pooling window of kernel " + dispatch.FormatShape(avg.Kernel) + ", stride " + dispatch.FormatShape(avg.Stride) +
					", padding " + dispatch.FormatShape(avg.Padding) + " and dilation " + dispatch.FormatShape(avg.Dilation) + " from " +
					dispatch.FormatShape(pooled) + " to " + dispatch.FormatShape(pooling) + " reaches places past what pool.wgsl's i32 arithmetic counts",
				Fix: "run this op on the cpu"}
		}
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
	sh, err := shaderFor("pool/"+op, "pool", poolData{Op: kind, Adaptive: adaptive})
	if err != nil {
		return err
	}
	return launch(op, sh, grid(n), params, out, src)
}

// poolData specialises pool.wgsl.
type poolData struct {
	Op       string
	Adaptive bool
}

// indexParams are the parameter words of the index ops: items, the
// channels, the sizes of the planes the indices address, the index
// tensor's spatial sizes, then the layouts of a and of the indices.
func indexParams(items int, planes, idx, a *dispatch.Tensor) []uint32 {
	p := make([]uint32, 20)
	p[0] = uint32(items)
	p[1] = uint32(idx.Shape[1])
	lead := spatialDims - (idx.Rank() - 2)
	for d := range spatialDims {
		p[2+d], p[5+d] = 1, 1
		if j := d - lead; j >= 0 {
			p[2+d], p[5+d] = uint32(planes.Shape[2+j]), uint32(idx.Shape[2+j])
		}
	}
	p[8] = uint32(int32(a.Offset))
	copy(p[9:14], windowStrides(a, false))
	p[14] = uint32(int32(idx.Offset))
	copy(p[15:20], windowStrides(idx, false))
	return p
}

// indexShader is the shader of an index op.
func indexShader(op string) (*shader, error) {
	return shaderFor("pool/"+op, "pool", poolData{Op: op})
}

// poolGather reads x's (n, c) plane at each index: the values of max
// pooling.
func poolGather(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
	x, idx := in[0], in[1]
	if err := poolDims("pool_gather", x); err != nil {
		return err
	}
	if out.Numel() == 0 {
		return nil
	}
	sh, err := indexShader("gather")
	if err != nil {
		return err
	}
	return launch("pool_gather", sh, grid(out.Numel()), indexParams(out.Numel(), x, idx, x), out, x, idx)
}

// maxPoolBackward adds each incoming gradient at its index of the zeroed
// out (max_pool2d_with_indices_backward).
func maxPoolBackward(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.PoolScatter) error {
	g, idx := in[0], in[1]
	if err := poolDims("max_pool_backward", g); err != nil {
		return err
	}
	if out.Numel() == 0 {
		return nil
	}
	if err := fill(ops.MaxPoolBackward.Name, out, 0); err != nil {
		return err
	}
	if g.Numel() == 0 {
		return nil
	}
	sh, err := indexShader("scatter_add")
	if err != nil {
		return err
	}
	return launch("max_pool_backward", sh, grid(g.Numel()), indexParams(g.Numel(), out, idx, g), out, g, idx)
}

// maxUnpool writes each value at its index of a zeroed out; where several
// name one place, the last in row-major order wins, as on the cpu.
func maxUnpool(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.PoolScatter) error {
	x, idx := in[0], in[1]
	if err := poolDims("max_unpool", x); err != nil {
		return err
	}
	if out.Numel() == 0 {
		return nil
	}
	// winner holds, for each place of out, the last item that names it,
	// plus one.
	winner, err := dispatch.Empty(out.Device, dispatch.Int32, []int{out.Numel()})
	if err != nil {
		return err
	}
	defer winner.Release()
	if err := fill(ops.MaxUnpool.Name, winner, 0); err != nil {
		return err
	}
	params := indexParams(x.Numel(), out, idx, x)
	if x.Numel() > 0 {
		sh, err := indexShader("claim")
		if err != nil {
			return err
		}
		if err := launch("max_unpool", sh, grid(x.Numel()), params, winner, idx); err != nil {
			return err
		}
	}
	sh, err := indexShader("unpool")
	if err != nil {
		return err
	}
	params[0] = uint32(out.Numel())
	return launch("max_unpool", sh, grid(out.Numel()), params, out, winner, x)
}
