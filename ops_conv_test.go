package lathe

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The forward, gradient and Hessian-vector values are checked against
// PyTorch in internal/conformance (conv.json, grad_conv.json); here, what
// only lathe does: its errors, and a gradient penalty checked by finite
// differences.

func TestConvErrors(t *testing.T) {
	x := Zeros(CPU, Float32, 1, 2, 5, 5)
	w := Zeros(CPU, Float32, 3, 2, 3, 3)
	bad := failed(errorf("earlier", ErrValue, "", "failed before", ""))
	cases := []struct {
		name string
		got  *Tensor
		kind error
		arg  string
	}{
		{"conv2d/nil_w", x.Conv2d(nil, nil), ErrValue, ""},
		{"conv2d/nil_x", (*Tensor)(nil).Conv2d(w, nil), ErrValue, ""},
		{"conv2d/failed_b", x.Conv2d(w, bad), ErrValue, ""},
		{"conv2d/rank", x.Conv1d(Zeros(CPU, Float32, 3, 2, 3), nil), ErrShape, "x"},
		{"conv2d/w_rank", x.Conv2d(Zeros(CPU, Float32, 3, 2, 3), nil), ErrShape, "w"},
		{"conv2d/stride_count", x.Conv2d(w, nil, Stride(1, 2, 3)), ErrValue, "stride"},
		{"conv2d/dilation0", x.Conv2d(w, nil, Dilation(0)), ErrValue, "dilation"},
		{"conv2d/groups-1", x.Conv2d(w, nil, Groups(-1)), ErrValue, "groups"},
		{"conv2d/groups0", x.Conv2d(w, nil, Groups(0)), ErrValue, "groups"},
		{"conv2d/groups", x.Conv2d(w, nil, Groups(2)), ErrShape, "w"},
		{"conv2d/output_padding", x.Conv2d(w, nil, OutputPadding(1)), ErrValue, "output_padding"},
		{"conv2d/same_and_padding", x.Conv2d(w, nil, PaddingSame(), Padding(1)), ErrValue, "padding"},
		{"conv2d/same_strided", x.Conv2d(w, nil, PaddingSame(), Stride(2)), ErrValue, "padding"},
		{"conv2d/bias_rank", x.Conv2d(w, Zeros(CPU, Float32, 3, 1)), ErrShape, "b"},
		{"conv2d/bias_dtype", x.Conv2d(w, Zeros(CPU, Float64, 3)), ErrDType, "b"},
		{"conv2d/too_small", x.Conv2d(Zeros(CPU, Float32, 3, 2, 6, 6), nil), ErrShape, "x"},
		{"conv_transpose2d/same", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 3, 3), nil, PaddingSame()), ErrValue, "padding"},
		{"conv_transpose2d/output_padding", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 3, 3), nil, OutputPadding(1)), ErrValue, "output_padding"},
		{"conv_transpose2d/output_padding_at_dilation", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 3, 3), nil, Stride(2), Dilation(2), OutputPadding(2)), ErrValue, "output_padding"},
		{"conv_transpose1d/size_overflow", Zeros(CPU, Float32, 1, 2, 5).ConvTranspose1d(Zeros(CPU, Float32, 2, 3, 3), nil, Stride(math.MaxInt/2)), ErrShape, "x"},
		{"conv_transpose2d/padding", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 1, 1), nil, Padding(3)), ErrShape, "x"},
		{"conv_transpose2d/channels", x.ConvTranspose2d(Zeros(CPU, Float32, 3, 3, 3, 3), nil), ErrShape, "w"},
		{"conv_transpose2d/dtype", x.ConvTranspose2d(Zeros(CPU, Float64, 2, 3, 3, 3), nil), ErrDType, "w"},
		{"conv_transpose2d/int", Zeros(CPU, Int32, 1, 2, 3, 3).ConvTranspose2d(Zeros(CPU, Int32, 2, 3, 3, 3), nil), ErrDType, "x"},
		{"conv_transpose2d/stride0", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 3, 3), nil, Stride(0)), ErrValue, "stride"},
		{"conv_transpose1d/w_rank", Zeros(CPU, Float32, 1, 2, 5).ConvTranspose1d(w, nil), ErrShape, "w"},
		{"conv_transpose3d/rank", Zeros(CPU, Float32, 2, 3).ConvTranspose3d(w, nil), ErrShape, "x"}, // 4-d x is unbatched there
		{"conv_transpose2d/w_rank", x.ConvTranspose2d(Zeros(CPU, Float32, 2, 3, 3), nil), ErrShape, "w"},
		{"unfold/kernel_count", x.Unfold([]int{2, 2, 2}), ErrValue, "kernel_size"},
		{"unfold/no_kernel", x.Unfold(nil), ErrValue, "kernel_size"},
		{"unfold/groups", x.Unfold([]int{2}, Groups(2)), ErrValue, ""},
		{"fold/output_size", Zeros(CPU, Float32, 1, 8, 16).Fold([]int{5, 5, 5}, []int{2}), ErrValue, "output_size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			var le *Error
			switch {
			case err == nil:
				t.Fatalf("no error, want %v", c.kind)
			case !errors.Is(err, c.kind):
				t.Fatalf("error %v, want kind %v", err, c.kind)
			case !errors.As(err, &le):
				t.Fatalf("error %v is not a *lathe.Error", err)
			case c.arg != "" && le.Arg != c.arg:
				t.Fatalf("error %v names argument %q, want %q", err, le.Arg, c.arg)
			case !strings.HasPrefix(err.Error(), "lathe: "):
				t.Fatalf("error %q does not start with lathe:", err)
			}
		})
	}
	// The user reads the op they called, not the op it is built on.
	if err := x.Conv2d(Zeros(CPU, Float32, 3, 1, 3, 3), nil).Err(); !strings.HasPrefix(err.Error(), "lathe: conv2d: ") {
		t.Errorf("error %q does not name conv2d", err)
	}
}

// TestConvTransposeOutputPaddingPastStride: output_padding at or past the
// stride but below the dilation, which PyTorch takes; with padding, the
// extra places hold taps of the last input places, not only zeros. The
// values are torch 1.13's, in float64:
//
//	x = torch.tensor([[[1., 2., -3.]]], dtype=torch.float64, requires_grad=True)
//	w = torch.tensor([.5, -1., 2., 1.5, .25, -2.], dtype=torch.float64).reshape(1, 2, 3).requires_grad_()
//	y = F.conv_transpose1d(x, w, stride=2, padding=3, dilation=3, output_padding=2)
//	g = torch.arange(y.numel(), dtype=torch.float64).reshape(y.shape)
//	gx, gw = torch.autograd.grad(y, (x, w), g)
//	x2 = torch.arange(6., dtype=torch.float64).reshape(1, 1, 2, 3) - 2
//	w2 = torch.tensor([1., -2., .5, 3.], dtype=torch.float64).reshape(1, 1, 2, 2)
//	y2 = F.conv_transpose2d(x2, w2, stride=(1, 2), padding=(1, 0), dilation=(3, 1), output_padding=(2, 1))
func TestConvTransposeOutputPaddingPastStride(t *testing.T) {
	devices := []Device{CPU}
	if gpu := fzGPUFor(t); gpu != nil {
		devices = append(devices, *gpu)
	}
	for _, dev := range devices {
		for _, dt := range []DType{Float64, Float32} {
			if dev != CPU && dt == Float64 {
				continue // wgpu has no float64
			}
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				x := FromSlice(CPU, []float64{1, 2, -3}, 1, 1, 3).Cast(dt).To(dev).RequireGrad()
				w := FromSlice(CPU, []float64{.5, -1, 2, 1.5, .25, -2}, 1, 2, 3).Cast(dt).To(dev).RequireGrad()
				y := x.ConvTranspose1d(w, nil, Stride(2), Padding(3), Dilation(3), OutputPadding(2))
				checkValues(t, y, []int{1, 2, 7}, []float64{-1, -1.5, -2, 2, 3, 4, 0, 0.25, -4.5, 0.5, -2, -0.75, -4, 0}, 1e-5)
				g := Arange(dev, dt, 0, 14, 1).Reshape(1, 2, 7)
				gs, err := Grad(y, []*Tensor{x, w}, WithGradient(g))
				if err != nil {
					t.Fatal(err)
				}
				checkValues(t, gs[0], []int{1, 1, 3}, []float64{-12.25, -13.75, 11.25}, 1e-5)
				checkValues(t, gs[1], []int{1, 2, 3}, []float64{-3, -8, 13, -24, -8, 34}, 1e-5)

				x2 := Arange(dev, dt, -2, 4, 1).Reshape(1, 1, 2, 3)
				w2 := FromSlice(CPU, []float64{1, -2, .5, 3}, 1, 1, 2, 2).Cast(dt).To(dev)
				y2 := x2.ConvTranspose2d(w2, nil, Stride(1, 2), Padding(1, 0), Dilation(3, 1), OutputPadding(2, 1))
				checkValues(t, y2, []int{1, 1, 5, 7}, []float64{1, -2, 2, -4, 3, -6, 0, 0, 0, 0, 0, 0, 0, 0,
					-1, -6, -0.5, -3, 0, 0, 0, 0.5, 3, 1, 6, 1.5, 9, 0, 0, 0, 0, 0, 0, 0, 0}, 1e-5)
			})
		}
	}
}

// TestConvGradPenalty differentiates a WGAN-GP style penalty, the squared
// norm of a conv critic's gradient with respect to its input, with respect
// to the critic's weights, and checks it against central differences of the
// penalty. This runs the rules of conv's two backward ops.
func TestConvGradPenalty(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	data := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = r.NormFloat64() * 0.5
		}
		return d
	}
	xd, wd, vd := data(2*2*5*5), data(3*2*3*3), data(3*3*3*3)
	penalty := func(wv []float64, create bool) (*Tensor, *Tensor) {
		x := FromSlice(CPU, xd, 2, 2, 5, 5).RequireGrad()
		w := FromSlice(CPU, wv, 3, 2, 3, 3)
		if create {
			w = w.RequireGrad()
		}
		v := FromSlice(CPU, vd, 3, 3, 3, 3)
		// critic: conv, tanh, transposed conv back to a map, weighted sum.
		h := x.Conv2d(w, nil, Stride(1), Padding(0)).Tanh()
		d := h.Conv2d(v, nil, Padding(1)).ConvTranspose2d(w, nil).Square().Sum()
		gs, err := Grad(d, []*Tensor{x}, CreateGraph())
		if err != nil {
			t.Fatal(err)
		}
		return gs[0].Square().Sum(), w
	}
	gp, w := penalty(wd, true)
	got, err := Grad(gp, []*Tensor{w})
	if err != nil {
		t.Fatal(err)
	}
	g, err := got[0].Float64s()
	if err != nil {
		t.Fatal(err)
	}
	const h = 1e-6
	for i := range wd {
		at := func(delta float64) float64 {
			wv := append([]float64(nil), wd...)
			wv[i] += delta
			p, _ := penalty(wv, false)
			v, err := p.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			return v[0]
		}
		fd := (at(h) - at(-h)) / (2 * h)
		if math.Abs(fd-g[i]) > 1e-6*max(1, math.Abs(fd)) {
			t.Errorf("d penalty / d w[%d] = %v, finite difference %v", i, g[i], fd)
		}
	}
}

// TestConvPaddingSame checks the asymmetric case against the explicit
// padding it stands for: an even kernel pads one more on the right.
func TestConvPaddingSame(t *testing.T) {
	x := Arange(CPU, Float64, 0, 2*4*5, 1).Reshape(1, 2, 4, 5)
	w := Arange(CPU, Float64, 0, 2*2*2*4, 1).DivScalar(10).Reshape(2, 2, 2, 4)
	same := x.Conv2d(w, nil, PaddingSame())
	explicit := x.Pad([]int{1, 2, 0, 1}, 0).Conv2d(w, nil)
	a, err := same.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	b, err := explicit.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	if s := same.Shape(); s[2] != 4 || s[3] != 5 {
		t.Fatalf("shape %v, want [1 2 4 5]", s)
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same padding %v, explicit %v", a, b)
		}
	}
}

// TestConvUnbatched checks the convolutions on an unbatched (C, d1, ...)
// input, which torch 1.13 takes and lathe refused (ErrShape "needs 4
// dims"); the values are torch's:
//
//	x = torch.arange(18., dtype=torch.float64).reshape(2, 3, 3) / 4 - 1
//	w = torch.arange(16., dtype=torch.float64).reshape(2, 2, 2, 2) / 8 - 1
//	y = F.conv2d(x.requires_grad_(), w, None, padding=1, dilation=2); y.sum().backward()  # y, x.grad
//	x1 = torch.arange(6., dtype=torch.float64).reshape(2, 3) / 2 - 1
//	w1 = torch.arange(8., dtype=torch.float64).reshape(2, 2, 2) / 4 - 1
//	F.conv_transpose1d(x1, w1, torch.tensor([.5, -.5], dtype=torch.float64), stride=2)
//	F.conv3d(torch.ones(1, 2, 2, 2), torch.ones(1, 1, 1, 1, 1)).shape  # [1, 2, 2, 2]: C=1, not N=1
func TestConvUnbatched(t *testing.T) {
	x := Arange(CPU, Float64, 0, 18, 1).Reshape(2, 3, 3).DivScalar(4).SubScalar(1).RequireGrad()
	w := Arange(CPU, Float64, 0, 16, 1).Reshape(2, 2, 2, 2).DivScalar(8).SubScalar(1)
	y := x.Conv2d(w, nil, Padding(1), Dilation(2))
	want := []float64{-0.28125, -0.78125, -0.5625, -0.75, -1.9375, -1.3125, -0.84375, -1.90625, -1.125,
		1.96875, 3.71875, 1.6875, 3.75, 7.0625, 3.1875, 1.40625, 2.59375, 1.125}
	checkConvValues(t, "conv2d", y, []int{2, 3, 3}, want)
	g, err := Grad(y.Sum(), []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	checkConvValues(t, "conv2d grad", g[0], []int{2, 3, 3},
		[]float64{-1, -1.75, -0.75, -1.5, -2.5, -1, -0.5, -0.75, -0.25, 0, 0.25, 0.25, 0.5, 1.5, 1, 0.5, 1.25, 0.75})

	x1 := Arange(CPU, Float64, 0, 6, 1).Reshape(2, 3).DivScalar(2).SubScalar(1)
	w1 := Arange(CPU, Float64, 0, 8, 1).Reshape(2, 2, 2).DivScalar(4).SubScalar(1)
	checkConvValues(t, "conv_transpose1d", x1.ConvTranspose1d(w1, FromSlice(CPU, []float64{0.5, -0.5}, 2), Stride(2)), []int{2, 6},
		[]float64{1.5, 1.375, 1, 1.125, 0.5, 0.875, 0.25, 0.125, 0.25, 0.375, 0.25, 0.625})

	y3 := Ones(CPU, Float64, 1, 2, 2, 2).Conv3d(Ones(CPU, Float64, 1, 1, 1, 1, 1), nil)
	checkConvValues(t, "conv3d", y3, []int{1, 2, 2, 2}, []float64{1, 1, 1, 1, 1, 1, 1, 1})
}

func checkConvValues(t *testing.T, name string, y *Tensor, shape []int, want []float64) {
	t.Helper()
	got, err := y.Float64s()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !slicesEqualInt(y.Shape(), shape) {
		t.Fatalf("%s: shape %v, want %v", name, y.Shape(), shape)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
	}
}

func slicesEqualInt(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
