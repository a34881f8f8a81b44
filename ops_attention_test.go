package lathe

import (
	"errors"
	"math"
	"testing"
)

// TestAttentionDropout checks AttentionDropout's weights: with q = 0 every
// weight is 1/Lk, and with v the identity the output is the weight matrix,
// so each element is 0 (dropped, with probability p) or 1/(Lk·(1-p)). The
// fraction dropped must be p within five standard deviations, and the draw
// must repeat under the same Seed and change under another.
func TestAttentionDropout(t *testing.T) {
	const l, p = 128, 0.3
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			q := Zeros(dev, Float32, 2, l, 8)
			k := RandN(dev, Float32, 2, l, 8)
			v := Eye(dev, Float32, l).Unsqueeze(0).Expand(2, l, l)
			run := func(seed uint64) []float32 {
				Seed(seed)
				out := ScaledDotProductAttention(q, k, v, AttentionDropout(p))
				got, err := out.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			a := run(7)
			kept := float32(1 / (l * (1 - p)))
			dropped := 0
			for i, x := range a {
				switch {
				case x == 0:
					dropped++
				case math.Abs(float64(x-kept)) > 1e-6:
					t.Fatalf("weight %d is %g, want 0 or %g", i, x, kept)
				}
			}
			n := float64(len(a))
			frac := float64(dropped) / n
			if sd := math.Sqrt(p * (1 - p) / n); math.Abs(frac-p) > 5*sd {
				t.Errorf("dropped %.4f of the weights, want %.2f ± %.4f", frac, p, 5*sd)
			}
			b, c := run(7), run(8)
			same, diff := true, false
			for i := range a {
				same = same && a[i] == b[i]
				diff = diff || a[i] != c[i]
			}
			if !same {
				t.Error("the same Seed gave another draw")
			}
			if !diff {
				t.Error("another Seed gave the same draw")
			}
			// p = 0 is no dropout: the exact mean of v's rows.
			out, err := ScaledDotProductAttention(q, k, v, AttentionDropout(0)).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range out {
				if math.Abs(float64(x)-1.0/l) > 1e-6 {
					t.Fatalf("p = 0: weight %d is %g, want %g", i, x, 1.0/l)
				}
			}
		})
	}
}

// TestAttentionErrors checks the refusals that the conformance cases do
// not reach: options out of range, foreign devices, nil and failed inputs.
func TestAttentionErrors(t *testing.T) {
	q, k, v := RandN(CPU, Float32, 2, 3, 4), RandN(CPU, Float32, 2, 5, 4), RandN(CPU, Float32, 2, 5, 4)
	bad := Zeros(CPU, Float32, 2).Reshape(3)
	for _, c := range []struct {
		name string
		out  *Tensor
		kind error
		arg  string
	}{
		{"dropout-0.1", ScaledDotProductAttention(q, k, v, AttentionDropout(-0.1)), ErrValue, "dropout_p"},
		{"dropout1", ScaledDotProductAttention(q, k, v, AttentionDropout(1)), ErrValue, "dropout_p"},
		{"dropoutNaN", ScaledDotProductAttention(q, k, v, AttentionDropout(math.NaN())), ErrValue, "dropout_p"},
		{"scaleInf", ScaledDotProductAttention(q, k, v, AttentionScale(math.Inf(1))), ErrValue, "scale"},
		{"scaleNaN", ScaledDotProductAttention(q, k, v, AttentionScale(math.NaN())), ErrValue, "scale"},
		{"nil query", ScaledDotProductAttention(nil, k, v), ErrValue, "query"},
		{"nil key", ScaledDotProductAttention(q, nil, v), ErrValue, "key"},
		{"failed value", ScaledDotProductAttention(q, k, bad), ErrShape, ""},
		{"failed mask", ScaledDotProductAttention(q, k, v, AttentionMask(bad)), ErrShape, ""},
		{"float64 key", ScaledDotProductAttention(q, k.Cast(Float64), v), ErrDType, "key"},
		{"mask dtype", ScaledDotProductAttention(q, k, v, AttentionMask(Zeros(CPU, Float64, 3, 5))), ErrDType, "attn_mask"},
	} {
		err := c.out.Err()
		var e *Error
		switch {
		case !errors.Is(err, c.kind):
			t.Errorf("%s: error %v, want kind %v", c.name, err, c.kind)
		case !errors.As(err, &e):
			t.Errorf("%s: %T is not a *lathe.Error", c.name, err)
		case c.arg != "" && e.Arg != c.arg:
			t.Errorf("%s: error %v names argument %q, want %q", c.name, err, e.Arg, c.arg)
		}
	}
	released := RandN(CPU, Float32, 2, 5, 4)
	released.Release()
	if err := ScaledDotProductAttention(q, k, released).Err(); !errors.Is(err, ErrReleased) {
		t.Errorf("released value: %v, want ErrReleased", err)
	}
	for _, s := range DeviceStatus() {
		if !s.Available || s.Device == CPU {
			continue
		}
		err := ScaledDotProductAttention(q, k, v.To(s.Device)).Err()
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrDevice) || e.Arg != "value" {
			t.Errorf("value on %s: %v, want ErrDevice naming value", s.Device, err)
		}
	}
}
