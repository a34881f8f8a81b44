package lathe

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorsAreValues(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	released := FromSlice(CPU, []float32{1, 2, 3})
	released.Release()
	var zero Tensor
	var nilT *Tensor
	cases := []struct {
		name     string
		got      *Tensor
		kind     error
		contains string
	}{
		{"shape", x.Add(Ones(CPU, Float32, 2)), ErrShape, `add: argument "rhs" has shape [2], which does not broadcast with [2, 3]`},
		{"dtype", x.MatMul(Ones(CPU, Float64, 3, 2)), ErrDType, `matmul: argument "rhs" is float64 but "lhs" is float32 (cast one with .Cast(lathe.Float32))`},
		{"dtype/sub_bool", x.Sub(x.GtScalar(2)), ErrDType, `sub: argument "rhs" is bool, which sub does not take`},
		{"dtype/unary", FromSlice(CPU, []int32{1}).Exp(), ErrDType, `exp: argument "x" is int32 but the op takes float32, float64`},
		{"released/arg", x.Add(released), ErrReleased, `add: argument "rhs" was released`},
		{"released/receiver", released.Exp(), ErrReleased, `exp: argument "x" was released`},
		{"nil/arg", x.Add(nil), ErrValue, `add: argument "rhs" is nil`},
		{"nil/receiver", nilT.Exp(), ErrValue, `exp: argument "x" is nil`},
		{"zero/receiver", zero.Neg(), ErrValue, `neg: argument "x" is a zero Tensor`},
		{"unavailable", Zeros(CUDA(64), Float32, 2), ErrUnavailable, "zeros: cuda"}, // cuda:0 opens on a GPU machine
		{"unavailable/to", x.To(CUDA(64)), ErrUnavailable, "to: cuda"},              // no machine has 65 GPUs
		{"unavailable/kind", Zeros(Device{Kind: 99}, Float32, 2), ErrUnavailable, "device kind 99 is no kind of device"},
		{"scalar/int", FromSlice(CPU, []int32{1}).AddScalar(3e9), ErrValue, `argument "scalar" is 3e+09, outside int32's range`},
		{"shape/from_slice", FromSlice(CPU, []float32{1, 2, 3}, 2, 2), ErrShape, "holds 4 elements, but the data has 3"},
		{"shape/negative", Zeros(CPU, Float32, 2, -3), ErrShape, "has size -3"},
		{"clamp/bounds", x.Clamp(2, 1), ErrValue, "needs lo ≤ hi"},
		{"rand/int", Rand(CPU, Int32, 2), ErrDType, "random values are float"},
		{"pow/int/negative", FromSlice(CPU, []int32{2}).Pow(FromSlice(CPU, []int32{-1})), ErrValue, "negative exponent"},
		{"remainder/int/zero", FromSlice(CPU, []int64{5, 2}).Remainder(FromSlice(CPU, []int64{3, 0})), ErrValue,
			`lathe: remainder: argument "rhs" is zero, and an integer cannot be divided by zero`},
		{"fmod/int/zero", FromSlice(CPU, []int32{5}).FModScalar(0), ErrValue, `lathe: fmod: argument "rhs" is zero`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			if err == nil {
				t.Fatalf("no error; got %v", c.got)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("%q is not of kind %v", err, c.kind)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T is not a *lathe.Error", err)
			}
			if !strings.HasPrefix(err.Error(), "lathe: ") || !strings.Contains(err.Error(), c.contains) {
				t.Errorf("message %q lacks %q", err, c.contains)
			}
			if !strings.HasPrefix(e.Site, "errors_test.go:") {
				t.Errorf("site %q does not name the caller", e.Site)
			}
		})
	}
}

// TestErrorsNameArgumentsOutsideOps: the functions that check tensors
// before any op (Grad's y and xs, WhenReady's leaves, the functions that
// Compose and Autocast run, String) name the argument and locate the
// user's call, fmt's frames included, as ops do; NoGrad of nil runs nothing.
func TestErrorsNameArgumentsOutsideOps(t *testing.T) {
	x := Ones(CPU, Float32, 2).RequireGrad()
	released := Ones(CPU, Float32, 2).RequireGrad()
	released.Release()
	y := x.Sum()
	for _, c := range []struct {
		name, want string
		err        func() error
	}{
		{"grad/y", `grad: argument "y" was released`, func() error { _, err := Grad(released, []*Tensor{x}); return err }},
		{"grad/xs", `grad: argument "xs[1]" is nil`, func() error { _, err := Grad(y, []*Tensor{x, nil}); return err }},
		{"grad/unused", `grad: argument "xs[1]" is not used`, func() error {
			_, err := Grad(y, []*Tensor{x, Ones(CPU, Float32, 2).RequireGrad()})
			return err
		}},
		{"compose/nil", `compose: argument "f" is nil`, func() error { return Compose(nil, x).Err() }},
		{"autocast/nil", `autocast: argument "f" is nil`, func() error { return Autocast(BFloat16, nil) }},
		{"when_ready/nil-leaf", `backward: argument "leaves[1]" is nil`, func() error {
			return x.Mul(x).Sum().Backward(WhenReady([]*Tensor{x, nil}, func(int, *Tensor) error { return nil }))
		}},
		{"no_grad/nil", "", func() error { NoGrad(nil); return nil }}, // nothing to run: no panic
		{"compose", `compose: argument "f" returned a nil or zero Tensor`,
			func() error { return Compose(func([]*Tensor) *Tensor { return &Tensor{} }, x).Err() }},
		{"string", `string: argument "x" was released (do not use a tensor after Release) [called at errors_test.go:`,
			func() error { return errors.New(fmt.Sprint(released)) }},
	} {
		if err := c.err(); (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// An error sticks to everything computed from a failed tensor, and each
// method that hands data back returns it.
func TestStickyError(t *testing.T) {
	bad := Ones(CPU, Float32, 2).Add(Ones(CPU, Float32, 3))
	y := bad.Exp().MulScalar(2).Add(Ones(CPU, Float32, 2)).ReLU()
	if !errors.Is(y.Err(), ErrShape) || y.Err() != bad.Err() {
		t.Fatalf("downstream error %v, want the original %v", y.Err(), bad.Err())
	}
	if _, err := y.Float32s(); err != bad.Err() {
		t.Errorf("Float32s error %v, want %v", err, bad.Err())
	}
	if _, err := y.Item(); err != bad.Err() {
		t.Errorf("Item error %v, want %v", err, bad.Err())
	}
	if y.Shape() != nil || y.Rank() != -1 {
		t.Errorf("failed tensor has shape %v rank %d", y.Shape(), y.Rank())
	}
	if !strings.Contains(y.String(), "failed") {
		t.Errorf("String of a failed tensor = %q", y.String())
	}
	ok := Ones(CPU, Float32, 2)
	if z := ok.Add(bad); z.Err() != bad.Err() {
		t.Errorf("failed argument's error not passed on: %v", z.Err())
	}
}

func TestDataOutChecksDType(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2})
	if _, err := x.Float64s(); !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), ".Cast(lathe.Float64)") {
		t.Fatalf("Float64s on float32: %v", err)
	}
	if _, err := x.Item(); !errors.Is(err, ErrShape) {
		t.Fatalf("Item on two elements: %v", err)
	}
}

func TestDeviceStatus(t *testing.T) {
	st := DeviceStatus()
	seen := map[string]bool{}
	for _, d := range st {
		seen[d.Device.String()] = true
		if !d.Available && (d.Err == nil || !errors.Is(d.Err, ErrUnavailable)) {
			t.Errorf("%v unavailable without an ErrUnavailable reason: %v", d.Device, d.Err)
		}
		if !d.Available {
			t.Logf("%v: skipped: %s", d.Device, d.Detail)
		}
	}
	for _, want := range []string{"cpu", "cuda:0", "wgpu:0"} {
		if !seen[want] {
			t.Errorf("DeviceStatus has no entry for %s", want)
		}
	}
	if devs := Devices(); len(devs) == 0 || devs[0] != CPU {
		t.Errorf("Devices() = %v, want cpu first", devs)
	}
}

// TestNilOptions: a nil option value sets nothing, for every option type
// (five of them called it and panicked).
func TestNilOptions(t *testing.T) {
	x := RandN(CPU, Float32, 1, 1, 4, 4).RequireGrad()
	labels := FromSlice(CPU, []int64{0, 1, 2, 3})
	for name, run := range map[string]func() error{
		"GradOption":      func() error { return x.Sum().Backward(GradOption(nil)) },
		"AttentionOption": func() error { return ScaledDotProductAttention(x, x, x, AttentionOption(nil)).Err() },
		"LossOption":      func() error { return x.Reshape(4, 4).CrossEntropy(labels, LossOption(nil)).Err() },
		"PadOption":       func() error { return x.Pad([]int{1, 1}, 0, PadOption(nil)).Err() },
		"WindowOption":    func() error { return x.MaxPool2d(2, WindowOption(nil)).Err() },
		"InterpOption":    func() error { return x.Interpolate(Size(8, 8), InterpOption(nil)).Err() },
		"GridOption":      func() error { return GridSample(x, Zeros(CPU, Float32, 1, 2, 2, 2), GridOption(nil)).Err() },
	} {
		if err := run(); err != nil {
			t.Errorf("%s(nil): %v", name, err)
		}
	}
}

// TestFormsNameTheirCall: an op with several forms (a layer norm with and
// without its affine parameters, a loss with and without class weights, a
// linear layer with and without a bias) names the call in its errors, not
// the form (they named layer_norm_affine, nll_loss_weighted,
// cross_entropy_weighted and linear_no_bias).
func TestFormsNameTheirCall(t *testing.T) {
	released := func() *Tensor {
		r := Ones(CPU, Float32, 3)
		r.Release()
		return r
	}
	x := RandN(CPU, Float32, 2, 3)
	target := FromSlice(CPU, []int64{0, 2})
	for _, c := range []struct {
		op, arg string
		got     *Tensor
	}{
		{"layer_norm", "weight", x.LayerNorm([]int{3}, released(), Zeros(CPU, Float32, 3), 1e-5)},
		{"layer_norm", "bias", x.LayerNorm([]int{3}, Ones(CPU, Float32, 3), released(), 1e-5)},
		{"nll_loss", "weight", x.NLLLoss(target, ClassWeights(released()))},
		{"cross_entropy", "weight", x.CrossEntropy(target, ClassWeights(released()))},
		{"linear", "w", x.Linear(released(), nil)},
		{"linear", "b", x.Linear(Ones(CPU, Float32, 4, 3), released())},
	} {
		var e *Error
		if err := c.got.Err(); !errors.As(err, &e) || e.Op != c.op || e.Arg != c.arg || !errors.Is(err, ErrReleased) {
			t.Errorf("%s with a released %s: %v, want an ErrReleased that names %s and %q", c.op, c.arg, err, c.op, c.arg)
		}
	}
}
