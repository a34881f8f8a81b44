package lathe_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The samplers of random_sampling.go and random_dists.go: their
// distributions (moments within 5 standard errors, Kolmogorov–Smirnov
// and chi-square bounds that a correct sampler passes with probability
// 1e-6 and more, random_stats_test.go's), with fixed seeds so that each
// figure is the same every run; the same draws on every device after
// Seed; one unbroken run of the stream per call from many goroutines; the
// stream left as it was by a refused call; the refusals.

// poissonCounts checks v against Poisson(lam) by chi-square over the
// counts whose expected number is at least 5, the tails lumped.
func checkPoisson(t *testing.T, v []float64, lam float64) {
	t.Helper()
	pmf := func(k float64) float64 {
		lg, _ := math.Lgamma(k + 1)
		return math.Exp(k*math.Log(lam) - lam - lg)
	}
	if lam == 0 {
		pmf = func(k float64) float64 { return b2f(k == 0) }
	}
	n := float64(len(v))
	// Bins [lo, hi] around the mean, each of expectation ≥ 5; the first
	// and last take the tails.
	lo, hi := math.Floor(lam), math.Floor(lam)
	for lo > 0 && pmf(lo-1)*n >= 5 {
		lo--
	}
	for pmf(hi+1)*n >= 5 {
		hi++
	}
	counts := make([]int, int(hi-lo)+1)
	for i, x := range v {
		if x != math.Trunc(x) || x < 0 {
			t.Fatalf("element %d is %v, not a count", i, x)
		}
		counts[int(min(max(x, lo), hi)-lo)]++
	}
	p := make([]float64, len(counts))
	below := 0.0
	for k := 0.0; k < lo; k++ {
		below += pmf(k)
	}
	for i := range p {
		p[i] = pmf(lo + float64(i))
	}
	p[0] += below
	rest := 1.0
	for _, q := range p[:len(p)-1] {
		rest -= q
	}
	p[len(p)-1] = rest
	stat, df := chiSquare(t, counts, p)
	if df > 0 && stat > chiLimit(df) {
		t.Errorf("poisson(%v): chi-square %.1f with %d degrees of freedom, above %.1f", lam, stat, df, chiLimit(df))
	}
	checkMoments(t, v, lam, lam, 3+1/lam)
}

func b2f(b bool) float64 { return float64(b2i(b)) }

func TestSamplingDistributions(t *testing.T) {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	ks := func(t *testing.T, v []float64, cdf func(float64) float64) {
		t.Helper()
		if s := ksStatistic(v, cdf); s > ksLimit {
			t.Errorf("√n·D = %.3f, above %.1f", s, ksLimit)
		}
	}
	t.Run("bernoulli", func(t *testing.T) {
		lathe.Seed(71)
		ps := []float64{0, 0.1, 0.5, 0.9, 1}
		p := make([]float64, statN)
		for i := range p {
			p[i] = ps[i%len(ps)]
		}
		v := f64sOf(t, lathe.Bernoulli(lathe.FromSlice(lathe.CPU, p)))
		for j, q := range ps {
			ones, n := 0.0, 0.0
			for i := j; i < len(v); i += len(ps) {
				if v[i] != 0 && v[i] != 1 {
					t.Fatalf("element %d is %v", i, v[i])
				}
				ones += v[i]
				n++
			}
			if se := math.Sqrt(q * (1 - q) / n); math.Abs(ones/n-q) > 5*se+1e-12 {
				t.Errorf("p = %v: frequency %v, want within %v", q, ones/n, 5*se)
			}
		}
	})
	t.Run("bernoulli_like", func(t *testing.T) {
		lathe.Seed(72)
		v := f64sOf(t, lathe.BernoulliLike(lathe.Zeros(lathe.CPU, lathe.Int64, statN), 0.3))
		checkMoments(t, v, 0.3, 0.21, (1-3*0.21)/0.21+0) // kurtosis of a Bernoulli: (1-3pq)/pq
	})
	for _, lam := range []float64{0, 0.5, 3, 9.75, 10, 42.5, 1000, 1e6} {
		t.Run("poisson/"+strconv.FormatFloat(lam, 'g', -1, 64), func(t *testing.T) {
			lathe.Seed(73)
			checkPoisson(t, f64sOf(t, lathe.Poisson(lathe.Full(lathe.CPU, lathe.Float64, lam, 1<<16))), lam)
		})
	}
	t.Run("poisson/mixed-rates", func(t *testing.T) {
		lathe.Seed(74)
		rates := []float64{2, 15}
		r := make([]float64, statN)
		for i := range r {
			r[i] = rates[i%2]
		}
		v := f64sOf(t, lathe.Poisson(lathe.FromSlice(lathe.CPU, r, statN/2, 2)))
		for j, lam := range rates {
			var col []float64
			for i := j; i < len(v); i += 2 {
				col = append(col, v[i])
			}
			checkPoisson(t, col, lam)
		}
	})
	t.Run("normal/broadcast", func(t *testing.T) {
		lathe.Seed(75)
		mean := lathe.FromSlice(lathe.CPU, []float64{3, -1}, 2, 1)
		std := lathe.Full(lathe.CPU, lathe.Float64, 2, statN/2)
		x := lathe.Normal(mean, std)
		if !slices.Equal(x.Shape(), []int{2, statN / 2}) {
			t.Fatalf("shape %v, want [2 %d]", x.Shape(), statN/2)
		}
		v := f64sOf(t, x)
		for r, m := range []float64{3, -1} {
			row := v[r*statN/2 : (r+1)*statN/2]
			checkMoments(t, row, m, 4, 3)
			ks(t, row, func(x float64) float64 { return phi((x - m) / 2) })
		}
	})
	t.Run("normal/std-per-column", func(t *testing.T) {
		lathe.Seed(76)
		v := f64sOf(t, lathe.Normal(lathe.Zeros(lathe.CPU, lathe.Float64, statN/2, 1), lathe.FromSlice(lathe.CPU, []float64{0, 0.5})))
		var col []float64
		for i := 0; i < len(v); i += 2 {
			if v[i] != 0 {
				t.Fatalf("std 0 gave %v, want the mean 0", v[i])
			}
			col = append(col, v[i+1])
		}
		checkMoments(t, col, 0, 0.25, 3)
	})
	t.Run("exponential", func(t *testing.T) {
		lathe.Seed(77)
		v := f64sOf(t, lathe.Exponential(lathe.CPU, lathe.Float64, 2, statN))
		checkMoments(t, v, 0.5, 0.25, 9)
		ks(t, v, func(x float64) float64 { return -math.Expm1(-2 * x) })
	})
	t.Run("geometric", func(t *testing.T) {
		lathe.Seed(78)
		const p = 0.3
		v := f64sOf(t, lathe.Geometric(lathe.CPU, lathe.Int64, p, statN))
		counts := make([]int, 25) // 1..24, then the tail
		probs := make([]float64, 25)
		for _, x := range v {
			if x < 1 || x != math.Trunc(x) {
				t.Fatalf("draw %v, want a count ≥ 1", x)
			}
			counts[min(int(x), 25)-1]++
		}
		for k := range 24 {
			probs[k] = math.Pow(1-p, float64(k)) * p
		}
		probs[24] = math.Pow(1-p, 24)
		stat, df := chiSquare(t, counts, probs)
		if stat > chiLimit(df) {
			t.Errorf("chi-square %.1f with %d degrees of freedom, above %.1f", stat, df, chiLimit(df))
		}
		checkMoments(t, v, 1/p, (1-p)/(p*p), 9+p*p/(1-p))
	})
	t.Run("log_normal", func(t *testing.T) {
		lathe.Seed(79)
		v := f64sOf(t, lathe.LogNormal(lathe.CPU, lathe.Float64, 0.5, 0.75, statN))
		for i, x := range v {
			if !(x > 0) {
				t.Fatalf("element %d is %v, want > 0", i, x)
			}
			v[i] = math.Log(x)
		}
		checkMoments(t, v, 0.5, 0.5625, 3)
		ks(t, v, func(x float64) float64 { return phi((x - 0.5) / 0.75) })
	})
	t.Run("cauchy", func(t *testing.T) {
		lathe.Seed(80)
		v := f64sOf(t, lathe.Cauchy(lathe.CPU, lathe.Float64, 1, 2, statN))
		ks(t, v, func(x float64) float64 { return 0.5 + math.Atan((x-1)/2)/math.Pi })
	})
}

// samplers are one call of each sampler in dtype dt on dev, for the tests
// of seeds, devices and goroutines.
func samplers(dev lathe.Device, dt lathe.DType) map[string]func() *lathe.Tensor {
	p := lathe.FromSlice(lathe.CPU, []float64{0, 0.25, 0.5, 0.75, 1, 0.125}, 2, 3).Cast(dt).To(dev)
	rates := lathe.FromSlice(lathe.CPU, []float64{0, 0.5, 4, 9.5, 12, 300}, 3, 2).Cast(dt).To(dev)
	mean := lathe.FromSlice(lathe.CPU, []float64{-2, 0, 3}, 3, 1).Cast(dt).To(dev)
	std := lathe.FromSlice(lathe.CPU, []float64{0.5, 1, 2, 0, 4}).Cast(dt).To(dev)
	return map[string]func() *lathe.Tensor{
		"bernoulli":      func() *lathe.Tensor { return lathe.Bernoulli(p) },
		"bernoulli_like": func() *lathe.Tensor { return lathe.BernoulliLike(p, 0.4) },
		"poisson":        func() *lathe.Tensor { return lathe.Poisson(rates) },
		"normal":         func() *lathe.Tensor { return lathe.Normal(mean, std) },
		"exponential":    func() *lathe.Tensor { return lathe.Exponential(dev, dt, 1.5, 4, 3) },
		"geometric":      func() *lathe.Tensor { return lathe.Geometric(dev, dt, 0.4, 12) },
		"log_normal":     func() *lathe.Tensor { return lathe.LogNormal(dev, dt, 0.2, 0.5, 12) },
		"cauchy":         func() *lathe.Tensor { return lathe.Cauchy(dev, dt, -1, 0.5, 2, 6) },
	}
}

// TestSamplingSeedDevices: after Seed, every sampler draws the same values
// on every device (they are drawn on the host), in float32 and the 16-bit
// floats where the device holds them; another seed draws others; and
// Normal of zeros and ones draws RandN's values.
func TestSamplingSeedDevices(t *testing.T) {
	for _, dt := range []lathe.DType{lathe.Float32, lathe.Float16, lathe.BFloat16} {
		want := map[string][]float64{}
		for name, draw := range samplers(lathe.CPU, dt) {
			lathe.Seed(81)
			want[name] = f64sOf(t, draw())
			lathe.Seed(82)
			if other := f64sOf(t, draw()); slices.Equal(other, want[name]) && name != "bernoulli" {
				t.Errorf("%s %s: Seed(82) drew what Seed(81) did: %v", dt, name, other)
			}
		}
		for _, dev := range randomDevices(t)[1:] {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				for name, draw := range samplers(dev, dt) {
					lathe.Seed(81)
					x := draw()
					if x.Device() != dev || x.DType() != dt {
						t.Errorf("%s: on %v in %v, want %v, %v", name, x.Device(), x.DType(), dev, dt)
					}
					if got := f64sOf(t, x); !slices.Equal(got, want[name]) {
						t.Errorf("%s: %v, want the cpu's %v", name, got, want[name])
					}
				}
			})
		}
	}
	lathe.Seed(83)
	want := f64sOf(t, lathe.RandN(lathe.CPU, lathe.Float32, 5, 7))
	lathe.Seed(83)
	if got := f64sOf(t, lathe.Normal(lathe.Zeros(lathe.CPU, lathe.Float32, 5, 7), lathe.Ones(lathe.CPU, lathe.Float32, 7))); !slices.Equal(got, want) {
		t.Errorf("normal(0, 1) = %v, want RandN's %v", got, want)
	}
}

// TestSamplingConcurrent: calls from many goroutines each draw one
// unbroken run of the stream, as TestRandomConcurrent checks for the
// others.
func TestSamplingConcurrent(t *testing.T) {
	const calls = 16
	for name, draw := range samplers(lathe.CPU, lathe.Float64) {
		t.Run(name, func(t *testing.T) {
			lathe.Seed(84)
			var runs [][]float64
			for range calls {
				runs = append(runs, f64sOf(t, draw()))
			}
			lathe.Seed(84)
			got := make([][]float64, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() { got[i], _ = draw().Float64s() })
			}
			wg.Wait()
			for i, g := range got {
				at := slices.IndexFunc(runs, func(r []float64) bool { return r != nil && slices.Equal(r, g) })
				if at < 0 {
					t.Fatalf("goroutine %d drew %v, which is no run of the stream", i, g)
				}
				runs[at] = nil
			}
		})
	}
}

// TestSamplingErrors: each refusal's kind and argument, and that a refused
// call draws nothing: the next draw is what it would have been.
func TestSamplingErrors(t *testing.T) {
	f := func(v ...float64) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v) }
	nan, inf := math.NaN(), math.Inf(1)
	released := lathe.Ones(lathe.CPU, lathe.Float32, 3)
	released.Release()
	nowhere := lathe.CUDA(99)
	cases := []struct {
		name string
		call func() *lathe.Tensor
		kind error
		arg  string
	}{
		{"bernoulli/above-1", func() *lathe.Tensor { return lathe.Bernoulli(f(0.5, 1.5)) }, lathe.ErrValue, "p"},
		{"bernoulli/negative", func() *lathe.Tensor { return lathe.Bernoulli(f(-0.1)) }, lathe.ErrValue, "p"},
		{"bernoulli/nan", func() *lathe.Tensor { return lathe.Bernoulli(f(nan)) }, lathe.ErrValue, "p"},
		{"bernoulli/int", func() *lathe.Tensor { return lathe.Bernoulli(lathe.Ones(lathe.CPU, lathe.Int64, 2)) }, lathe.ErrDType, "p"},
		{"bernoulli/nil", func() *lathe.Tensor { return lathe.Bernoulli(nil) }, lathe.ErrValue, "p"},
		{"bernoulli/released", func() *lathe.Tensor { return lathe.Bernoulli(released) }, lathe.ErrReleased, "p"},
		{"bernoulli_like/p", func() *lathe.Tensor { return lathe.BernoulliLike(f(1), 1.01) }, lathe.ErrValue, "p"},
		{"bernoulli_like/nan", func() *lathe.Tensor { return lathe.BernoulliLike(f(1), nan) }, lathe.ErrValue, "p"},
		{"bernoulli_like/released", func() *lathe.Tensor { return lathe.BernoulliLike(released, 0.5) }, lathe.ErrReleased, "x"},
		{"poisson/negative", func() *lathe.Tensor { return lathe.Poisson(f(1, -1)) }, lathe.ErrValue, "rates"},
		{"poisson/nan", func() *lathe.Tensor { return lathe.Poisson(f(nan)) }, lathe.ErrValue, "rates"},
		{"poisson/inf", func() *lathe.Tensor { return lathe.Poisson(f(inf)) }, lathe.ErrValue, "rates"},
		{"poisson/int", func() *lathe.Tensor { return lathe.Poisson(lathe.Ones(lathe.CPU, lathe.Int32, 2)) }, lathe.ErrDType, "rates"},
		{"poisson/nil", func() *lathe.Tensor { return lathe.Poisson(nil) }, lathe.ErrValue, "rates"},
		{"normal/negative-std", func() *lathe.Tensor { return lathe.Normal(f(0, 0), f(1, -1)) }, lathe.ErrValue, "std"},
		{"normal/nan-std", func() *lathe.Tensor { return lathe.Normal(f(0), f(nan)) }, lathe.ErrValue, "std"},
		{"normal/nan-mean", func() *lathe.Tensor { return lathe.Normal(f(nan), f(1)) }, lathe.ErrValue, "mean"},
		{"normal/shapes", func() *lathe.Tensor { return lathe.Normal(f(0, 0), f(1, 1, 1)) }, lathe.ErrShape, "std"},
		{"normal/int-mean", func() *lathe.Tensor { return lathe.Normal(lathe.Zeros(lathe.CPU, lathe.Int64, 2), f(1)) }, lathe.ErrDType, "mean"},
		{"normal/int-std", func() *lathe.Tensor { return lathe.Normal(f(0), lathe.Ones(lathe.CPU, lathe.Int64, 2)) }, lathe.ErrDType, "std"},
		{"normal/nil-std", func() *lathe.Tensor { return lathe.Normal(f(0), nil) }, lathe.ErrValue, "std"},
		{"normal/released-mean", func() *lathe.Tensor { return lathe.Normal(released, f(1)) }, lathe.ErrReleased, "mean"},
		{"exponential/negative", func() *lathe.Tensor { return lathe.Exponential(lathe.CPU, lathe.Float32, -1, 3) }, lathe.ErrValue, "lambd"},
		{"exponential/nan", func() *lathe.Tensor { return lathe.Exponential(lathe.CPU, lathe.Float32, nan, 3) }, lathe.ErrValue, "lambd"},
		{"exponential/int", func() *lathe.Tensor { return lathe.Exponential(lathe.CPU, lathe.Int64, 1, 3) }, lathe.ErrDType, "dtype"},
		{"exponential/shape", func() *lathe.Tensor { return lathe.Exponential(lathe.CPU, lathe.Float32, 1, -3) }, lathe.ErrShape, "shape"},
		{"exponential/huge", func() *lathe.Tensor { return lathe.Exponential(lathe.CPU, lathe.Float32, 1, 1<<40, 1<<20) }, lathe.ErrOutOfMemory, "shape"},
		{"exponential/no-device", func() *lathe.Tensor { return lathe.Exponential(nowhere, lathe.Float32, 1, 3) }, nil, ""},
		{"geometric/0", func() *lathe.Tensor { return lathe.Geometric(lathe.CPU, lathe.Float32, 0, 3) }, lathe.ErrValue, "p"},
		{"geometric/1", func() *lathe.Tensor { return lathe.Geometric(lathe.CPU, lathe.Float32, 1, 3) }, lathe.ErrValue, "p"},
		{"geometric/nan", func() *lathe.Tensor { return lathe.Geometric(lathe.CPU, lathe.Float32, nan, 3) }, lathe.ErrValue, "p"},
		{"geometric/bool", func() *lathe.Tensor { return lathe.Geometric(lathe.CPU, lathe.Bool, 0.5, 3) }, lathe.ErrDType, "dtype"},
		{"geometric/int8-overflow", func() *lathe.Tensor { return lathe.Geometric(lathe.CPU, lathe.Int8, 0.001, 100) }, lathe.ErrValue, "dtype"},
		{"log_normal/std-0", func() *lathe.Tensor { return lathe.LogNormal(lathe.CPU, lathe.Float32, 0, 0, 3) }, lathe.ErrValue, "std"},
		{"log_normal/nan-mean", func() *lathe.Tensor { return lathe.LogNormal(lathe.CPU, lathe.Float32, nan, 1, 3) }, lathe.ErrValue, "mean"},
		{"log_normal/int", func() *lathe.Tensor { return lathe.LogNormal(lathe.CPU, lathe.Int32, 0, 1, 3) }, lathe.ErrDType, "dtype"},
		{"cauchy/negative-sigma", func() *lathe.Tensor { return lathe.Cauchy(lathe.CPU, lathe.Float32, 0, -1, 3) }, lathe.ErrValue, "sigma"},
		{"cauchy/nan-median", func() *lathe.Tensor { return lathe.Cauchy(lathe.CPU, lathe.Float32, nan, 1, 3) }, lathe.ErrValue, "median"},
		{"cauchy/uint8", func() *lathe.Tensor { return lathe.Cauchy(lathe.CPU, lathe.Uint8, 0, 1, 3) }, lathe.ErrDType, "dtype"},
	}
	if err := lathe.Zeros(lathe.WGPU(0), lathe.Float32, 1).Err(); err == nil {
		// wgpu has no float64: the upload after the draw fails.
		cases = append(cases, struct {
			name string
			call func() *lathe.Tensor
			kind error
			arg  string
		}{"exponential/wgpu-float64", func() *lathe.Tensor { return lathe.Exponential(lathe.WGPU(0), lathe.Float64, 1, 3) }, nil, ""})
	}
	next := func() []float64 { return f64sOf(t, lathe.Rand(lathe.CPU, lathe.Float64, 4)) }
	lathe.Seed(85)
	want := next()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lathe.Seed(85)
			err := c.call().Err()
			var e *lathe.Error
			if !errors.As(err, &e) {
				t.Fatalf("%v, want a *lathe.Error", err)
			}
			if c.kind != nil && (!errors.Is(err, c.kind) || e.Arg != c.arg) {
				t.Errorf("%v, want kind %v naming argument %q", err, c.kind, c.arg)
			}
			if got := next(); !slices.Equal(got, want) {
				t.Errorf("after the failed call the stream gives %v, want %v", got, want)
			}
		})
	}
}

// TestSamplingDTypesAndTape: the results' dtypes as torch's, edge
// parameters as torch's, and that no sample is on the tape (torch 1.13's
// normal gives mean and std zero gradients).
func TestSamplingDTypesAndTape(t *testing.T) {
	for _, c := range []struct {
		name string
		x    *lathe.Tensor
		dt   lathe.DType
	}{
		{"bernoulli/float16", lathe.Bernoulli(lathe.Full(lathe.CPU, lathe.Float16, 0.5, 3)), lathe.Float16},
		{"bernoulli_like/bool", lathe.BernoulliLike(lathe.Zeros(lathe.CPU, lathe.Bool, 3), 0.5), lathe.Bool},
		{"bernoulli_like/uint8", lathe.BernoulliLike(lathe.Zeros(lathe.CPU, lathe.Uint8, 3), 0.5), lathe.Uint8},
		{"poisson/bfloat16", lathe.Poisson(lathe.Full(lathe.CPU, lathe.BFloat16, 3, 3)), lathe.BFloat16},
		{"normal/mean's dtype", lathe.Normal(lathe.Zeros(lathe.CPU, lathe.Float32, 3), lathe.Ones(lathe.CPU, lathe.Float64, 3)), lathe.Float32},
		{"geometric/int8", lathe.Geometric(lathe.CPU, lathe.Int8, 0.5, 3), lathe.Int8},
		{"normal/0-d", lathe.Normal(lathe.Scalar(lathe.CPU, 1.0), lathe.Scalar(lathe.CPU, 0.0)), lathe.Float64},
		{"poisson/empty", lathe.Poisson(lathe.Zeros(lathe.CPU, lathe.Float32, 0, 3)), lathe.Float32},
	} {
		if err := c.x.Err(); err != nil || c.x.DType() != c.dt {
			t.Errorf("%s: %v, dtype %v; want %v", c.name, err, c.x.DType(), c.dt)
		}
	}
	if v := f64sOf(t, lathe.Exponential(lathe.CPU, lathe.Float32, 0, 3)); !slices.Equal(v, []float64{math.Inf(1), math.Inf(1), math.Inf(1)}) {
		t.Errorf("exponential(0) = %v, want +Inf as torch", v)
	}
	if v := f64sOf(t, lathe.Cauchy(lathe.CPU, lathe.Float32, 2, 0, 3)); !slices.Equal(v, []float64{2, 2, 2}) {
		t.Errorf("cauchy(2, 0) = %v, want the median", v)
	}
	mean := lathe.Zeros(lathe.CPU, lathe.Float32, 3).RequireGrad()
	std := lathe.Ones(lathe.CPU, lathe.Float32, 3).RequireGrad()
	for name, x := range map[string]*lathe.Tensor{"normal": lathe.Normal(mean, std), "poisson": lathe.Poisson(std), "bernoulli": lathe.Bernoulli(std)} {
		if x.Err() != nil || x.RequiresGrad() {
			t.Errorf("%s of parameters that require grad: %v, requires grad %v; want a sample off the tape", name, x.Err(), x.RequiresGrad())
		}
	}
}

// Bernoulli draws a mask with each element's own probability; after Seed
// the draws are the same on every device.
func ExampleBernoulli() {
	lathe.Seed(1)
	p := lathe.FromSlice(lathe.CPU, []float32{0, 0.5, 1, 0.5, 0, 1})
	mask, err := lathe.Bernoulli(p).Float32s()
	fmt.Println(mask[0], mask[2], mask[4], mask[5], err)
	counts, _ := lathe.Poisson(lathe.Full(lathe.CPU, lathe.Float64, 0, 3)).Float64s()
	fmt.Println(counts)
	// Output:
	// 0 1 0 1 <nil>
	// [0 0 0]
}
