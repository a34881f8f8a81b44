package lathe_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/lathe-ml/lathe"
)

// The distributions of Rand, RandN and Dropout, per device and dtype: the
// mean and variance within 5 standard errors, a Kolmogorov–Smirnov
// statistic and chi-square counts, each bound one that a correct sampler
// exceeds with probability below 1e-6, with fixed seeds (so each figure
// is the same every run). random_test.go holds RandInt's, RandPerm's and
// Multinomial's chi-squares.

// statN is the draws of each case: 2^18, a standard error of 0.2% of σ.
const statN = 1 << 18

// ksLimit is the bound on √n·D, the Kolmogorov–Smirnov statistic, that a
// sample of the distribution passes with probability 1e-6 and more: the
// limiting tail 2·exp(-2x²) is 1e-6 at x = 2.69.
const ksLimit = 2.7

// chiLimit is the chi-square value that df degrees of freedom exceed with
// probability 1e-6.
func chiLimit(df int) float64 { return distuv.ChiSquared{K: float64(df)}.Quantile(1 - 1e-6) }

// ksStatistic is √n·sup|F_n - cdf| of the sample v (sorted in place).
func ksStatistic(v []float64, cdf func(float64) float64) float64 {
	slices.Sort(v)
	n := float64(len(v))
	d := 0.0
	for i, x := range v {
		c := cdf(x)
		d = max(d, float64(i+1)/n-c, c-float64(i)/n)
	}
	return d * math.Sqrt(n)
}

// checkMoments fails where v's mean or variance is more than 5 standard
// errors from mean and variance; kurtosis is the distribution's fourth
// central moment over variance², which the variance's error needs.
func checkMoments(t *testing.T, v []float64, mean, variance, kurtosis float64) {
	t.Helper()
	n := float64(len(v))
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= n
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	s /= n - 1
	if se := math.Sqrt(variance / n); math.Abs(m-mean) > 5*se {
		t.Errorf("mean %.6f, want %.6f within 5 standard errors (%.6f)", m, mean, 5*se)
	}
	if se := variance * math.Sqrt((kurtosis-1)/n); math.Abs(s-variance) > 5*se {
		t.Errorf("variance %.6f, want %.6f within 5 standard errors (%.6f)", s, variance, 5*se)
	}
}

// TestRandDistribution: Rand's values lie in [0, 1) with the moments of
// U(0, 1) and a KS statistic below the bound, in float32 and float64; in
// the 16-bit floats they are the points k/2^digits of torch's grid (256
// for bfloat16, 2048 for float16, so never 1 and never a rounding up), each
// equally likely.
func TestRandDistribution(t *testing.T) {
	for _, dev := range randomDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16} {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				lathe.Seed(61)
				v := f64sOf(t, lathe.Rand(dev, dt, 64, statN/64))
				if lo, hi := slices.Min(v), slices.Max(v); lo < 0 || hi >= 1 {
					t.Fatalf("values in [%v, %v], want within [0, 1)", lo, hi)
				}
				checkMoments(t, v, 0.5, 1.0/12, 1.8)
				grid := map[lathe.DType]int{lathe.Float16: 2048, lathe.BFloat16: 256}[dt]
				if grid == 0 {
					if ks := ksStatistic(v, func(x float64) float64 { return x }); ks > ksLimit {
						t.Errorf("√n·D = %.3f, above %.1f", ks, ksLimit)
					}
					return
				}
				counts := make([]int, grid)
				for i, x := range v {
					k := x * float64(grid)
					if k != math.Trunc(k) {
						t.Fatalf("element %d is %v, not a multiple of 1/%d", i, x, grid)
					}
					counts[int(k)]++
				}
				stat, e := 0.0, float64(len(v))/float64(grid)
				for _, c := range counts {
					stat += (float64(c) - e) * (float64(c) - e) / e
				}
				if limit := chiLimit(grid - 1); stat > limit {
					t.Errorf("chi-square over the %d points %.1f, above %.1f", grid, stat, limit)
				}
			})
		}
	}
}

// TestRandNDistribution: RandN's float32 and float64 values have the
// moments of N(0, 1) and a KS statistic below the bound; a 16-bit float's
// are the float32 draws (the same words of the stream) rounded once.
func TestRandNDistribution(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	for _, dev := range randomDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16} {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				lathe.Seed(62)
				v := f64sOf(t, lathe.RandN(dev, dt, statN))
				if dt == lathe.Float16 || dt == lathe.BFloat16 {
					lathe.Seed(62)
					want := f64sOf(t, lathe.RandN(lathe.CPU, lathe.Float32, statN).Cast(dt))
					if !slices.Equal(v, want) {
						t.Fatalf("the %s draws are not the float32 draws rounded once", dt)
					}
					return
				}
				checkMoments(t, v, 0, 1, 3)
				if ks := ksStatistic(v, phi); ks > ksLimit {
					t.Errorf("√n·D = %.3f, above %.1f", ks, ksLimit)
				}
			})
		}
	}
}

// TestDropoutDistribution: Dropout keeps each element with probability
// 1 - p (the kept count within 5 binomial standard errors), scales it by
// 1/(1-p) rounded as the dtype computes, and draws its elements
// independently: the four outcomes of neighbouring pairs (within a Philox
// block and across blocks) are as independent draws give (chi-square).
func TestDropoutDistribution(t *testing.T) {
	for _, dev := range randomDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Float16, lathe.BFloat16} {
			for _, p := range []float64{0.1, 0.5, 0.9} {
				t.Run(dev.String()+"/"+dt.String()+"/p="+strconv.FormatFloat(p, 'g', -1, 64), func(t *testing.T) {
					skipWithout(t, dev, dt)
					lathe.Seed(63)
					v := f64sOf(t, lathe.Ones(dev, dt, statN).Dropout(p, true))
					scale := f64sOf(t, lathe.Scalar(lathe.CPU, float32(1/(1-p))).Cast(dt))[0]
					if dt == lathe.Float64 {
						scale = 1 / (1 - p)
					}
					kept := 0
					var pairs [2][2]int
					for i, x := range v {
						if x != 0 && x != scale {
							t.Fatalf("element %d is %v, want 0 or %v", i, x, scale)
						}
						if x != 0 {
							kept++
						}
						if i%2 == 1 {
							pairs[b2i(v[i-1] != 0)][b2i(x != 0)]++
						}
					}
					n, q := float64(len(v)), 1-p
					if se := math.Sqrt(n * p * q); math.Abs(float64(kept)-n*q) > 5*se {
						t.Errorf("kept %d of %d, want %.0f within 5 standard errors (%.0f)", kept, len(v), n*q, 5*se)
					}
					stat, npairs := 0.0, n/2
					for a := range 2 {
						for b := range 2 {
							e := npairs * []float64{p, q}[a] * []float64{p, q}[b]
							d := float64(pairs[a][b]) - e
							stat += d * d / e
						}
					}
					if limit := chiLimit(3); stat > limit {
						t.Errorf("neighbouring pairs %v: chi-square %.1f, above %.1f", pairs, stat, limit)
					}
				})
			}
		}
	}
}

// TestRandIntWideRanges: RandInt over the widest ranges of int64 and int32
// (where high - low overflows the dtype) is uniform: chi-square over the
// 16 ranges that the top four bits of value - low pick.
func TestRandIntWideRanges(t *testing.T) {
	for _, c := range []struct {
		dt        lathe.DType
		low, high int64
		bits      uint
	}{
		{lathe.Int64, math.MinInt64, math.MaxInt64, 64},
		{lathe.Int64, -1 << 62, 1 << 62, 63},
		{lathe.Int32, math.MinInt32, math.MaxInt32 + 1, 32},
	} {
		t.Run(c.dt.String()+fmt.Sprintf("/[%d,%d)", c.low, c.high), func(t *testing.T) {
			lathe.Seed(64)
			counts := make([]int, 16)
			for _, v := range intsOf(t, lathe.RandInt(lathe.CPU, c.dt, c.low, c.high, statN)) {
				if v < c.low || v >= c.high {
					t.Fatalf("value %d outside [%d, %d)", v, c.low, c.high)
				}
				counts[uint64(v-c.low)>>(c.bits-4)]++ // v - low wraps to the offset
			}
			stat, e := 0.0, float64(statN)/16
			for _, k := range counts {
				stat += (float64(k) - e) * (float64(k) - e) / e
			}
			if limit := chiLimit(15); stat > limit {
				t.Errorf("counts %v: chi-square %.1f, above %.1f", counts, stat, limit)
			}
		})
	}
}

// f64sOf reads any float tensor's values as float64s.
func f64sOf(t *testing.T, x *lathe.Tensor) []float64 {
	t.Helper()
	v, err := x.To(lathe.CPU).Cast(lathe.Float64).Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
