package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// naiveMatMul is the reference: out[b,i,j] = Σ_p a[b,i,p]·b[b,p,j] over
// dense row-major float64 operands of batch nb.
func naiveMatMul(a, b []float64, nb, n, k, m int) []float64 {
	out := make([]float64, nb*n*m)
	for bi := range nb {
		for i := range n {
			for j := range m {
				var acc float64
				for p := range k {
					acc += a[bi*n*k+i*k+p] * b[bi*k*m+p*m+j]
				}
				out[bi*n*m+i*m+j] = acc
			}
		}
	}
	return out
}

// TestMatMulLayouts multiplies views that BLAS reads in place (row-major,
// column-major = transposed, with offsets and padded leading dims), ones
// it cannot (every other column, broadcast rows) and a batch that folds
// into one product (a stacked lhs times a shared rhs), against the naive
// loop.
func TestMatMulLayouts(t *testing.T) {
	const n, k, m = 5, 7, 6
	data := randomF64(4 * 64)
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
		vals := slices.Clone(data)
		if dt.IsInt() {
			for i := range vals {
				vals[i] = math.Round(vals[i] * 8)
			}
		}
		base := dispatch.NewTensor(cpu0, dt, []int{len(vals)}, newBuffer(dt, len(vals)))
		castInto(base, tensorOf(dispatch.Float64, vals, len(vals)))
		// Each layout is a 2x{rows}x{cols} batch view over base.
		lhs := map[string]*dispatch.Tensor{
			"row-major":       base.View([]int{2, n, k}, []int{n * k, k, 1}, 0),
			"col-major":       base.View([]int{2, n, k}, []int{n * k, 1, n}, 3),
			"padded-ld":       base.View([]int{2, n, k}, []int{n * 9, 9, 1}, 2),
			"every-other-col": base.View([]int{2, n, k}, []int{2 * n * k, 2 * k, 2}, 1),
			"broadcast-batch": base.View([]int{2, n, k}, []int{0, k, 1}, 4),
		}
		rhs := map[string]*dispatch.Tensor{
			"row-major":       base.View([]int{2, k, m}, []int{k * m, m, 1}, 100),
			"col-major":       base.View([]int{2, k, m}, []int{k * m, 1, k}, 101),
			"padded-ld":       base.View([]int{2, k, m}, []int{k * 8, 1, 8}, 90),
			"broadcast-row":   base.View([]int{2, k, m}, []int{m, 0, 1}, 7),
			"every-other-row": base.View([]int{2, k, m}, []int{2 * k * m, 2 * m, 1}, 0),
			// One matrix for the whole batch (a Linear layer's weight),
			// which a stacked lhs folds into one product (foldsIntoRows).
			"shared-row-major": base.View([]int{2, k, m}, []int{0, m, 1}, 110),
			"shared-col-major": base.View([]int{2, k, m}, []int{0, 1, k}, 111),
		}
		for ln, a := range lhs {
			for rn, b := range rhs {
				t.Run(fmt.Sprintf("matmul/%s/%s.%s", dt, ln, rn), func(t *testing.T) {
					got := call(t, ops.MatMul, dispatch.None{}, a, b)
					if !slices.Equal(got.Shape, []int{2, n, m}) {
						t.Fatalf("shape %v", got.Shape)
					}
					want := naiveMatMul(denseF64(a), denseF64(b), 2, n, k, m)
					g := denseF64(got)
					for i := range want {
						if math.Abs(g[i]-want[i]) > 1e-5*math.Max(1, math.Abs(want[i])) {
							t.Fatalf("element %d = %v, want %v", i, g[i], want[i])
						}
					}
				})
			}
		}
	}
}

// TestMatMulTransposedByHand: [[1,2],[3,4]] stored, read transposed as
// [[1,3],[2,4]], times the column [1,1] and the vector [1,10].
func TestMatMulTransposedByHand(t *testing.T) {
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
		base := dispatch.NewTensor(cpu0, dt, []int{4}, newBuffer(dt, 4))
		castInto(base, tensorOf(dispatch.Float64, []float64{1, 2, 3, 4}, 4))
		tr := base.View([]int{2, 2}, []int{1, 2}, 0)
		col := dispatch.NewTensor(cpu0, dt, []int{2, 1}, newBuffer(dt, 2))
		castInto(col, tensorOf(dispatch.Float64, []float64{1, 1}, 2, 1))
		vec := dispatch.NewTensor(cpu0, dt, []int{2}, newBuffer(dt, 2))
		castInto(vec, tensorOf(dispatch.Float64, []float64{1, 10}, 2))
		t.Run("matmul/"+dt.String()+"/transposed.col", func(t *testing.T) {
			if g := denseF64(call(t, ops.MatMul, dispatch.None{}, tr, col)); !slices.Equal(g, []float64{4, 6}) {
				t.Fatalf("got %v, want [4 6]", g)
			}
		})
		t.Run("matmul/"+dt.String()+"/vec.transposed", func(t *testing.T) {
			// [1, 10]·[[1,3],[2,4]] = [21, 43]
			if g := denseF64(call(t, ops.MatMul, dispatch.None{}, vec, tr)); !slices.Equal(g, []float64{21, 43}) {
				t.Fatalf("got %v, want [21 43]", g)
			}
		})
	}
}

func TestBLASLayout(t *testing.T) {
	cases := []struct {
		rows, cols, rs, cs int
		trans              blas.Transpose
		ld                 int
		ok                 bool
	}{
		{3, 4, 4, 1, blas.NoTrans, 4, true},
		{3, 4, 6, 1, blas.NoTrans, 6, true},
		{3, 4, 1, 3, blas.Trans, 3, true},
		{3, 4, 1, 5, blas.Trans, 5, true},
		{1, 4, 0, 1, blas.NoTrans, 4, true},
		{1, 4, 0, 3, blas.Trans, 3, true},
		{3, 1, 2, 0, blas.NoTrans, 2, true},
		{3, 4, 8, 2, 0, 0, false},
		{3, 4, 0, 1, 0, 0, false},
		{1, 4, 0, 0, 0, 0, false},
		{3, 4, -4, 1, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d/strides[%d,%d]", c.rows, c.cols, c.rs, c.cs), func(t *testing.T) {
			tr, ld, ok := blasLayout(c.rows, c.cols, c.rs, c.cs)
			if ok != c.ok || (ok && (tr != c.trans || ld != c.ld)) {
				t.Fatalf("got %v %d %v, want %v %d %v", tr, ld, ok, c.trans, c.ld, c.ok)
			}
		})
	}
}

// BenchmarkMatMul measures square products through dispatch, as a user's
// call runs them, in GFLOP/s (2n³ flops each).
func BenchmarkMatMul(b *testing.B) {
	op := ops.MatMul
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
		for _, n := range []int{64, 256, 512, 1024} {
			b.Run(fmt.Sprintf("%s/%d", dt, n), func(b *testing.B) {
				x := dispatch.NewTensor(cpu0, dt, []int{n, n}, newBuffer(dt, n*n))
				castInto(x, tensorOf(dispatch.Float64, randomF64(n*n), n, n))
				b.ResetTimer()
				for b.Loop() {
					out, err := dispatch.Call(op, dispatch.None{}, x, x)
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
				}
				b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestBlockSplit checks that a product split into blocks is the product:
// cut by rows (C taller than wide) and by columns (wider than tall), every
// layout of A and B, a C with a leading dimension wider than its rows, and
// beta = 1, over sizes large enough to be split; and a product too small
// to split; on 2, 3 and 8 cores, so that grids of blocks are cut too.
func TestBlockSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{2, 3, 8} {
		runtime.GOMAXPROCS(procs) // the grids of more cores than this machine has
		testBlockSplit(t, procs)
	}
}

func testBlockSplit(t *testing.T, procs int) {
	rng := rand.New(rand.NewPCG(5, 6))
	plain := gonum.Implementation{}.Dgemm
	for _, sz := range []struct{ m, n, k int }{{200, 90, 100}, {50, 230, 100}, {33, 17, 9}, {130, 140, 120}} {
		a, b := make([]float64, sz.m*sz.k), make([]float64, sz.k*sz.n)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for i := range b {
			b[i] = rng.NormFloat64()
		}
		ldc := sz.n + 3
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				lda, ldb := sz.k, sz.n
				if tA == blas.Trans {
					lda = sz.m // a holds Aᵀ, k×m
				}
				if tB == blas.Trans {
					ldb = sz.k // b holds Bᵀ, n×k
				}
				t.Run(fmt.Sprintf("procs%d/%dx%dx%d/%c%c", procs, sz.m, sz.n, sz.k, tA, tB), func(t *testing.T) {
					want, got := make([]float64, sz.m*ldc), make([]float64, sz.m*ldc)
					for i := range want {
						want[i], got[i] = float64(i%7), float64(i%7)
					}
					plain(tA, tB, sz.m, sz.n, sz.k, 0.5, a, lda, b, ldb, 1, want, ldc)
					blockSplit(plain)(tA, tB, sz.m, sz.n, sz.k, 0.5, a, lda, b, ldb, 1, got, ldc)
					for i := range want {
						if math.Abs(got[i]-want[i]) > 1e-12 {
							t.Fatalf("c[%d] = %v, want %v", i, got[i], want[i])
						}
					}
				})
			}
		}
	}
}

func TestGridFor(t *testing.T) {
	cases := []struct{ m, n, workers, pr, pc int }{
		{256, 256, 2, 2, 1},    // a tie keeps C's rows whole
		{128, 256, 2, 1, 2},    // wider than tall: columns
		{16, 1024, 2, 1, 2},    // 8-row blocks would be too thin
		{2048, 2048, 64, 8, 8}, // not 64 strips that each pack all of B
		{4096, 64, 8, 8, 1},
		{20, 20, 8, 1, 1}, // too small a side to cut
		{256, 256, 3, 3, 1},
	}
	for _, c := range cases {
		if pr, pc := gridFor(c.m, c.n, c.workers); pr != c.pr || pc != c.pc {
			t.Errorf("gridFor(%d, %d, %d) = %d×%d, want %d×%d", c.m, c.n, c.workers, pr, pc, c.pr, c.pc)
		}
	}
}

// BenchmarkGEMMThreads measures one float32 product split over the cores
// by blockSplit (single-threaded OpenBLAS calls, as lathe runs it) against
// OpenBLAS's own threads, the choice that matmul.go explains; run both in
// the same minute, since the machine's load moves them apart.
func BenchmarkGEMMThreads(b *testing.B) {
	if strings.HasPrefix(blasName, "gonum") {
		b.Skip("no OpenBLAS: " + blasName)
	}
	for _, d := range [][3]int{{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {128, 784, 256}, {128, 256, 10}} {
		m, k, n := d[0], d[1], d[2]
		a, bm, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
		for i := range a {
			a[i] = float32(i%17) / 17
		}
		for i := range bm {
			bm[i] = float32(i%13) / 13
		}
		for _, v := range []struct {
			name    string
			threads int
			f       gemmFunc[float32]
		}{{"split", 1, sgemmWide}, {"openblas-threads", runtime.GOMAXPROCS(0), sgemm}} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", v.name, m, k, n), func(b *testing.B) {
				if !setBLASThreads(v.threads) {
					b.Skip("OpenBLAS has no openblas_set_num_threads")
				}
				defer setBLASThreads(1)
				for b.Loop() {
					v.f(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, bm, n, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
