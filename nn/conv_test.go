package nn

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Conv2d's forward against torch.nn.functional.conv2d with the same
// weights, stride (2, 1) and padding 1 (torchConv2d, written by
// build/torchref/literals.py).
func TestConv2dMatchesTorch(t *testing.T) {
	want := torchConv2d
	for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
		t.Run(dt.String(), func(t *testing.T) {
			c := NewConv2d(2, 2, 0, KernelSize(2, 1), WithDType(dt), Stride(2, 1), Padding(1))
			c.Weight = toDType(t, []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8}, dt, 2, 2, 2, 1)
			c.Bias = toDType(t, []float64{0.01, -0.02}, dt, 2)
			x := lathe.Arange(lathe.CPU, dt, 0, 18, 1).DivScalar(10).Reshape(1, 2, 3, 3)
			y := c.Forward(x)
			if !slices.Equal(y.Shape(), []int{1, 2, 2, 5}) {
				t.Fatalf("shape %v (%v)", y.Shape(), y.Err())
			}
			tol := 1e-15
			if dt == lathe.Float32 {
				tol = 1e-6
			}
			assertClose(t, "y", values(t, y), want, tol)
		})
	}
}

func TestConv2dInit(t *testing.T) {
	lathe.Seed(7)
	c := NewConv2d(4, 6, 3, Groups(2))
	if !slices.Equal(c.Weight.Shape(), []int{6, 2, 3, 3}) || !slices.Equal(c.Bias.Shape(), []int{6}) {
		t.Fatalf("weight %v, bias %v", c.Weight.Shape(), c.Bias.Shape())
	}
	if !c.Weight.RequiresGrad() || !c.Weight.IsLeaf() || !c.Bias.RequiresGrad() {
		t.Fatal("parameters must be leaves that require a gradient")
	}
	bound := 1 / math.Sqrt(2*3*3) // fan_in = in/groups·kh·kw
	for _, p := range c.Parameters() {
		v := values(t, p.T)
		lo, hi := slices.Min(v), slices.Max(v)
		if lo < -bound || hi > bound || hi-lo < bound {
			t.Errorf("%s in [%v, %v], want spread over [-%v, %v]", p.Name, lo, hi, bound, bound)
		}
	}
	// Gradients reach both parameters through a grouped, padded convolution.
	c.Window = []lathe.WindowOption{lathe.PaddingSame()}
	y := c.Forward(lathe.RandN(lathe.CPU, lathe.Float32, 2, 4, 5, 5))
	if !slices.Equal(y.Shape(), []int{2, 6, 5, 5}) {
		t.Fatalf("shape %v (%v)", y.Shape(), y.Err())
	}
	if err := y.Square().Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if g := c.Weight.Grad(); g == nil || !slices.Equal(g.Shape(), []int{6, 2, 3, 3}) {
		t.Fatalf("weight gradient %v", g)
	}
	if g := c.Bias.Grad(); g == nil || !slices.Equal(g.Shape(), []int{6}) {
		t.Fatalf("bias gradient %v", g)
	}
	if ps := NewConv2d(3, 4, 2, NoBias()).Parameters(); len(ps) != 1 {
		t.Fatalf("NoBias gave %d parameters", len(ps))
	}
}

func TestConv2dErrors(t *testing.T) {
	for name, c := range map[string]*Conv2d{
		"groups":  NewConv2d(3, 4, 3, Groups(2)),
		"kernel":  NewConv2d(3, 4, 3, KernelSize(3, 3, 3)),
		"zero_in": NewConv2d(0, 4, 3),
		"groups0": NewConv2d(3, 4, 3, Groups(0)),
	} {
		if err := c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3, 5, 5)).Err(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("%s: error %v, want ErrValue", name, err)
		}
	}
	c := NewConv2d(3, 4, 3)
	if err := c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 5, 5)).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Errorf("wrong channels: error %v, want ErrShape", err)
	}
}

// convLayer builds the convolution layer of rank nd (1, 2, 3), a
// transposed one when transposed is true.
func convLayer(transposed bool, nd, in, out, kernel int, opts ...Option) Module {
	switch {
	case transposed && nd == 1:
		return NewConvTranspose1d(in, out, kernel, opts...)
	case transposed && nd == 2:
		return NewConvTranspose2d(in, out, kernel, opts...)
	case transposed:
		return NewConvTranspose3d(in, out, kernel, opts...)
	case nd == 1:
		return NewConv1d(in, out, kernel, opts...)
	case nd == 3:
		return NewConv3d(in, out, kernel, opts...)
	}
	return NewConv2d(in, out, kernel, opts...)
}

// wantArgErr fails t unless err is of kind naming arg.
func wantArgErr(t *testing.T, err, kind error, arg string) {
	t.Helper()
	var e *lathe.Error
	if !errors.Is(err, kind) || !errors.As(err, &e) || e.Arg != arg {
		t.Errorf("error %v, want a %v naming %q", err, kind, arg)
	}
}

// The convolution layers share their constructor: each refuses what
// torch's _ConvNd refuses with an ErrValue that names the argument, and
// Forward refuses an input of the wrong rank or channel count with an
// ErrShape that names x (or the weight whose channels x does not match).
func TestConvLayersErrors(t *testing.T) {
	for _, transposed := range []bool{false, true} {
		for nd := 1; nd <= 3; nd++ {
			name := strconv.Itoa(nd) + "d"
			if transposed {
				name = "transpose" + name
			}
			layer := func(in, out, kernel int, opts ...Option) Module {
				return convLayer(transposed, nd, in, out, kernel, opts...)
			}
			for _, tc := range []struct {
				name, arg string
				m         Module
			}{
				{"kernel0", "kernel_size", layer(3, 4, 0)},
				{"kernel_count", "kernel_size", layer(3, 4, 3, KernelSize(slices.Repeat([]int{2}, nd+1)...))},
				{"kernel_negative", "kernel_size", layer(3, 4, 0, KernelSize(slices.Repeat([]int{-1}, nd)...))},
				{"kernel_huge", "kernel_size", layer(3, 4, math.MaxInt/2)},
				{"in_groups", "in_channels", layer(3, 4, 3, Groups(2))},
				{"out_groups", "out_channels", layer(4, 3, 3, Groups(2))},
				{"groups0", "groups", layer(4, 4, 3, Groups(0))},
				{"in0", "in_channels", layer(0, 4, 3)},
				{"out_negative", "out_channels", layer(3, -1, 3)},
				{"same_strided", "padding", layer(3, 4, 3, PaddingSame(), Stride(2))},
				{"stride_count", "stride", layer(3, 4, 3, Stride(slices.Repeat([]int{1}, nd+1)...))},
				{"dilation_count", "dilation", layer(3, 4, 3, Dilation(slices.Repeat([]int{1}, nd+1)...))},
				{"option", "mode", layer(3, 4, 3, Mode("bilinear"))},
			} {
				t.Run(name+"/"+tc.name, func(t *testing.T) {
					wantArgErr(t, Err(tc.m), lathe.ErrValue, tc.arg)
					y := tc.m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, append([]int{1, 3}, slices.Repeat([]int{5}, nd)...)...))
					wantArgErr(t, y.Err(), lathe.ErrValue, tc.arg)
				})
			}
			m := layer(3, 4, 3)
			for _, tc := range []struct {
				name, arg string
				shape     []int
			}{
				{"rank_low", "x", slices.Repeat([]int{5}, nd)},
				{"rank_high", "x", append([]int{1, 1, 3}, slices.Repeat([]int{5}, nd)...)},
				{"channels", "w", append([]int{1, 2}, slices.Repeat([]int{5}, nd)...)},
			} {
				t.Run(name+"/forward_"+tc.name, func(t *testing.T) {
					wantArgErr(t, m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, tc.shape...)).Err(), lathe.ErrShape, tc.arg)
				})
			}
			if !transposed {
				small := append([]int{1, 3}, slices.Repeat([]int{2}, nd)...)
				wantArgErr(t, m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, small...)).Err(), lathe.ErrShape, "x")
			}
			if err := m.Forward(nil).Err(); !errors.Is(err, lathe.ErrValue) {
				t.Errorf("%s: nil x gave %v, want ErrValue", name, err)
			}
		}
	}
}

// A transposed convolution's PaddingSame, an output padding at both the
// stride and the dilation, and an output size out of range or of the wrong
// count are ErrValues that name the argument, as torch's ValueErrors.
func TestConvTransposeErrors(t *testing.T) {
	wantArgErr(t, Err(NewConvTranspose2d(2, 2, 3, PaddingSame())), lathe.ErrValue, "padding")
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 4, 4)
	wantArgErr(t, NewConvTranspose2d(2, 2, 3, Stride(2), OutputPadding(2)).Forward(x).Err(), lathe.ErrValue, "output_padding")
	wantArgErr(t, NewConvTranspose2d(2, 2, 3, Stride(2, 1), OutputPadding(1)).Forward(x).Err(), lathe.ErrValue, "output_padding")
	c := NewConvTranspose2d(2, 2, 3, Stride(2))
	// Each output size can be 9 (x's 4 → (4-1)·2+3) or 10.
	for _, size := range [][]int{{8, 9}, {9, 11}, {9}, {1, 9, 9}, {}} {
		wantArgErr(t, c.ForwardSize(x, size...).Err(), lathe.ErrValue, "output_size")
	}
	for _, size := range [][]int{{9, 10}, {1, 2, 10, 9}, {7, 7, 10, 10}} {
		if y := c.ForwardSize(x, size...); y.Err() != nil || !slices.Equal(y.Shape()[2:], size[len(size)-2:]) {
			t.Errorf("size %v: %v (%v)", size, y.Shape(), y.Err())
		}
	}
	wantArgErr(t, c.ForwardSize(lathe.Zeros(lathe.CPU, lathe.Float32, 4, 4), 9, 9).Err(), lathe.ErrShape, "x")
	if err := c.ForwardSize(nil, 9, 9).Err(); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("nil x: %v", err)
	}
}

// The convolution layers have torch's weight shapes ([out, in/groups, k...],
// transposed [in, out/groups, k...]) and initial ranges (fan_in = the
// weight's size(1)·prod(kernel)), take an unbatched input, and pass
// gradients to both parameters.
func TestConvLayersInitAndUnbatched(t *testing.T) {
	lathe.Seed(3)
	for i := range 6 {
		transposed, nd := i >= 3, i%3+1
		name := strconv.Itoa(nd) + "d"
		if transposed {
			name = "transpose" + name
		}
		t.Run(name, func(t *testing.T) {
			k := []int{3, 2, 4}[:nd]
			m := convLayer(transposed, nd, 4, 6, 0, KernelSize(k...), Groups(2), Padding(1))
			ps := m.Parameters()
			want := append([]int{6, 2}, k...)
			if transposed {
				want[0], want[1] = 4, 3
			}
			if !slices.Equal(ps[0].T.Shape(), want) || !slices.Equal(ps[1].T.Shape(), []int{6}) {
				t.Fatalf("weight %v, bias %v; want %v and [6]", ps[0].T.Shape(), ps[1].T.Shape(), want)
			}
			fanIn := want[1]
			for _, n := range k {
				fanIn *= n
			}
			bound := 1 / math.Sqrt(float64(fanIn))
			for i, p := range ps {
				v := values(t, p.T)
				// The weight's many draws spread over the range; the bias's six may not.
				if lo, hi := slices.Min(v), slices.Max(v); lo < -bound || hi > bound || i == 0 && hi-lo < bound {
					t.Errorf("%s in [%v, %v], want spread over [-%v, %v]", p.Name, lo, hi, bound, bound)
				}
			}
			spatial := slices.Repeat([]int{5}, nd)
			x := lathe.RandN(lathe.CPU, lathe.Float32, append([]int{2, 4}, spatial...)...)
			y := m.Forward(x)
			one := m.Forward(x.Narrow(0, 1, 1).Squeeze(0))
			if y.Err() != nil || one.Err() != nil || !slices.Equal(one.Shape(), y.Shape()[1:]) {
				t.Fatalf("batched %v (%v), unbatched %v (%v)", y.Shape(), y.Err(), one.Shape(), one.Err())
			}
			assertClose(t, "unbatched", values(t, one), values(t, y.Narrow(0, 1, 1).Squeeze(0)), 1e-6)
			if err := y.Square().Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if g := p.T.Grad(); g == nil || !slices.Equal(g.Shape(), p.T.Shape()) {
					t.Errorf("%s gradient %v", p.Name, g)
				}
			}
		})
	}
}

// PaddingMode: an unknown mode, a mode other than "zeros" on a transposed
// convolution, and negative padding in a mode are ErrValues naming the
// argument, as torch's ValueErrors; x of the wrong rank goes to the op,
// which names it, and padding that reflect cannot give (at least the
// dim's size) is an error, not a panic. x stays usable after a backward
// through the padded copy.
func TestConvPaddingModeErrors(t *testing.T) {
	wantArgErr(t, Err(NewConv2d(2, 2, 3, Padding(1), PaddingMode("mirror"))), lathe.ErrValue, "padding_mode")
	wantArgErr(t, Err(NewConvTranspose1d(2, 2, 3, PaddingMode("reflect"))), lathe.ErrValue, "padding_mode")
	wantArgErr(t, Err(NewConv1d(2, 2, 3, Padding(-1), PaddingMode("circular"))), lathe.ErrValue, "padding")
	wantArgErr(t, Err(NewConv1d(2, 2, 3, PaddingSame(), Stride(2), PaddingMode("reflect"))), lathe.ErrValue, "padding")
	wantArgErr(t, Err(NewConv2d(2, 2, 3, Padding(1, 1, 1), PaddingMode("reflect"))), lathe.ErrValue, "padding")
	if err := Err(NewConvTranspose3d(2, 2, 3, PaddingMode("zeros"))); err != nil {
		t.Errorf("ConvTranspose3d with zeros: %v", err)
	}
	c := NewConv2d(2, 3, 3, Padding(2), PaddingMode("reflect"))
	wantArgErr(t, c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 2, 3, 3)).Err(), lathe.ErrShape, "x")
	wantArgErr(t, c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 3, 3)).Err(), lathe.ErrShape, "x")
	if err := c.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 2, 5)).Err(); err == nil {
		t.Error("reflect padding 2 of a dim of 2 gave no error")
	}
	if err := c.Forward(nil).Err(); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("nil x: %v", err)
	}
	x := lathe.RandN(lathe.CPU, lathe.Float32, 1, 2, 4, 5).RequireGrad()
	y := c.Forward(x)
	if !slices.Equal(y.Shape(), []int{1, 3, 6, 7}) {
		t.Fatalf("shape %v (%v)", y.Shape(), y.Err())
	}
	if err := y.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(x).Err(); err != nil || x.Grad() == nil {
		t.Errorf("x after the backward: %v, gradient %v", err, x.Grad())
	}
}

// ForwardSize computes the output padding from the constructor's window:
// with Window edited since (a stride of 3 for 2), it returned another size
// than the one asked for, silently; it fails naming output_size now. A
// dilation below 1 or a padding that leaves no output was an output_size
// error with an empty or negative range; the op names them.
func TestConvTransposeForwardSizeWindow(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 4, 4)
	c := NewConvTranspose2d(2, 3, 3, Stride(2))
	c.Window = []lathe.WindowOption{lathe.Stride(3)}
	y := c.ForwardSize(x, 10, 10)
	wantArgErr(t, y.Err(), lathe.ErrValue, "output_size")
	// A layer built by hand: its Forward without the size gave 9×9 for
	// 10×10, silently.
	bare := ConvTranspose2d{ConvNd{Weight: lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3, 3, 3), Window: []lathe.WindowOption{lathe.Stride(2)}, Groups: 1}}
	wantArgErr(t, bare.ForwardSize(x, 10, 10).Err(), lathe.ErrValue, "output_size")
	wantArgErr(t, NewConvTranspose2d(2, 3, 3, Dilation(0)).ForwardSize(x, 6, 6).Err(), lathe.ErrValue, "dilation")
	wantArgErr(t, NewConvTranspose2d(2, 3, 3, Padding(100)).ForwardSize(x, 6, 6).Err(), lathe.ErrShape, "x") // "an output size below 1 with padding"
}

// A padding that the padding mode cannot make (reflect's at least the
// input's size, as torch refuses, circular's past one wrap, replicate's of
// an empty dim) was pad's error naming "pads", an argument of an op the
// caller never called; it names the layer's padding.
func TestConvPaddingModeTooLarge(t *testing.T) {
	for _, c := range []struct {
		mode string
		pad  int
		x    []int
	}{{"reflect", 5, []int{1, 2, 5}}, {"reflect", 3, []int{2, 3}}, {"circular", 6, []int{1, 2, 5}}, {"replicate", 1, []int{1, 2, 0}}} {
		m := NewConv1d(2, 3, 1, Padding(c.pad), PaddingMode(c.mode))
		err := m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, c.x...)).Err()
		wantArgErr(t, err, lathe.ErrShape, "padding")
		if err != nil && !strings.Contains(err.Error(), "lathe: conv1d:") {
			t.Errorf("%s: %v does not name conv1d", c.mode, err)
		}
	}
	m := NewConv2d(2, 3, 3, PaddingSame(), PaddingMode("reflect"))
	err := m.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 1, 4)).Err()
	wantArgErr(t, err, lathe.ErrShape, "padding")
	if err != nil && !strings.Contains(err.Error(), `"same"`) {
		t.Errorf("same: %v", err)
	}
}

// A "same" padding of dilation·(k-1) that overflows was computed anyway:
// with a padding mode, Forward failed naming a padding of garbage values
// (-4611686018427387904); the constructor names the dilation.
func TestConvSameHugeDilation(t *testing.T) {
	for _, mode := range []string{"zeros", "reflect", "circular"} {
		wantArgErr(t, Err(NewConv1d(2, 3, 3, PaddingSame(), PaddingMode(mode), Dilation(1<<62))), lathe.ErrValue, "dilation")
	}
	if err := Err(NewConv1d(2, 3, 1, PaddingSame(), PaddingMode("reflect"), Dilation(1<<62))); err != nil {
		t.Errorf("kernel 1 pads nothing whatever the dilation: %v", err)
	}
}

// A padding mode's "same" pads were computed for the constructor's
// kernel: with Weight replaced by one of another kernel size, the output
// was not x's size, silently (zeros mode, which lathe's op pads, kept it).
func TestConvSameModeWeightReplaced(t *testing.T) {
	for _, mode := range []string{"zeros", "reflect", "replicate", "circular"} {
		c := NewConv1d(2, 3, 3, PaddingSame(), PaddingMode(mode))
		c.Weight = lathe.RandN(lathe.CPU, lathe.Float32, 3, 2, 6).RequireGrad()
		y := c.Forward(lathe.RandN(lathe.CPU, lathe.Float32, 1, 2, 7))
		if !slices.Equal(y.Shape(), []int{1, 3, 7}) {
			t.Errorf("%s: shape %v (%v), want [1 3 7]", mode, y.Shape(), y.Err())
		}
	}
}
