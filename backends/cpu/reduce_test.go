package cpu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Internal tests: non-contiguous inputs, built by hand as views, since
// layout ops live elsewhere. Each reduction of a view must equal the same
// reduction of the view's contiguous copy (whose values the root package's
// tests check against PyTorch), and a few are checked by hand.

var cpu0 = dispatch.Device{Kind: kind}

// tensorOf makes a contiguous tensor holding data.
func tensorOf[T any](dt dispatch.DType, data []T, shape ...int) *dispatch.Tensor {
	return dispatch.NewTensor(cpu0, dt, shape, &buffer[T]{data: data})
}

// randomF64 is n values in [-1, 1), with a few exact ties.
func randomF64(n int) []float64 {
	r := rand.New(rand.NewPCG(7, 9))
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round((r.Float64()*2-1)*64) / 64
	}
	return out
}

// denseF64 reads any tensor in row-major order as float64s, into a slice
// of its own: one of a pooled buffer would be handed out again once the
// garbage collector ran its tensor's cleanup, while the caller still read
// it.
func denseF64(t *dispatch.Tensor) []float64 {
	c := dispatch.NewTensor(cpu0, dispatch.Float64, slices.Clone(t.Shape), newBuffer(dispatch.Float64, t.Numel()))
	defer c.Release()
	castInto(c, t)
	return slices.Clone(span[float64](c))
}

func call[A any](t *testing.T, op *dispatch.Op[A], a A, in ...*dispatch.Tensor) *dispatch.Tensor {
	t.Helper()
	out, err := dispatch.Call(op, a, in...)
	if err != nil {
		t.Fatalf("%s: %v", op.Name, err)
	}
	return out
}

// views are non-contiguous layouts over one 48-element storage.
func views(base *dispatch.Tensor) map[string]*dispatch.Tensor {
	return map[string]*dispatch.Tensor{
		"transposed[8,6]":      base.View([]int{8, 6}, []int{1, 8}, 0),
		"permuted[4,2,6]":      base.View([]int{4, 2, 6}, []int{6, 24, 1}, 0),
		"permuted[3,4,4]":      base.View([]int{3, 4, 4}, []int{1, 12, 3}, 0),
		"strided[3,5]+offset":  base.View([]int{3, 5}, []int{16, 3}, 1),
		"flipped[2,6]":         base.View([]int{2, 6}, []int{-24, -1}, 47),
		"expanded[4,3,2]":      base.View([]int{4, 3, 2}, []int{0, 2, 1}, 5),
		"transposed-3d[2,4,6]": base.View([]int{2, 4, 6}, []int{24, 1, 4}, 0),
	}
}

func TestReduceNonContiguous(t *testing.T) {
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
		data := randomF64(48)
		if dt.IsInt() {
			for i := range data {
				data[i] = math.Round(data[i] * 8)
			}
		}
		src := tensorOf(dispatch.Float64, data, 48)
		base := dispatch.NewTensor(cpu0, dt, []int{48}, newBuffer(dt, 48))
		castInto(base, src)
		for vname, v := range views(base) {
			dense := dispatch.NewTensor(cpu0, dt, slices.Clone(v.Shape), newBuffer(dt, v.Numel()))
			castInto(dense, v)
			reductions := []*dispatch.Op[ops.Reduce]{ops.Mean}
			for _, r := range ops.ReduceOps {
				reductions = append(reductions, r.Op)
			}
			for _, op := range reductions {
				if !dt.IsFloat() && (op == ops.Mean || op == ops.Var || op == ops.Std || op == ops.LogSumExp) {
					continue
				}
				dimSets := [][]int{nil, {0}, {1}, {-1}, {0, 1}}
				if v.Rank() == 3 {
					dimSets = append(dimSets, []int{0, 2}, []int{2, 0, 1})
				}
				for _, dims := range dimSets {
					if (op == ops.ArgMax || op == ops.ArgMin) && len(dims) > 1 {
						continue
					}
					for _, keep := range []bool{false, true} {
						name := fmt.Sprintf("%s/%s/%s/dims%v", op.Name, dt, vname, dims)
						if keep {
							name += "/keepdim"
						}
						t.Run(name, func(t *testing.T) {
							attrs := ops.Reduce{Dims: dims, KeepDim: keep, Correction: 1}
							got, want := call(t, op, attrs, v), call(t, op, attrs, dense)
							if !slices.Equal(got.Shape, want.Shape) {
								t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
							}
							g, w := denseF64(got), denseF64(want)
							for i := range w {
								if math.Abs(g[i]-w[i]) > 1e-6*math.Max(1, math.Abs(w[i])) {
									t.Fatalf("element %d = %v, want %v", i, g[i], w[i])
								}
							}
						})
					}
				}
			}
			for d := range v.Rank() {
				t.Run(fmt.Sprintf("cumsum/%s/%s/dim%d", dt, vname, d), func(t *testing.T) {
					g := denseF64(call(t, ops.CumSum, ops.Scan{Dim: d}, v))
					w := denseF64(call(t, ops.CumSum, ops.Scan{Dim: d}, dense))
					for i := range w {
						if math.Abs(g[i]-w[i]) > 1e-6*math.Max(1, math.Abs(w[i])) {
							t.Fatalf("element %d = %v, want %v", i, g[i], w[i])
						}
					}
				})
			}
		}
	}
}

// TestReduceViewsByHand checks a transposed and a flipped view against
// values worked out by hand.
func TestReduceViewsByHand(t *testing.T) {
	// base is [[1, 2, 3], [4, 5, 6]]; its transpose is [[1, 4], [2, 5], [3, 6]].
	base := tensorOf(dispatch.Float32, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tr := base.View([]int{3, 2}, []int{1, 3}, 0)
	flip := base.View([]int{6}, []int{-1}, 5) // [6, 5, 4, 3, 2, 1]
	cases := []struct {
		name  string
		got   *dispatch.Tensor
		shape []int
		want  []float64
	}{
		{"sum/transposed/dims[1]", call(t, ops.Sum, ops.Reduce{Dims: []int{1}}, tr), []int{3}, []float64{5, 7, 9}},
		{"sum/transposed/dims[0]/keepdim", call(t, ops.Sum, ops.Reduce{Dims: []int{0}, KeepDim: true}, tr), []int{1, 2}, []float64{6, 15}},
		{"max/transposed/dims[0]", call(t, ops.Max, ops.Reduce{Dims: []int{0}}, tr), []int{2}, []float64{3, 6}},
		{"argmax/transposed/flat", call(t, ops.ArgMax, ops.Reduce{}, tr), []int{}, []float64{5}}, // 6 is last in [1,4,2,5,3,6]
		{"argmin/flipped", call(t, ops.ArgMin, ops.Reduce{}, flip), []int{}, []float64{5}},
		{"prod/transposed/dims[1]", call(t, ops.Prod, ops.Reduce{Dims: []int{1}}, tr), []int{3}, []float64{4, 10, 18}},
		{"cumsum/transposed/dim0", call(t, ops.CumSum, ops.Scan{Dim: 0}, tr), []int{3, 2}, []float64{1, 4, 3, 9, 6, 15}},
		{"cumsum/flipped", call(t, ops.CumSum, ops.Scan{Dim: 0}, flip), []int{6}, []float64{6, 11, 15, 18, 20, 21}},
		{"var/transposed/dims[0]", call(t, ops.Var, ops.Reduce{Dims: []int{0}, Correction: 1}, tr), []int{2}, []float64{1, 1}},
		{"mean/transposed/dims[1]", call(t, ops.Mean, ops.Reduce{Dims: []int{1}}, tr), []int{3}, []float64{2.5, 3.5, 4.5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !slices.Equal(c.got.Shape, c.shape) {
				t.Fatalf("shape %v, want %v", c.got.Shape, c.shape)
			}
			if g := denseF64(c.got); !slices.Equal(g, c.want) {
				t.Fatalf("got %v, want %v", g, c.want)
			}
		})
	}
}

// TestReduceLarge runs reductions big enough to be split over goroutines,
// over the inner dim (contiguous runs) and the outer one (strided runs),
// against naive loops.
func TestReduceLarge(t *testing.T) {
	const rows, cols = 300, 257
	data := randomF64(rows * cols)
	x := tensorOf(dispatch.Float64, data, rows, cols)
	rowSum, colSum := make([]float64, rows), make([]float64, cols)
	colArg, colMax := make([]float64, cols), make([]float64, cols)
	for j := range colMax {
		colMax[j] = math.Inf(-1)
	}
	for i := range rows {
		for j := range cols {
			v := data[i*cols+j]
			rowSum[i] += v
			colSum[j] += v
			if v > colMax[j] {
				colMax[j], colArg[j] = v, float64(i)
			}
		}
	}
	// The same data as [20, 15, 257], summed over the middle dim.
	x3 := tensorOf(dispatch.Float64, data, 20, 15, cols)
	midSum := make([]float64, 20*cols)
	for g := range 20 {
		for i := range 15 {
			for j := range cols {
				midSum[g*cols+j] += data[(g*15+i)*cols+j]
			}
		}
	}
	cases := []struct {
		name string
		got  *dispatch.Tensor
		want []float64
	}{
		{"sum/dims[1]", call(t, ops.Sum, ops.Reduce{Dims: []int{1}}, x), rowSum},
		{"sum/3d/dims[1]", call(t, ops.Sum, ops.Reduce{Dims: []int{1}}, x3), midSum},
		{"mean/3d/dims[-2]", call(t, ops.Mean, ops.Reduce{Dims: []int{-2}}, x3), scaled(midSum, 1.0/15)},
		{"sum/dims[0]", call(t, ops.Sum, ops.Reduce{Dims: []int{0}}, x), colSum},
		{"argmax/dims[0]", call(t, ops.ArgMax, ops.Reduce{Dims: []int{0}}, x), colArg},
		{"max/dims[0]", call(t, ops.Max, ops.Reduce{Dims: []int{0}}, x), colMax},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := denseF64(c.got)
			for i := range c.want {
				if math.Abs(g[i]-c.want[i]) > 1e-9 {
					t.Fatalf("element %d = %v, want %v", i, g[i], c.want[i])
				}
			}
		})
	}
}

func scaled(v []float64, f float64) []float64 {
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] * f
	}
	return out
}

// BenchmarkSum compares a sum over contiguous runs (dims[1]) with one over
// strided runs (dims[0]), which takes the blocked column path.
func BenchmarkSum(b *testing.B) {
	const n = 2048
	x := tensorOf(dispatch.Float32, make([]float32, n*n), n, n)
	op := ops.Sum
	for _, dim := range []int{0, 1} {
		b.Run(fmt.Sprintf("f32/%dx%d/dims[%d]", n, n, dim), func(b *testing.B) {
			for b.Loop() {
				out, err := dispatch.Call(op, ops.Reduce{Dims: []int{dim}}, x)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(float64(4*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// TestSplitSum checks that a run long enough to be shared between the cores
// sums to what one pass gives: for floats within twice the cascade's bound
// (TestSumFloat32's; the parts' blocks start elsewhere), for integers
// exactly.
func TestSplitSum(t *testing.T) {
	n := minSplitSum + 3
	f := make([]float32, n)
	ints := make([]int32, n)
	for i := range f {
		f[i] = float32(i%1000) / 1000
		ints[i] = int32(i%7) - 3
	}
	abs := 0.0
	for _, v := range f {
		abs += float64(v)
	}
	if got, want := splitSum[float32, float64](f), accumulate[float32, float64](f, 0, n, 1); math.Abs(got-want) > 2*24*0x1p-24*abs {
		t.Errorf("float32: split sum %v, one pass %v", got, want)
	}
	if got, want := splitSum[int32, int64](ints), accumulate[int32, int64](ints, 0, n, 1); got != want {
		t.Errorf("int32: split sum %v, one pass %v", got, want)
	}
}

// TestExp32 checks softmax's float32 exponential against math.Exp, rounded
// to float32, over the x ≤ 0 that it takes: within one float32 ulp.
func TestExp32(t *testing.T) {
	for x := -110.0; x <= 0; x += 0.0137 {
		got, want := float32(exp32(x)), float32(math.Exp(x))
		if ulp := math.Nextafter32(want, 1) - want; math.Abs(float64(got-want)) > float64(ulp) {
			t.Fatalf("exp32(%v) = %v, want %v", x, got, want)
		}
	}
	if exp32(math.Inf(-1)) != 0 || !math.IsNaN(exp32(math.NaN())) {
		t.Errorf("exp32(-inf), exp32(nan) = %v, %v", exp32(math.Inf(-1)), exp32(math.NaN()))
	}
}

// TestSumPanels checks the sum over dims 0, 2 and 3 of [N, C, H, W] (each
// output's elements in N contiguous runs of H·W, sumPanels' layout), and
// over dims 0 and 2 of a 3-D tensor, against a float64 loop, with runs long
// enough for the vector sum.
func TestSumPanels(t *testing.T) {
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
		for _, c := range []struct {
			shape, dims []int
		}{{[]int{3, 4, 17, 19}, []int{0, 2, 3}}, {[]int{5, 3, 300}, []int{0, 2}}, {[]int{2, 1, 7}, []int{0, 2}}} {
			n := dispatch.Numel(c.shape)
			data := randomF64(n)
			x := dispatch.NewTensor(cpu0, dt, c.shape, newBuffer(dt, n))
			castInto(x, tensorOf(dispatch.Float64, data, c.shape...))
			got := denseF64(call(t, ops.Sum, ops.Reduce{Dims: c.dims}, x))
			channels, inner := c.shape[1], dispatch.Numel(c.shape[2:])
			for ch := range channels {
				want := 0.0
				for b := range c.shape[0] {
					for i := range inner {
						want += data[(b*channels+ch)*inner+i]
					}
				}
				if math.Abs(got[ch]-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Fatalf("%v %v sum over %v: [%d] = %v, want %v", dt, c.shape, c.dims, ch, got[ch], want)
				}
			}
		}
	}
}

// TestReduceRows: float32 sums, maxima and minima over the last dims,
// whose rows lie at one stride, are computed a goroutine's rows in one C
// call (reduceRows) and give each row exactly what sumRun and extremeRun
// give it alone: contiguous rows with and without a tail past the vectors,
// rows of a wider storage at an offset (a narrow), rows over two dims,
// kept dims that collapse into one, an expanded view whose rows are one
// run of memory (stride 0), and rows whose extreme is a NaN (the first,
// bit for bit), +0 after -0, or -0 after +0, which the Go loop settles.
func TestReduceRows(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: rows are reduced one at a time")
	}
	data := randomF64(40000)
	// Row 1 of "[30,1024] dim 1" holds two NaNs of different payloads
	// (set below: the first must win); in row 2 every value is a zero, -0
	// first; in row 3 values are at most 0, +0 first.
	for i := range 1024 {
		data[2*1024+i] = math.Copysign(0, float64(i%2)-0.5)
		data[3*1024+i] = -math.Abs(data[3*1024+i])
	}
	data[3*1024+5], data[3*1024+9] = 0, math.Copysign(0, -1)
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
		dims           []int
	}{
		{"[30,1024] dim 1", []int{30, 1024}, []int{1024, 1}, 0, []int{1}},
		{"[7,1029] dim 1", []int{7, 1029}, []int{1029, 1}, 0, []int{1}},
		{"narrow [9,300] of [9,1100] at 5", []int{9, 300}, []int{1100, 1}, 5, []int{1}},
		{"[5,16,40] dims 1,2", []int{5, 16, 40}, []int{640, 40, 1}, 0, []int{1, 2}},
		{"[2,3,4,300] dim 3", []int{2, 3, 4, 300}, []int{3600, 1200, 300, 1}, 0, []int{3}},
		{"expanded [6,500] dim 1", []int{6, 500}, []int{0, 1}, 17, []int{1}},
	} {
		base := tensorOf(dispatch.Float32, make([]float32, len(data)), len(data))
		castInto(base, tensorOf(dispatch.Float64, data, len(data)))
		x := base.View(c.shape, c.strides, c.offset)
		d := span[float32](base)
		d[1024+300], d[1024+700] = math.Float32frombits(0x7fc01234), math.Float32frombits(0xffc00001)
		for _, op := range []struct {
			op  *dispatch.Op[ops.Reduce]
			run runFunc[float32, float32]
		}{{ops.Sum, sumRun[float32, float64]}, {ops.Max, extremeRun[float32](true)}, {ops.Min, extremeRun[float32](false)},
			{ops.Prod, prodRun[float32, float64]}} {
			got := span[float32](call(t, op.op, ops.Reduce{Dims: c.dims}, x))
			r, _ := planRuns(x, c.dims)
			var mu sync.Mutex // rows runs on the crew's goroutines
			i, bad := 0, ""
			r.l.rows(func(offs []int, n int) {
				want := op.run(d, offs[1], n, r.s)
				mu.Lock()
				defer mu.Unlock()
				if g := got[offs[0]]; math.Float32bits(g) != math.Float32bits(want) && bad == "" {
					bad = fmt.Sprintf("[%d] = %v, one run alone gives %v", offs[0], g, want)
				}
				i++
			})
			if bad != "" {
				t.Fatalf("%s %s: %s", op.op.Name, c.name, bad)
			}
			if i != len(got) || i < 2 {
				t.Fatalf("%s %s: %d rows checked of %d", op.op.Name, c.name, i, len(got))
			}
		}
	}
}

// TestProdFloat32: lathe_prod_f32's chains give the product rounded to
// float32 as one exact product does, except within 2^-40 of a rounding
// tie, and the float64 product within n·2^-52 of it; zeros keep the sign
// of the product, and a zero times an infinity or a NaN is a NaN, as in
// one chain.
func TestProdFloat32(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: products take one chain")
	}
	r := rand.New(rand.NewPCG(3, 5))
	ties := 0
	for _, n := range []int{1, 7, 15, 16, 17, 31, 255, 256, 1029, 5000} {
		for range 40 {
			v := make([]float32, n)
			exact := new(big.Float).SetPrec(256).SetInt64(1)
			for i := range v {
				v[i] = float32(1 + (r.Float64()*2-1)/8)
				if r.IntN(4) == 0 {
					v[i] = -v[i]
				}
				exact.Mul(exact, new(big.Float).SetFloat64(float64(v[i])))
			}
			got, ok := prodFloat32(v)
			if !ok {
				t.Fatal("prodFloat32 did not run on a machine with AVX2")
			}
			want, _ := exact.Float64()
			if math.Abs(got-want) > float64(n)*0x1p-52*math.Abs(want) {
				t.Fatalf("n %d: float64 product %v, exact %v: off by more than n·2^-52", n, got, want)
			}
			if float32(got) != float32(want) {
				if !nearTie(want) {
					t.Fatalf("n %d: product %v rounds to %v, the exact one to %v", n, got, float32(got), float32(want))
				}
				ties++
			}
		}
	}
	if ties > 0 {
		t.Logf("%d products an ulp off, next to a tie", ties)
	}
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		name string
		at   map[int]float32
		want float64
	}{
		{"a zero among negatives", map[int]float32{3: 0, 40: -1, 41: -1, 42: -1}, math.Copysign(0, -1)},
		{"-0 among positives", map[int]float32{20: float32(math.Copysign(0, -1))}, math.Copysign(0, -1)},
		{"an infinity", map[int]float32{33: -inf}, math.Inf(-1)},
		{"a zero and an infinity", map[int]float32{2: 0, 50: inf}, math.NaN()},
		{"a NaN", map[int]float32{99: nan}, math.NaN()},
	} {
		v := make([]float32, 100)
		for i := range v {
			v[i] = 1
		}
		for i, x := range c.at {
			v[i] = x
		}
		got, _ := prodFloat32(v)
		if math.Float64bits(got) != math.Float64bits(c.want) && !(math.IsNaN(got) && math.IsNaN(c.want)) {
			t.Errorf("%s: product %v, want %v", c.name, got, c.want)
		}
	}
}

// TestReduceColumns: reductions whose runs are strided but whose
// neighbouring outputs read neighbouring inputs (over dim 0 of a row-major
// matrix) go row by row over blocks of columns (reduceColumns, float32
// extremes in C's lanes) and give each output exactly what its run's loop
// gives it alone (sumRun, prodRun, extremeRun), for float32, float64 and
// int64: columns past the blocks of 64 and of 256, one row, a middle dim,
// a narrow at an offset, and columns whose extreme is the first of two
// NaNs (by payload), +0 after -0 or -0 after +0. (A float32 sum is
// lathe_sum_cols_f32's, whose cascade TestSumColsFloat32 checks.)
func TestReduceColumns(t *testing.T) {
	data := randomF64(1024 * 300)
	for i := range data {
		data[i] = 1 + data[i]/16 // products of a thousand stay finite
	}
	cases := []struct {
		name           string
		shape, strides []int
		offset         int
		dims           []int
	}{
		{"[1024,300] dim 0", []int{1024, 300}, []int{300, 1}, 0, []int{0}},
		{"[3,70] dim 0", []int{3, 70}, []int{70, 1}, 0, []int{0}},
		{"[1,100] dim 0", []int{1, 100}, []int{100, 1}, 0, []int{0}},
		{"[5,16,40] dim 1", []int{5, 16, 40}, []int{640, 40, 1}, 0, []int{1}},
		{"narrow [30,100] of [30,130] at 7", []int{30, 100}, []int{130, 1}, 7, []int{0}},
	}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int64} {
		base := tensorOf(dispatch.Float64, slices.Clone(data), len(data))
		switch dt {
		case dispatch.Int64:
			d := span[float64](base)
			for i := range d {
				d[i] = math.Round((d[i] - 1) * 64) // small integers: products wrap, as torch's
			}
		default:
			// Column 5: -0 then +0, the rest below (the zeros are its
			// maximum); column 6: +0 then -0, the rest above (its minimum);
			// column 7 (set below): two NaNs of different payloads, the
			// first to win.
			d := span[float64](base)
			for i := range 1024 {
				d[i*300+5], d[i*300+6] = -math.Abs(d[i*300+5]), math.Abs(d[i*300+6])
			}
			d[5], d[300+5], d[6], d[300+6] = math.Copysign(0, -1), 0, 0, math.Copysign(0, -1)
		}
		typed := dispatch.NewTensor(cpu0, dt, []int{len(data)}, newBuffer(dt, len(data)))
		castInto(typed, base)
		switch dt {
		case dispatch.Float32:
			d := span[float32](typed)
			d[2*300+7], d[9*300+7] = math.Float32frombits(0x7fc01234), math.Float32frombits(0xffc00001)
		case dispatch.Float64:
			d := span[float64](typed)
			d[2*300+7], d[9*300+7] = math.Float64frombits(0x7ff8000000001234), math.Float64frombits(0xfff8000000000001)
		}
		for _, c := range cases {
			x := typed.View(c.shape, c.strides, c.offset)
			for _, op := range []*dispatch.Op[ops.Reduce]{ops.Sum, ops.Prod, ops.Max, ops.Min} {
				if op == ops.Sum && dt == dispatch.Float32 {
					continue
				}
				got := call(t, op, ops.Reduce{Dims: c.dims}, x)
				r, _ := planRuns(x, c.dims)
				var mu sync.Mutex // rows runs on the crew's goroutines
				checked, bad := 0, ""
				r.l.rows(func(offs []int, n int) {
					var g, want uint64
					switch dt {
					case dispatch.Float32:
						g = uint64(math.Float32bits(span[float32](got)[offs[0]]))
						want = uint64(math.Float32bits(reducer[float32, float64](op.Name, ops.Reduce{})(span[float32](typed), offs[1], n, r.s)))
					case dispatch.Float64:
						g = math.Float64bits(span[float64](got)[offs[0]])
						want = math.Float64bits(reducer[float64, float64](op.Name, ops.Reduce{})(span[float64](typed), offs[1], n, r.s))
					default:
						g = uint64(span[int64](got)[offs[0]])
						want = uint64(reducer[int64, int64](op.Name, ops.Reduce{})(span[int64](typed), offs[1], n, r.s))
					}
					// Which NaN a sum or product of two is depends on the
					// order in which the compiler gives the add or multiply
					// its operands; an extreme's must be the first's.
					bothNaN := (op == ops.Prod || op == ops.Sum) && dt != dispatch.Int64 && isNaNBits(g, dt) && isNaNBits(want, dt)
					mu.Lock()
					defer mu.Unlock()
					if g != want && !bothNaN && bad == "" {
						bad = fmt.Sprintf("[%d] has bits %#x, one run alone gives %#x", offs[0], g, want)
					}
					checked++
				})
				if bad != "" {
					t.Fatalf("%s %v %s: %s", op.Name, dt, c.name, bad)
				}
				if checked != got.Numel() || checked < 2 {
					t.Fatalf("%s %v %s: %d outputs checked of %d", op.Name, dt, c.name, checked, got.Numel())
				}
				got.Release()
			}
		}
	}
}

// isNaNBits says whether the bits of a float of dtype dt are a NaN's.
func isNaNBits(b uint64, dt dispatch.DType) bool {
	if dt == dispatch.Float32 {
		f := math.Float32frombits(uint32(b))
		return f != f
	}
	return math.IsNaN(math.Float64frombits(b))
}

// TestSumPanelsHalf: a 16-bit sum whose reduced elements lie in runs at
// one stride (a convolution's bias gradient, dims 0, 2 and 3 of NCHW) is
// summed on the bits, run by run (sumPanelsHalf), and gives the float32
// sum of a widened copy rounded once, bit for bit, for both 16-bit dtypes,
// with and without keepdim, on a view at an offset (a narrow of the
// channels) too.
func TestSumPanelsHalf(t *testing.T) {
	for _, dt := range []dispatch.DType{dispatch.BFloat16, dispatch.Float16} {
		for _, shape := range [][]int{{4, 5, 9, 13}, {32, 16, 32, 32}} {
			n := dispatch.Numel(shape)
			whole := dispatch.NewTensor(cpu0, dt, shape, newBuffer(dt, n))
			castInto(whole, tensorOf(dispatch.Float64, randomF64(n), shape...))
			view := call(t, ops.Narrow, ops.NarrowRange{Dim: 1, Start: 1, Length: shape[1] - 2}, whole)
			for _, x := range []*dispatch.Tensor{whole, view} {
				for _, keep := range []bool{false, true} {
					attrs := ops.Reduce{Dims: []int{0, 2, 3}, KeepDim: keep}
					got := call(t, ops.Sum, attrs, x)
					wide := dispatch.NewTensor(cpu0, dispatch.Float32, x.Shape, newBuffer(dispatch.Float32, x.Numel()))
					castInto(wide, x)
					ref := call(t, ops.Sum, attrs, wide)
					want := dispatch.NewTensor(cpu0, dt, ref.Shape, newBuffer(dt, ref.Numel()))
					castInto(want, ref)
					gb, wb := bits16(got.Storage.Buffer)[:got.Numel()], bits16(want.Storage.Buffer)[:want.Numel()]
					for i := range wb {
						if gb[i] != wb[i] {
							t.Fatalf("%s %v of %v, keepdim %v: channel %d = %#04x, want %#04x", dt, x.Shape, shape, keep, i, gb[i], wb[i])
						}
					}
				}
			}
		}
	}
}

// TestExtremeFloat32: max and min of float32 runs, in C's lanes and split
// between the cores, give the Go loop's bits: the first NaN where there is
// one (wherever it lies: the first lane, a full vector, the tail), and the
// first of tied zeros of either sign.
func TestExtremeFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	goLoop := func(v []float32, more bool) float32 {
		best := v[0]
		for _, x := range v[1:] {
			if best != best {
				break
			}
			if x != x || (more && x > best) || (!more && x < best) {
				best = x
			}
		}
		return best
	}
	nan1 := math.Float32frombits(0x7fc00001)
	nan2 := math.Float32frombits(0xffc00002)
	for _, n := range []int{8, 255, 256, 300, 1029, minSplitSum + 13} {
		for trial := range 12 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			switch trial % 4 {
			case 1: // two NaNs: the first one is the answer
				i := rng.IntN(n)
				j := i + rng.IntN(n-i)
				v[i], v[j] = nan1, nan2
			case 2: // zeros of both signs and nothing else of one sign
				for i := range v {
					v[i] = -float32(math.Abs(float64(v[i])))
					if rng.IntN(9) == 0 {
						v[i] = float32(math.Copysign(0, float64(1-2*rng.IntN(2))))
					}
				}
			case 3:
				v[n-1] = nan2 // in the tail
			}
			for _, more := range []bool{true, false} {
				w := v
				if trial%4 == 2 && !more {
					w = make([]float32, n)
					for i := range v {
						w[i] = -v[i]
					}
				}
				got, want := extremeRun[float32](more)(w, 0, n, 1), goLoop(w, more)
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("n=%d trial %d more=%v: got %g (%#x), want %g (%#x)", n, trial, more, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestLogSumExpFloat32: a float32 row's logsumexp through C's float32
// exponentials is within 2^-21 of the float64 one (relative, or absolute
// near 0), over rows whose terms span e^0 to e^-100 and a tail past the
// last full vector.
func TestLogSumExpFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{256, 300, 1029} {
		for _, scale := range []float64{1, 10, 30} {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64() * scale)
			}
			m, sum := float64(extreme(v, 0, n, 1, true)), 0.0
			for _, x := range v {
				sum += math.Exp(float64(x) - m)
			}
			want := m + math.Log(sum)
			got := float64(lseRun(v, 0, n, 1))
			if d := math.Abs(got - want); d > 0x1p-21*max(1, math.Abs(want)) {
				t.Errorf("n=%d scale %g: logsumexp %v, want %v (%g off)", n, scale, got, want, d)
			}
		}
	}
}
