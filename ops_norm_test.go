package lathe

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// The values of a training step are in the conformance suite
// (batch_norm_stats); these tests check what it cannot see: the handles that
// are rebound, the tape, and the errors' names.

func TestBatchNormRunningStats(t *testing.T) {
	x := FromSlice(CPU, []float64{1, 2, 3, 5, 0, 4}, 3, 2).RequireGrad() // channel 0: 1 3 0; channel 1: 2 5 4
	mean, variance := Zeros(CPU, Float64, 2), Ones(CPU, Float64, 2)
	y := x.BatchNorm(mean, variance, nil, nil, true, 0.5, 1e-5)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	// Batch means 4/3 and 11/3; unbiased variances 7/3 and 7/3.
	want := map[string][]float64{"mean": {0.5 * 4 / 3, 0.5 * 11 / 3}, "var": {0.5 + 0.5*7/3, 0.5 + 0.5*7/3}}
	for name, got := range map[string]*Tensor{"mean": mean, "var": variance} {
		v, err := got.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if !closeAll(v, want[name], 1e-12) {
			t.Errorf("running %s is %v, want %v", name, v, want[name])
		}
		if got.RequiresGrad() || !got.IsLeaf() {
			t.Errorf("running %s is on the tape (requires grad %v, leaf %v)", name, got.RequiresGrad(), got.IsLeaf())
		}
	}
	if err := y.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	// Σ of a normalised channel is 0 whatever x is: its gradient is zero.
	g, err := x.Grad().Float64s()
	if err != nil || !closeAll(g, make([]float64, 6), 1e-12) {
		t.Errorf("gradient %v (%v), want zeros", g, err)
	}

	// Under NoGrad the statistics are still updated, as PyTorch's are.
	NoGrad(func() { x.Detach().BatchNorm(mean, variance, nil, nil, true, 1, 1e-5) })
	if v, _ := mean.Float64s(); !closeAll(v, []float64{4.0 / 3, 11.0 / 3}, 1e-12) {
		t.Errorf("running mean after a step with momentum 1 under NoGrad is %v", v)
	}

	// Out of training nothing changes.
	before, _ := mean.Float64s()
	x.BatchNorm(mean, variance, nil, nil, false, 0.1, 1e-5)
	if after, _ := mean.Float64s(); !slices.Equal(before, after) {
		t.Errorf("eval changed the running mean from %v to %v", before, after)
	}
}

// TestBatchNormMixedHalf: a 16-bit x with float32 statistics and affine
// parameters is normalised in float32 and comes out in x's dtype, with the
// same running statistics and a float32 weight gradient, as torch's
// mixed-type batch_norm.
func TestBatchNormMixedHalf(t *testing.T) {
	xs := []float32{1, 2, 3, 5, 0, 4, -1, 0.5}
	for _, dt := range []DType{Float16, BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			x := FromSlice(CPU, xs, 4, 2).Cast(dt)
			ref := x.Cast(Float32)
			w := Ones(CPU, Float32, 2).RequireGrad()
			mean, variance := Zeros(CPU, Float32, 2), Ones(CPU, Float32, 2)
			refMean, refVar := Zeros(CPU, Float32, 2), Ones(CPU, Float32, 2)
			y := x.BatchNorm(mean, variance, w, nil, true, 0.1, 1e-5)
			want, err := ref.BatchNorm(refMean, refVar, nil, nil, true, 0.1, 1e-5).Cast(dt).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := y.Float32s(); err != nil || y.DType() != dt || !slices.Equal(got, want) {
				t.Fatalf("y is %v %v (%v), want %v %v", y.DType(), got, err, dt, want)
			}
			for _, p := range [][2]*Tensor{{mean, refMean}, {variance, refVar}} {
				got, _ := p[0].Float32s()
				w, _ := p[1].Float32s()
				if p[0].DType() != Float32 || !slices.Equal(got, w) {
					t.Errorf("running statistic %v %v, want float32 %v", p[0].DType(), got, w)
				}
			}
			if err := y.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			if g := w.Grad(); g == nil || g.DType() != Float32 {
				t.Errorf("weight gradient %v, want float32", g)
			}
		})
	}
}

func TestBatchNormErrorKeepsStats(t *testing.T) {
	x := Zeros(CPU, Float32, 2, 3)
	mean, variance := Zeros(CPU, Float32, 3), Ones(CPU, Float32, 3)
	before := *mean
	if err := x.BatchNorm(mean, variance, nil, Ones(CPU, Float32, 2), true, 0.1, 1e-5).Err(); err == nil {
		t.Fatal("no error for a bias of the wrong shape")
	}
	if *mean != before {
		t.Error("a failed call rebound the running mean")
	}
}

func TestNormErrors(t *testing.T) {
	x := Zeros(CPU, Float32, 2, 6, 2)
	f32 := func(shape ...int) *Tensor { return Zeros(CPU, Float32, shape...) }
	cases := []struct {
		name, op, arg string
		got           *Tensor
		kind          error
	}{
		{"batch_norm/rank", "batch_norm", "x", f32(6).BatchNorm(nil, nil, nil, nil, true, 0.1, 1e-5), ErrShape},
		{"batch_norm/int", "batch_norm", "x", Zeros(CPU, Int32, 2, 6).BatchNorm(nil, nil, nil, nil, true, 0.1, 1e-5), ErrDType},
		{"batch_norm/weight", "batch_norm", "weight", x.BatchNorm(nil, nil, f32(5), nil, true, 0.1, 1e-5), ErrShape},
		{"batch_norm/bias_dtype", "batch_norm", "bias", x.BatchNorm(nil, nil, nil, Zeros(CPU, Float64, 6), true, 0.1, 1e-5), ErrDType},
		{"batch_norm/running_var", "batch_norm", "running_var", x.BatchNorm(f32(6), f32(2), nil, nil, true, 0.1, 1e-5), ErrShape},
		{"batch_norm/one_stat", "batch_norm", "running_var", x.BatchNorm(f32(6), nil, nil, nil, true, 0.1, 1e-5), ErrValue},
		{"batch_norm/eval_no_stats", "batch_norm", "running_mean", x.BatchNorm(nil, nil, nil, nil, false, 0.1, 1e-5), ErrValue},
		{"batch_norm/stats_grad", "batch_norm", "running_mean", x.BatchNorm(f32(6).RequireGrad(), f32(6), nil, nil, true, 0.1, 1e-5), ErrValue},
		{"batch_norm/momentum", "batch_norm", "momentum", x.BatchNorm(f32(6), f32(6), nil, nil, true, math.NaN(), 1e-5), ErrValue},
		{"batch_norm/momentum_past_one", "batch_norm", "momentum", x.BatchNorm(f32(6), f32(6), nil, nil, true, 1.5, 1e-5), ErrValue},
		{"batch_norm/eps", "batch_norm", "eps", x.BatchNorm(nil, nil, nil, nil, true, 0.1, -1), ErrValue},
		{"batch_norm/one_value", "batch_norm", "x", f32(1, 6).BatchNorm(nil, nil, nil, nil, true, 0.1, 1e-5), ErrShape},
		// torch counts the values per channel from N and the spatial
		// sizes, and refuses one even where there are no channels.
		{"batch_norm/one_value_no_channels", "batch_norm", "x", f32(1, 0).BatchNorm(nil, nil, nil, nil, true, 0.1, 1e-5), ErrShape},
		{"batch_norm/one_value_no_channels_3d", "batch_norm", "x", f32(1, 0, 1).BatchNorm(f32(0), f32(0), nil, nil, true, 0.1, 1e-5), ErrShape},
		{"group_norm/groups", "group_norm", "x", x.GroupNorm(4, nil, nil, 1e-5), ErrShape},
		{"group_norm/groups0", "group_norm", "groups", x.GroupNorm(0, nil, nil, 1e-5), ErrValue},
		{"group_norm/rank", "group_norm", "x", f32(6).GroupNorm(3, nil, nil, 1e-5), ErrShape},
		{"group_norm/bias", "group_norm", "bias", x.GroupNorm(3, nil, f32(3), 1e-5), ErrShape},
		{"pixel_shuffle/channels", "pixel_shuffle", "x", f32(1, 6, 2, 2).PixelShuffle(2), ErrShape},
		{"pixel_shuffle/rank", "pixel_shuffle", "x", f32(4, 2).PixelShuffle(2), ErrShape},
		{"pixel_shuffle/factor", "pixel_shuffle", "upscale_factor", f32(1, 4, 2, 2).PixelShuffle(-1), ErrValue},
		{"pixel_unshuffle/width", "pixel_unshuffle", "x", f32(1, 1, 2, 3).PixelUnshuffle(2), ErrShape},
		{"pixel_unshuffle/factor", "pixel_unshuffle", "downscale_factor", f32(1, 1, 2, 2).PixelUnshuffle(0), ErrValue},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			var e *Error
			switch {
			case !errors.Is(err, c.kind):
				t.Fatalf("error %v, want kind %v", err, c.kind)
			case !errors.As(err, &e):
				t.Fatalf("error %v (%T) is not a *lathe.Error", err, err)
			case e.Op != c.op || e.Arg != c.arg:
				t.Errorf("error names op %q argument %q, want %q %q: %v", e.Op, e.Arg, c.op, c.arg, err)
			case e.Site == "" || e.Fix == "":
				t.Errorf("error lacks a call site or a fix: %v", err)
			}
		})
	}
}

// PixelUnshuffle undoes PixelShuffle, element for element.
func TestPixelShuffleRoundTrip(t *testing.T) {
	x := Arange(CPU, Float32, 0, 2*8*3*2, 1).Reshape(2, 8, 3, 2)
	back, err := x.PixelShuffle(2).PixelUnshuffle(2).Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := x.Float32s()
	if !slices.Equal(back, want) {
		t.Errorf("round trip gave %v, want %v", back, want)
	}
}

func closeAll(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol*max(1, math.Abs(want[i])) {
			return false
		}
	}
	return true
}

// TestHalfNormsRoundOnce checks that the composite norms of a float16 or
// bfloat16 x keep their intermediates in float32 and round once, as
// PyTorch's kernels do: bit for bit the op on x widened, rounded to x's
// dtype. (Each op of the composite rounding to 16 bits moved the vector
// norm's last bit in half of these rows; group norm's by several ulp, which
// the conformance suite's 16-bit cases see.)
func TestHalfNormsRoundOnce(t *testing.T) {
	Seed(3)
	for _, dt := range []DType{BFloat16, Float16} {
		x := RandN(CPU, Float32, 8, 4, 16).Cast(dt)
		for _, c := range []struct {
			name string
			f    func(x *Tensor) *Tensor
		}{
			{"vector_norm p=1", func(x *Tensor) *Tensor { return x.Norm(1, 2) }},
			{"vector_norm p=2", func(x *Tensor) *Tensor { return x.Norm(2, 2) }},
			{"vector_norm p=3", func(x *Tensor) *Tensor { return x.Norm(3, 1, 2) }},
			{"group_norm", func(x *Tensor) *Tensor { return x.GroupNorm(2, nil, nil, 1e-5) }},
			{"batch_norm", func(x *Tensor) *Tensor { return x.BatchNorm(nil, nil, nil, nil, true, 0.1, 1e-5) }},
		} {
			got, err := c.f(x).Float32s()
			if err != nil {
				t.Fatalf("%v %s: %v", dt, c.name, err)
			}
			want, err := c.f(x.Cast(Float32)).Cast(dt).Float32s()
			if err != nil {
				t.Fatalf("%v %s: %v", dt, c.name, err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%v %s: %v, want the float32 result rounded once %v", dt, c.name, got, want)
			}
		}
	}
}

// TestVectorNormNegativeOrderOfInfinities: a negative order's sum of
// |x|^p is 0 where every |x| is infinite or every power underflows, and
// the norm is then 0^(1/p) = +Inf, as torch.linalg.vector_norm gives
// (tensor([inf]) under ord -1 is inf); a zero element still gives 0.
func TestVectorNormNegativeOrderOfInfinities(t *testing.T) {
	inf := math.Inf(1)
	for _, c := range []struct {
		name string
		x    *Tensor
		p    float64
		want float64
	}{
		{"inf/-1", FromSlice(CPU, []float32{float32(inf), float32(-inf)}), -1, inf},
		{"inf/-0.5/float64", FromSlice(CPU, []float64{inf}), -0.5, inf},
		{"underflow/-2.5", FromSlice(CPU, []float32{3e38}), -2.5, inf},
		{"zero/-1", FromSlice(CPU, []float32{0, 1}), -1, 0},
		{"inf and 2/-1", FromSlice(CPU, []float64{inf, 2}), -1, 2},
	} {
		got, err := c.x.Norm(c.p).Cast(Float64).Float64s()
		if err != nil || len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}

// TestBatchNormHalfInFloat32: a 16-bit x with statistics and parameters of
// its own dtype is normalised in float32 and rounded once, and its running
// statistics are the float32 update rounded to their dtype, as torch's
// CUDA kernels compute it: a float16 batch whose variance passes 65504
// came out as zeros (its bias), and a bfloat16 one of values near 1000 as
// [-1 0 0 2] where float32 gives [-1.18 -0.51 0.17 1.52].
func TestBatchNormHalfInFloat32(t *testing.T) {
	for _, c := range []struct {
		dt DType
		x  []float32
	}{
		{Float16, []float32{1000, -1000, 3, 4}},
		{BFloat16, []float32{1000, 1004, 1008, 1016}},
	} {
		x := FromSlice(CPU, c.x, 4, 1).Cast(c.dt)
		w := FromSlice(CPU, []float32{2}).Cast(c.dt)
		b := FromSlice(CPU, []float32{0.5}).Cast(c.dt)
		mean, variance := Zeros(CPU, c.dt, 1), Ones(CPU, c.dt, 1)
		y := x.BatchNorm(mean, variance, w, b, true, 0.5, 1e-5)
		wMean, wVar := Zeros(CPU, Float32, 1), Ones(CPU, Float32, 1)
		want := x.Cast(Float32).BatchNorm(wMean, wVar, w.Cast(Float32), b.Cast(Float32), true, 0.5, 1e-5)
		for _, p := range [][2]*Tensor{{y, want}, {mean, wMean}, {variance, wVar}} {
			got, err := p[0].Float32s()
			w, werr := p[1].Cast(c.dt).Float32s()
			if err != nil || werr != nil || p[0].DType() != c.dt || !slices.Equal(got, w) {
				t.Errorf("%v: %v %v (%v), want the float32 result rounded once %v (%v)", c.dt, p[0].DType(), got, err, w, werr)
			}
		}
	}
}

// TestBatchNormMomentumUnusedIsNotChecked: momentum is checked only where
// it updates running statistics; out of training, or in training with
// none, torch ignores it, and lathe refused a value outside [0, 1] there.
func TestBatchNormMomentumUnusedIsNotChecked(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 4, 3, -1, 0}, 2, 3)
	mean, variance := FromSlice(CPU, []float32{1, 0, 2}), FromSlice(CPU, []float32{4, 1, 0.25})
	for _, momentum := range []float64{math.NaN(), -1, 1.5} {
		eval := x.BatchNorm(mean, variance, nil, nil, false, momentum, 0)
		if got, err := eval.Float32s(); err != nil || !slices.Equal(got, []float32{0, 2, 4, 1, -1, -4}) {
			t.Errorf("eval, momentum %v: %v %v, want (x - mean)/√var", momentum, got, err)
		}
		if err := x.BatchNorm(nil, nil, nil, nil, true, momentum, 1e-5).Err(); err != nil {
			t.Errorf("training without running statistics, momentum %v: %v", momentum, err)
		}
	}
}

// A float16 or bfloat16 x with running statistics of its own dtype out of
// training is normalised by float32 casts of them, which the result's
// graph holds: they were released at once, so Backward failed ("mean of
// batch_norm_apply was released"). x's gradient is
// weight/√(running_var+eps).
func TestBatchNormHalfEvalBackward(t *testing.T) {
	for _, dt := range []DType{BFloat16, Float16} {
		t.Run(dt.String(), func(t *testing.T) {
			x := FromSlice(CPU, []float32{1, 2, 3, 5, 0, 4}, 3, 2).Cast(dt).RequireGrad()
			mean := FromSlice(CPU, []float32{0.5, -1}, 2).Cast(dt)
			variance := FromSlice(CPU, []float32{4, 0.25}, 2).Cast(dt)
			weight := FromSlice(CPU, []float32{2, 3}, 2).Cast(dt).RequireGrad()
			y := x.BatchNorm(mean, variance, weight, nil, false, 0.1, 1e-5)
			if err := y.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			g, err := x.Grad().Cast(Float64).Float64s()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range g {
				want := []float64{2 / math.Sqrt(4+1e-5), 3 / math.Sqrt(0.25+1e-5)}[i%2]
				if math.Abs(v-want) > 0.02*want {
					t.Fatalf("x.grad[%d] = %v, want %v", i, v, want)
				}
			}
		})
	}
}
