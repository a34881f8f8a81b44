package nn

import (
	"errors"
	"math"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestClipGradValue clamps each gradient element to [-c, c] as torch's
// clip_grad_value_ (NaN kept, a tied weight once, a parameter without a
// gradient skipped), on the cpu and wgpu:0, in float32 and bfloat16.
func TestClipGradValue(t *testing.T) {
	nan := math.NaN()
	for _, dev := range optimDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.BFloat16} {
			a := toDType(t, []float64{1, 2, 3}, dt, 3).To(dev).RequireGrad()
			b := toDType(t, []float64{1, 2}, dt, 2).To(dev).RequireGrad()
			c := toDType(t, []float64{1}, dt, 1).To(dev).RequireGrad() // no gradient
			mustOK(t, a.Backward(lathe.WithGradient(toDType(t, []float64{-2, 0.25, nan}, dt, 3).To(dev))),
				b.Backward(lathe.WithGradient(toDType(t, []float64{0.75, -0.5}, dt, 2).To(dev))))
			mustOK(t, ClipGradValue([]Param{{"a", a}, {"b", b}, {"c", c}, {"a again", a}}, 0.5))
			ga, gb := values(t, a.Grad().To(lathe.CPU)), values(t, b.Grad().To(lathe.CPU))
			if ga[0] != -0.5 || ga[1] != 0.25 || !math.IsNaN(ga[2]) || !slices.Equal(gb, []float64{0.5, -0.5}) || c.Grad() != nil {
				t.Errorf("%v %v: clipped to %v %v", dev, dt, ga, gb)
			}
			if a.Grad().DType() != dt || a.Grad().Device() != dev {
				t.Errorf("%v %v: the gradient became %v on %v", dev, dt, a.Grad().DType(), a.Grad().Device())
			}
		}
	}
}

// TestClipGradValueErrors: a negative or NaN clip value (torch's clamp
// would set every element to it), a nil or released parameter or
// gradient are errors that change no gradient.
func TestClipGradValueErrors(t *testing.T) {
	testenv.HostOnly(t)
	a := toDType(t, []float64{1, 2}, lathe.Float32, 2).RequireGrad()
	mustOK(t, a.Backward(lathe.WithGradient(toDType(t, []float64{3, -3}, lathe.Float32, 2))))
	b := toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()
	mustOK(t, b.Backward(lathe.WithGradient(toDType(t, []float64{1}, lathe.Float32, 1))))
	b.Grad().Release()
	gone := toDType(t, []float64{1}, lathe.Float32, 1).RequireGrad()
	gone.Release()
	for name, c := range map[string]struct {
		ps   []Param
		clip float64
		kind error
	}{
		"negative": {[]Param{{"a", a}}, -1, lathe.ErrValue},
		"NaN":      {[]Param{{"a", a}}, math.NaN(), lathe.ErrValue},
		"nil":      {[]Param{{"a", a}, {"n", nil}}, 1, lathe.ErrValue},
		"released": {[]Param{{"a", a}, {"gone", gone}}, 1, lathe.ErrReleased},
		"grad":     {[]Param{{"a", a}, {"b", b}}, 1, lathe.ErrReleased},
	} {
		if err := ClipGradValue(c.ps, c.clip); !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, err, c.kind)
		}
		if g := values(t, a.Grad()); !slices.Equal(g, []float64{3, -3}) {
			t.Errorf("%s: the failed call changed a's gradient to %v", name, g)
		}
	}
}

// TestParametersToVector: the parameters flattened and joined in order,
// differentiable back to each parameter, and VectorToParameters the
// inverse, keeping each parameter a leaf with its gradient, on the cpu and
// wgpu:0.
func TestParametersToVector(t *testing.T) {
	for _, dev := range optimDevices(t) {
		w := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3).To(dev).RequireGrad()
		bias := lathe.FromSlice(lathe.CPU, []float32{7, 8}, 2).To(dev).RequireGrad()
		ps := []Param{{"w", w}, {"b", bias}}
		vec, err := ParametersToVector(ps)
		mustOK(t, err)
		if got := values(t, vec.To(lathe.CPU)); !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6, 7, 8}) || vec.Rank() != 1 {
			t.Fatalf("%v: vector %v of shape %v", dev, got, vec.Shape())
		}
		// d/dp of sum(vec · k) is k, laid back out.
		k := lathe.FromSlice(lathe.CPU, []float32{1, -1, 2, -2, 3, -3, 4, -4}, 8).To(dev)
		mustOK(t, vec.Mul(k).Sum().Backward())
		if g := values(t, w.Grad().To(lathe.CPU)); !slices.Equal(g, []float64{1, -1, 2, -2, 3, -3}) {
			t.Fatalf("%v: w's gradient %v", dev, g)
		}
		gw := values(t, w.Grad().To(lathe.CPU))

		next := lathe.FromSlice(lathe.CPU, []float32{-1, -2, -3, -4, -5, -6, -7, -8}, 8).To(dev)
		mustOK(t, VectorToParameters(next, ps))
		next.Release() // the parameters have copies
		if v := values(t, w.To(lathe.CPU)); !slices.Equal(v, []float64{-1, -2, -3, -4, -5, -6}) || !slices.Equal(w.Shape(), []int{2, 3}) {
			t.Fatalf("%v: w set to %v %v", dev, v, w.Shape())
		}
		if v := values(t, bias.To(lathe.CPU)); !slices.Equal(v, []float64{-7, -8}) {
			t.Fatalf("%v: b set to %v", dev, v)
		}
		if !w.IsLeaf() || !w.RequiresGrad() || w.Grad() == nil || !slices.Equal(values(t, w.Grad().To(lathe.CPU)), gw) || w.Device() != dev {
			t.Fatalf("%v: w is no longer the leaf it was (leaf %v, grad %v)", dev, w.IsLeaf(), w.Grad())
		}
	}
}

// TestVectorToParametersErrors: a vector of another length, rank or
// dtype, parameters of two dtypes, nil and released tensors are errors
// that change no parameter.
func TestVectorToParametersErrors(t *testing.T) {
	testenv.HostOnly(t)
	w := toDType(t, []float64{1, 2, 3}, lathe.Float32, 3).RequireGrad()
	d := toDType(t, []float64{1}, lathe.Float64, 1).RequireGrad()
	gone := toDType(t, []float64{1}, lathe.Float32, 1)
	gone.Release()
	ps := []Param{{"w", w}}
	for name, c := range map[string]struct {
		vec  *lathe.Tensor
		ps   []Param
		kind error
	}{
		"short":          {toDType(t, []float64{1, 2}, lathe.Float32, 2), ps, lathe.ErrShape},
		"long":           {toDType(t, []float64{1, 2, 3, 4}, lathe.Float32, 4), ps, lathe.ErrShape},
		"2-D":            {toDType(t, []float64{1, 2, 3}, lathe.Float32, 1, 3), ps, lathe.ErrShape},
		"dtype":          {toDType(t, []float64{1, 2, 3}, lathe.Float64, 3), ps, lathe.ErrDType},
		"mixed params":   {toDType(t, []float64{1, 2, 3, 4}, lathe.Float32, 4), []Param{{"w", w}, {"d", d}}, lathe.ErrDType},
		"nil vec":        {nil, ps, lathe.ErrValue},
		"released vec":   {gone, ps, lathe.ErrReleased},
		"no params":      {toDType(t, []float64{1}, lathe.Float32, 1), nil, lathe.ErrValue},
		"nil param":      {toDType(t, []float64{1}, lathe.Float32, 1), []Param{{"n", nil}}, lathe.ErrValue},
		"released param": {toDType(t, []float64{1}, lathe.Float32, 1), []Param{{"gone", gone}}, lathe.ErrReleased},
	} {
		if err := VectorToParameters(c.vec, c.ps); !errors.Is(err, c.kind) {
			t.Errorf("%s: got %v, want %v", name, err, c.kind)
		}
		if v := values(t, w); !slices.Equal(v, []float64{1, 2, 3}) {
			t.Errorf("%s: the failed call set w to %v", name, v)
		}
	}
	if _, err := ParametersToVector([]Param{{"w", w}, {"d", d}}); !errors.Is(err, lathe.ErrDType) {
		t.Errorf("ParametersToVector of two dtypes: got %v", err)
	}
	if _, err := ParametersToVector(nil); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("ParametersToVector of nothing: got %v", err)
	}
	if dev := lathe.WGPU(0); holds(dev, lathe.Float32) {
		x := toDType(t, []float64{1}, lathe.Float32, 1).To(dev)
		if _, err := ParametersToVector([]Param{{"w", w}, {"x", x}}); !errors.Is(err, lathe.ErrDevice) {
			t.Errorf("ParametersToVector of two devices: got %v", err)
		}
	}
}

// TestParamVectorLeavesNothing: with the collector off, a round trip
// through a vector and a clip of the gradients keep no device memory
// beyond the parameters and gradients they replace.
func TestParamVectorLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range optimDevices(t) {
		w := toDType(t, optimP0, lathe.Float32, 2, 3).To(dev).RequireGrad()
		b := toDType(t, []float64{1, 2}, lathe.Float32, 2).To(dev).RequireGrad()
		ps := []Param{{"w", w}, {"b", b}}
		round := func() {
			mustOK(t, w.SetGrad(lathe.Ones(dev, lathe.Float32, 2, 3)), b.SetGrad(lathe.Ones(dev, lathe.Float32, 2)))
			mustOK(t, ClipGradValue(ps, 0.5))
			var vec *lathe.Tensor
			lathe.NoGrad(func() {
				var err error
				vec, err = ParametersToVector(ps)
				mustOK(t, err)
			})
			mustOK(t, VectorToParameters(vec, ps))
			vec.Release()
		}
		round()
		round()
		before, err := lathe.MemoryStats(dev)
		mustOK(t, err)
		for range 5 {
			round()
		}
		after, err := lathe.MemoryStats(dev)
		mustOK(t, err)
		if after.Allocated > before.Allocated {
			t.Errorf("%v holds %d bytes after 5 more rounds, %d before", dev, after.Allocated, before.Allocated)
		}
	}
}
