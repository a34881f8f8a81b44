package cuda

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Pooling (kernels/cuda/pool.cu for the windows; index.cu's gather and
// scatter for pool_gather, max_pool_backward and max_unpool, which address
// whole (n, c) planes by flat index). The kernels read row-major planes: a
// strided input is first copied into scratch memory.

// maxPoolDims is LATHE_POOL_DIMS.
const maxPoolDims = 3

// cPoolGeom is struct PoolGeom.
type cPoolGeom struct {
	Dims                                    int64
	In, Out, Kernel, Stride, Padding, Dilat [maxPoolDims]int64
	Adaptive, Exclude, Divisor              int64
	InPlane, OutPlane                       int64
}

// poolGeom is the geometry of pooling spatial sizes in to out; w is nil for
// adaptive pooling.
func poolGeom(in, out []int, w *layout.Window, exclude bool, divisor int) (cPoolGeom, error) {
	var g cPoolGeom
	if len(in) > maxPoolDims || len(in) != len(out) {
		return g, &dispatch.Error{Kind: dispatch.ErrUnsupported, Found: strconv.Itoa(len(in)) + " spatial dims",
			Detail: "pools " + strconv.Itoa(len(in)) + " spatial dims, but the cuda kernels pool at most " + strconv.Itoa(maxPoolDims),
			Fix:    "pool at most 3 spatial dims, or run on the cpu"}
	}
	g.Dims = int64(len(in))
	for d := range in {
		g.In[d], g.Out[d] = int64(in[d]), int64(out[d])
		if w != nil {
			g.Kernel[d], g.Stride[d], g.Padding[d], g.Dilat[d] = int64(w.Kernel[d]), int64(w.Stride[d]), int64(w.Padding[d]), int64(w.Dilation[d])
		}
	}
	if w == nil {
		g.Adaptive = 1
	}
	if exclude {
		g.Exclude = 1
	}
	g.Divisor = int64(divisor)
	g.InPlane, g.OutPlane = int64(dispatch.Numel(in)), int64(dispatch.Numel(out))
	return g, nil
}

// rowMajor returns t as a row-major view: t itself when it is one, else a
// copy in scratch memory, with the function that frees it.
func rowMajor(t *dispatch.Tensor) (view, func(), error) {
	v := viewOf(t)
	if v.contiguous() {
		return v, func() {}, nil
	}
	ptr, free, err := borrow(t.Device, max(t.Numel()*t.DType.Size(), 1))
	if err != nil {
		return v, nil, err
	}
	c := view{ptr: ptr, dtype: t.DType, shape: t.Shape, strides: dispatch.ContiguousStrides(t.Shape)}
	if err := copyInto(t.Device, c, v); err != nil {
		free()
		return v, nil, err
	}
	return c, free, nil
}

// poolKernel launches a window kernel mod/fn_<dtype>(out, x, n, geometry) over
// the n elements of out, reading x row-major.
func poolKernel(out, x *dispatch.Tensor, mod, fn string, g cPoolGeom) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	src, free, err := rowMajor(x)
	if err != nil {
		return err
	}
	defer free()
	grid, block := grid1(n)
	return enqueue(out.Device, mod, fn+"_"+suffix(x.DType), grid, block, 0, addressOf(out), src.ptr, int64(n), cBytes(&g))
}

func init() {
	kernel(ops.AvgPool, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolParams) error {
		g, err := poolGeom(in[0].Shape[2:], out.Shape[2:], &a.Window, a.ExcludePadding, a.Divisor)
		if err != nil {
			return named("avg_pool", err)
		}
		return named("avg_pool", poolKernel(out, in[0], "pool", "avg_pool", g))
	})
	kernel(ops.AvgPoolBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AvgPoolBackwardParams) error {
		g, err := poolGeom(a.InSize, in[0].Shape[2:], &a.Window, a.ExcludePadding, a.Divisor)
		if err != nil {
			return named("avg_pool_backward", err)
		}
		return named("avg_pool_backward", poolKernel(out, in[0], "pool", "avg_pool_backward", g))
	})
	kernel(ops.AdaptiveAvgPool, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePool) error {
		g, err := poolGeom(in[0].Shape[2:], a.Size, nil, false, 0)
		if err != nil {
			return named("adaptive_avg_pool", err)
		}
		return named("adaptive_avg_pool", poolKernel(out, in[0], "pool", "avg_pool", g))
	})
	kernel(ops.AdaptiveAvgPoolBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePoolBackward) error {
		g, err := poolGeom(a.InSize, in[0].Shape[2:], nil, false, 0)
		if err != nil {
			return named("adaptive_avg_pool_backward", err)
		}
		return named("adaptive_avg_pool_backward", poolKernel(out, in[0], "pool", "avg_pool_backward", g))
	})
	kernel(ops.MaxPoolIndices, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, w layout.Window) error {
		g, err := poolGeom(in[0].Shape[2:], out.Shape[2:], &w, false, 0)
		if err != nil {
			return named("max_pool_indices", err)
		}
		return named("max_pool_indices", poolKernel(out, in[0], "pool", "max_pool_indices", g))
	})
	kernel(ops.AdaptiveMaxPoolIndices, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AdaptivePool) error {
		g, err := poolGeom(in[0].Shape[2:], a.Size, nil, false, 0)
		if err != nil {
			return named("adaptive_max_pool_indices", err)
		}
		return named("adaptive_max_pool_indices", poolKernel(out, in[0], "pool", "max_pool_indices", g))
	})
	// The indices are dispatch's value checks (checks.go): max_unpool's
	// are the caller's.
	kernel(ops.PoolGather, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return named("pool_gather", poolGather(out, in[0], in[1]))
	})
	kernel(ops.MaxPoolBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.PoolScatter) error {
		return named("max_pool_backward", poolScatter(out, in[0], in[1], "scatter_add"))
	})
	kernel(ops.MaxUnpool, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.PoolScatter) error {
		return named("max_unpool", poolScatter(out, in[0], in[1], "scatter"))
	})
}

// planes is the number of (n, c) planes of a pooling tensor.
func planes(t *dispatch.Tensor) int { return t.Shape[0] * t.Shape[1] }

// poolGather is out[p, j] = x[p, idx[p, j]] over flat plane indices: the
// gather kernel over [planes, m], reading x as [planes, in] row-major.
func poolGather(out, x, idx *dispatch.Tensor) error {
	n := out.Numel()
	if n == 0 {
		return nil
	}
	src, freeX, err := rowMajor(x)
	if err != nil {
		return err
	}
	defer freeX()
	iv, freeI, err := rowMajor(idx)
	if err != nil {
		return err
	}
	defer freeI()
	p, in, m := planes(x), dispatch.Numel(x.Shape[2:]), dispatch.Numel(out.Shape[2:])
	l, err := layoutOf(layout.Walk{Shape: []int{p, m}, Strides: [][]int{{m, 1}, {in, 0}, {m, 1}}})
	if err != nil {
		return err
	}
	g, b := grid1(n)
	return enqueue(out.Device, "index", "gather_"+suffix(x.DType), g, b, 0,
		addressOf(out), src.ptr, iv.ptr, int64(n), cBytes(&l), int64(1), int64(in), int32(dispatch.Int64))
}

// poolScatter zeroes out and adds (scatter_add) or writes (scatter) src at
// the flat plane indices: one thread per plane walks it in row-major order,
// as the cpu does, so duplicates resolve the same way.
func poolScatter(out, src, idx *dispatch.Tensor, fn string) error {
	if err := fill(out, 0); err != nil {
		return err
	}
	if src.Numel() == 0 {
		return nil
	}
	sv, freeS, err := rowMajor(src)
	if err != nil {
		return err
	}
	defer freeS()
	iv, freeI, err := rowMajor(idx)
	if err != nil {
		return err
	}
	defer freeI()
	p, m, size := planes(src), dispatch.Numel(src.Shape[2:]), dispatch.Numel(out.Shape[2:])
	at := scatterAt{out: addressOf(out), src: sv.ptr, index: iv.ptr, dt: src.DType, ikind: dispatch.Int64}
	return scatterLines(out.Device, fn, at, layout.Walk{Shape: []int{p}, Strides: [][]int{{size}, {m}, {m}}}, m, 1, 1, 1, size)
}
