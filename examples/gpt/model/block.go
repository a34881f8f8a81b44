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
func (b *Block) Forward(h *lathe.Tensor) *lathe.Tensor { return b.forward(h, nil, nil) }

// forward is Forward for positions that follow those cache holds (nil: no
// cache, positions from 0), appending their keys and values to it; s
// collects the temporaries (see scratch).
func (b *Block) forward(h *lathe.Tensor, cache *nn.KVCache, s *scratch) *lathe.Tensor {
	h = s.add(h.Add(s.add(b.attention(s.add(b.Norm1.Forward(h)), cache, s))))
	return h.Add(s.add(b.FCProj.Forward(s.add(s.add(b.FC.Forward(s.add(b.Norm2.Forward(h)))).GELU()))))
}

// attention is causal self-attention over x [B, L, Dim]: split into heads
// [B, H, L, Dim/H], rotate queries and keys by position with rotary
// positions, attend, and merge the heads back. With a cache, x's positions
// follow the cache's: its keys and values come first (rotated at their own
// positions when they were appended), x's are appended to it, and x's
// query i attends to every cached key and to x's keys up to i.
func (b *Block) attention(x *lathe.Tensor, cache *nn.KVCache, s *scratch) *lathe.Tensor {
	shape := x.Shape()
	if len(shape) != 3 {
		return x.Linear(b.QKV.Weight, b.QKV.Bias) // the layer's own shape error
	}
	bsz, l, dim := shape[0], shape[1], shape[2]
	offset := cache.Len()
	qkv := s.add(b.QKV.Forward(x))
	// heads is the part at column `at` of qkv split into heads; its
	// intermediate views go to s, the result is the caller's.
	heads := func(at int) *lathe.Tensor {
		return s.add(s.add(qkv.Narrow(2, at, dim)).Reshape(bsz, l, b.heads, dim/b.heads)).Transpose(1, 2)
	}
	q, k, v := s.add(heads(0)), heads(dim), heads(2*dim)
	if b.rotary {
		// GPT-NeoX's "rotate half" convention, as build/torchref/gpt.py's
		// rotate_half: x·cos(pθ) + [-x₂, x₁]·sin(pθ), θᵢ = 10000^(-2i/D),
		// at the absolute positions offset…offset+L-1.
		q = s.add(nn.ApplyRotary(q, offset, ropeBase))
		k = nn.ApplyRotary(s.add(k), offset, ropeBase)
	}
	switch {
	case cache == nil:
		s.add(k)
		s.add(v)
	case offset == 0:
		cache.K, cache.V = k, v
	default:
		// lathe's tensors do not change in place, so appending is a copy
		// (nn.KVCache says so); the cache's old tensors are released.
		ck := lathe.Concat([]*lathe.Tensor{cache.K, s.add(k)}, 2)
		cv := lathe.Concat([]*lathe.Tensor{cache.V, s.add(v)}, 2)
		cache.K.Release()
		cache.V.Release()
		cache.K, cache.V, k, v = ck, cv, ck, cv
	}
	var opts []lathe.AttentionOption
	switch {
	case offset == 0:
		opts = append(opts, lathe.IsCausal())
	case l > 1:
		// Query i sits at position offset+i, so it may attend to keys j ≤
		// offset+i: the lower triangle shifted right by offset (IsCausal's
		// triangle is aligned at the top left, which is wrong here).
		opts = append(opts, lathe.AttentionMask(s.add(s.add(lathe.Ones(x.Device(), lathe.Bool, l, offset+l)).Tril(offset))))
	}
	// One new position after cached ones is the last: it attends to
	// every key, so it needs no mask.
	y := s.add(lathe.ScaledDotProductAttention(q, k, v, opts...))
	return b.Proj.Forward(s.add(s.add(y.Transpose(1, 2)).Reshape(bsz, l, dim)))
}

// ropeBase is RoFormer's base of the rotary frequencies.
const ropeBase = 10000

// linear is a Linear layer with N(0, std²) weights and a zero bias.
func linear(dt lathe.DType, in, out int, std float64) *nn.Linear {
	return &nn.Linear{Weight: normal(dt, std, out, in), Bias: lathe.Zeros(lathe.CPU, dt, out).RequireGrad()}
}
