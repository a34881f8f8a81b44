package lathe

import (
	"math"
	"testing"
)

// TestSignOfZeroAndNaN checks sign's +0, torch's, for +0, -0 and NaN on
// every device (lavapipe's compiler once turned wgpu's select of 0.0 and
// -1.0 into a negated 0 there), in float32 and the 16-bit floats.
func TestSignOfZeroAndNaN(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, Float16, BFloat16} {
			x := FromSlice(dev, []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), 2, -3}).Cast(dt)
			got, err := x.Sign().Cast(Float32).To(CPU).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []float32{0, 0, 0, 1, -1} {
				if got[i] != want || math.Signbit(float64(got[i])) != (want < 0) {
					t.Errorf("%s %s: sign of element %d = %g (sign bit %v), want %g", dev, dt, i, got[i], math.Signbit(float64(got[i])), want)
				}
			}
		}
	}
}
