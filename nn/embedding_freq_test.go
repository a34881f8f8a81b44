package nn

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// embFreqCase is a case of build/torchref/embedfreq_ref.py: the inputs
// and options of an Embedding (Bag false) or EmbeddingBag, and torch's
// output, weight after the forward and weight gradient.
type embFreqCase struct {
	Name              string
	Bag               bool
	Mode              string
	X                 []int64
	Shape             []int
	Offsets           []int64
	PSW               []float64
	Padding           int // -1: none
	MaxNorm, NormType float64
	Scale             bool
	Out               []float64
	OutShape          []int
	Weight, Grad      []float64
}

// forward runs c on dev in dt from the weight embW0, returning the output,
// the weight (the module's, after the forward) and the inputs it made.
func (c embFreqCase) forward(t *testing.T, dev lathe.Device, dt lathe.DType) (out, w *lathe.Tensor, in []*lathe.Tensor) {
	t.Helper()
	var opts []Option
	if c.Padding >= 0 {
		opts = append(opts, PaddingIdx(c.Padding))
	}
	if c.MaxNorm != 0 {
		opts = append(opts, MaxNorm(c.MaxNorm), NormType(c.NormType))
	}
	if c.Scale {
		opts = append(opts, ScaleGradByFreq())
	}
	weight := upload(lathe.FromSlice(lathe.CPU, embW0, 5, 3), dt, dev).RequireGrad()
	x := upload(lathe.FromSlice(lathe.CPU, c.X, c.Shape...), lathe.Int64, dev)
	in = []*lathe.Tensor{x}
	if !c.Bag {
		e := NewEmbedding(5, 3, opts...)
		e.Weight.Release()
		e.Weight = weight
		return e.Forward(x), e.Weight, in
	}
	e := NewEmbeddingBag(5, 3, append(opts, Mode(c.Mode))...)
	e.Weight.Release()
	e.Weight = weight
	var off, psw *lathe.Tensor
	if c.Offsets != nil {
		off = upload(lathe.FromSlice(lathe.CPU, c.Offsets, len(c.Offsets)), lathe.Int64, dev)
		in = append(in, off)
	}
	if c.PSW != nil {
		psw = upload(lathe.FromSlice(lathe.CPU, c.PSW, len(c.PSW)), dt, dev)
		in = append(in, psw)
	}
	return e.ForwardBags(x, off, psw), e.Weight, in
}

// TestEmbeddingFreqMatchesTorch: Embedding's scale_grad_by_freq (with
// padding and max_norm) and EmbeddingBag's max_norm and
// scale_grad_by_freq (sum, mean, per-sample weights, padding) give
// torch's output, renormalised weight and weight gradient, on the cpu
// and wgpu:0. Before, Embedding took no ScaleGradByFreq and EmbeddingBag
// neither it nor MaxNorm.
func TestEmbeddingFreqMatchesTorch(t *testing.T) {
	for _, dev := range optimDevices(t) {
		for _, c := range embFreqRef {
			for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
				if !holds(dev, dt) {
					continue
				}
				t.Run(dev.String()+"/"+c.Name+"/"+dt.String(), func(t *testing.T) {
					tol := 4 * 0x1p-52
					if dt == lathe.Float32 {
						tol = 8 * 0x1p-23
					}
					out, w, _ := c.forward(t, dev, dt)
					mustOK(t, out.Err())
					assertClose(t, "out", values(t, out.To(lathe.CPU)), c.Out, tol)
					assertClose(t, "weight after the forward", values(t, w.To(lathe.CPU)), c.Weight, tol)
					coef := make([]float64, len(c.Out))
					for k := range coef {
						coef[k] = float64(k%7)/4 - 0.5
					}
					cf := toDType(t, coef, dt, c.OutShape...).To(dev)
					mustOK(t, out.Mul(cf).Sum().Backward())
					if w.Grad() == nil {
						t.Fatal("no gradient")
					}
					assertClose(t, "weight gradient", values(t, w.Grad().To(lathe.CPU)), c.Grad, tol)
				})
			}
		}
	}
}

// TestEmbeddingFreqRefusesMisuse: scale_grad_by_freq in mode "max" is
// torch's ValueError as an ErrValue naming it, bad max_norm and norm_type
// are ErrValues from the constructor or (set on the fields) Forward, and
// a failed Forward leaves the weight as it was.
func TestEmbeddingFreqRefusesMisuse(t *testing.T) {
	testenv.HostOnly(t)
	named := func(name string, err error, arg string) {
		t.Helper()
		var le *lathe.Error
		if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &le) || le.Arg != arg {
			t.Errorf("%s: got %v, want an ErrValue naming %s", name, err, arg)
		}
	}
	x := lathe.FromSlice(lathe.CPU, []int64{0, 1, 1, 2}, 2, 2)
	e := NewEmbeddingBag(4, 3, Mode("max"), ScaleGradByFreq(), MaxNorm(0.5))
	mustOK(t, e.Weight.Err())
	before := values(t, e.Weight)
	out := e.Forward(x)
	named("max mode with scale_grad_by_freq", out.Err(), "scale_grad_by_freq")
	if err := out.Err(); err == nil || !strings.Contains(err.Error(), "max") {
		t.Errorf("the error does not name the mode: %v", err)
	}
	assertClose(t, "weight after a failed forward", values(t, e.Weight), before, 0)
	named("bag max_norm -1", NewEmbeddingBag(4, 3, MaxNorm(-1)).Weight.Err(), "max_norm")
	named("bag max_norm inf", NewEmbeddingBag(4, 3, MaxNorm(1/zero())).Weight.Err(), "max_norm")
	named("bag norm_type 0", NewEmbeddingBag(4, 3, MaxNorm(1), NormType(0)).Weight.Err(), "norm_type")
	named("bag takes no bogus option", NewEmbeddingBag(4, 3, Groups(2)).Weight.Err(), "groups")
	b := NewEmbeddingBag(4, 3, Mode("sum"))
	b.MaxNorm = -2
	named("bag MaxNorm field", b.Forward(x).Err(), "max_norm")
	b.MaxNorm, b.NormType = 1, -1
	named("bag NormType field", b.Forward(x).Err(), "norm_type")
	// An index out of range fails before max_norm changes any row.
	b = NewEmbeddingBag(4, 3, Mode("sum"), MaxNorm(0.1))
	before = values(t, b.Weight)
	if err := b.Forward(lathe.FromSlice(lathe.CPU, []int64{0, 9}, 1, 2)).Err(); !errors.Is(err, lathe.ErrIndex) {
		t.Errorf("index 9 of 4: got %v, want ErrIndex", err)
	}
	assertClose(t, "weight after a failed forward", values(t, b.Weight), before, 0)
	// A weight that requires no gradient looks up as without the option.
	f := NewEmbedding(4, 3, ScaleGradByFreq())
	lathe.NoGrad(func() { mustOK(t, f.Forward(x).Err()) })
	f.Weight = f.Weight.Detach()
	mustOK(t, f.Forward(x).Err())
	mustOK(t, NewEmbeddingBag(4, 3, ScaleGradByFreq()).Forward(lathe.FromSlice(lathe.CPU, []int64{}, 0, 2)).Err())
}

func zero() float64 { return 0 }

// TestEmbeddingFreqLooksUpExactly: with ScaleGradByFreq, rows of Inf,
// NaN and -0 look up as themselves (the gradient's scaling leaves the
// value alone), and finite rows' gradients are still scaled.
func TestEmbeddingFreqLooksUpExactly(t *testing.T) {
	testenv.HostOnly(t)
	inf, nan := 1/zero(), zero()/zero()
	w := []float64{inf, -inf, nan, 0.1, -0.3, 1e30}
	e := NewEmbedding(3, 2, ScaleGradByFreq(), WithDType(lathe.Float64))
	e.Weight = lathe.FromSlice(lathe.CPU, []float64{w[0], w[1], w[2], math.Copysign(0, -1), w[3], w[4]}, 3, 2).RequireGrad()
	out := e.Forward(lathe.FromSlice(lathe.CPU, []int64{0, 1, 1, 2, 2, 2}, 6))
	got := values(t, out)
	want := []float64{inf, -inf, nan, math.Copysign(0, -1), nan, math.Copysign(0, -1), 0.1, -0.3, 0.1, -0.3, 0.1, -0.3}
	for i := range want {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("out[%d] = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
	mustOK(t, out.Sum().Backward())
	assertClose(t, "row 2's gradient", values(t, e.Weight.Grad())[4:], []float64{1, 1}, 1e-15)
}

// TestEmbeddingFreqSecondDerivative: the scaled gradient is itself
// differentiable, as torch's: the gradient of |∂(Σ out³)/∂W|² matches
// torch's (values from torch 1.13 for these inputs).
func TestEmbeddingFreqSecondDerivative(t *testing.T) {
	testenv.HostOnly(t)
	e := NewEmbedding(5, 3, ScaleGradByFreq(), WithDType(lathe.Float64))
	e.Weight = lathe.FromSlice(lathe.CPU, embW0, 5, 3).RequireGrad()
	out := e.Forward(lathe.FromSlice(lathe.CPU, []int64{1, 1, 3, 2, 1}, 5))
	gs, err := lathe.Grad(out.Square().Mul(out).Sum(), []*lathe.Tensor{e.Weight}, lathe.CreateGraph())
	mustOK(t, err)
	assertClose(t, "gradient", values(t, gs[0]),
		[]float64{0, 0, 0, 6.75, 1.6875, 0.1875, 0.27, 0.12, 0.03, 18.75, 12, 3, 0, 0, 0}, 1e-14)
	mustOK(t, gs[0].Square().Sum().Backward())
	assertClose(t, "second derivative", values(t, e.Weight.Grad()),
		[]float64{0, 0, 0, 121.5, 15.1875, -0.5625, -0.972, 0.288, 0.036, 562.5, -288, 36, 0, 0, 0}, 1e-14)
}
