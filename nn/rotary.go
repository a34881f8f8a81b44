package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Rotary position embeddings (Su et al., "RoFormer", 2021) in the "rotate
// half" convention of GPT-NeoX and Hugging Face's LLaMA: a head vector x of
// even size D at position p is split into halves x₁ = x[:D/2] and
// x₂ = x[D/2:], and pair (x₁[i], x₂[i]) is turned by the angle p·θᵢ,
// θᵢ = base^(-2i/D):
//
//	rope(x, p) = x·cos(p·θ) + rotate_half(x)·sin(p·θ),  rotate_half(x) = [-x₂, x₁]
//
// with the angles repeated over both halves. Checkpoints written in the
// interleaved convention (GPT-J, Meta's original LLaMA code: pairs
// (x[2i], x[2i+1])) need their q and k projection rows permuted first.

const ropeOp = "rotary_embedding"

// RotaryTables returns the cos and sin tables of rotary position embeddings
// for n positions from offset and a head dim of dim, each [n, dim] in
// float64 on the cpu: row r holds the angles (offset+r)·θᵢ, θᵢ =
// base^(-2i/dim), repeated over both halves. dim must be even, n and offset
// ≥ 0 and base > 1 (10000 is the usual).
func RotaryTables(n, dim, offset int, base float64) (cos, sin *lathe.Tensor) {
	if err := checkRotary(n, dim, offset, base); err != nil {
		f := lathe.Failed(err)
		return f, f
	}
	half := dim / 2
	c := make([]float64, n*dim)
	s := make([]float64, n*dim)
	for r := range n {
		for i := range half {
			a := float64(offset+r) * math.Pow(base, -float64(2*i)/float64(dim))
			c[r*dim+i], c[r*dim+half+i] = math.Cos(a), math.Cos(a)
			s[r*dim+i], s[r*dim+half+i] = math.Sin(a), math.Sin(a)
		}
	}
	return lathe.FromSlice(lathe.CPU, c, n, dim), lathe.FromSlice(lathe.CPU, s, n, dim)
}

func checkRotary(n, dim, offset int, base float64) error {
	switch {
	case dim <= 0 || dim%2 != 0:
		return nnError(ropeOp, lathe.ErrShape, "dim", "is "+strconv.Itoa(dim)+", which is not even and positive",
			"rotate heads of an even size")
	case n < 0 || offset < 0 || n > math.MaxInt/dim-offset:
		return nnError(ropeOp, lathe.ErrValue, "offset", "is "+strconv.Itoa(offset)+" for "+strconv.Itoa(n)+" positions",
			"give a position offset ≥ 0 and a table of at most MaxInt elements")
	case !(base > 1) || math.IsInf(base, 1):
		return nnError(ropeOp, lathe.ErrValue, "base", "is "+strconv.FormatFloat(base, 'g', -1, 64)+", which is not finite and above 1",
			"use 10000, the usual base")
	}
	return nil
}

// ApplyRotary rotates x, of shape [..., L, D] (q or k as [B, H, L, D]), by
// the rotary embedding of positions offset … offset+L-1 with the given base.
// Generating with a KVCache, offset is the number of positions cached
// before x. The tables are computed in float64 and rounded to x's dtype.
func ApplyRotary(x *lathe.Tensor, offset int, base float64) *lathe.Tensor {
	if err := x.CheckArg(ropeOp, "x"); err != nil {
		return lathe.Failed(err)
	}
	if x.Rank() < 2 {
		return lathe.Failed(nnError(ropeOp, lathe.ErrShape, "x", "has shape "+shapeString(x.Shape())+", rank "+strconv.Itoa(x.Rank()),
			"give x a position dim and a head dim, [..., L, D]"))
	}
	if !x.DType().IsFloat() {
		return lathe.Failed(nnError(ropeOp, lathe.ErrDType, "x", "is "+x.DType().String(), "rotate a float tensor"))
	}
	l, d := x.Dim(-2), x.Dim(-1)
	cos64, sin64 := RotaryTables(l, d, offset, base)
	if err := cos64.Err(); err != nil {
		return lathe.Failed(err)
	}
	cosDT, sinDT := cos64.Cast(x.DType()), sin64.Cast(x.DType())
	cos, sin := cosDT.To(x.Device()), sinDT.To(x.Device())
	for _, t := range []*lathe.Tensor{cos64, sin64, cosDT, sinDT} {
		t.Release()
	}
	half := d / 2
	// The rotated copy and the products go with the graph (lathe.Compose),
	// and so do the tables, which Compose leaves alone (they are not made
	// from x) and the products' gradients read.
	out := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		rotated := lathe.Concat([]*lathe.Tensor{x.Narrow(-1, half, half).Neg(), x.Narrow(-1, 0, half)}, -1)
		return x.Mul(cos).Add(rotated.Mul(sin))
	}, x)
	lathe.ReleaseWithGraph(out, cos, sin)
	return out
}
