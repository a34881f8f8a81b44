package nn

import (
	"errors"
	"math"
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
