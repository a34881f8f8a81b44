package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// The fused layer norm and batch norm (kernels/cuda/norm.cu), with the cpu
// kernels' semantics (backends/cpu/layernorm.go, batchnorm.go). Inputs are
// read row-major, copied first where they are not (as the cpu reads them
// dense). Layer norm takes every float dtype (the 16-bit ones computed in
// float32 and rounded once, as on the cpu); batch norm float32 and float64,
// as the cpu's, so that the root package runs the 16-bit floats through the
// composite on both.
//
// Every sum over rows (layer norm's dw and db) or over a channel's samples
// (batch norm's moments and gradient sums) is two launches: column sums
// over chunks of rows into float64 partials (colPlan), then a block per
// column or channel that adds them. The chunks depend on the shape alone,
// so the result is the same bits whatever the device.

// bnDTypes are the dtypes of the batch norm kernels (the cpu's).
const bnDTypes = dispatch.DTypeSet(1<<dispatch.Float32 | 1<<dispatch.Float64)

const (
	// colMinChunk is the fewest rows a column-sum thread adds before its
	// partial's trip through memory: the partials stay under 1/16 of x's
	// float32 traffic (16 bytes per column per chunk).
	colMinChunk = 32
	// pairBytes is the size of norm.cu's NormPair, one partial.
	pairBytes = 16
)

// colPlan is the launch of norm.cu's col_partial kernels over x read as
// [n, k]: a thread per column in blocks of up to blockThreads, and the rows
// cut into chunks, enough of them (np, at most fillBlocks) for about
// fillBlocks blocks in all. np is 0 when there is nothing to sum.
func colPlan(n, k int) (grid, block [3]uint32, chunk, np int) {
	threads := min(max((k+31)/32*32, 32), blockThreads)
	tiles := (k + threads - 1) / threads
	want := max(1, fillBlocks/max(tiles, 1))
	chunk = max(colMinChunk, (n+want-1)/want)
	if k > 0 {
		np = (n + chunk - 1) / chunk
	}
	return [3]uint32{uint32(min(max(tiles, 1), maxBlocks)), uint32(max(np, 1)), 1}, [3]uint32{uint32(threads), 1, 1}, chunk, np
}

// lnGrid is the launch of the layer norm's row kernels: a block per row,
// of a thread per 16-byte group of the row's elements up to blockThreads.
// The forward and the backward's dx kernel take the same for the same d,
// so that the backward's statistics are the forward's bits.
func lnGrid(rows, d int, dt dispatch.DType) (grid, block [3]uint32) {
	per := 16 / dt.Size()
	return gridRows(rows, (d+per-1)/per)
}

// channelGrid is the launch of norm.cu's elementwise batch norm passes
// over n elements of planes of s, and their vec argument: by 16-byte
// groups (a thread each) where s is a multiple of a group and every
// pointer is 16-byte aligned, by elements otherwise.
func channelGrid(n, s int, dt dispatch.DType, ptrs ...uint64) (grid, block [3]uint32, vec int64) {
	per := 16 / dt.Size()
	if s%per != 0 {
		grid, block = grid1(n)
		return grid, block, 0
	}
	for _, p := range ptrs {
		if p%16 != 0 {
			grid, block = grid1(n)
			return grid, block, 0
		}
	}
	grid, block = grid1(n / per)
	return grid, block, 1
}

// at is the device address of element i of a row-major buffer of dt at p.
func at(p uint64, dt dispatch.DType, i int) uint64 { return p + uint64(i*dt.Size()) }

func init() {
	kernel(ops.LayerNorm, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		const op = "native_layer_norm"
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "bias", false, a)
		if err != nil || out.Numel() == 0 {
			return named(op, err)
		}
		vs, free, err := rowMajorAll(in)
		if err != nil {
			return named(op, err)
		}
		defer free()
		g, b := lnGrid(rows, d, out.DType)
		return named(op, enqueue(out.Device, "norm", "layer_norm_"+suffix(out.DType), g, b, 0,
			addressOf(out), vs[0].ptr, vs[1].ptr, vs[2].ptr, int64(rows), int64(d), a.Eps))
	})
	kernel(ops.LayerNormBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.LayerNormParams) error {
		const op = "native_layer_norm_backward"
		rows, d, err := ops.LayerNormShapes(in[0], in[1], in[2], "grad", true, a)
		if err != nil || d == 0 {
			return named(op, err)
		}
		return named(op, layerNormBackward(out, in, rows, d, a.Eps))
	})
	kernel(ops.BatchNormMoments, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil || g.C == 0 {
			return named("batch_norm_moments", err)
		}
		return named("batch_norm_moments", batchNormMoments(out, in[0], g))
	})
	kernel(ops.BatchNormApply, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.BatchNormParams) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil || out.Numel() == 0 {
			return named("batch_norm_apply", err)
		}
		return named("batch_norm_apply", batchNormApply(out, in, g, a))
	})
	kernel(ops.BatchNormBackward, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.BatchNormParams) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil || g.C == 0 {
			return named("batch_norm_backward", err)
		}
		return named("batch_norm_backward", batchNormBackward(out, in, g, a))
	})
}

// layerNormBackward writes dx (rows·d), dw and db (d each) to out: dx and
// each row's statistics a block per row, then dw and db as column sums
// over chunks of rows (none when rows is 0: they are 0).
func layerNormBackward(out *dispatch.Tensor, in []*dispatch.Tensor, rows, d int, eps float64) error {
	vs, free, err := rowMajorAll(in)
	if err != nil {
		return err
	}
	defer free()
	dev, dt, sfx := out.Device, out.DType, suffix(out.DType)
	dx := addressOf(out)
	dw, db := at(dx, dt, rows*d), at(dx, dt, (rows+1)*d)
	x, w, gr := vs[0].ptr, vs[1].ptr, vs[2].ptr
	cg, cb, chunk, np := colPlan(rows, d)
	partial, freePartial, err := borrow(dev, np*d*pairBytes)
	if err != nil {
		return err
	}
	defer freePartial() // the allocator reuses it only after the queued kernels
	if rows > 0 {
		stats, freeStats, err := borrow(dev, 2*rows*8)
		if err != nil {
			return err
		}
		defer freeStats()
		g, b := lnGrid(rows, d, dt)
		if err := enqueue(dev, "norm", "layer_norm_bwd_dx_"+sfx, g, b, 0, dx, stats, x, w, gr, int64(rows), int64(d), eps); err != nil {
			return err
		}
		if err := enqueue(dev, "norm", "layer_norm_bwd_dwb_"+sfx, cg, cb, 0, partial, stats, x, gr, int64(rows), int64(d), int64(chunk)); err != nil {
			return err
		}
	}
	g, b := gridRows(d, np)
	return enqueue(dev, "norm", "layer_norm_bwd_finish_"+sfx, g, b, 0, dw, db, partial, int64(np), int64(d))
}

// batchNormMoments writes each channel's mean and biased variance to out
// [2, C]: the sum, then the squared deviations from the float64 mean, each
// as column partials and a block per channel.
func batchNormMoments(out, x *dispatch.Tensor, g ops.BatchNormGeometry) error {
	xv, free, err := rowMajor(x)
	if err != nil {
		return err
	}
	defer free()
	dev, sfx := out.Device, suffix(out.DType)
	k, m := g.C*g.S, float64(g.N*g.S)
	cg, cb, chunk, np := colPlan(g.N, k)
	partial, freePartial, err := borrow(dev, np*k*pairBytes)
	if err != nil {
		return err
	}
	defer freePartial()
	mean, freeMean, err := borrow(dev, g.C*8)
	if err != nil {
		return err
	}
	defer freeMean()
	o := addressOf(out)
	tg, tb := gridRows(g.C, np*g.S)
	if np > 0 {
		if err := enqueue(dev, "norm", "batch_norm_sum_"+sfx, cg, cb, 0, partial, xv.ptr,
			int64(g.N), int64(k), int64(g.S), int64(chunk)); err != nil {
			return err
		}
	}
	if err := enqueue(dev, "norm", "batch_norm_mean_"+sfx, tg, tb, 0, o, mean, partial,
		int64(np), int64(g.C), int64(g.S), m); err != nil {
		return err
	}
	if np > 0 {
		if err := enqueue(dev, "norm", "batch_norm_sqdev_"+sfx, cg, cb, 0, partial, xv.ptr, mean,
			int64(g.N), int64(k), int64(g.S), int64(chunk)); err != nil {
			return err
		}
	}
	return enqueue(dev, "norm", "batch_norm_var_"+sfx, tg, tb, 0, at(o, out.DType, g.C), partial,
		int64(np), int64(g.C), int64(g.S), m)
}

// batchNormApply writes x·s + t per channel, s and t computed per channel
// first (a [2, C] scratch).
func batchNormApply(out *dispatch.Tensor, in []*dispatch.Tensor, g ops.BatchNormGeometry, a ops.BatchNormParams) error {
	vs, free, err := rowMajorAll(in)
	if err != nil {
		return err
	}
	defer free()
	dev, dt, sfx := out.Device, out.DType, suffix(out.DType)
	coef, freeCoef, err := borrow(dev, 2*g.C*dt.Size())
	if err != nil {
		return err
	}
	defer freeCoef()
	cg, cb := grid1(g.C)
	if err := enqueue(dev, "norm", "batch_norm_scale_shift_"+sfx, cg, cb, 0, coef, vs[1].ptr, vs[2].ptr, vs[3].ptr, vs[4].ptr,
		int64(g.C), a.Eps); err != nil {
		return err
	}
	n := out.Numel()
	y := addressOf(out)
	eg, eb, vec := channelGrid(n, g.S, dt, y, vs[0].ptr)
	return enqueue(dev, "norm", "batch_norm_affine_"+sfx, eg, eb, 0, y, vs[0].ptr, coef, at(coef, dt, g.C),
		int64(n), int64(g.C), int64(g.S), vec)
}

// batchNormBackward writes dx, dweight and dbias to out: the channels' Σg
// and Σg·(x - mean) as column partials, a block per channel that totals
// them into dweight, dbias and dx's coefficients ([4, C] scratch: a, k,
// mean, d), then dx = a·g + k·(x - mean) + d in training and a·g out of it
// (d is 0 there).
func batchNormBackward(out *dispatch.Tensor, in []*dispatch.Tensor, g ops.BatchNormGeometry, a ops.BatchNormParams) error {
	vs, free, err := rowMajorAll(in)
	if err != nil {
		return err
	}
	defer free()
	dev, dt, sfx := out.Device, out.DType, suffix(out.DType)
	x, mean, variance, weight, gr := vs[0].ptr, vs[1].ptr, vs[2].ptr, vs[3].ptr, vs[4].ptr
	n, k := in[0].Numel(), g.C*g.S
	cg, cb, chunk, np := colPlan(g.N, k)
	partial, freePartial, err := borrow(dev, np*k*pairBytes)
	if err != nil {
		return err
	}
	defer freePartial()
	coef, freeCoef, err := borrow(dev, 4*g.C*dt.Size())
	if err != nil {
		return err
	}
	defer freeCoef()
	if np > 0 {
		if err := enqueue(dev, "norm", "batch_norm_sumprod_"+sfx, cg, cb, 0, partial, x, gr, mean,
			int64(g.N), int64(k), int64(g.S), int64(chunk)); err != nil {
			return err
		}
	}
	dx := addressOf(out)
	training := int64(0)
	if a.Training {
		training = 1
	}
	tg, tb := gridRows(g.C, np*g.S)
	if err := enqueue(dev, "norm", "batch_norm_coef_"+sfx, tg, tb, 0, at(dx, dt, n), at(dx, dt, n+g.C), coef, partial,
		mean, variance, weight, int64(np), int64(g.C), int64(g.S), float64(g.N*g.S), a.Eps, training); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	eg, eb, vec := channelGrid(n, g.S, dt, dx, gr, x)
	if a.Training {
		return enqueue(dev, "norm", "batch_norm_grad_"+sfx, eg, eb, 0, dx, gr, x, coef, int64(n), int64(g.C), int64(g.S), vec)
	}
	return enqueue(dev, "norm", "batch_norm_affine_"+sfx, eg, eb, 0, dx, gr, coef, at(coef, dt, 3*g.C),
		int64(n), int64(g.C), int64(g.S), vec)
}
