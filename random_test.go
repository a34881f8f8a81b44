package lathe_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// RandInt, RandPerm and Multinomial: ranges, permutations, distributions
// (chi-square against the exact probabilities, with a fixed seed, so each
// figure is the same every run), determinism under Seed, the stream left
// as it was by a failed call, on the cpu, wgpu:0 and cuda:0 (the two
// skipped by name where they do not open). random_torchref_test.go checks
// which arguments they take against torch.

// randomDevices are the cpu and every other device that opens; the others
// are skipped by name.
func randomDevices(t *testing.T) []lathe.Device {
	devs := []lathe.Device{lathe.CPU}
	for _, dev := range []lathe.Device{lathe.WGPU(0), lathe.CUDA(0)} {
		if err := lathe.Zeros(dev, lathe.Float32, 1).Err(); err != nil {
			t.Run(dev.String(), func(t *testing.T) { testenv.SkipDevice(t, dev.String(), "it does not open here: %v", err) })
			continue
		}
		devs = append(devs, dev)
	}
	return devs
}

// skipWithout skips a test on a device that holds no dt tensors.
func skipWithout(t *testing.T, dev lathe.Device, dt lathe.DType) {
	t.Helper()
	if err := lathe.Zeros(dev, dt, 1).Err(); err != nil {
		t.Skipf("%s holds no %s: %v", dev, dt, err)
	}
}

// allDTypes is every dtype lathe has.
var allDTypes = []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16,
	lathe.Int32, lathe.Int64, lathe.Int8, lathe.Uint8, lathe.Bool}

// chiSquare is Pearson's statistic of counts against probabilities p
// (which sum to 1; categories of p = 0 are left out, and must be empty).
func chiSquare(t *testing.T, counts []int, p []float64) (stat float64, df int) {
	t.Helper()
	total := 0
	for _, c := range counts {
		total += c
	}
	for i, c := range counts {
		if p[i] == 0 {
			if c != 0 {
				t.Errorf("category %d of probability 0 was drawn %d times", i, c)
			}
			continue
		}
		e := p[i] * float64(total)
		stat += (float64(c) - e) * (float64(c) - e) / e
		df++
	}
	return stat, df - 1
}

// chiCritical is the chi-square value that a correct sampler exceeds with
// probability 0.001 (df degrees of freedom): 10.83 for df 1, 18.47 for 4.
func chiCritical(df int) float64 { return distuv.ChiSquared{K: float64(df)}.Quantile(0.999) }

// checkChiSquare fails when the counts are too far from p, and logs the figure.
func checkChiSquare(t *testing.T, label string, counts []int, p []float64) {
	t.Helper()
	stat, df := chiSquare(t, counts, p)
	if df == 0 {
		return // one category of positive probability: chiSquare checked that nothing else came
	}
	if limit := chiCritical(df); stat > limit {
		t.Errorf("%s: chi-square %.2f with %d degrees of freedom, above %.2f (p = 0.001): counts %v, probabilities %v",
			label, stat, df, limit, counts, p)
	} else {
		t.Logf("%s: chi-square %.2f, df %d, limit %.2f (p = 0.001)", label, stat, df, limit)
	}
}

// intsOf reads any tensor's values as int64s, failing on one that is not
// a whole number.
func intsOf(t *testing.T, x *lathe.Tensor) []int64 {
	t.Helper()
	if x.DType() == lathe.Int64 {
		v, err := x.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	f, err := x.To(lathe.CPU).Cast(lathe.Float64).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(f))
	for i, v := range f {
		if v != math.Trunc(v) {
			t.Fatalf("element %d is %v, not a whole number", i, v)
		}
		out[i] = int64(v)
	}
	return out
}

func TestRandIntRangeAndUniformity(t *testing.T) {
	for _, dev := range randomDevices(t) {
		for _, dt := range allDTypes {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				low, high := int64(-3), int64(5)
				switch dt {
				case lathe.Uint8:
					low, high = 0, 8
				case lathe.Bool:
					low, high = 0, 2
				}
				lathe.Seed(18)
				x := lathe.RandInt(dev, dt, low, high, 40, 200)
				if err := x.Err(); err != nil {
					t.Fatal(err)
				}
				if x.DType() != dt || !slices.Equal(x.Shape(), []int{40, 200}) || x.Device() != dev {
					t.Fatalf("got %s %v on %s", x.DType(), x.Shape(), x.Device())
				}
				counts := make([]int, high-low)
				for _, v := range intsOf(t, x) {
					if v < low || v >= high {
						t.Fatalf("value %d outside [%d, %d)", v, low, high)
					}
					counts[v-low]++
				}
				p := slices.Repeat([]float64{1 / float64(high-low)}, int(high-low))
				checkChiSquare(t, fmt.Sprintf("randint[%d,%d) ×8000", low, high), counts, p)
			})
		}
	}
}

// TestRandIntEdges draws at the ends of each dtype's range: int64's whole
// range (its sign is a fair coin), the top two int64s, uint8's 256 values
// and the float dtypes' largest exact ranges.
func TestRandIntEdges(t *testing.T) {
	lathe.Seed(5)
	all := intsOf(t, lathe.RandInt(lathe.CPU, lathe.Int64, math.MinInt64, math.MaxInt64, 8000))
	signs := make([]int, 2)
	for _, v := range all {
		if v < 0 {
			signs[0]++
		} else {
			signs[1]++
		}
	}
	checkChiSquare(t, "randint int64 full range, sign", signs, []float64{0.5, 0.5})
	for _, v := range intsOf(t, lathe.RandInt(lathe.CPU, lathe.Int64, math.MaxInt64-2, math.MaxInt64, 100)) {
		if v != math.MaxInt64-2 && v != math.MaxInt64-1 {
			t.Errorf("randint [max-2, max) gave %d", v)
		}
	}
	counts := make([]int, 256)
	for _, v := range intsOf(t, lathe.RandInt(lathe.CPU, lathe.Uint8, 0, 256, 256*40)) {
		counts[v]++
	}
	checkChiSquare(t, "randint uint8 [0, 256)", counts, slices.Repeat([]float64{1.0 / 256}, 256))
	for _, c := range []struct {
		dt        lathe.DType
		low, high int64
	}{
		{lathe.Float16, -2048, 2049}, {lathe.BFloat16, -256, 257}, {lathe.Float32, -1 << 24, 1<<24 + 1},
		{lathe.Float64, -1 << 53, 1<<53 + 1}, {lathe.Int8, -128, 128}, {lathe.Int32, math.MinInt32, math.MaxInt32 + 1},
	} {
		for _, v := range intsOf(t, lathe.RandInt(lathe.CPU, c.dt, c.low, c.high, 2000)) {
			if v < c.low || v >= c.high {
				t.Errorf("randint %s [%d, %d) gave %d", c.dt, c.low, c.high, v)
			}
		}
	}
}

func TestRandPermIsPermutation(t *testing.T) {
	for _, dev := range randomDevices(t) {
		for _, c := range []struct {
			dt lathe.DType
			n  int
		}{
			{lathe.Int64, 0}, {lathe.Int64, 1}, {lathe.Int64, 2}, {lathe.Int64, 1000}, {lathe.Int32, 777},
			{lathe.Float32, 300}, {lathe.Float64, 50}, {lathe.Float16, 2049}, {lathe.BFloat16, 257},
			{lathe.Int8, 128}, {lathe.Uint8, 256},
		} {
			t.Run(fmt.Sprintf("%s/%s/%d", dev, c.dt, c.n), func(t *testing.T) {
				skipWithout(t, dev, c.dt)
				p := lathe.RandPerm(dev, c.dt, c.n)
				if err := p.Err(); err != nil {
					t.Fatal(err)
				}
				if p.DType() != c.dt || !slices.Equal(p.Shape(), []int{c.n}) {
					t.Fatalf("got %s %v", p.DType(), p.Shape())
				}
				v := intsOf(t, p)
				slices.Sort(v)
				for i, x := range v {
					if x != int64(i) {
						t.Fatalf("sorted, element %d is %d: not a permutation of 0..%d", i, x, c.n-1)
					}
				}
			})
		}
	}
}

// TestRandPermUniform counts the 24 orders of 4 over 4800 permutations.
func TestRandPermUniform(t *testing.T) {
	lathe.Seed(24)
	counts := make([]int, 24)
	for range 4800 {
		v := intsOf(t, lathe.RandPerm(lathe.CPU, lathe.Int64, 4))
		// The order's Lehmer code, a number in [0, 24).
		code := 0
		for i := range v {
			smaller := 0
			for _, w := range v[i+1:] {
				if w < v[i] {
					smaller++
				}
			}
			code = code*(4-i) + smaller
		}
		counts[code]++
	}
	checkChiSquare(t, "randperm(4) orders ×4800", counts, slices.Repeat([]float64{1.0 / 24}, 24))
}

// normalized is w over its sum.
func normalized(w []float64) []float64 {
	sum := 0.0
	for _, v := range w {
		sum += v
	}
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = v / sum
	}
	return out
}

// rowsOf is n copies of the row w as a [n, len(w)] tensor of dt on dev.
func rowsOf(dev lathe.Device, dt lathe.DType, w []float64, n int) *lathe.Tensor {
	return lathe.FromSlice(lathe.CPU, slices.Repeat(w, n), n, len(w)).Cast(dt).To(dev)
}

func TestMultinomialWithReplacement(t *testing.T) {
	w := []float64{1, 2, 3, 4, 0, 10}
	for _, dev := range randomDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16} {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				lathe.Seed(1)
				// One row, 20000 samples.
				probs := lathe.FromSlice(lathe.CPU, w).Cast(dt).To(dev)
				s := lathe.Multinomial(probs, 20000, true)
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if s.DType() != lathe.Int64 || !slices.Equal(s.Shape(), []int{20000}) || s.Device() != dev {
					t.Fatalf("got %s %v on %s", s.DType(), s.Shape(), s.Device())
				}
				counts := make([]int, len(w))
				for _, v := range intsOf(t, s) {
					counts[v]++
				}
				checkChiSquare(t, "multinomial [1 2 3 4 0 10] ×20000 with replacement", counts, normalized(w))
				// Two rows of other weights, 10000 samples each.
				w2 := [][]float64{{0, 0, 5, 1}, {1, 1, 1, 1}}
				s = lathe.Multinomial(lathe.FromSlice(lathe.CPU, slices.Concat(w2...), 2, 4).Cast(dt).To(dev), 10000, true)
				v := intsOf(t, s)
				for r, row := range w2 {
					counts := make([]int, 4)
					for _, c := range v[r*10000 : (r+1)*10000] {
						counts[c]++
					}
					checkChiSquare(t, fmt.Sprintf("multinomial row %v ×10000 with replacement", row), counts, normalized(row))
				}
			})
		}
	}
}

// TestMultinomialAcrossBlocks: rows longer than the blocks of 256 that a
// draw with replacement searches, with the weight in a partial last block,
// on both sides of a block's edge, and past blocks of zeros: the draws
// land only on positive weights, in proportion.
func TestMultinomialAcrossBlocks(t *testing.T) {
	cases := []struct {
		name   string
		n      int
		weight map[int]float64
	}{
		{"last-of-partial-block", 1000, map[int]float64{999: 2}},
		{"block-edge", 1000, map[int]float64{255: 3, 256: 1}},
		{"after-zero-blocks", 2000, map[int]float64{3: 1, 1800: 1, 1801: 2}},
		{"every-weight", 700, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := make([]float64, c.n)
			for i := range w {
				if c.weight == nil {
					w[i] = float64(i%7 + 1)
				} else {
					w[i] = c.weight[i]
				}
			}
			lathe.Seed(2)
			v := intsOf(t, lathe.Multinomial(lathe.FromSlice(lathe.CPU, w), 20000, true))
			counts := make([]int, c.n)
			for _, i := range v {
				counts[i]++
			}
			checkChiSquare(t, c.name, counts, normalized(w)) // a draw of weight 0 fails it
		})
	}
}

// TestMultinomialLayouts: the cpu lends multinomial its weights without a
// copy (dispatch.BorrowHost) where they are contiguous, a view at an
// offset too, and they are copied where they are not (a transposed view):
// under one seed, every layout of the same weights gives the same draws
// as a fresh contiguous tensor of them.
func TestMultinomialLayouts(t *testing.T) {
	w := make([]float32, 3*600)
	for i := range w {
		w[i] = float32(i%11 + i%3)
	}
	whole := lathe.FromSlice(lathe.CPU, w, 3, 600)
	rows := whole.Narrow(0, 1, 2)                                       // contiguous, at an offset
	transposed := lathe.FromSlice(lathe.CPU, w, 600, 3).Transpose(0, 1) // strided
	for name, probs := range map[string]*lathe.Tensor{"whole": whole, "rows at an offset": rows, "transposed": transposed} {
		for _, replacement := range []bool{true, false} {
			fresh := lathe.FromSlice(lathe.CPU, mustFloat32s(t, probs), probs.Shape()...)
			lathe.Seed(5)
			got := intsOf(t, lathe.Multinomial(probs, 40, replacement))
			lathe.Seed(5)
			want := intsOf(t, lathe.Multinomial(fresh, 40, replacement))
			if !slices.Equal(got, want) {
				t.Errorf("%s, replacement %v: draws %v, want %v as from a contiguous copy", name, replacement, got, want)
			}
		}
	}
}

func mustFloat32s(t *testing.T, x *lathe.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMultinomialWithoutReplacement draws two distinct categories from
// each of 12000 rows of [1 2 3 4]: the ordered pair (i, j) must come with
// probability w_i/S · w_j/(S - w_i), the first sample alone with w_i/S,
// and a row drawn whole must be a permutation.
func TestMultinomialWithoutReplacement(t *testing.T) {
	w := []float64{1, 2, 3, 4}
	const rows = 12000
	for _, dev := range randomDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			lathe.Seed(2)
			s := lathe.Multinomial(rowsOf(dev, lathe.Float32, w, rows), 2, false)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Shape(), []int{rows, 2}) {
				t.Fatalf("shape %v", s.Shape())
			}
			v := intsOf(t, s)
			pairs, firsts := make([]int, 16), make([]int, 4)
			for r := range rows {
				i, j := v[2*r], v[2*r+1]
				if i == j {
					t.Fatalf("row %d drew %d twice without replacement", r, i)
				}
				pairs[4*i+j]++
				firsts[i]++
			}
			p := make([]float64, 16)
			for i := range 4 {
				for j := range 4 {
					if i != j {
						p[4*i+j] = w[i] / 10 * w[j] / (10 - w[i])
					}
				}
			}
			checkChiSquare(t, "multinomial [1 2 3 4] ordered pairs ×12000 without replacement", pairs, p)
			checkChiSquare(t, "multinomial [1 2 3 4] first of two ×12000 without replacement", firsts, normalized(w))
			lathe.Seed(3)
			one := lathe.Multinomial(rowsOf(dev, lathe.Float32, w, rows), 1, false)
			counts := make([]int, 4)
			for _, c := range intsOf(t, one) {
				counts[c]++
			}
			checkChiSquare(t, "multinomial [1 2 3 4] one sample ×12000 without replacement", counts, normalized(w))
			whole := intsOf(t, lathe.Multinomial(rowsOf(dev, lathe.Float32, w, 100), 4, false))
			for r := range 100 {
				row := slices.Sorted(slices.Values(whole[4*r : 4*r+4]))
				if !slices.Equal(row, []int64{0, 1, 2, 3}) {
					t.Fatalf("row %d drawn whole is %v, not a permutation", r, whole[4*r:4*r+4])
				}
			}
		})
	}
}

// TestMultinomialZeroWeightsLast draws every category of [0 3 0 1 0]
// without replacement: the two of positive weight come first (as torch
// 1.13 returns them), then the zeros, each of them equally likely to be
// the third.
func TestMultinomialZeroWeightsLast(t *testing.T) {
	lathe.Seed(4)
	const rows = 3000
	v := intsOf(t, lathe.Multinomial(rowsOf(lathe.CPU, lathe.Float64, []float64{0, 3, 0, 1, 0}, rows), 5, false))
	third := make([]int, 5)
	for r := range rows {
		row := v[5*r : 5*r+5]
		if !slices.Equal(slices.Sorted(slices.Values(row[:2])), []int64{1, 3}) ||
			!slices.Equal(slices.Sorted(slices.Values(row[2:])), []int64{0, 2, 4}) {
			t.Fatalf("row %d is %v: the positive weights 1 and 3 must come first", r, row)
		}
		third[row[2]]++
	}
	checkChiSquare(t, "multinomial zero-weight categories, the third sample ×3000", third, []float64{1.0 / 3, 0, 1.0 / 3, 0, 1.0 / 3})
}

// TestMultinomialExtremeWeights: weights near float64's largest (whose sum
// overflows), subnormal ones, and a category too light to matter.
func TestMultinomialExtremeWeights(t *testing.T) {
	lathe.Seed(6)
	for _, c := range []struct {
		w    []float64
		p    []float64
		repl bool
	}{
		{[]float64{1e308, 1e308, 1e308}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, true},
		{[]float64{1e308, 1e308, 1e308}, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, false},
		{[]float64{5e-324, 0, 1e-323}, []float64{1.0 / 3, 0, 2.0 / 3}, true},
		{[]float64{0, 0, 4.9e-324}, []float64{0, 0, 1}, true},
	} {
		k := 3000
		x := lathe.FromSlice(lathe.CPU, c.w)
		if !c.repl {
			x, k = rowsOf(lathe.CPU, lathe.Float64, c.w, 3000), 1
		}
		counts := make([]int, 3)
		for _, v := range intsOf(t, lathe.Multinomial(x, k, c.repl)) {
			counts[v]++
		}
		checkChiSquare(t, fmt.Sprintf("multinomial %v replacement %v", c.w, c.repl), counts, c.p)
	}
}

// TestRandomSeed: the same seed gives the same values, on every device
// alike (the draws are the host's), and another seed others.
func TestRandomSeed(t *testing.T) {
	draw := func(dev lathe.Device) [][]int64 {
		return [][]int64{
			intsOf(t, lathe.RandInt(dev, lathe.Int64, -1000, 1000, 50)),
			intsOf(t, lathe.RandPerm(dev, lathe.Int32, 50)),
			intsOf(t, lathe.Multinomial(lathe.FromSlice(dev, []float32{1, 2, 3, 0.5}), 50, true)),
			intsOf(t, lathe.Multinomial(lathe.FromSlice(dev, []float32{1, 2, 3, 0.5}, 2, 2), 2, false)),
			intsOf(t, lathe.RandIntLike(lathe.Zeros(dev, lathe.Float32, 5, 10), 0, 100)),
		}
	}
	lathe.Seed(11)
	want := draw(lathe.CPU)
	for _, dev := range randomDevices(t) {
		lathe.Seed(11)
		if got := draw(dev); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s after Seed(11): %v, want %v", dev, got, want)
		}
	}
	lathe.Seed(12)
	if got := draw(lathe.CPU); slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Seed(12) drew what Seed(11) did: %v", got)
	}
}

// TestRandomFailedCallKeepsStream: a call refused for its arguments, or
// whose upload fails (a device that does not open, a dtype the device
// lacks), draws nothing: the next call gives what it would have given.
func TestRandomFailedCallKeepsStream(t *testing.T) {
	nowhere := lathe.CUDA(99)
	probs := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3})
	calls := map[string]func() *lathe.Tensor{
		"randint/empty-range": func() *lathe.Tensor { return lathe.RandInt(lathe.CPU, lathe.Int64, 3, 3, 4) },
		"randint/range":       func() *lathe.Tensor { return lathe.RandInt(lathe.CPU, lathe.Int8, 0, 200, 4) },
		"randint/no-device":   func() *lathe.Tensor { return lathe.RandInt(nowhere, lathe.Int64, 0, 10, 4) },
		"randint_like/released": func() *lathe.Tensor {
			x := lathe.Zeros(lathe.CPU, lathe.Int32, 2)
			x.Release()
			return lathe.RandIntLike(x, 0, 2)
		},
		"randperm/negative":    func() *lathe.Tensor { return lathe.RandPerm(lathe.CPU, lathe.Int64, -1) },
		"randperm/no-device":   func() *lathe.Tensor { return lathe.RandPerm(nowhere, lathe.Int64, 10) },
		"rand/no-device":       func() *lathe.Tensor { return lathe.Rand(nowhere, lathe.Float32, 10) },
		"randn/no-device":      func() *lathe.Tensor { return lathe.RandN(nowhere, lathe.Float64, 10) },
		"multinomial/negative": func() *lathe.Tensor { return lathe.Multinomial(lathe.FromSlice(lathe.CPU, []float32{1, -1}), 1, true) },
		"multinomial/second-row-0": func() *lathe.Tensor {
			return lathe.Multinomial(lathe.FromSlice(lathe.CPU, []float32{1, 1, 0, 0}, 2, 2), 1, true)
		},
		"multinomial/too-many": func() *lathe.Tensor { return lathe.Multinomial(probs, 4, false) },
	}
	if err := lathe.Zeros(lathe.WGPU(0), lathe.Float32, 1).Err(); err == nil {
		// wgpu has no float64: the upload after the draw fails.
		calls["randint/wgpu-float64"] = func() *lathe.Tensor { return lathe.RandInt(lathe.WGPU(0), lathe.Float64, 0, 10, 4) }
		calls["randperm/wgpu-float64"] = func() *lathe.Tensor { return lathe.RandPerm(lathe.WGPU(0), lathe.Float64, 10) }
		calls["rand/wgpu-float64"] = func() *lathe.Tensor { return lathe.Rand(lathe.WGPU(0), lathe.Float64, 10) }
	}
	next := func() [][]int64 {
		return [][]int64{intsOf(t, lathe.RandInt(lathe.CPU, lathe.Int64, 0, 1<<40, 8)),
			intsOf(t, lathe.Multinomial(probs, 8, true))}
	}
	lathe.Seed(21)
	want := next()
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			lathe.Seed(21)
			var e *lathe.Error
			if err := call().Err(); !errors.As(err, &e) {
				t.Fatalf("the call did not fail with a *lathe.Error: %v", err)
			}
			if got := next(); !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("after the failed call the stream gives %v, want %v", got, want)
			}
		})
	}
}

// TestMultinomialNoGrad: the indices are integer and leave the tape, as
// torch's do; a loss through Gather of the sampled weights still reaches
// probs, at the sampled places only.
func TestMultinomialNoGrad(t *testing.T) {
	logits := lathe.FromSlice(lathe.CPU, []float32{0.5, 1, -1, 2}).RequireGrad()
	probs := logits.Softmax(-1)
	lathe.Seed(8)
	idx := lathe.Multinomial(probs, 2, false)
	if err := idx.Err(); err != nil {
		t.Fatal(err)
	}
	if idx.RequiresGrad() || idx.DType() != lathe.Int64 {
		t.Fatalf("indices require grad %v, dtype %s: want false, int64", idx.RequiresGrad(), idx.DType())
	}
	var e *lathe.Error
	if err := idx.Backward(); !errors.As(err, &e) {
		t.Errorf("Backward of the indices: %v, want a *lathe.Error", err)
	}
	lathe.Seed(8)
	if err := probs.Gather(0, lathe.Multinomial(probs, 2, false)).Log().Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	g, err := logits.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(g, make([]float32, 4)) {
		t.Errorf("gradient of the sampled log-probabilities is all zero")
	}
}

// TestRandomConcurrent: calls from many goroutines each draw one unbroken
// run of the stream, the same runs as the calls made one after another.
func TestRandomConcurrent(t *testing.T) {
	const calls = 16
	probs := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, 4)
	for name, draw := range map[string]func() *lathe.Tensor{
		"randint":                 func() *lathe.Tensor { return lathe.RandInt(lathe.CPU, lathe.Int64, 0, 1<<62, 64) },
		"randperm":                func() *lathe.Tensor { return lathe.RandPerm(lathe.CPU, lathe.Int64, 64) },
		"multinomial/replacement": func() *lathe.Tensor { return lathe.Multinomial(probs, 32, true) },
		"multinomial/without":     func() *lathe.Tensor { return lathe.Multinomial(probs, 4, false) },
	} {
		t.Run(name, func(t *testing.T) {
			lathe.Seed(31)
			var runs [][]int64
			for range calls {
				runs = append(runs, intsOf(t, draw()))
			}
			lathe.Seed(31)
			got := make([][]int64, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() { got[i], _ = draw().Int64s() })
			}
			wg.Wait()
			for i, g := range got {
				at := slices.IndexFunc(runs, func(r []int64) bool { return r != nil && slices.Equal(r, g) })
				if at < 0 {
					t.Fatalf("goroutine %d drew %v, which is no run of the stream", i, g)
				}
				runs[at] = nil // each run once
			}
		})
	}
}

// TestRandomErrors: each refusal's kind and the argument it names.
func TestRandomErrors(t *testing.T) {
	w := func(v ...float32) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v) }
	released := lathe.Ones(lathe.CPU, lathe.Float32, 3)
	released.Release()
	for _, c := range []struct {
		name string
		out  *lathe.Tensor
		kind error
		arg  string
	}{
		{"randint/low=high", lathe.RandInt(lathe.CPU, lathe.Int64, 2, 2, 3), lathe.ErrValue, "high"},
		{"randint/low>high", lathe.RandInt(lathe.CPU, lathe.Int64, 3, 2, 3), lathe.ErrValue, "high"},
		{"randint/int8-range", lathe.RandInt(lathe.CPU, lathe.Int8, -129, 0, 3), lathe.ErrValue, "low"},
		{"randint/uint8-negative", lathe.RandInt(lathe.CPU, lathe.Uint8, -1, 3, 3), lathe.ErrValue, "low"},
		{"randint/bool-range", lathe.RandInt(lathe.CPU, lathe.Bool, 0, 3, 3), lathe.ErrValue, "high"},
		{"randint/float16-inexact", lathe.RandInt(lathe.CPU, lathe.Float16, 0, 2050, 3), lathe.ErrValue, "high"},
		{"randint/bad-dtype", lathe.RandInt(lathe.CPU, lathe.DType(99), 0, 2, 3), lathe.ErrDType, "dtype"},
		{"randint/negative-size", lathe.RandInt(lathe.CPU, lathe.Int64, 0, 2, 3, -1), lathe.ErrShape, "shape"},
		{"randint/huge", lathe.RandInt(lathe.CPU, lathe.Int64, 0, 2, 1<<40, 1<<20), lathe.ErrOutOfMemory, "shape"},
		{"randint_like/released", lathe.RandIntLike(released, 0, 2), lathe.ErrReleased, "x"},
		{"randint_like/nil", lathe.RandIntLike(nil, 0, 2), lathe.ErrValue, "x"},
		{"randint_like/range", lathe.RandIntLike(lathe.Zeros(lathe.CPU, lathe.Uint8, 2), 0, 300), lathe.ErrValue, "high"},
		{"randint_like/low", lathe.RandIntLike(lathe.Zeros(lathe.CPU, lathe.Int32, 2), math.MinInt32-1, 0), lathe.ErrValue, "low"},
		{"randint/float16-low", lathe.RandInt(lathe.CPU, lathe.Float16, -2049, 0, 3), lathe.ErrValue, "low"},
		{"rand_like/int", lathe.RandLike(lathe.Zeros(lathe.CPU, lathe.Int64, 2)), lathe.ErrDType, "x"},
		{"randn_like/bool", lathe.RandNLike(lathe.Zeros(lathe.CPU, lathe.Bool, 2)), lathe.ErrDType, "x"},
		{"randperm/negative", lathe.RandPerm(lathe.CPU, lathe.Int64, -1), lathe.ErrShape, "shape"},
		{"randperm/bool", lathe.RandPerm(lathe.CPU, lathe.Bool, 2), lathe.ErrDType, "dtype"},
		{"randperm/int8-129", lathe.RandPerm(lathe.CPU, lathe.Int8, 129), lathe.ErrValue, "n"},
		{"randperm/huge", lathe.RandPerm(lathe.CPU, lathe.Int64, 1<<60), lathe.ErrOutOfMemory, "n"},
		{"multinomial/nil", lathe.Multinomial(nil, 1, true), lathe.ErrValue, "probs"},
		{"multinomial/released", lathe.Multinomial(released, 1, true), lathe.ErrReleased, "probs"},
		{"multinomial/0-d", lathe.Multinomial(lathe.Scalar(lathe.CPU, float32(1)), 1, true), lathe.ErrShape, "probs"},
		{"multinomial/3-d", lathe.Multinomial(lathe.Ones(lathe.CPU, lathe.Float32, 2, 2, 2), 1, true), lathe.ErrShape, "probs"},
		{"multinomial/int", lathe.Multinomial(lathe.Ones(lathe.CPU, lathe.Int64, 3), 1, true), lathe.ErrDType, "probs"},
		{"multinomial/0-samples", lathe.Multinomial(w(1, 2), 0, true), lathe.ErrValue, "numSamples"},
		{"multinomial/-1-samples", lathe.Multinomial(w(1, 2), -1, false), lathe.ErrValue, "numSamples"},
		{"multinomial/too-many", lathe.Multinomial(w(1, 2), 3, false), lathe.ErrValue, "numSamples"},
		{"multinomial/negative", lathe.Multinomial(w(1, -2), 1, true), lathe.ErrValue, "probs"},
		{"multinomial/nan", lathe.Multinomial(w(1, float32(math.NaN())), 1, false), lathe.ErrValue, "probs"},
		{"multinomial/inf", lathe.Multinomial(w(1, float32(math.Inf(1))), 2, true), lathe.ErrValue, "probs"},
		{"multinomial/zero-sum", lathe.Multinomial(w(0, 0), 1, true), lathe.ErrValue, "probs"},
		{"multinomial/empty", lathe.Multinomial(w(), 1, true), lathe.ErrValue, "probs"},
		{"multinomial/categories", lathe.Multinomial(lathe.Zeros(lathe.CPU, lathe.Float32, 1<<24+1), 1, true), lathe.ErrValue, "probs"},
		{"multinomial/huge", lathe.Multinomial(w(1, 2), 1<<60, true), lathe.ErrOutOfMemory, "numSamples"},
	} {
		var e *lathe.Error
		err := c.out.Err()
		if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Arg != c.arg {
			t.Errorf("%s: %v, want kind %v naming argument %q", c.name, err, c.kind, c.arg)
		}
	}
}

// TestMultinomialLongRows: rows long enough for the four-chain pass over
// the weights (checkWeights' weightsFour) draw only the categories of
// positive weight, at each quarter's edges too, in proportion, and a bad
// weight is named by its first category, wherever the quarters put it.
func TestMultinomialLongRows(t *testing.T) {
	lathe.Seed(8)
	const n = 10003
	w := make([]float64, n)
	heavy := []int{0, 2500, 2501, 5000, 7499, 10002} // quarter edges: n/4 = 2500
	for i, c := range heavy {
		w[c] = float64(i + 1)
	}
	counts := make([]int, len(heavy))
	for _, v := range intsOf(t, lathe.Multinomial(lathe.FromSlice(lathe.CPU, w), 6000, true)) {
		i := slices.Index(heavy, int(v))
		if i < 0 {
			t.Fatalf("drew category %d, whose weight is 0", v)
		}
		counts[i]++
	}
	want := make([]float64, len(heavy))
	for i := range want {
		want[i] = float64(i+1) / 21
	}
	checkChiSquare(t, "multinomial over a row of 10003 with six positive weights", counts, want)

	w[7000], w[9000], w[3000] = -1, math.NaN(), math.Inf(1)
	err := lathe.Multinomial(lathe.FromSlice(lathe.CPU, w), 1, true).Err()
	if err == nil || !strings.Contains(err.Error(), "category 3000") {
		t.Errorf("weights with +Inf at 3000, -1 at 7000 and NaN at 9000: %v, want an error naming category 3000", err)
	}
}
