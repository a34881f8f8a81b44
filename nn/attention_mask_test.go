package nn

import (
	"math"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestFloatKeyPadding: a float key padding mask [B, S] is added to the
// scores of every query for its key, as torch's MultiheadAttention adds
// one (it refused anything but Bool): alone it gives what the same values
// as a float attn mask per batch element and head give, beside a Bool
// attn mask what their sum with that mask as -Inf gives, and -Inf entries
// what a Bool key padding mask true there gives.
func TestFloatKeyPadding(t *testing.T) {
	const b, h, l, s, e = 2, 2, 3, 4, 4
	lathe.Seed(9)
	m := NewMultiheadAttention(e, h)
	q := lathe.RandN(lathe.CPU, lathe.Float32, b, l, e)
	kv := lathe.RandN(lathe.CPU, lathe.Float32, b, s, e)
	inf := math.Inf(-1)
	padValues := []float64{0, -1.5, 0.25, inf, 2, 0, inf, -0.5}
	pad := lathe.FromSlice(lathe.CPU, padValues, b, s).Cast(lathe.Float32)
	blockedValues := []bool{false, true, false, false, false, false, true, false, false, false, false, false}
	blocked := lathe.FromSlice(lathe.CPU, blockedValues, l, s)
	// perHead spreads a [B, S] float mask plus an [L, S] one over [B·H, L, S].
	perHead := func(extra []float64) *lathe.Tensor {
		v := make([]float64, 0, b*h*l*s)
		for i := range b {
			for range h {
				for r := range l {
					for j := range s {
						v = append(v, padValues[i*s+j]+extra[r*s+j])
					}
				}
			}
		}
		return lathe.FromSlice(lathe.CPU, v, b*h, l, s).Cast(lathe.Float32)
	}
	none := make([]float64, l*s)
	asInf := make([]float64, l*s)
	for i, v := range blockedValues {
		if v {
			asInf[i] = inf
		}
	}
	boolPad := make([]bool, b*s)
	for i, v := range padValues {
		boolPad[i] = math.IsInf(v, -1)
	}
	for _, c := range []struct {
		name      string
		got, want AttentionMasks
	}{
		{"alone", AttentionMasks{KeyPadding: pad}, AttentionMasks{Attn: perHead(none)}},
		{"with a Bool attn mask", AttentionMasks{KeyPadding: pad, Attn: blocked}, AttentionMasks{Attn: perHead(asInf)}},
		{"with a float attn mask", AttentionMasks{KeyPadding: pad, Attn: lathe.FromSlice(lathe.CPU, asInf, l, s).Cast(lathe.Float32)},
			AttentionMasks{Attn: perHead(asInf)}},
	} {
		got, want := m.Attend(q, kv, kv, c.got), m.Attend(q, kv, kv, c.want)
		checkSame(t, c.name, got, want)
	}
	// Where the float mask is 0 or -Inf it is the Bool mask.
	zeroOrInf := lathe.FromSlice(lathe.CPU, []float64{0, 0, 0, inf, 0, 0, inf, 0}, b, s).Cast(lathe.Float32)
	checkSame(t, "as a Bool mask", m.Attend(q, kv, kv, AttentionMasks{KeyPadding: zeroOrInf}),
		m.Attend(q, kv, kv, AttentionMasks{KeyPadding: lathe.FromSlice(lathe.CPU, boolPad, b, s)}))
}

// checkSame fails unless got and want hold the same values within 1e-6.
func checkSame(t *testing.T, name string, got, want *lathe.Tensor) {
	t.Helper()
	g, err := got.Float32s()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	w, err := want.Float32s()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i := range w {
		if math.Abs(float64(g[i]-w[i])) > 1e-6 {
			t.Fatalf("%s: [%d] = %g, want %g", name, i, g[i], w[i])
		}
	}
}
