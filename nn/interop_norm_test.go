package nn

import (
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// buildNormLayerCase builds the lathe module of one of the interop cases
// of the normalisation layers and Embedding's options (named norm_*, by
// norm_layer_cases in build/torchref/interop.py); false for another case.
func buildNormLayerCase(c interopCase, t *testing.T, dt lathe.DType, dev lathe.Device) (interopRun, bool) {
	t.Helper()
	if !strings.HasPrefix(c.name, "norm_") {
		return interopRun{}, false
	}
	in := func(key string) *lathe.Tensor {
		r := c.ref(t, key)
		if r.DType().IsFloat() {
			r = r.Cast(dt)
		}
		return r.To(dev)
	}
	one := func(m Module, x string) (interopRun, bool) {
		return interopRun{m, func() map[string]*lathe.Tensor { return map[string]*lathe.Tensor{"out": m.Forward(in(x))} }}, true
	}
	opts := []Option{WithDType(dt)}
	if b, ok := c.cfg["affine"].(bool); ok {
		opts = append(opts, map[bool]Option{true: Affine(), false: NoAffine()}[b])
	}
	if b, ok := c.cfg["track_running_stats"].(bool); ok {
		opts = append(opts, map[bool]Option{true: TrackRunningStats(), false: NoRunningStats()}[b])
	}
	if c.bool("cumulative") {
		opts = append(opts, CumulativeAverage())
	}
	bn := func(m Module, b *ChannelNorm) (interopRun, bool) {
		b.Momentum, b.Eps = c.float("momentum", 0.1), c.float("eps", 1e-5)
		if _, ok := c.refs["x2"]; !ok {
			return one(m, "x")
		}
		// Two steps: the output of the second.
		return interopRun{m, func() map[string]*lathe.Tensor {
			if err := m.Forward(in("x")).Err(); err != nil {
				return map[string]*lathe.Tensor{"out": lathe.Failed(err)}
			}
			return map[string]*lathe.Tensor{"out": m.Forward(in("x2"))}
		}}, true
	}
	switch name := strings.TrimPrefix(c.name, "norm_"); {
	case strings.HasPrefix(name, "bn1d"):
		m := NewBatchNorm1d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "bn2d"):
		m := NewBatchNorm2d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "bn3d"):
		m := NewBatchNorm3d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "in1d"):
		m := NewInstanceNorm1d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "in2d"):
		m := NewInstanceNorm2d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "in3d"):
		m := NewInstanceNorm3d(3, opts...)
		return bn(m, &m.ChannelNorm)
	case strings.HasPrefix(name, "embedding"):
		if i, ok := c.cfg["padding_idx"].(float64); ok {
			opts = append(opts, PaddingIdx(int(i)))
		}
		if v, ok := c.cfg["max_norm"].(float64); ok {
			opts = append(opts, MaxNorm(v))
		}
		if v, ok := c.cfg["norm_type"].(float64); ok {
			opts = append(opts, NormType(v))
		}
		m := NewEmbedding(10, 4, opts...)
		return interopRun{m, func() map[string]*lathe.Tensor {
			out := m.Forward(in("idx"))
			res := map[string]*lathe.Tensor{"out": out}
			if _, ok := c.refs["wgrad"]; ok {
				if err := out.Mul(in("u")).Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				res["wgrad"] = m.Weight.Grad()
			}
			if _, ok := c.refs["weight_after"]; ok {
				res["weight_after"] = m.Weight
			}
			return res
		}}, true
	case name == "nonpersistent":
		return one(newFreqModel(dt), "x")
	case strings.HasPrefix(name, "groupnorm"):
		m := NewGroupNorm(2, 6, opts...)
		m.Eps = c.float("eps", 1e-5)
		return one(m, "x")
	case strings.HasPrefix(name, "layernorm"):
		m := NewLayerNorm([]int{3, 4}, opts...)
		m.Eps = c.float("eps", 1e-5)
		return one(m, "x")
	}
	t.Fatalf("no lathe module for case %q", c.name)
	return interopRun{}, false
}

// freqModel is torch's module of the norm_nonpersistent case: a child, a
// buffer of the state dict ("scale") and a non-persistent one
// ("inv_freq", 1/10000^(2i/4), which torch's state dict leaves out).
type freqModel struct {
	Base
	proj           *Linear
	scale, invFreq *lathe.Tensor
}

func newFreqModel(dt lathe.DType) *freqModel {
	m := &freqModel{proj: NewLinear(4, 3, WithDType(dt))}
	m.RegisterModule("proj", m.proj)
	m.scale = m.RegisterBuffer("scale", lathe.FromSlice(lathe.CPU, []float64{1, 2, 3}, 3).Cast(dt))
	m.invFreq = m.RegisterNonPersistentBuffer("inv_freq", lathe.FromSlice(lathe.CPU, []float64{1, 0.01}, 2).Cast(dt))
	return m
}

func (m *freqModel) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.proj.Forward(x).Mul(m.scale).Add(m.invFreq.Sum())
}
