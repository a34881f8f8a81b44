package lathe

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// attnMaskCases are the masked shapes of TestAttentionFused: Bool and
// additive masks, full and broadcast over the batch, the heads, the
// queries or the keys, and rows whose first keys (more than one block of
// the cpu kernel's 128, and of the GPU kernels' tiles) are all masked.
func attnMaskCases() []attnCase {
	return []attnCase{
		{name: "mask/bool", q: []int{2, 2, 70, 8}, k: []int{2, 2, 150, 8}, v: []int{2, 2, 150, 4},
			mask: func(dev Device, _ DType) *Tensor {
				r := rand.New(rand.NewPCG(1, 2))
				return boolMask(dev, []int{2, 2, 70, 150}, func(int, int, int) bool { return r.Float64() > 0.3 })
			}},
		{name: "mask/additive-gqa-bcast", q: []int{2, 4, 65, 8}, k: []int{1, 2, 129, 8}, v: []int{1, 2, 129, 8},
			mask: func(dev Device, dt DType) *Tensor {
				r := rand.New(rand.NewPCG(3, 4))
				return floatMask(dev, dt, []int{65, 129}, func(int, int, int) float64 { return r.NormFloat64() })
			}},
		{name: "mask/key-padding", q: []int{3, 2, 40, 8}, k: []int{3, 2, 300, 8}, v: []int{3, 2, 300, 4},
			mask: func(dev Device, _ DType) *Tensor {
				// Batch 0 attends only past key 140, batch 1 only before
				// key 250, batch 2 everywhere.
				return boolMask(dev, []int{3, 1, 1, 300}, func(f, _, j int) bool {
					switch f / 300 {
					case 0:
						return j >= 140
					case 1:
						return j < 250
					}
					return true
				})
			}},
		{name: "mask/additive-inf", q: []int{1, 2, 70, 8}, k: []int{1, 2, 150, 8}, v: []int{1, 2, 150, 4},
			opts: []AttentionOption{AttentionScale(0.4)},
			mask: func(dev Device, dt DType) *Tensor {
				r := rand.New(rand.NewPCG(5, 6))
				return floatMask(dev, dt, []int{70, 150}, func(_, i, j int) float64 {
					switch {
					case i == 5: // one key, the last
						return map[bool]float64{true: 0, false: math.Inf(-1)}[j == 149]
					case r.Float64() < 0.5 && j != i:
						return math.Inf(-1)
					}
					return r.NormFloat64()
				})
			}},
		{name: "mask/rank3-rows", q: []int{3, 9, 5}, k: []int{3, 11, 5}, v: []int{3, 11, 2},
			mask: func(dev Device, dt DType) *Tensor {
				// [B, Lq, 1]: one value a row, repeated over the keys.
				return floatMask(dev, dt, []int{3, 9, 1}, func(f, _, _ int) float64 { return float64(f) / 4 })
			}},
	}
}

// boolMask is a Bool tensor of shape on dev whose element f (flat), at
// row i and column j of the last two dims, is keep(f, i, j).
func boolMask(dev Device, shape []int, keep func(f, i, j int) bool) *Tensor {
	n, cols, rows := maskGeometry(shape)
	data := make([]bool, n)
	for f := range data {
		data[f] = keep(f, f/cols%rows, f%cols)
	}
	return FromSlice(dev, data, shape...)
}

// floatMask is a tensor of dtype dt and shape on dev whose element f
// (flat), at row i and column j of the last two dims, is value(f, i, j).
func floatMask(dev Device, dt DType, shape []int, value func(f, i, j int) float64) *Tensor {
	n, cols, rows := maskGeometry(shape)
	data := make([]float64, n)
	for f := range data {
		data[f] = value(f, f/cols%rows, f%cols)
	}
	return FromSlice(CPU, data, shape...).Cast(dt).To(dev)
}

func maskGeometry(shape []int) (n, cols, rows int) {
	n = 1
	for _, d := range shape {
		n *= d
	}
	return n, shape[len(shape)-1], shape[len(shape)-2]
}

// TestAttentionMaskGrad checks the gradient of an additive mask that
// requires one, broadcast over the batch and heads: the masked op's rule
// then runs its backward as dispatch calls, and the mask's gradient (dS
// summed over what it was broadcast along) must be the composite's.
func TestAttentionMaskGrad(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			Seed(4)
			q, k, v := RandN(dev, Float32, 2, 2, 30, 8), RandN(dev, Float32, 2, 2, 140, 8), RandN(dev, Float32, 2, 2, 140, 4)
			mask := RandN(dev, Float32, 30, 140).RequireGrad()
			xs := []*Tensor{q.RequireGrad(), k.RequireGrad(), v.RequireGrad(), mask}
			w := RandN(dev, Float32, 2, 2, 30, 4)
			fused, err := Grad(ScaledDotProductAttention(q, k, v, AttentionMask(mask)).Mul(w).Sum(), xs)
			if err != nil {
				t.Fatal(err)
			}
			comp, err := Grad(sdpaComposite(q, k, v, AttentionMask(mask)).Mul(w).Sum(), xs)
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"q", "k", "v", "mask"} {
				attnClose(t, "grad "+name, fused[i], comp[i], 2e-4)
			}
		})
	}
}

// TestAttentionMaskedEmptyRow checks a query row that may attend to no
// key: its output is NaN, as the composite's softmax gives, the other
// rows are the composite's, and the gradients are NaN where the
// composite's are (everything the row reaches) and equal elsewhere.
func TestAttentionMaskedEmptyRow(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dev != CPU && dt == Float64 {
				continue
			}
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				Seed(5)
				q, k, v := RandN(dev, dt, 2, 2, 5, 4), RandN(dev, dt, 2, 2, 150, 4), RandN(dev, dt, 2, 2, 150, 3)
				// Row 2 of batch 1 sees no key.
				mask := boolMask(dev, []int{2, 1, 5, 150}, func(f, i, _ int) bool { return f/750 != 1 || i != 2 })
				xs := []*Tensor{q.RequireGrad(), k.RequireGrad(), v.RequireGrad()}
				fused := ScaledDotProductAttention(q, k, v, AttentionMask(mask))
				comp := sdpaComposite(q, k, v, AttentionMask(mask))
				out := attnClose(t, "forward", fused, comp, 1e-5)
				if !math.IsNaN(out[((1*2+0)*5+2)*3]) || math.IsNaN(out[0]) {
					t.Errorf("forward: row 2 of batch 1 = %g, row 0 of batch 0 = %g; want NaN and a number", out[((1*2+0)*5+2)*3], out[0])
				}
				w := RandNLike(fused)
				gf, err := Grad(fused.Mul(w).Sum(), xs)
				if err != nil {
					t.Fatal(err)
				}
				gc, err := Grad(comp.Mul(w).Sum(), xs)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range []string{"q", "k", "v"} {
					attnClose(t, "grad "+name, gf[i], gc[i], 1e-4)
				}
			})
		}
	}
}

// TestAttentionMaskedOpErrors checks what the masked op refuses of its
// mask: causal masking beside it, another dtype, a shape other than the
// scores'; and a dropout probability outside [0, 1).
func TestAttentionMaskedOpErrors(t *testing.T) {
	q, kv := RandN(CPU, Float32, 1, 2, 3, 4), RandN(CPU, Float32, 1, 1, 5, 4)
	mask := Zeros(CPU, Float32, 1, 2, 3, 5)
	for _, c := range []struct {
		name string
		a    ops.AttentionParams
		mask *Tensor
		kind error
		arg  string
	}{
		{"causal", ops.AttentionParams{Scale: 1, Causal: true}, mask, ErrValue, "causal"},
		{"dtype", ops.AttentionParams{Scale: 1}, mask.Cast(Float64), ErrDType, "attn_mask"},
		{"shape", ops.AttentionParams{Scale: 1}, Zeros(CPU, Float32, 1, 2, 3, 4), ErrShape, "attn_mask"},
		{"broadcast shape", ops.AttentionParams{Scale: 1}, Zeros(CPU, Float32, 1, 1, 3, 5), ErrShape, "attn_mask"},
		{"dropout 1", ops.AttentionParams{Scale: 1, Dropout: ops.Mask{P: 1}}, mask, ErrValue, "dropout_p"},
		{"dropout NaN", ops.AttentionParams{Scale: 1, Dropout: ops.Mask{P: math.NaN()}}, mask, ErrValue, "dropout_p"},
	} {
		err := apply(ops.AttentionMasked, c.a, q, kv, kv, c.mask).Err()
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, c.kind) || e.Arg != c.arg {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.kind, c.arg)
		}
	}
	if err := apply(ops.AttentionMasked, ops.AttentionParams{Scale: 1}, q, kv, kv, mask).Err(); err != nil {
		t.Errorf("a good call: %v", err)
	}
}
