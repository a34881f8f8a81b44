package model

import (
	"math"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// Block is one pre-norm transformer block:
//
//	h = h + attn(ln_1(h))
//	h = h + mlp(ln_2(h))
//
// with causal multi-head self-attention and a 4×Dim GELU MLP.
type Block struct {
	nn.Base
	heads  int
	rotary bool          // turn queries and keys by position (nn.ApplyRotary)
	Norm1  *nn.LayerNorm // ln_1
	QKV    *nn.Linear    // attn.qkv: [3·Dim, Dim], the query, key and value projections stacked
	Proj   *nn.Linear    // attn.proj: [Dim, Dim]
	Norm2  *nn.LayerNorm // ln_2
	FC     *nn.Linear    // mlp.fc: [4·Dim, Dim]
	FCProj *nn.Linear    // mlp.proj: [Dim, 4·Dim]
}

func newBlock(c Config) *Block {
	// GPT-2 scales the projections that add into the residual stream by
	// 1/√(2·Layers), so that the stream's variance does not grow with depth.
	residual := 0.02 / math.Sqrt(2*float64(max(c.Layers, 1)))
	b := &Block{
		heads:  c.Heads,
		rotary: c.Rotary,
		Norm1:  nn.NewLayerNorm([]int{c.Dim}, nn.WithDType(c.DType)),
		QKV:    linear(c.DType, c.Dim, 3*c.Dim, 0.02),
		Proj:   linear(c.DType, c.Dim, c.Dim, residual),
		Norm2:  nn.NewLayerNorm([]int{c.Dim}, nn.WithDType(c.DType)),
		FC:     linear(c.DType, c.Dim, 4*c.Dim, 0.02),
		FCProj: linear(c.DType, 4*c.Dim, c.Dim, residual),
	}
	b.RegisterModule("ln_1", b.Norm1)
	b.RegisterModule("attn.qkv", b.QKV)
	b.RegisterModule("attn.proj", b.Proj)
	b.RegisterModule("ln_2", b.Norm2)
	b.RegisterModule("mlp.fc", b.FC)
	b.RegisterModule("mlp.proj", b.FCProj)
	return b
}

// Forward runs the block on the residual stream h [B, L, Dim].
func (b *Block) Forward(h *lathe.Tensor) *lathe.Tensor {
	h = h.Add(b.attention(b.Norm1.Forward(h)))
	return h.Add(b.FCProj.Forward(b.FC.Forward(b.Norm2.Forward(h)).GELU()))
}

// attention is causal self-attention over x [B, L, Dim]: split into heads
// [B, H, L, Dim/H], rotate queries and keys by position with rotary
// positions, attend, and merge the heads back.
func (b *Block) attention(x *lathe.Tensor) *lathe.Tensor {
	s := x.Shape()
	if len(s) != 3 {
		return x.Linear(b.QKV.Weight, b.QKV.Bias) // the layer's own shape error
	}
	bsz, l, dim := s[0], s[1], s[2]
	heads := func(t *lathe.Tensor) *lathe.Tensor {
		return t.Reshape(bsz, l, b.heads, dim/b.heads).Transpose(1, 2)
	}
	qkv := b.QKV.Forward(x)
	q := heads(qkv.Narrow(2, 0, dim))
	k := heads(qkv.Narrow(2, dim, dim))
	v := heads(qkv.Narrow(2, 2*dim, dim))
	if b.rotary {
		// GPT-NeoX's "rotate half" convention, as build/torchref/gpt.py's
		// rotate_half: x·cos(pθ) + [-x₂, x₁]·sin(pθ), θᵢ = 10000^(-2i/D).
		q, k = nn.ApplyRotary(q, 0, ropeBase), nn.ApplyRotary(k, 0, ropeBase)
	}
	y := lathe.ScaledDotProductAttention(q, k, v, lathe.IsCausal())
	return b.Proj.Forward(y.Transpose(1, 2).Reshape(bsz, l, dim))
}

// ropeBase is RoFormer's base of the rotary frequencies.
const ropeBase = 10000

// linear is a Linear layer with N(0, std²) weights and a zero bias.
func linear(dt lathe.DType, in, out int, std float64) *nn.Linear {
	return &nn.Linear{Weight: normal(dt, std, out, in), Bias: lathe.Zeros(lathe.CPU, dt, out).RequireGrad()}
}
