package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// add_scaled (ops.AddScaled): p + α·q rounded once, in add_scaled.c's
// vector rows where the run is long enough, else math.FMA per element.
// The 16-bit floats come widened to float32 and round once more, as every
// backend's do.

func init() {
	registerFor(ops.AddScaled, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.Scale) error {
		if out.DType == dispatch.Float64 {
			mapRows2(out, in[0], in[1], addScaledRows(s.Alpha, addScaledFloat64))
		} else {
			mapRows2(out, in[0], in[1], addScaledRows(float32(s.Alpha), addScaledFloat32))
		}
		return nil
	})
}

// fused is a + α·b rounded once: exactly for float64; for float32 the
// float64 FMA of the float32 values rounded again to float32, which is
// the single rounding but where the exact value lies within 2⁻³⁰ of an
// ulp from a float32 tie (the product is exact in float64, the sum not
// always): add_scaled.c's rounding, but for those.
func fused[T float](alpha, b, a T) T {
	return T(math.FMA(float64(alpha), float64(b), float64(a)))
}

func addScaledRows[T float](alpha T, vector func(dst, p, q []T, s, alpha T) bool) rows2[T, T] {
	return rows2[T, T]{
		vv: func(dst, p, q []T) {
			p, q = p[:len(dst)], q[:len(dst)]
			if vector(dst, p, q, 0, alpha) {
				return
			}
			for i := range dst {
				dst[i] = fused(alpha, q[i], p[i])
			}
		},
		vs: func(dst, p []T, s T) {
			p = p[:len(dst)]
			if vector(dst, p, nil, s, alpha) {
				return
			}
			for i := range dst {
				dst[i] = fused(alpha, s, p[i])
			}
		},
		at:   func(a, b T) T { return fused(alpha, b, a) },
		cost: costVector,
	}
}
