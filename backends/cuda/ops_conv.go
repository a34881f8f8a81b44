package cuda

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Convolution as on the cpu (backends/cpu/conv.go): unfold (im2col) of the
// batch into a scratch column matrix, then one batched product per group,
// every image of the batch at once: by cuBLAS where the device has it, else
// with the tiled matmul kernel (kernels/cuda/matmul.cu), which needs nothing
// but the PTX. The input gradient is the transposed product folded back
// (col2im); the weight gradient is the products per image, summed over the
// batch with the sum reduction. float16 and bfloat16 run in float32 through
// register's temporaries, but for the forward of contiguous tensors where
// cuBLAS multiplies them in place (convForwardHalf).

// batchedProduct is C[b] = A[b] B[b] for batch products of M x K by K x N,
// each operand through its strides s (batch, row, column; a batch stride
// of 0 broadcasts).
func batchedProduct(dev dispatch.Device, dt dispatch.DType, a, b, c uint64, m, n, k, batch int, s cMatmulStrides) error {
	if m == 0 || n == 0 || batch == 0 {
		return nil
	}
	// Not used: no cuBLAS (an error too, where the device did not open,
	// which the launch below reports as matmul's does).
	if used, err := gemmStrided(dev, dt, a, b, c, m, n, k, batch, s); used {
		return err
	}
	grid := [3]uint32{blocksFor(n, 16), uint32(min(max((m+15)/16, 1), 65535)), uint32(min(batch, 65535))}
	return enqueue(dev, "matmul", "matmul_tiled_"+suffix(dt), grid, [3]uint32{16, 16, 1}, 0,
		a, b, c, int64(m), int64(n), int64(k), int64(batch), cBytes(&s))
}

// gemmStrided is batchedProduct by cuBLAS's strided-batched GEMM; used is
// false where the device has no cuBLAS or stridedGemm refuses, and then
// err means nothing.
func gemmStrided(dev dispatch.Device, dt dispatch.DType, a, b, c uint64, m, n, k, batch int, s cMatmulStrides) (used bool, err error) {
	if !blasDTypes.Has(dt) {
		return false, nil
	}
	g, ok := stridedGemm(a, b, c, m, n, k, batch, s)
	if !ok {
		return false, nil
	}
	return gemm(dev, dt, g)
}

// stridedGemm is the column-major GEMM that computes batchedProduct (and
// matmul's products, matmul.go); ok is
// false where an operand is not a BLAS matrix (conv's always are), a size
// passes cuBLAS's int, or k is 0. As in matmul, row-major C = A·B is
// column-major Cᵀ = Bᵀ·Aᵀ: the same memory with the operands swapped.
func stridedGemm(a, b, c uint64, m, n, k, batch int, s cMatmulStrides) (g gemmArgs, ok bool) {
	tA, lda, okA := rowMajorLayout(m, k, int(s.A[1]), int(s.A[2]))
	tB, ldb, okB := rowMajorLayout(k, n, int(s.B[1]), int(s.B[2]))
	tC, ldc, okC := rowMajorLayout(m, n, int(s.C[1]), int(s.C[2]))
	if k == 0 || !okA || !okB || !okC || tC || !fitsInt32(m, n, k, lda, ldb, ldc, batch) {
		return gemmArgs{}, false
	}
	return gemmArgs{
		transA: tB, transB: tA, m: n, n: m, k: k,
		a: b, lda: ldb, strideA: s.B[0],
		b: a, ldb: lda, strideB: s.A[0],
		c: c, ldc: ldc, strideC: s.C[0],
		batch: batch,
	}, true
}

// convDims are a convolution's sizes: batch, channels in and out, groups,
// taps of the window, positions, and the window geometry over an image.
type convDims struct {
	n, c, o, groups, k, l int
	geom                  cPoolGeom
}

func (d convDims) cg() int { return d.c / d.groups }
func (d convDims) og() int { return d.o / d.groups }
func (d convDims) ck() int { return d.cg() * d.k }

func newConvDims(x, y []int, w layout.Window, groups int) (convDims, error) {
	g, err := poolGeom(x[2:], y[2:], &w, false, 0)
	return convDims{n: x[0], c: x[1], o: y[1], groups: groups, k: dispatch.Numel(w.Kernel), l: dispatch.Numel(y[2:]), geom: g}, err
}

// columns is the scratch column matrix of the batch: (N, C*K, L).
func (d convDims) columns(dev dispatch.Device, dt dispatch.DType) (uint64, func(), error) {
	return borrow(dev, max(d.n*d.c*d.k*d.l*dt.Size(), 1))
}

// unfold writes x's columns (im2col) into scratch memory: the first step
// of conv and of conv_weight_backward.
func (d convDims) unfold(dev dispatch.Device, dt dispatch.DType, x *dispatch.Tensor) (uint64, func(), error) {
	xv, freeX, err := rowMajor(x)
	if err != nil {
		return 0, nil, err
	}
	defer freeX() // the unfold is on the stream before x's copy is freed
	col, freeC, err := d.columns(dev, dt)
	if err != nil {
		return 0, nil, err
	}
	if err := launchWindow(dev, "unfold", dt, col, xv.ptr, d.n*d.c*d.k*d.l, d.geom); err != nil {
		freeC()
		return 0, nil, err
	}
	return col, freeC, nil
}

// launchWindow launches unfold.cu's fn over n outputs. unfold of float16
// and bfloat16 is unfold_h16, a copy of 16-bit words (convForwardHalf).
func launchWindow(dev dispatch.Device, fn string, dt dispatch.DType, out, in uint64, n int, g cPoolGeom) error {
	if n == 0 {
		return nil
	}
	sfx := suffix(dt)
	if dispatch.Halves.Has(dt) {
		sfx = "h16"
	}
	grid, block := grid1(n)
	return enqueue(dev, "unfold", fn+"_"+sfx, grid, block, 0, out, in, int64(n), cBytes(&g))
}

func init() {
	kernelHalves(ops.Conv, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) (bool, error) {
		done, err := convForwardHalf(out, in[0], in[1], a)
		return done, named("conv", err)
	}, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) error {
		return named("conv", convForward(out, in[0], in[1], a))
	})
	kernelHalves(ops.ConvInputBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) (bool, error) {
		done, err := inputBackwardDNN(out, in[0], in[1], a)
		return done, named("conv_input_backward", err)
	}, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) error {
		return named("conv_input_backward", convInputBackward(out, in[0], in[1], a))
	})
	kernelHalves(ops.ConvWeightBackward, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) (bool, error) {
		done, err := weightBackwardDNN(out, in[0], in[1], a)
		return done, named("conv_weight_backward", err)
	}, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) error {
		return named("conv_weight_backward", convWeightBackward(out, in[0], in[1], a))
	})
}

// convForward: y[n, g] = W_g · col[n, g] for every image n and group g.
func convForward(out, x, w *dispatch.Tensor, a ops.ConvParams) error {
	if out.Numel() == 0 {
		return nil
	}
	d, err := newConvDims(x.Shape, out.Shape, a.WindowFor(w.Shape), a.Groups)
	if err != nil {
		return err
	}
	if d.ck() == 0 {
		return fill(out, 0)
	}
	if used, err := dnnConvolve(dnnForward, out, x, w, x.Shape, w.Shape, out.Shape, a.WindowFor(w.Shape), a.Groups); used {
		return err
	}
	dev, dt := out.Device, out.DType
	wv, freeW, err := rowMajor(w)
	if err != nil {
		return err
	}
	defer freeW()
	col, freeC, err := d.unfold(dev, dt, x)
	if err != nil {
		return err
	}
	defer freeC()
	og, ck, l, size := d.og(), d.ck(), d.l, int64(dt.Size())
	for g := range d.groups {
		s := cMatmulStrides{
			A: [3]int64{0, int64(ck), 1},
			B: [3]int64{int64(d.c * d.k * l), int64(l), 1},
			C: [3]int64{int64(d.o * l), int64(l), 1},
		}
		if err := batchedProduct(dev, dt, wv.ptr+uint64(int64(g*og*ck)*size), col+uint64(int64(g*ck*l)*size),
			addressOf(out)+uint64(int64(g*og*l)*size), og, l, ck, d.n, s); err != nil {
			return err
		}
	}
	return nil
}

// convForwardHalf is convForward of float16 or bfloat16 in its own dtype:
// by cuDNN where the device has it, else where the device's cuBLAS
// multiplies it in place (halfGemm): the columns
// unfolded as 16-bit words (unfold_h16), the products by
// cublasGemmStridedBatchedEx straight into out, summed in float32 and
// rounded once, as the float32 path and a conversion would round them. It
// does nothing (done false) for an input or weight that is not
// contiguous (copying it needs the 16-bit copy kernels, which are owed),
// an empty sum (zeros) or sizes past cuBLAS's int: the float32 path takes
// those. The backward ops stay on the float32 path: fold and the weight
// gradient's batch sum add in the dtype they are launched for.
func convForwardHalf(out, x, w *dispatch.Tensor, a ops.ConvParams) (done bool, err error) {
	if used, err := dnnConvolve(dnnForward, out, x, w, x.Shape, w.Shape, out.Shape, a.WindowFor(w.Shape), a.Groups); used {
		return true, err
	}
	if !halfGemm(out.Device) || !viewOf(x).contiguous() || !viewOf(w).contiguous() {
		return false, nil
	}
	d, err := newConvDims(x.Shape, out.Shape, a.WindowFor(w.Shape), a.Groups)
	if err != nil || d.ck() == 0 || !fitsInt32(d.n, d.og(), d.ck(), d.l) {
		return false, nil
	}
	return true, convForward(out, x, w, a)
}

// convInputBackward: dx[n] = fold(W_gᵀ · gy[n, g] over the groups).
func convInputBackward(out, gy, w *dispatch.Tensor, a ops.ConvParams) error {
	if out.Numel() == 0 {
		return nil
	}
	d, err := newConvDims(out.Shape, gy.Shape, a.WindowFor(w.Shape), a.Groups)
	if err != nil {
		return err
	}
	if d.ck() == 0 || d.o == 0 || d.l == 0 {
		return fill(out, 0)
	}
	if used, err := inputBackwardDNN(out, gy, w, a); used {
		return err
	}
	dev, dt := out.Device, out.DType
	gv, freeG, err := rowMajor(gy)
	if err != nil {
		return err
	}
	defer freeG()
	wv, freeW, err := rowMajor(w)
	if err != nil {
		return err
	}
	defer freeW()
	col, freeC, err := d.columns(dev, dt)
	if err != nil {
		return err
	}
	defer freeC()
	og, ck, l, size := d.og(), d.ck(), d.l, int64(dt.Size())
	for g := range d.groups {
		s := cMatmulStrides{
			A: [3]int64{0, 1, int64(ck)}, // W_g read transposed
			B: [3]int64{int64(d.o * l), int64(l), 1},
			C: [3]int64{int64(d.c * d.k * l), int64(l), 1},
		}
		if err := batchedProduct(dev, dt, wv.ptr+uint64(int64(g*og*ck)*size), gv.ptr+uint64(int64(g*og*l)*size),
			col+uint64(int64(g*ck*l)*size), ck, l, og, d.n, s); err != nil {
			return err
		}
	}
	return launchWindow(dev, "fold", dt, addressOf(out), col, out.Numel(), d.geom)
}

// inputBackwardDNN is convInputBackward by cuDNN (dnnConvolve), in any
// float dtype.
func inputBackwardDNN(out, gy, w *dispatch.Tensor, a ops.ConvParams) (used bool, err error) {
	return dnnConvolve(dnnData, out, w, gy, out.Shape, w.Shape, gy.Shape, a.WindowFor(w.Shape), a.Groups)
}

// weightBackwardDNN is convWeightBackward by cuDNN (dnnConvolve), in any
// float dtype.
func weightBackwardDNN(out, x, gy *dispatch.Tensor, a ops.ConvParams) (used bool, err error) {
	win := a.Window
	win.Kernel = out.Shape[2:]
	return dnnConvolve(dnnFilter, out, x, gy, x.Shape, out.Shape, gy.Shape, win, a.Groups)
}

// convWeightBackward: dW_g = Σ_n gy[n, g] · col[n, g]ᵀ: the products per
// image into scratch, then their sum over the batch.
func convWeightBackward(out, x, gy *dispatch.Tensor, a ops.ConvParams) error {
	if out.Numel() == 0 {
		return nil
	}
	win := a.Window
	win.Kernel = slices.Clone(out.Shape[2:])
	d, err := newConvDims(x.Shape, gy.Shape, win, a.Groups)
	if err != nil {
		return err
	}
	if d.n == 0 || d.l == 0 {
		return fill(out, 0)
	}
	if used, err := weightBackwardDNN(out, x, gy, a); used {
		return err
	}
	dev, dt := out.Device, out.DType
	gv, freeG, err := rowMajor(gy)
	if err != nil {
		return err
	}
	defer freeG()
	col, freeC, err := d.unfold(dev, dt, x)
	if err != nil {
		return err
	}
	defer freeC()
	og, ck, l, size := d.og(), d.ck(), d.l, int64(dt.Size())
	per := d.o * ck // one image's weight gradient
	parts, freeP, err := borrow(dev, d.n*per*dt.Size())
	if err != nil {
		return err
	}
	defer freeP()
	for g := range d.groups {
		s := cMatmulStrides{
			A: [3]int64{int64(d.o * l), int64(l), 1},
			B: [3]int64{int64(d.c * d.k * l), 1, int64(l)}, // col_g read transposed
			C: [3]int64{int64(per), int64(ck), 1},
		}
		if err := batchedProduct(dev, dt, gv.ptr+uint64(int64(g*og*l)*size), col+uint64(int64(g*ck*l)*size),
			parts+uint64(int64(g*og*ck)*size), og, ck, l, d.n, s); err != nil {
			return err
		}
	}
	// Sum the n images' parts: per rows (the weight's elements) of n each.
	r, err := rows(layout.Walk{Shape: []int{per}, Strides: [][]int{{1}, {1}}}, layout.Walk{Shape: []int{d.n}, Strides: [][]int{{0}, {per}}})
	if err != nil {
		return err
	}
	return reduceLaunch(dev, "sum", suffix(dt), addressOf(out), parts, r, per, d.n, 0)
}
