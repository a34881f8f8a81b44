package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// bf16Tensor is a bfloat16 tensor of shape holding vals rounded, and the
// values it holds.
func bf16Tensor(vals []float64, shape ...int) (*dispatch.Tensor, []float64) {
	t := dispatch.NewTensor(cpu0, dispatch.BFloat16, shape, newBuffer(dispatch.BFloat16, len(vals)))
	castInto(t, tensorOf(dispatch.Float64, vals, shape...))
	return t, denseF64(t)
}

// eachTileKernel runs test once per tileKernel this machine has (AMX and
// AVX512-BF16's dot products on a Sapphire Rapids, the dot products alone
// on a Zen 4 or 5), each as the process's, and skips by name where it has
// neither.
func eachTileKernel(t *testing.T, test func(t *testing.T)) {
	t.Helper()
	ks := tileKernels()
	if len(ks) == 0 {
		t.Skip("tiles: this machine has neither AMX-BF16 nor AVX512-BF16; bfloat16 products take the float32 GEMM")
	}
	defer func(was tileKernel) { tiles = was }(tiles)
	for _, k := range ks {
		tiles = k
		t.Run(k.String(), test)
	}
}

// checkBF16Product holds got, a bfloat16 product of the row-major [nb, n,
// m] shape, to the float64 product of the bfloat16 operands a [nb, n, k]
// and b [nb, k, m] (dense, row-major): float32 sums of k exact products,
// then one rounding to bfloat16, are within 2^-8 of the value and
// k·2^-23 of the sum of the products' magnitudes.
func checkBF16Product(t *testing.T, got *dispatch.Tensor, a, b []float64, nb, n, k, m int) {
	t.Helper()
	g := denseF64(got)
	for bi := range nb {
		for i := range n {
			for j := range m {
				var want, mag float64
				for p := range k {
					v := a[bi*n*k+i*k+p] * b[bi*k*m+p*m+j]
					want += v
					mag += math.Abs(v)
				}
				at := bi*n*m + i*m + j
				if d := math.Abs(g[at] - want); d > math.Abs(want)*0x1p-8+mag*float64(k)*0x1p-23 {
					t.Fatalf("[%d,%d,%d] = %v, want %v (difference %.3g)", bi, i, j, g[at], want, d)
				}
			}
		}
	}
}

// TestTilesMatMulSizes runs products of every size around the tiles' edges
// (16 rows, 32 of the inner dim, blocks of 32 × 32) against the float64
// product.
func TestTilesMatMulSizes(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 5))
		sizes := []int{1, 15, 16, 17, 31, 32, 33, 64, 100}
		for _, n := range sizes {
			for _, k := range sizes {
				for _, m := range sizes {
					av, bv := make([]float64, n*k), make([]float64, k*m)
					for i := range av {
						av[i] = r.NormFloat64()
					}
					for i := range bv {
						bv[i] = r.NormFloat64()
					}
					a, ar := bf16Tensor(av, n, k)
					b, br := bf16Tensor(bv, k, m)
					got := call(t, ops.MatMul, dispatch.None{}, a, b)
					if got.DType != dispatch.BFloat16 {
						t.Fatalf("%dx%dx%d: dtype %v", n, k, m, got.DType)
					}
					t.Run(fmt.Sprintf("%dx%dx%d", n, k, m), func(t *testing.T) { checkBF16Product(t, got, ar, br, 1, n, k, m) })
				}
			}
		}
	})
}

// TestTilesMatMulLayouts multiplies views that the tiles are packed from
// in place: transposed, strided, offset and flipped operands, a batch with
// its own right-hand matrices and one sharing a broadcast weight.
func TestTilesMatMulLayouts(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		const nb, n, k, m = 3, 37, 45, 35
		vals := randomF64(16384)
		base, _ := bf16Tensor(vals, len(vals))
		lhs := map[string]*dispatch.Tensor{
			"row-major":   base.View([]int{nb, n, k}, []int{n * k, k, 1}, 0),
			"col-major":   base.View([]int{nb, n, k}, []int{n * k, 1, n}, 3),
			"every-other": base.View([]int{nb, n, k}, []int{2 * n * k, 2 * k, 2}, 1),
			"flipped":     base.View([]int{nb, n, k}, []int{-n * k, -k, -1}, nb*n*k-1),
			"broadcast":   base.View([]int{nb, n, k}, []int{0, k, 1}, 5),
		}
		rhs := map[string]*dispatch.Tensor{
			"row-major":        base.View([]int{nb, k, m}, []int{k * m, m, 1}, 10000),
			"col-major":        base.View([]int{nb, k, m}, []int{k * m, 1, k}, 10001),
			"shared-row-major": base.View([]int{nb, k, m}, []int{0, m, 1}, 10010),
			"shared-col-major": base.View([]int{nb, k, m}, []int{0, 1, k}, 10011),
		}
		for ln, a := range lhs {
			for rn, b := range rhs {
				t.Run(ln+"."+rn, func(t *testing.T) {
					got := call(t, ops.MatMul, dispatch.None{}, a, b)
					checkBF16Product(t, got, denseF64(a), denseF64(b), nb, n, k, m)
				})
			}
		}
	})
}

// TestTilesMatMulSpecials: a NaN or an infinity reaches only its row or
// column, ∞·0 is NaN, a sum past bfloat16's largest value is ∞ (float32
// and bfloat16 share their range), and a product below float32's normal
// range, or with a subnormal operand, is flushed to zero, as oneDNN's kernels on the same tiles give.
func TestTilesMatMulSpecials(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		const n = 40
		ones := make([]float64, n*n)
		for i := range ones {
			ones[i] = 1
		}
		av := append([]float64(nil), ones...)
		av[3*n+7] = math.NaN()
		av[5*n+2] = math.Inf(1)
		av[9*n] = 3e38
		av[9*n+1] = 3e38
		bv := append([]float64(nil), ones...)
		bv[8*n+11] = 0 // row 8 of b meets column 8 of a: nothing there
		bv[2*n+20] = 0 // a's ∞ in column 2 meets this 0: NaN in row 5, column 20
		a, _ := bf16Tensor(av, n, n)
		b, _ := bf16Tensor(bv, n, n)
		g := denseF64(call(t, ops.MatMul, dispatch.None{}, a, b))
		for i := range n {
			for j := range n {
				v := g[i*n+j]
				switch {
				case i == 3 || (i == 5 && j == 20):
					if !math.IsNaN(v) {
						t.Fatalf("[%d,%d] = %v, want NaN", i, j, v)
					}
				case i == 5 || i == 9:
					if !math.IsInf(v, 1) {
						t.Fatalf("[%d,%d] = %v, want +Inf", i, j, v)
					}
				case v != n && !(j == 11 && v == n-1) && !(j == 20 && v == n-1):
					t.Fatalf("[%d,%d] = %v", i, j, v)
				}
			}
		}
		for _, c := range []struct {
			name string
			a, b float64
		}{
			{"subnormal product", 0x1p-100, 0x1p-30},
			{"subnormal operand", 0x1p-130, 0x1p10},
		} {
			a, _ := bf16Tensor([]float64{c.a, c.a}, 1, 2)
			b, _ := bf16Tensor([]float64{c.b, c.b}, 2, 1)
			if v := denseF64(call(t, ops.MatMul, dispatch.None{}, a, b))[0]; v != 0 {
				t.Fatalf("%s: 2·%g·%g = %v, want 0 (flushed)", c.name, c.a, c.b, v)
			}
		}
	})
}

// BenchmarkMatMulBFloat16 times bfloat16 products with each tileKernel
// the machine has and, for comparison, through the float32 GEMM (widen,
// sgemm, round).
func BenchmarkMatMulBFloat16(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		x, _ := bf16Tensor(randomF64(n*n), n, n)
		for _, k := range append(tileKernels(), noTiles) {
			b.Run(fmt.Sprintf("%s/%d", k, n), func(b *testing.B) {
				defer func(was tileKernel) { tiles = was }(tiles)
				tiles = k
				for range b.N {
					out, err := dispatch.Call(ops.MatMul, dispatch.None{}, x, x)
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

// TestTilesMatMulPackLimit: a right-hand side that would take more packed
// tiles than amxPackLimit (one matrix broadcast over part of the batch)
// goes to the float32 GEMM, with the same product.
func TestTilesMatMulPackLimit(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		defer func(was int) { amxPackLimit = was }(amxPackLimit)
		const n, k, m = 20, 40, 24
		x, xv := bf16Tensor(randomF64(6*n*k), 6, n, k)
		base, _ := bf16Tensor(randomF64(2*k*m), 2*k*m)
		y := base.View([]int{6, k, m}, []int{0, m, 1}, 0) // one matrix, shared
		yv := denseF64(y)
		for _, limit := range []int{1 << 27, 1} {
			amxPackLimit = limit
			t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
				checkBF16Product(t, call(t, ops.MatMul, dispatch.None{}, x, y), xv, yv, 6, n, k, m)
			})
		}
	})
}

// TestTilesMatMulConcurrent: products from many goroutines at once (each
// call configures and releases the tiles of the thread it runs on) are
// each right.
func TestTilesMatMulConcurrent(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		const n, k, m, workers = 48, 70, 40, 16
		x, xv := bf16Tensor(randomF64(n*k), n, k)
		y, yv := bf16Tensor(randomF64(k*m), k, m)
		want := denseF64(call(t, ops.MatMul, dispatch.None{}, x, y))
		checkBF16Product(t, call(t, ops.MatMul, dispatch.None{}, x, y), xv, yv, 1, n, k, m)
		errs := make(chan error, workers)
		for range workers {
			go func() {
				for range 50 {
					out, err := dispatch.Call(ops.MatMul, dispatch.None{}, x, y)
					if err != nil {
						errs <- err
						return
					}
					got := denseF64(out)
					out.Release()
					for i := range want {
						if got[i] != want[i] {
							errs <- fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
							return
						}
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestTilesConv runs the three convolution kernels on bfloat16 through the
// tiles (forward, input and weight gradients; groups, strides, padding,
// dilation, a pointwise window, a 1-d and a 3-d one) against the float64
// kernels on the same values: within 2^-8 of the value and 2^-20 of the
// sum of the terms' magnitudes (the float64 kernel on |x| and |w|).
func TestTilesConv(t *testing.T) {
	eachTileKernel(t, func(t *testing.T) {
		win := func(n, s, p, d int) layout.Window {
			w := layout.Window{}
			for range n {
				w.Stride, w.Padding, w.Dilation = append(w.Stride, s), append(w.Padding, p), append(w.Dilation, d)
			}
			return w
		}
		cases := []struct {
			name   string
			x, w   []int
			win    layout.Window
			groups int
		}{
			{"3x3 pad 1", []int{3, 16, 12, 12}, []int{16, 16, 3, 3}, win(2, 1, 1, 1), 1},
			{"stride 2 dilation 2", []int{2, 5, 13, 11}, []int{7, 5, 3, 3}, win(2, 2, 2, 2), 1},
			{"groups", []int{2, 8, 9, 9}, []int{12, 2, 3, 3}, win(2, 1, 0, 1), 4},
			{"pointwise", []int{3, 20, 7, 7}, []int{33, 20, 1, 1}, win(2, 1, 0, 1), 1},
			{"1-d", []int{4, 6, 40}, []int{5, 6, 5}, win(1, 1, 2, 1), 1},
			{"3-d", []int{2, 3, 5, 6, 7}, []int{4, 3, 2, 3, 2}, win(3, 1, 1, 1), 1},
		}
		r := rand.New(rand.NewPCG(11, 13))
		normal := func(shape []int) []float64 {
			v := make([]float64, dispatch.Numel(shape))
			for i := range v {
				v[i] = r.NormFloat64()
			}
			return v
		}
		f64 := func(v []float64, shape []int) *dispatch.Tensor { return tensorOf(dispatch.Float64, v, shape...) }
		abs := func(v []float64) []float64 {
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = math.Abs(x)
			}
			return out
		}
		check := func(t *testing.T, what string, got *dispatch.Tensor, ref, mag []float64) {
			t.Helper()
			if got.DType != dispatch.BFloat16 {
				t.Fatalf("%s: dtype %v", what, got.DType)
			}
			g := denseF64(got)
			for i := range ref {
				if d := math.Abs(g[i] - ref[i]); d > math.Abs(ref[i])*0x1p-8+mag[i]*0x1p-20 {
					t.Fatalf("%s: element %d = %v, want %v", what, i, g[i], ref[i])
				}
			}
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				a := ops.ConvParams{Window: c.win, Groups: c.groups}
				x, xv := bf16Tensor(normal(c.x), c.x...)
				w, wv := bf16Tensor(normal(c.w), c.w...)
				y := call(t, ops.Conv, a, x, w)
				check(t, "conv", y, denseF64(call(t, ops.Conv, a, f64(xv, c.x), f64(wv, c.w))),
					denseF64(call(t, ops.Conv, a, f64(abs(xv), c.x), f64(abs(wv), c.w))))

				g, gv := bf16Tensor(normal(y.Shape), y.Shape...)
				ai := a
				ai.InputSize = c.x[2:]
				check(t, "conv_input_backward", call(t, ops.ConvInputBackward, ai, g, w),
					denseF64(call(t, ops.ConvInputBackward, ai, f64(gv, y.Shape), f64(wv, c.w))),
					denseF64(call(t, ops.ConvInputBackward, ai, f64(abs(gv), y.Shape), f64(abs(wv), c.w))))

				aw := a
				aw.Window = a.WindowFor(c.w)
				check(t, "conv_weight_backward", call(t, ops.ConvWeightBackward, aw, x, g),
					denseF64(call(t, ops.ConvWeightBackward, aw, f64(xv, c.x), f64(gv, y.Shape))),
					denseF64(call(t, ops.ConvWeightBackward, aw, f64(abs(xv), c.x), f64(abs(gv), y.Shape))))
			})
		}
	})
}
