package cuda

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Matrix products with torch.matmul's rules (ops.MatMulShapes):
// float32 and float64 go to cuBLAS's strided-batched GEMM where cuBLAS
// opens and each operand is a row- or column-major matrix, and so do
// float16 and bfloat16, in place, through cublasGemmStridedBatchedEx
// (float32 accumulation, one rounding at the end). Everything else goes to
// the tiled PTX kernel, which reads any strides: integers, other strides,
// no cuBLAS; a 16-bit float that cuBLAS cannot take in place gets there
// through register's float32 temporaries, and may still reach cuBLAS's
// sgemm from them. Broadcast batch dims become one batched call where
// their strides fold into one, else one call per index of the dims that do
// not fold.
//
// What the stand-in cuBLAS (testdata/fakecublas.c) cannot show: speed.
// On Hopper cuBLAS runs the 16-bit products on tensor cores (wgmma) with
// float32 accumulators; its fastest kernels want A, B and C at 16-byte
// aligned addresses and leading dims that are multiples of 8 elements,
// which whole tensors from the caching allocator have (512-byte blocks)
// and views at odd offsets or with odd row lengths may not: those still
// run, on slower kernels that cuBLAS picks itself. Forbidding reduced-
// precision split-K reductions (mathNoReducedReduction) may cost a
// workspace pass on long-k, small-output shapes.

func init() {
	// A 16-bit float product tries cuBLAS on its own storage before
	// register's wrapper converts it: the conversions are three extra
	// passes over memory and two temporaries, as long as the product
	// itself at small sizes.
	registerHalves(ops.MatMul, dispatch.Numeric, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) (bool, error) {
		err := multiply(out, in, false)
		return err != errNoBLAS, err
	}, matmul)
	// The wide product of two 16-bit floats (a float32 result) is the
	// same cuBLAS call with a float32 C, which adds the float32 sums
	// without rounding them to 16 bits; without cuBLAS it goes through
	// register's float32 temporaries to the float32 product.
	registerHalves(ops.MatMulWide, dispatch.Halves|1<<dispatch.Float32, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) (bool, error) {
		err := multiply(out, in, false)
		return err != errNoBLAS, err
	}, matmul)
}

// blasDTypes are the dtypes that cuBLAS multiplies (device.gemm).
var blasDTypes = dispatch.DTypeSet(1<<dispatch.Float32|1<<dispatch.Float64) | dispatch.Halves

// gemmArgs is one strided-batched GEMM in cuBLAS's column-major terms,
// computing C = op(A)·op(B) for batch matrices.
type gemmArgs struct {
	transA, transB bool
	m, n, k        int
	a              uint64
	lda            int
	strideA        int64
	b              uint64
	ldb            int
	strideB        int64
	c              uint64
	ldc            int
	strideC        int64
	batch          int
	wideC          bool // C is float32 where A and B are 16-bit (matmul_wide)
}

// The PTX kernel's launch contract (kernels/cuda/matmul.cu,
// matmul_tiled_<f32|f64|i32|i64>): blocks of matmulTile×matmulTile
// threads, each thread one element of C; grid x over C's columns, y over
// its rows, z over the batch. Parameters: A, B, C (device pointers), M, N,
// K, batch (int64: C is M×N, A M×K, B K×N), then a struct of nine int64
// strides in elements: A's batch, row and column strides, then B's, then C's.
const matmulTile = 16

// matmulKernels are the PTX kernels of module matmul by dtype.
var matmulKernels = map[dispatch.DType]string{
	dispatch.Float32: "matmul_tiled_f32", dispatch.Float64: "matmul_tiled_f64",
	dispatch.Int32: "matmul_tiled_i32", dispatch.Int64: "matmul_tiled_i64",
}

// operand is a matmul argument as layout.Matrices, addressed from the
// device address of its view's element 0 (devicePtr, which has the
// view's offset in it already; Matrices.Offset is not used).
type operand struct {
	ptr uint64
	layout.Matrices
}

func asOperand(t *dispatch.Tensor, lhs bool, batch []int) operand {
	return operand{devicePtr(t), layout.AsMatrices(t, lhs, batch)}
}

// batchPlan splits the batch dims into the ones looped over (outer) and
// the ones that fold into one strided batch of count matrices.
type batchPlan struct {
	outer        []int    // sizes of the dims looped over, outermost first
	outerStrides [3][]int // their strides in A, B and C
	count        int      // matrices per call
	strides      [3]int   // the stride between them in A, B and C
}

// planBatch folds the batch dims from the innermost outwards while, for
// each of the three operands, the outer dim's stride is the inner one's
// times its size (broadcast dims, stride 0, fold with each other).
func planBatch(batch []int, strides [3][]int) batchPlan {
	p := batchPlan{count: 1}
	var dims []int // the dims that matter: size-1 dims are never stepped
	for d, n := range batch {
		if n != 1 {
			dims = append(dims, d)
		}
	}
	i := len(dims) - 1
	if i >= 0 {
		d := dims[i]
		p.count = batch[d]
		for o := range 3 {
			p.strides[o] = strides[o][d]
		}
		for i--; i >= 0; i-- {
			d := dims[i]
			fold := true
			for o := range 3 {
				fold = fold && strides[o][d] == p.strides[o]*p.count
			}
			if !fold {
				break
			}
			p.count *= batch[d]
		}
	}
	for _, d := range dims[:i+1] {
		p.outer = append(p.outer, batch[d])
		for o := range 3 {
			p.outerStrides[o] = append(p.outerStrides[o], strides[o][d])
		}
	}
	return p
}

// each calls f with the element offsets of A, B and C of every outer index.
func (p batchPlan) each(f func(offA, offB, offC int) error) error {
	total := 1
	for _, n := range p.outer {
		total *= n
	}
	for i := range total {
		var off [3]int
		rest := i
		for d := len(p.outer) - 1; d >= 0; d-- {
			idx := rest % p.outer[d]
			rest /= p.outer[d]
			for o := range 3 {
				off[o] += idx * p.outerStrides[o][d]
			}
		}
		if err := f(off[0], off[1], off[2]); err != nil {
			return err
		}
	}
	return nil
}

// rowMajorLayout says how a rows×cols matrix with strides rs, cs reads as a
// BLAS matrix: row-major with leading dim ld (trans false), or
// column-major (trans true); ok is false for any other layout. A size-1
// dim's stride is never stepped, so any will do.
func rowMajorLayout(rows, cols, rs, cs int) (trans bool, ld int, ok bool) {
	if cols == 1 || cs == 1 {
		ld = rs
		if rows == 1 {
			ld = max(cols, 1)
		}
		if ld >= max(cols, 1) {
			return false, ld, true
		}
	}
	if rows == 1 || rs == 1 {
		ld = cs
		if cols == 1 {
			ld = max(rows, 1)
		}
		if ld >= max(rows, 1) {
			return true, ld, true
		}
	}
	return false, 0, false
}

// matmul is the kernel of the wide dtypes: cuBLAS, else the PTX kernel.
func matmul(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
	return multiply(out, in, true)
}

// multiply computes out = in[0]·in[1], all three of one dtype, or out
// float32 from two 16-bit floats (matmul_wide). Without ptx it returns
// errNoBLAS, having done nothing, where cuBLAS cannot take the product (no
// cuBLAS, or none for the dtype, or a layout it cannot read).
func multiply(out *dispatch.Tensor, in []*dispatch.Tensor, ptx bool) error {
	batch, n, k, m, _, err := ops.MatMulShapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return err
	}
	dt := in[0].DType
	kernel := matmulKernels[dt] // registered for these dtypes only
	size, _ := elemSize(dt)
	outSize, _ := elemSize(out.DType)
	nb := dispatch.Numel(batch)
	if n == 0 || m == 0 || nb == 0 {
		return nil
	}
	if k == 0 { // an empty sum: zeros, as torch gives
		return zeroOn(out.Device, devicePtr(out), nb*n*m*outSize)
	}
	a, b := asOperand(in[0], true, batch), asOperand(in[1], false, batch)
	c := operand{devicePtr(out), layout.Matrices{RowStride: m, ColStride: 1, Batch: dispatch.ContiguousStrides(batch)}}
	for i := range c.Batch {
		c.Batch[i] *= n * m
	}
	plan := planBatch(batch, [3][]int{a.Batch, b.Batch, c.Batch})
	at := func(op operand, off int) uint64 { return op.ptr + uint64(off*size) }
	atC := func(off int) uint64 { return c.ptr + uint64(off*outSize) }

	if blasDTypes.Has(dt) {
		s := cMatmulStrides{
			A: [3]int64{int64(plan.strides[0]), int64(a.RowStride), int64(a.ColStride)},
			B: [3]int64{int64(plan.strides[1]), int64(b.RowStride), int64(b.ColStride)},
			C: [3]int64{int64(plan.strides[2]), int64(m), 1},
		}
		// The layout and the device are the same for every outer index:
		// the first call says whether cuBLAS takes them, before any runs.
		err := plan.each(func(oa, ob, oc int) error {
			g, ok := stridedGemm(at(a, oa), at(b, ob), atC(oc), n, m, k, plan.count, s)
			if !ok {
				return errNoBLAS
			}
			g.wideC = out.DType != dt
			used, err := gemm(out.Device, dt, g)
			if !used {
				return errNoBLAS
			}
			return err
		})
		if err != errNoBLAS {
			return err
		}
	}
	if !ptx {
		return errNoBLAS
	}

	return plan.each(func(oa, ob, oc int) error {
		// Grid y and z are at most 65535: tall products and long batches
		// are launched in slices of rows and of matrices.
		const maxRows, maxBatch = 65535 * matmulTile, 65535
		for b0 := 0; b0 < plan.count; b0 += maxBatch {
			nbatch := min(maxBatch, plan.count-b0)
			for r0 := 0; r0 < n; r0 += maxRows {
				rows := min(maxRows, n-r0)
				pa := at(a, oa+b0*plan.strides[0]+r0*a.RowStride)
				pb := at(b, ob+b0*plan.strides[1])
				pc := atC(oc + b0*plan.strides[2] + r0*m)
				grid := [3]uint32{uint32((m + matmulTile - 1) / matmulTile), uint32((rows + matmulTile - 1) / matmulTile), uint32(nbatch)}
				strides := packInt64s(int64(plan.strides[0]), int64(a.RowStride), int64(a.ColStride),
					int64(plan.strides[1]), int64(b.RowStride), int64(b.ColStride),
					int64(plan.strides[2]), int64(m), 1)
				if err := launch(out.Device, "matmul", kernel, grid, [3]uint32{matmulTile, matmulTile, 1}, 0,
					pa, pb, pc, int64(rows), int64(m), int64(k), int64(nbatch), strides); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// errNoBLAS stops the cuBLAS path on a device without cuBLAS, before any
// call was made, so the PTX kernel does the whole product.
var errNoBLAS = &dispatch.Error{Kind: dispatch.ErrUnsupported, Detail: "no cuBLAS"}

func fitsInt32(vals ...int) bool {
	for _, v := range vals {
		if v > math.MaxInt32 {
			return false
		}
	}
	return true
}
