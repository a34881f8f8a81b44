package nn

import (
	"testing"

	"github.com/lathe-ml/lathe"
)

// The convolution layers' and PReLU's interop cases (conv_layer_cases in
// build/torchref/interop.py): besides the forward on a batch ("x" to
// "out"), the forward on one unbatched input ("xu" to "out_unbatched")
// and on inputs of other ranks ("x0".."x2" to "out0".."out2") where the
// case has them, and one backward where it has "r": the
// gradients of sum(out·r) with respect to x and each parameter, against
// torch's "grad.x", "grad.weight" and "grad.bias".

// buildConvLayerCase builds the module of one of these cases; false for a
// case that is not one of them.
func buildConvLayerCase(c interopCase, t *testing.T, dt lathe.DType, dev lathe.Device) (interopRun, bool) {
	t.Helper()
	w := WithDType(dt)
	var m Module
	switch c.name {
	case "conv1d":
		m = NewConv1d(4, 6, 3, Stride(2), Padding(1), Dilation(2), Groups(2), w)
	case "conv1d_nobias_same_even":
		m = NewConv1d(3, 2, 4, PaddingSame(), NoBias(), w)
	case "conv3d":
		m = NewConv3d(4, 6, 0, KernelSize(2, 3, 1), Stride(1, 2, 1), Padding(1, 0, 1), Dilation(2, 1, 1), Groups(2), w)
	case "conv3d_same":
		m = NewConv3d(2, 3, 0, KernelSize(3, 2, 2), PaddingSame(), w)
	case "conv2d_grad":
		m = NewConv2d(4, 2, 0, KernelSize(2, 3), Stride(2, 1), Padding(0, 1), Groups(2), w)
	case "convtranspose1d":
		m = NewConvTranspose1d(4, 6, 3, Stride(2), Padding(1), OutputPadding(1), Groups(2), w)
	case "convtranspose2d":
		m = NewConvTranspose2d(3, 4, 0, KernelSize(3, 2), Stride(2, 3), Padding(1, 0), OutputPadding(0, 2), Dilation(1, 2), w)
	case "convtranspose3d":
		m = NewConvTranspose3d(4, 2, 0, KernelSize(2, 2, 3), Stride(2, 1, 2), Padding(0, 1, 1), OutputPadding(1, 0, 1), Groups(2), w)
	case "conv2d_reflect":
		m = NewConv2d(3, 4, 3, Stride(1, 2), Padding(1, 2), PaddingMode("reflect"), w)
	case "conv1d_replicate_same":
		m = NewConv1d(2, 3, 4, PaddingSame(), PaddingMode("replicate"), w)
	case "conv3d_circular":
		m = NewConv3d(2, 2, 0, KernelSize(3, 1, 2), Padding(1, 0, 1), PaddingMode("circular"), w)
	case "conv2d_circular_same_even":
		m = NewConv2d(2, 2, 0, KernelSize(2, 4), PaddingSame(), Dilation(2, 1), PaddingMode("circular"), Groups(2), w)
	case "prelu", "prelu_single":
		n := 3
		if c.name == "prelu_single" {
			n = 1
		}
		m = NewPReLU(n, Init(c.float("init", 0.25)), w)
	case "convtranspose2d_nobias_size":
		c2 := NewConvTranspose2d(2, 2, 3, Stride(2), NoBias(), w)
		return interopRun{c2, func() map[string]*lathe.Tensor {
			x := c.input(t, "x", dt, dev)
			return map[string]*lathe.Tensor{"out": c2.ForwardSize(x, 9, 10), "out_unbatched": c2.ForwardSize(x.Squeeze(0), 2, 10, 9)}
		}}, true
	default:
		return interopRun{}, false
	}
	in := func(key string) *lathe.Tensor { return c.input(t, key, dt, dev) }
	return interopRun{m, func() map[string]*lathe.Tensor {
		outs := map[string]*lathe.Tensor{}
		x := in("x")
		_, grads := c.refs["r"]
		if grads {
			x = x.Detach().RequireGrad()
			for _, p := range m.Parameters() {
				p.T.ZeroGrad()
			}
		}
		outs["out"] = m.Forward(x)
		if _, ok := c.refs["xu"]; ok {
			outs["out_unbatched"] = m.Forward(in("xu"))
		}
		for _, k := range []string{"0", "1", "2"} { // more inputs, of other ranks
			if _, ok := c.refs["x"+k]; ok {
				outs["out"+k] = m.Forward(in("x" + k))
			}
		}
		if grads {
			if err := outs["out"].Mul(in("r")).Sum().Backward(); err != nil {
				t.Fatalf("backward: %v", err)
			}
			outs["grad.x"] = x.Grad()
			for _, p := range m.Parameters() {
				outs["grad."+p.Name] = p.T.Grad()
			}
		}
		return outs
	}}, true
}

// input is the case's input key in dtype dt (a float one) on dev.
func (c interopCase) input(t *testing.T, key string, dt lathe.DType, dev lathe.Device) *lathe.Tensor {
	t.Helper()
	r := c.ref(t, key)
	if r.DType().IsFloat() {
		r = r.Cast(dt)
	}
	return r.To(dev)
}
