package nn

import (
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The interop cases of extra_layer_cases in build/torchref/interop.py:
// LSTM with proj_size, Bilinear, and Identity, Flatten and Unflatten. Each
// has the forward outputs and one backward of sum(out·r), whose gradients
// of the inputs ("grad.x", "grad.h0", ...) and of each parameter
// ("grad.<name>") must match torch's.

// buildExtrasCase builds the module of one of these cases; false for a
// case that is not one of them.
func buildExtrasCase(c interopCase, t *testing.T, dt lathe.DType, dev lathe.Device) (interopRun, bool) {
	t.Helper()
	w := WithDType(dt)
	in := func(key string) *lathe.Tensor { return c.input(t, key, dt, dev) }
	// grads runs f on the inputs named, made leaves, and adds the
	// gradients of sum(out·r) to its outputs.
	grads := func(m Module, names []string, f func(ins map[string]*lathe.Tensor) map[string]*lathe.Tensor) func() map[string]*lathe.Tensor {
		return func() map[string]*lathe.Tensor {
			ins := map[string]*lathe.Tensor{}
			for _, n := range names {
				ins[n] = in(n).Detach().RequireGrad()
			}
			for _, p := range m.Parameters() {
				p.T.ZeroGrad()
			}
			outs := f(ins)
			if err := outs["out"].Mul(in("r")).Sum().Backward(); err != nil {
				t.Fatalf("backward: %v", err)
			}
			for _, n := range names {
				outs["grad."+n] = ins[n].Grad()
			}
			for _, p := range m.Parameters() {
				outs["grad."+p.Name] = p.T.Grad()
			}
			return outs
		}
	}
	switch {
	case strings.HasPrefix(c.name, "lstm_proj"):
		opts := []Option{w, ProjSize(int(c.float("proj_size", 0)))}
		if n := c.float("num_layers", 1); n != 1 {
			opts = append(opts, NumLayers(int(n)))
		}
		if c.bool("bidirectional") {
			opts = append(opts, Bidirectional())
		}
		if c.bool("batch_first") {
			opts = append(opts, BatchFirst())
		}
		if b, ok := c.cfg["bias"].(bool); ok && !b {
			opts = append(opts, NoBias())
		}
		m := NewLSTM(4, 3, opts...)
		return interopRun{m, grads(m, []string{"x", "h0", "c0"}, func(ins map[string]*lathe.Tensor) map[string]*lathe.Tensor {
			out, hn, cn := m.ForwardState(ins["x"], ins["h0"], ins["c0"])
			ou, hu, cu := m.ForwardState(in("xu"), nil, nil)
			return map[string]*lathe.Tensor{"out": out, "hn": hn, "cn": cn, "out_unbatched": ou, "hn_unbatched": hu, "cn_unbatched": cu}
		})}, true
	case strings.HasPrefix(c.name, "bilinear"):
		opts := []Option{w}
		if !c.bool("bias") {
			opts = append(opts, NoBias())
		}
		m := NewBilinear(4, 3, 5, opts...)
		return interopRun{m, grads(m, []string{"x1", "x2"}, func(ins map[string]*lathe.Tensor) map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": m.ForwardPair(ins["x1"], ins["x2"]), "out_unbatched": m.ForwardPair(in("x1u"), in("x2u"))}
		})}, true
	case c.name == "shape_modules":
		m := Sequential(Identity{}, NewFlatten(0, 1), NewLinear(5, 6, w), NewUnflatten(1, 2, -1), NewFlatten(-2, -1), Identity{},
			NewUnflatten(0, 2, 3), Flatten{})
		return interopRun{m, grads(m, []string{"x"}, func(ins map[string]*lathe.Tensor) map[string]*lathe.Tensor {
			return map[string]*lathe.Tensor{"out": m.Forward(ins["x"])}
		})}, true
	case strings.HasPrefix(c.name, "embbag"):
		opts := []Option{w, Mode(c.cfg["mode"].(string))}
		if c.bool("include_last_offset") {
			opts = append(opts, IncludeLastOffset())
		}
		if p, ok := c.cfg["padding_idx"].(float64); ok {
			opts = append(opts, PaddingIdx(int(p)))
		}
		m := NewEmbeddingBag(10, 3, opts...)
		return interopRun{m, func() map[string]*lathe.Tensor {
			m.Weight.ZeroGrad()
			var off, psw *lathe.Tensor
			if _, ok := c.refs["offsets"]; ok {
				off = in("offsets")
			}
			if _, ok := c.refs["psw"]; ok {
				psw = in("psw").Detach().RequireGrad()
			}
			outs := map[string]*lathe.Tensor{"out": m.ForwardBags(in("idx"), off, psw)}
			if err := outs["out"].Mul(in("r")).Sum().Backward(); err != nil {
				t.Fatalf("backward: %v", err)
			}
			outs["grad.weight"] = m.Weight.Grad()
			if psw != nil {
				outs["grad.psw"] = psw.Grad()
			}
			return outs
		}}, true
	}
	return interopRun{}, false
}
