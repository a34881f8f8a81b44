package cpu

import (
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Matrix products. float32 and float64 go to gonum's BLAS (Sgemm, Dgemm),
// which takes a row-major matrix directly and a column-major one (a
// transposed view) through its transpose flag, so neither is copied; any
// other layout is made contiguous first. Integers take a plain loop, which
// reads any strides. Batches (torch.matmul's broadcast batch dims) are
// spread over goroutines; gonum splits a large product itself.

// gemmName says which BLAS serves matrix products.
func gemmName() string { return blasName }

// The GEMMs in use: OpenBLAS when it opens (unless LATHE_BLAS=gonum), else
// gonum's pure-Go BLAS. Both stay tested: the conformance suite runs the
// matmul cases once more with LATHE_BLAS=gonum.
// sgemm and dgemm are one thread per call (OpenBLAS is set to one thread),
// for kernels that run products side by side themselves (batches,
// convolution's images); sgemmWide and dgemmWide split one product over
// the cores.
var (
	sgemm, dgemm, blasName = pickBLAS()
	sgemmWide, dgemmWide   = wide(sgemm), wide(dgemm)
)

// wide is blockSplit of an OpenBLAS GEMM; gonum splits a product itself.
func wide[T float](g gemmFunc[T]) gemmFunc[T] {
	if strings.HasPrefix(blasName, "gonum") {
		return g
	}
	return blockSplit(g)
}

// Threading. OpenBLAS stays at one thread for good, and lathe splits a lone
// product itself (blockSplit), so that no global state is set per call
// (openblas_set_num_threads is one setting for the whole process, which
// concurrent callers would fight over) and no OpenBLAS worker spins on a
// core that lathe's goroutines need. Measured on the 2-core development
// machine, float32, the two interleaved call by call, best and median of
// each (BenchmarkGEMMThreads runs the same pair): at the quietest moments
// OpenBLAS's two threads are a little faster for mid sizes (n=256: 124 against 138 µs
// best; n=512: 0.93 against 1.19 ms) and slower at n=1024 (18.8 against
// 14.2 ms); with the machine loaded (load average 15) they wait on each
// other (medians: n=512 2.94 against 1.86 ms, 128x784·784x256 0.93
// against 0.47 ms, n=1024 44.7 against 21.0 ms), where the split falls
// back to about one single-threaded call. So the split it is, for every
// product; a batch of products (matmul's batch dims, convolution's images)
// runs single-threaded calls side by side instead.

// splitMinWork is the product size m·n·k below which a GEMM runs as one
// call on the caller's goroutine, and blockSplit gives each block at least
// half of it: 2^20 multiply-adds take OpenBLAS about 14 µs on one core, a
// few times what handing half of them to another goroutine costs (waking
// an idle P, then the wait).
const splitMinWork = 1 << 20

// blockSplit runs a GEMM as blocks of C on goroutines, one block per core
// and each a single-threaded call, the caller's goroutine taking the first
// rather than waiting idle. Each block packs its rows of op(A) and its
// columns of op(B), so the blocks form the grid (gridFor) that packs the
// least: on two cores C's rows are cut, or its columns where C is wider
// than tall (a 16-row C, as a convolution's, cut in two rows of 8 would
// waste OpenBLAS's 16-row kernel); on many cores a grid of both, rather
// than 64 strips that each pack the whole of B.
func blockSplit[T float](gemm gemmFunc[T]) gemmFunc[T] {
	return func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
		work := float64(m) * float64(n) * float64(k) // an int could overflow
		workers := min(runtime.GOMAXPROCS(0), int(min(work/(splitMinWork/2), 1<<20)))
		pr, pc := gridFor(m, n, workers)
		if pr*pc < 2 {
			gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
			return
		}
		// Blocks of a multiple of splitAlign rows and columns, the last
		// of each taking what is left.
		rows, cols := alignUp((m+pr-1)/pr), alignUp((n+pc-1)/pc)
		block := func(r0, c0 int) {
			r1, c1 := min(r0+rows, m), min(c0+cols, n)
			offA := r0 * lda // rows r0..r1 of op(A): a row block of A, or a column block of Aᵀ's storage
			if tA != blas.NoTrans {
				offA = r0
			}
			offB := c0 // columns c0..c1 of op(B): a column block of B, or a row block of Bᵀ's storage
			if tB != blas.NoTrans {
				offB = c0 * ldb
			}
			gemm(tA, tB, r1-r0, c1-c0, k, alpha, a[offA:], lda, b[offB:], ldb, beta, c[r0*ldc+c0:], ldc)
		}
		var wg sync.WaitGroup
		for r0 := 0; r0 < m; r0 += rows {
			for c0 := 0; c0 < n; c0 += cols {
				if r0 == 0 && c0 == 0 {
					continue
				}
				wg.Add(1)
				go func() { defer wg.Done(); block(r0, c0) }()
			}
		}
		defer wg.Wait()
		block(0, 0)
	}
}

// gridFor is the grid of at most workers blocks, pr rows by pc columns,
// that blockSplit cuts an m×n C into: as many blocks as there are workers
// where each keeps splitAlign rows and columns a side, and of those grids
// the one whose blocks pack the least of A and B (m/pr + n/pc rows and
// columns a block, each k long).
func gridFor(m, n, workers int) (pr, pc int) {
	pr, pc = 1, 1
	for r := workers; r >= 1; r-- { // from the most rows: a tie keeps C's rows whole
		c := workers / r
		if r > 1 && m/r < splitAlign || c > 1 && n/c < splitAlign {
			continue
		}
		if r*c > pr*pc || r*c == pr*pc && (m+r-1)/r+(n+c-1)/c < (m+pr-1)/pr+(n+pc-1)/pc {
			pr, pc = r, c
		}
	}
	return pr, pc
}

// alignUp rounds x up to a multiple of splitAlign.
func alignUp(x int) int { return (x + splitAlign - 1) / splitAlign * splitAlign }

// splitAlign is the granularity of blockSplit's cuts: OpenBLAS's float32
// kernels work in 16-row (and 4- to 16-column) strips on x86.
const splitAlign = 16

func pickBLAS() (gemmFunc[float32], gemmFunc[float64], string) {
	gonumS, gonumD := gonum.Implementation{}.Sgemm, gonum.Implementation{}.Dgemm
	if os.Getenv("LATHE_BLAS") == "gonum" {
		return gonumS, gonumD, "gonum (LATHE_BLAS=gonum)"
	}
	s, d, desc, why := openBLAS()
	if why != "" {
		return gonumS, gonumD, "gonum (OpenBLAS unavailable: " + why + ")"
	}
	return s, d, desc
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
	register(ops.MatMul, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
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
	})
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
	if nb == 1 {
		f = wideOf(f)
	}
	parallel(nb, n*m*k, func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			oa, ob := offsets(bi, batch, a, b)
			f(tA, tB, n, m, k, 1, ad[oa:], lda, bd[ob:], ldb, 0, c[bi*n*m:(bi+1)*n*m], max(m, 1))
		}
	})
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
