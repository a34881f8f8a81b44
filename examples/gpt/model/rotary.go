package model

import (
	"math"

	"github.com/lathe-ml/lathe"
)

// rotary holds the cos and sin tables of rotary position embeddings
// (RoFormer, Su et al. 2021, arXiv:2104.09864) for L positions and a head
// dim D, in the "rotate half" layout of GPT-NeoX and LLaMA: dim i < D/2 is
// paired with dim i + D/2 and the pair is turned by the angle p·θᵢ at
// position p, θᵢ = 10000^(-2i/D). The tables are [L, D], the D/2 angles
// repeated twice, so that one multiply covers both halves.
type rotary struct {
	cos, sin *lathe.Tensor
}

// ropeBase is RoFormer's base of the frequencies.
const ropeBase = 10000

func newRotary(dev lathe.Device, dt lathe.DType, l, d int) *rotary {
	half := d / 2
	inv := make([]float64, half)
	for i := range inv {
		inv[i] = math.Pow(ropeBase, -float64(2*i)/float64(d))
	}
	cos := make([]float64, 0, l*d)
	sin := make([]float64, 0, l*d)
	for p := range l {
		for rep := 0; rep < 2; rep++ {
			for _, f := range inv {
				cos = append(cos, math.Cos(float64(p)*f))
				sin = append(sin, math.Sin(float64(p)*f))
			}
		}
	}
	// Made in float64 on the cpu and rounded once, as torch's tables are
	// (wgpu holds no float64).
	return &rotary{
		cos: lathe.FromSlice(lathe.CPU, cos, l, d).Cast(dt).To(dev),
		sin: lathe.FromSlice(lathe.CPU, sin, l, d).Cast(dt).To(dev),
	}
}

// apply turns x [B, H, L, D] by position: x·cos + rotateHalf(x)·sin.
func (r *rotary) apply(x *lathe.Tensor) *lathe.Tensor {
	return x.Mul(r.cos).Add(rotateHalf(x).Mul(r.sin))
}

// rotateHalf maps the halves (x₁, x₂) of the last dim to (-x₂, x₁), so that
// x·cos + rotateHalf(x)·sin turns each pair (x₁ᵢ, x₂ᵢ) by its angle.
func rotateHalf(x *lathe.Tensor) *lathe.Tensor {
	s := x.Shape()
	d := s[len(s)-1]
	x1 := x.Narrow(-1, 0, d/2)
	x2 := x.Narrow(-1, d/2, d/2)
	return lathe.Concat([]*lathe.Tensor{x2.Neg(), x1}, -1)
}
