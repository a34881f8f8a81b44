package nn

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/lathe-ml/lathe"
)

// TestUniformInitHalf: a 16-bit layer's uniform initialisation is torch's
// uniform_(-b, b) in that dtype (kaiming_uniform_, Linear's and Conv2d's
// default): a draw x of the dtype's grid (k/256 for bfloat16, k/2048 for
// float16, as torch.rand draws them), then x·2B - B with B the bound
// rounded to the dtype, computed in float32 and rounded once. Each of the
// grid's points is then equally likely (chi-square, false-failure
// probability 1e-6, a fixed seed). Rounding x·2b to the dtype and then
// its difference again merged grid points: a bfloat16 Linear(3, n) drew
// 241 distinct values, some twice as often as the rest.
func TestUniformInitHalf(t *testing.T) {
	for _, c := range []struct {
		dt       lathe.DType
		grid, in int
	}{
		{lathe.BFloat16, 256, 3}, {lathe.BFloat16, 256, 100},
		{lathe.Float16, 2048, 3}, {lathe.Float16, 2048, 100},
	} {
		t.Run(c.dt.String()+"/in="+strconv.Itoa(c.in), func(t *testing.T) {
			const n = 1 << 18
			lathe.Seed(17)
			w := values(t, NewLinear(c.in, n/c.in, WithDType(c.dt)).Weight)
			b := values(t, lathe.Scalar(lathe.CPU, 1/math.Sqrt(float64(c.in))).Cast(c.dt))[0]
			// Each grid point's value, rounded once to dt, and its probability.
			half := c.grid / 2
			points := make([]float64, c.grid)
			for k := range points {
				points[k] = b * float64(k-half) / float64(half) // exact in float64
			}
			rounded := values(t, lathe.FromSlice(lathe.CPU, points).Cast(c.dt))
			prob := map[float64]float64{}
			for _, v := range rounded {
				prob[v] += 1 / float64(c.grid)
			}
			counts := map[float64]int{}
			for i, v := range w {
				if _, ok := prob[v]; !ok {
					t.Fatalf("weight %d is %v, which is no point of torch's grid for bound %v", i, v, b)
				}
				counts[v]++
			}
			stat := 0.0
			for v, p := range prob {
				e := p * float64(len(w))
				stat += (float64(counts[v]) - e) * (float64(counts[v]) - e) / e
			}
			df := len(prob) - 1
			if limit := (distuv.ChiSquared{K: float64(df)}).Quantile(1 - 1e-6); stat > limit {
				t.Errorf("chi-square %.1f with %d degrees of freedom, above %.1f (p = 1e-6): %d distinct values of %d", stat, df, limit, len(counts), len(prob))
			}
		})
	}
}

// TestNormalInitHalf: a 16-bit MultiheadAttention's bias_k and bias_v
// (xavier_normal_) are RandN's float32 draws times the std, rounded to the
// dtype once, as torch's normal_ rounds; they were the draws rounded to
// the dtype, times the std, rounded again.
func TestNormalInitHalf(t *testing.T) {
	const e = 96 // std 1/√96, no power of two
	std := math.Sqrt(1.0 / e)
	for _, dt := range []lathe.DType{lathe.BFloat16, lathe.Float16} {
		lathe.Seed(5)
		m := NewMultiheadAttention(e, 1, AddBiasKV(), WithDType(dt))
		lathe.Seed(5)
		lathe.Rand(lathe.CPU, dt, 3*e, e) // in_proj_weight's draws
		wantK := values(t, lathe.RandN(lathe.CPU, lathe.Float32, 1, 1, e).MulScalar(std).Cast(dt))
		wantV := values(t, lathe.RandN(lathe.CPU, lathe.Float32, 1, 1, e).MulScalar(std).Cast(dt))
		for _, c := range []struct {
			name      string
			got, want []float64
		}{{"bias_k", values(t, m.BiasK), wantK}, {"bias_v", values(t, m.BiasV), wantV}} {
			for i := range c.want {
				if c.got[i] != c.want[i] {
					t.Errorf("%s %s[%d] is %v, want %v (the float32 draw times std, rounded once)", dt, c.name, i, c.got[i], c.want[i])
					break
				}
			}
		}
	}
}

// TestFailedLayerDrawsNothing: a layer that cannot be made on its device
// (one that does not open, or lacks the dtype) or in its dtype fails with
// an error of the layer's op, before drawing: the random stream gives
// next what it would have without the call. The parameters were drawn on
// the cpu and then failed to move, which left the stream past them.
func TestFailedLayerDrawsNothing(t *testing.T) {
	nowhere := OnDevice(lathe.CUDA(99))
	layers := []struct {
		op   string
		make func(...Option) Module
	}{
		{"linear", func(o ...Option) Module { return NewLinear(3, 4, o...) }},
		{"embedding", func(o ...Option) Module { return NewEmbedding(3, 4, o...) }},
		{"conv2d", func(o ...Option) Module { return NewConv2d(3, 4, 3, o...) }},
		{"lstm", func(o ...Option) Module { return NewLSTM(3, 4, o...) }},
		{"multihead_attention", func(o ...Option) Module { return NewMultiheadAttention(4, 2, append(o, AddBiasKV())...) }},
		{"transformer_encoder_layer", func(o ...Option) Module { return NewTransformerEncoderLayer(4, 2, o...) }},
	}
	places := map[string][]Option{"no-device": {nowhere}, "int32": {WithDType(lathe.Int32)}}
	if lathe.Zeros(lathe.WGPU(0), lathe.Float32, 1).Err() == nil {
		places["wgpu-float64"] = []Option{OnDevice(lathe.WGPU(0)), WithDType(lathe.Float64)}
	}
	next := func() []float64 { return values(t, lathe.Rand(lathe.CPU, lathe.Float64, 4)) }
	lathe.Seed(3)
	want := next()
	for _, l := range layers {
		for name, opts := range places {
			t.Run(l.op+"/"+name, func(t *testing.T) {
				lathe.Seed(3)
				var e *lathe.Error
				if err := Err(l.make(opts...)); !errors.As(err, &e) || e.Op != l.op {
					t.Errorf("the layer gave %v, want a *lathe.Error of op %s", err, l.op)
				}
				if got := next(); got[0] != want[0] {
					t.Errorf("after the failed layer the stream gives %v, want %v", got, want)
				}
			})
		}
	}
}

// TestInitGain: CalculateGain is torch.nn.init.calculate_gain's table
// (values from torch 1.13), and refuses other names.
func TestInitGain(t *testing.T) {
	for _, c := range []struct {
		name  string
		param []float64
		want  float64
	}{
		{"linear", nil, 1}, {"conv_transpose3d", nil, 1}, {"sigmoid", nil, 1}, {"tanh", nil, 1.6666666666666667},
		{"relu", nil, math.Sqrt2}, {"leaky_relu", nil, 1.4141428569978354}, {"leaky_relu", []float64{0.2}, 1.3867504905630728},
		{"selu", nil, 0.75},
	} {
		got, err := CalculateGain(c.name, c.param...)
		if err != nil || math.Abs(got-c.want) > 1e-15 {
			t.Errorf("CalculateGain(%q, %v) = %v, %v; torch's %v", c.name, c.param, got, err, c.want)
		}
	}
	_, err := CalculateGain("gelu")
	wantArgErr(t, err, lathe.ErrValue, "nonlinearity")
	_, err = CalculateGain("leaky_relu", 1, 2)
	wantArgErr(t, err, lathe.ErrValue, "param")
}

// TestInitDeterministic: Constant, Ones, Zeros, Eye and Dirac give torch's
// values exactly (Dirac's nonzero places from torch 1.13's dirac_), keep
// the handle's RequireGrad, gradient, shape and dtype, and record nothing.
func TestInitDeterministic(t *testing.T) {
	w := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3).RequireGrad()
	if err := w.SetGrad(lathe.Ones(lathe.CPU, lathe.Float32, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if err := Eye(w); err != nil {
		t.Fatal(err)
	}
	if got := values(t, w); !slices.Equal(got, []float64{1, 0, 0, 0, 1, 0}) {
		t.Errorf("Eye: %v", got)
	}
	if !w.RequiresGrad() || !w.IsLeaf() || w.Grad() == nil || w.DType() != lathe.Float32 {
		t.Errorf("Eye lost the leaf: requires grad %v, leaf %v, grad %v, dtype %v", w.RequiresGrad(), w.IsLeaf(), w.Grad(), w.DType())
	}
	for _, c := range []struct {
		f    func(*lathe.Tensor) error
		want float64
	}{{func(t *lathe.Tensor) error { return Constant(t, 2.5) }, 2.5}, {Ones, 1}, {Zeros, 0}} {
		if err := c.f(w); err != nil {
			t.Fatal(err)
		}
		for _, v := range values(t, w) {
			if v != c.want {
				t.Fatalf("got %v, want every element %v", values(t, w), c.want)
			}
		}
	}
	i := lathe.Zeros(lathe.CPU, lathe.Int64, 3)
	if err := Constant(i, 7); err != nil || !slices.Equal(values(t, i), []float64{7, 7, 7}) || i.DType() != lathe.Int64 {
		t.Errorf("Constant on int64: %v, %v", values(t, i), err)
	}
	for _, c := range []struct {
		shape   []int
		groups  int
		nonzero [][]int
	}{
		{[]int{4, 2, 3}, 2, [][]int{{0, 0, 1}, {1, 1, 1}, {2, 0, 1}, {3, 1, 1}}},
		{[]int{3, 5, 3, 3}, 1, [][]int{{0, 0, 1, 1}, {1, 1, 1, 1}, {2, 2, 1, 1}}},
	} {
		d := lathe.Full(lathe.CPU, lathe.Float64, 9, c.shape...)
		if err := Dirac(d, c.groups); err != nil {
			t.Fatal(err)
		}
		nz, err := d.Nonzero().Int64s()
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		for _, p := range c.nonzero {
			for _, v := range p {
				want = append(want, int64(v))
			}
		}
		if !slices.Equal(nz, want) || slices.Max(values(t, d)) != 1 {
			t.Errorf("Dirac%v groups %d: nonzero %v, torch's %v", c.shape, c.groups, nz, c.nonzero)
		}
	}
}

// meanStd is the mean and the (population) std of v.
func meanStd(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

// TestInitRandom: the random inits draw torch's distributions: values in
// their bounds, mean and std within 5 standard errors of torch's formula
// (a fixed seed, so the test is deterministic), on the cpu in float64 and
// float32 and bfloat16, and on cuda:0 and wgpu:0 in float32.
func TestInitRandom(t *testing.T) {
	places := []struct {
		name string
		dev  lathe.Device
		dt   lathe.DType
		tol  float64 // the dtype's rounding of a std
	}{{"cpu/float64", lathe.CPU, lathe.Float64, 0}, {"cpu/float32", lathe.CPU, lathe.Float32, 0}, {"cpu/bfloat16", lathe.CPU, lathe.BFloat16, 0.01},
		{"cuda:0/float32", lathe.CUDA(0), lathe.Float32, 0}, {"wgpu/float32", lathe.WGPU(0), lathe.Float32, 0}}
	shape := []int{96, 64, 3, 3} // fan_in 576, fan_out 864
	n := numel(shape)
	se := 5 / math.Sqrt(float64(n))
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) {
			deviceOrSkip(t, p.dev)
			lathe.Seed(11)
			w := lathe.Zeros(p.dev, p.dt, shape...).RequireGrad()
			check := func(name string, err error, lo, hi, mean, std float64) {
				t.Helper()
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Equal(w.Shape(), shape) || w.DType() != p.dt || w.Device() != p.dev || !w.RequiresGrad() {
					t.Fatalf("%s: the parameter is now %v %v on %v (requires grad %v)", name, w.Shape(), w.DType(), w.Device(), w.RequiresGrad())
				}
				v := values(t, w.To(lathe.CPU))
				// A 16-bit dtype rounds the bounds too, as torch's uniform_ in it.
				if mn, mx := slices.Min(v), slices.Max(v); mn < lo-p.tol*math.Abs(lo) || mx > hi+p.tol*math.Abs(hi) {
					t.Errorf("%s: values in [%v, %v], outside [%v, %v]", name, mn, mx, lo, hi)
				}
				m, s := meanStd(v)
				if math.Abs(m-mean) > se*std+p.tol*std || math.Abs(s/std-1) > se*1.5+p.tol {
					t.Errorf("%s: mean %v std %v, want %v and %v", name, m, s, mean, std)
				}
			}
			inf := math.Inf(1)
			check("uniform", Uniform(w, -1, 3), -1, 3, 1, 4/math.Sqrt(12))
			check("normal", Normal(w, 0.5, 2), -inf, inf, 0.5, 2)
			b := 1.5 * math.Sqrt(6.0/(576+864))
			check("xavier_uniform", XavierUniform(w, 1.5), -b, b, 0, b/math.Sqrt(3))
			check("xavier_normal", XavierNormal(w, 1.5), -inf, inf, 0, 1.5*math.Sqrt(2.0/(576+864)))
			std := math.Sqrt(2.0/(1+0.04)) / math.Sqrt(576)
			check("kaiming_uniform fan_in", KaimingUniform(w, 0.2, "fan_in", "leaky_relu"), -std*math.Sqrt(3), std*math.Sqrt(3), 0, std)
			std = math.Sqrt2 / math.Sqrt(864)
			check("kaiming_normal fan_out relu", KaimingNormal(w, 0, "fan_out", "relu"), -inf, inf, 0, std)
			// N(1, 2²) truncated to [0, 2]: symmetric, std² = σ²(1 - 2φ(β)β/(2Φ(β)-1)), β = 0.5.
			beta := 0.5
			phi := math.Exp(-beta*beta/2) / math.Sqrt(2*math.Pi)
			cdf := (1 + math.Erf(beta/math.Sqrt2)) / 2
			check("trunc_normal", TruncNormal(w, 1, 2, 0, 2), 0, 2, 1, 2*math.Sqrt(1-2*phi*beta/(2*cdf-1)))
		})
	}
}

// TestInitOrthogonal: Orthogonal's rows (or columns, whichever are
// fewer) are orthonormal times the gain, to 1e-5, for a tall, a wide and a
// 4-d weight, as torch.nn.init.orthogonal_'s.
func TestInitOrthogonal(t *testing.T) {
	lathe.Seed(3)
	for _, shape := range [][]int{{7, 4}, {4, 7}, {6, 2, 2, 2}, {5, 5}} {
		w := lathe.Zeros(lathe.CPU, lathe.Float32, shape...)
		if err := Orthogonal(w, 2); err != nil {
			t.Fatal(err)
		}
		m := w.Reshape(shape[0], -1).Cast(lathe.Float64)
		var g *lathe.Tensor
		if r, c := m.Dim(0), m.Dim(1); r <= c {
			g = m.MatMul(m.MT())
		} else {
			g = m.MT().MatMul(m)
		}
		k := g.Dim(0)
		v := values(t, g)
		for i := range k {
			for j := range k {
				want := 0.0
				if i == j {
					want = 4
				}
				if math.Abs(v[i*k+j]-want) > 1e-5*4 {
					t.Fatalf("%v: Gram[%d, %d] = %v, want %v", shape, i, j, v[i*k+j], want)
				}
			}
		}
	}
}

// TestInitSparse: Sparse zeroes ceil(sparsity·rows) elements of every
// column and draws the rest from N(0, std²).
func TestInitSparse(t *testing.T) {
	lathe.Seed(4)
	w := lathe.Zeros(lathe.CPU, lathe.Float64, 10, 400)
	if err := Sparse(w, 0.25, 0.5); err != nil {
		t.Fatal(err)
	}
	v := values(t, w)
	var rest []float64
	for c := range 400 {
		zeros := 0
		for r := range 10 {
			if x := v[r*400+c]; x == 0 {
				zeros++
			} else {
				rest = append(rest, x)
			}
		}
		if zeros != 3 {
			t.Fatalf("column %d has %d zeros, want 3", c, zeros)
		}
	}
	if m, s := meanStd(rest); math.Abs(m) > 0.05 || math.Abs(s-0.5) > 0.03 {
		t.Errorf("mean %v std %v of the rest, want 0 and 0.5", m, s)
	}
}

// TestInitErrors: every init refuses what torch's refuses (fewer than 2
// dims for the fans, a bad mode or nonlinearity, bounds out of order, a
// negative std, another rank for eye_ and dirac_, bad groups) and a nil,
// released or failed tensor, with an error naming the argument, and a
// failed call leaves the tensor as it was.
func TestInitErrors(t *testing.T) {
	w := lathe.Full(lathe.CPU, lathe.Float32, 3, 4, 5, 2)
	m := lathe.Full(lathe.CPU, lathe.Float32, 3, 4, 5)
	v1 := lathe.Full(lathe.CPU, lathe.Float32, 3, 4)
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2)
	released.Release()
	ints := lathe.Zeros(lathe.CPU, lathe.Int64, 2, 2)
	for _, c := range []struct {
		name string
		err  error
		kind error
		arg  string
	}{
		{"xavier_uniform 1-d", XavierUniform(v1, 1), lathe.ErrShape, "tensor"},
		{"xavier_normal 1-d", XavierNormal(v1, 1), lathe.ErrShape, "tensor"},
		{"kaiming_uniform 1-d", KaimingUniform(v1, 0, "fan_in", "relu"), lathe.ErrShape, "tensor"},
		{"kaiming_normal mode", KaimingNormal(w, 0, "fan_avg", "relu"), lathe.ErrValue, "mode"},
		{"kaiming_normal nonlinearity", KaimingNormal(w, 0, "fan_in", "swish"), lathe.ErrValue, "nonlinearity"},
		{"orthogonal 1-d", Orthogonal(v1, 1), lathe.ErrShape, "tensor"},
		{"uniform a > b", Uniform(w, 2, 1), lathe.ErrValue, "a"},
		{"uniform NaN", Uniform(w, math.NaN(), 1), lathe.ErrValue, "a"},
		{"normal std < 0", Normal(w, 0, -1), lathe.ErrValue, "std"},
		{"trunc_normal a > b", TruncNormal(w, 0, 1, 2, -2), lathe.ErrValue, "a"},
		{"eye 3-d", Eye(w), lathe.ErrShape, "tensor"},
		{"dirac 2-d", Dirac(m, 1), lathe.ErrShape, "tensor"},
		{"dirac groups", Dirac(lathe.Zeros(lathe.CPU, lathe.Float32, 3, 2, 3), 2), lathe.ErrValue, "groups"},
		{"dirac groups 0", Dirac(lathe.Zeros(lathe.CPU, lathe.Float32, 3, 2, 3), 0), lathe.ErrValue, "groups"},
		{"sparse 3-d", Sparse(w, 0.1, 0.01), lathe.ErrShape, "tensor"},
		{"sparse sparsity", Sparse(m, 1.5, 0.01), lathe.ErrValue, "sparsity"},
		{"normal int64", Normal(ints, 0, 1), lathe.ErrDType, "tensor"},
		{"uniform nil", Uniform(nil, 0, 1), lathe.ErrValue, "tensor"},
		{"constant released", Constant(released, 1), lathe.ErrReleased, "tensor"},
	} {
		if c.err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		wantArgErr(t, c.err, c.kind, c.arg)
	}
	for _, x := range []*lathe.Tensor{w, m, v1} {
		for _, v := range values(t, x) {
			if v != 3 {
				t.Fatalf("a refused init changed the tensor: %v", values(t, x))
			}
		}
	}
	failed := lathe.Failed(lathe.NewError("earlier", lathe.ErrValue, "x", "failed", ""))
	if err := Ones(failed); err == nil {
		t.Error("Ones of a failed tensor: no error")
	}
	// Kaiming of a zero-element tensor does nothing, as torch's (a warning).
	if err := KaimingUniform(lathe.Zeros(lathe.CPU, lathe.Float32, 0, 3), 0, "fan_in", "relu"); err != nil {
		t.Errorf("kaiming_uniform of [0, 3]: %v", err)
	}
}
