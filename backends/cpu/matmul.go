package cpu

import (
	"os"
	"runtime"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Matrix products. float32 and float64 go to a BLAS's Sgemm and Dgemm,
// which take a row-major matrix directly and a column-major one (a
// transposed view) through its transpose flag, so neither is copied; any
// other layout is made contiguous first. Integers take a plain loop, which
// reads any strides. Batches (torch.matmul's broadcast batch dims) are
// spread over goroutines; gonum splits a large product itself.

// gemmName says which BLAS serves matrix products.
func gemmName() string { return blasName }

// The GEMMs in use: OpenBLAS when it opens (unless LATHE_BLAS=gonum), else
// gonum's pure-Go BLAS. Both stay tested: the conformance suite runs the
// matmul cases once more with LATHE_BLAS=gonum. sgemm and dgemm are for
// products that run side by side (a batch of matrices, convolution's
// images, attention's blocks): one thread each. sgemmWide and dgemmWide
// are for a lone product: OpenBLAS's threads, one per core. blas_threads.go
// says why and how the two share OpenBLAS's one thread setting. gonum
// splits a large product over goroutines itself, in both.
var sgemm, dgemm, sgemmWide, dgemmWide, blasName = pickBLAS()

// pickBLAS returns the side-by-side and the lone GEMMs and the BLAS's name.
func pickBLAS() (gemmFunc[float32], gemmFunc[float64], gemmFunc[float32], gemmFunc[float64], string) {
	gonumS, gonumD := gonum.Implementation{}.Sgemm, gonum.Implementation{}.Dgemm
	if os.Getenv("LATHE_BLAS") == "gonum" {
		return gonumS, gonumD, gonumS, gonumD, "gonum (LATHE_BLAS=gonum)"
	}
	s, d, desc, why := openBLAS()
	if why != "" {
		return gonumS, gonumD, gonumS, gonumD, "gonum (OpenBLAS unavailable: " + why + ")"
	}
	g := newThreadGate(setBLASThreads, runtime.GOMAXPROCS(0))
	return gated(g, false, s), gated(g, false, d), gated(g, true, s), gated(g, true, d), desc
}

// matrices is a matmul argument as layout.Matrices, with its tensor.
type matrices struct {
	t *dispatch.Tensor
	layout.Matrices
}

func asMatrices(t *dispatch.Tensor, lhs bool, batch []int) matrices {
	return matrices{t, layout.AsMatrices(t, lhs, batch)}
}

// blasLayout says how BLAS reads a rows×cols matrix with strides rs, cs:
// row-major (no transpose, leading dim rs) or column-major (transpose,
// leading dim cs). A size-1 dim's stride is never stepped, so any will do.
func blasLayout(rows, cols, rs, cs int) (blas.Transpose, int, bool) {
	if cols == 1 || cs == 1 {
		ld := rs
		if rows == 1 {
			ld = max(cols, 1)
		}
		if ld >= max(cols, 1) {
			return blas.NoTrans, ld, true
		}
	}
	if rows == 1 || rs == 1 {
		ld := cs
		if cols == 1 {
			ld = max(rows, 1)
		}
		if ld >= max(rows, 1) {
			return blas.Trans, ld, true
		}
	}
	return blas.NoTrans, 0, false
}

// contiguous returns a row-major copy of t.
func contiguous(t *dispatch.Tensor) *dispatch.Tensor {
	c := dispatch.NewTensor(t.Device, t.DType, t.Shape, newBuffer(t.DType, t.Numel()))
	castInto(c, t)
	return c
}

// offsets returns the element offsets of batch index bi in a and b.
func offsets(bi int, batch []int, a, b matrices) (int, int) {
	oa, ob := a.t.Offset, b.t.Offset
	for d := len(batch) - 1; d >= 0; d-- {
		i := bi % batch[d]
		bi /= batch[d]
		oa += i * a.Batch[d]
		ob += i * b.Batch[d]
	}
	return oa, ob
}

func init() {
	// bfloat16 products take AMX's tiles where the machine has them (amx.go);
	// the narrow dtypes otherwise go through the float32 GEMM.
	registerTiled(ops.MatMul, dispatch.AllTypes, matMul, amxMatMul)
	// The wide product: bfloat16 on the tiles, into float32; float16 (and
	// bfloat16 without them) widened to sgemm, which writes out itself.
	registerTiled(ops.MatMulWide, dispatch.Halves|1<<dispatch.Float32, matMul, amxMatMul)
}

// amxPackLimit is the most bfloat16s that one product on AMX (amx.go) packs its
// right-hand matrices into (256 MiB).
var amxPackLimit = 1 << 27

// matMul is the product for the wide dtypes.
func matMul(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
	batch, n, k, m, _, err := ops.MatMulShapes(in[0].Shape, in[1].Shape)
	if err != nil {
		return err
	}
	switch out.DType {
	case dispatch.Float32:
		gemm(out, in[0], in[1], batch, n, k, m, sgemm)
	case dispatch.Float64:
		gemm(out, in[0], in[1], batch, n, k, m, dgemm)
	case dispatch.Int32:
		intMatMul[int32](out, in[0], in[1], batch, n, k, m)
	case dispatch.Int64:
		intMatMul[int64](out, in[0], in[1], batch, n, k, m)
	default:
		return dispatch.Unsupported(out.Device, "matmul", out.DType)
	}
	return nil
}

// gemmFunc is the signature that Sgemm and Dgemm share.
type gemmFunc[T float] func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

// gemm computes out = x·y over the batch with one BLAS call per matrix.
func gemm[T float](out, x, y *dispatch.Tensor, batch []int, n, k, m int, f gemmFunc[T]) {
	c := elems[T](out)[out.Offset:]
	nb := dispatch.Numel(batch)
	if n == 0 || m == 0 || nb == 0 {
		return
	}
	if k == 0 { // an empty sum: zeros, as torch gives
		clear(c[:nb*n*m])
		return
	}
	a, b := asMatrices(x, true, batch), asMatrices(y, false, batch)
	tA, lda, ok := blasLayout(n, k, a.RowStride, a.ColStride)
	if !ok {
		cx := contiguous(x)
		defer cx.Release()
		a = asMatrices(cx, true, batch)
		tA, lda, _ = blasLayout(n, k, a.RowStride, a.ColStride)
	}
	tB, ldb, ok := blasLayout(k, m, b.RowStride, b.ColStride)
	if !ok {
		cy := contiguous(y)
		defer cy.Release()
		b = asMatrices(cy, false, batch)
		tB, ldb, _ = blasLayout(k, m, b.RowStride, b.ColStride)
	}
	ad, bd := elems[T](a.t), elems[T](b.t)
	if nb > 1 && foldsIntoRows(a, b, batch, n, tA, lda) {
		// A stack of row-major matrices times one matrix (a Linear layer
		// on [batch, seq, in]) is one product of nb·n rows: one call,
		// which packs b once instead of once per matrix, as torch.matmul
		// folds it.
		n, nb = nb*n, 1
	}
	if nb == 1 && threadsPay(n, k, m) {
		f = wideOf(f)
	}
	parallel(nb, n*m*k, func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			oa, ob := offsets(bi, batch, a, b)
			f(tA, tB, n, m, k, 1, ad[oa:], lda, bd[ob:], ldb, 0, c[bi*n*m:(bi+1)*n*m], max(m, 1))
		}
	})
}

// threadsPay says whether a lone n×k·k×m product is faster on OpenBLAS's
// threads than on one: only where both the inner dim and the result's
// columns are 128 or more, and the product 2^23 multiply-adds. Measured on
// the 2-vCPU Zen 5 (medians of 300 calls, float32): 512×64·64×192 (a
// small transformer's QKV) 101 µs on one thread against 125 on two,
// 512×64·64×256 and 512×256·256×64 135 against 136-145, 128×256·256×10
// 11 against 29; 128×256·256×256 141-152 against 96-115, 256³ 289-310
// against 232-235, 512³ 2.22 ms against 1.28-1.31.
func threadsPay(n, k, m int) bool {
	return k >= 128 && m >= 128 && n*k*m >= 1<<23
}

// foldsIntoRows reports whether a's matrices, over the batch, are one
// row-major matrix of nb·n rows (each matrix's rows follow the last one's
// at the same stride) and b is the same matrix for every batch index, so
// that the batched product is one product.
func foldsIntoRows(a, b matrices, batch []int, n int, tA blas.Transpose, lda int) bool {
	if tA != blas.NoTrans {
		return false
	}
	for _, s := range b.Batch {
		if s != 0 {
			return false
		}
	}
	want := n * lda
	for d := len(batch) - 1; d >= 0; d-- {
		if a.Batch[d] != want {
			return false
		}
		want *= batch[d]
	}
	return true
}

// intMatMul is the integer product: a plain i-p-j loop (the inner loop runs
// along a row of the output) that wraps on overflow as PyTorch's does.
func intMatMul[T ~int32 | ~int64](out, x, y *dispatch.Tensor, batch []int, n, k, m int) {
	c := elems[T](out)[out.Offset:]
	nb := dispatch.Numel(batch)
	if n == 0 || m == 0 || nb == 0 {
		return
	}
	a, b := asMatrices(x, true, batch), asMatrices(y, false, batch)
	ad, bd := elems[T](a.t), elems[T](b.t)
	parallel(nb*n, k*m, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			bi, i := r/n, r%n
			oa, ob := offsets(bi, batch, a, b)
			row := c[r*m : (r+1)*m]
			clear(row)
			for p := range k {
				av := ad[oa+i*a.RowStride+p*a.ColStride]
				pb := ob + p*b.RowStride
				for j := range row {
					row[j] += av * bd[pb+j*b.ColStride]
				}
			}
		}
	})
}

// wideOf is the wide form of sgemm or dgemm.
func wideOf[T float](f gemmFunc[T]) gemmFunc[T] {
	if _, ok := any(f).(gemmFunc[float32]); ok {
		return any(sgemmWide).(gemmFunc[T])
	}
	return any(dgemmWide).(gemmFunc[T])
}
