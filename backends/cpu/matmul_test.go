package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// TestThreadGate runs wide and narrow calls from many goroutines at once
// through a gate whose setter is a counter, and checks that each call ran
// under the setting it asked for, that the setting changed only with no
// call in flight, and that both kinds got through.
func TestThreadGate(t *testing.T) {
	var g *threadGate
	var setting atomic.Int64
	var switches atomic.Int64
	g = newThreadGate(func(n int) bool {
		if g.inFlight != 0 { // set runs under the gate's lock
			t.Errorf("the setting changed to %d with %d calls in flight", n, g.inFlight)
		}
		setting.Store(int64(n))
		switches.Add(1)
		return true
	}, 4)
	setting.Store(1)
	var done [2]atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 300 {
				wide := rng.IntN(2) == 1
				want := int64(1)
				if wide {
					want = 4
				}
				g.enter(wide)
				for range 3 {
					if got := setting.Load(); got != want {
						t.Errorf("a call wanting %d threads ran under %d", want, got)
					}
					runtime.Gosched()
				}
				g.leave()
				done[index(wide)].Add(1)
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(time.Minute):
		t.Fatalf("the gate stalled: %d narrow and %d wide calls done", done[0].Load(), done[1].Load())
	}
	if done[0].Load() == 0 || done[1].Load() == 0 || switches.Load() == 0 {
		t.Errorf("narrow %d, wide %d calls, %d switches", done[0].Load(), done[1].Load(), switches.Load())
	}
}

// TestGEMMSideBySide runs the backend's own lone and side-by-side float64
// GEMMs (OpenBLAS's threads and one thread, where OpenBLAS opens) from
// several goroutines at once, each against gonum's product.
func TestGEMMSideBySide(t *testing.T) {
	const m, n, k = 150, 170, 190
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := make([]float64, m*k), make([]float64, k*n)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	want := make([]float64, m*n)
	gonum.Implementation{}.Dgemm(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, b, k, 0, want, n)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := dgemm
			if w%2 == 1 {
				f = dgemmWide
			}
			got := make([]float64, m*n)
			for range 20 {
				f(blas.NoTrans, blas.Trans, m, n, k, 1, a, k, b, k, 0, got, n)
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-10 {
						t.Errorf("goroutine %d: c[%d] = %v, want %v", w, i, got[i], want[i])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkGEMMThreads measures one float32 product on one OpenBLAS thread
// (sgemm, as products side by side run) and on OpenBLAS's threads
// (sgemmWide, as a lone product runs): blas_threads.go's figures.
func BenchmarkGEMMThreads(b *testing.B) {
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
			name string
			f    gemmFunc[float32]
		}{{"one-thread", sgemm}, {"openblas-threads", sgemmWide}} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", v.name, m, k, n), func(b *testing.B) {
				for b.Loop() {
					v.f(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, bm, n, 0, c, n)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestDescribeNamesIgnoredSettings: a cpu setting set to none of its
// values is named in the description, which lathe-bench and DeviceStatus
// print, since the cpu ignores it.
func TestDescribeNamesIgnoredSettings(t *testing.T) {
	t.Setenv("LATHE_BLAS", "gonun")
	t.Setenv("LATHE_BF16_GEMM", "dot")
	d := backend{}.Describe(0)
	if !strings.Contains(d, `ignored: LATHE_BLAS="gonun" (takes gonum)`) || strings.Contains(d, "LATHE_BF16_GEMM") {
		t.Errorf("Describe: %q, want LATHE_BLAS named as ignored and LATHE_BF16_GEMM not", d)
	}
	t.Setenv("LATHE_BLAS", "")
	if d := (backend{}).Describe(0); strings.Contains(d, "ignored") {
		t.Errorf("Describe: %q names a setting that is unset", d)
	}
}
