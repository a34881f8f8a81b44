package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/internal/half"
)

// TestConvert16 checks the vector 16-bit float conversions against
// internal/half bit for bit: every float16 and bfloat16 widened, and
// float32s narrowed: every bit pattern around each rounding boundary and
// special value, and a million random ones.
func TestConvert16(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C on this machine or build")
	}
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	got := make([]float32, len(all))
	for _, bf := range []bool{false, true} {
		if !widen16(got[:len(all)-5], all[5:], bf) { // a tail of 3 after the vectors
			t.Fatal("widen16 refused")
		}
		for i, h := range all[5:] {
			want := half.Float16ToFloat32(h)
			if bf {
				want = half.BFloat16ToFloat32(h)
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("bf %v: widen %#04x = %#08x, want %#08x (tail test)", bf, h, math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
		if !widen16(got, all, bf) {
			t.Fatal("widen16 refused")
		}
		for i, h := range all {
			want := half.Float16ToFloat32(h)
			if bf {
				want = half.BFloat16ToFloat32(h)
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("bf %v: widen %#04x = %#08x, want %#08x", bf, h, math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	var bits []uint32
	for _, base := range []uint32{0, 0x00000001, 0x33000000, 0x33800000, 0x387fc000, 0x38800000, 0x477fe000, 0x477ff000,
		0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0x3f800000, 0x3f808000, 0x3f818000} {
		for d := uint32(0); d < 4096; d++ {
			bits = append(bits, base+d-2048, (base+d-2048)|1<<31)
		}
	}
	for range 1 << 20 {
		bits = append(bits, rng.Uint32())
	}
	src := make([]float32, len(bits))
	for i, b := range bits {
		src[i] = math.Float32frombits(b)
	}
	out := make([]uint16, len(src))
	for _, bf := range []bool{false, true} {
		// Every tail length first (a run's last n mod 8 values go through
		// the one-value path), then the whole.
		for k := range 8 {
			if !narrow16(out[:vectorMin+k], src[len(src)-vectorMin-k:], bf) {
				t.Fatal("narrow16 refused")
			}
			for i, f := range src[len(src)-vectorMin-k:] {
				want := half.Float16FromFloat32(f)
				if bf {
					want = half.BFloat16FromFloat32(f)
				}
				if out[i] != want {
					t.Fatalf("bf %v tail %d: narrow %#08x = %#04x, want %#04x", bf, k, math.Float32bits(f), out[i], want)
				}
			}
		}
		if !narrow16(out, src, bf) {
			t.Fatal("narrow16 refused")
		}
		for i, f := range src {
			want := half.Float16FromFloat32(f)
			if bf {
				want = half.BFloat16FromFloat32(f)
			}
			if out[i] != want {
				t.Fatalf("bf %v: narrow %#08x = %#04x, want %#04x", bf, bits[i], out[i], want)
			}
		}
	}
}
