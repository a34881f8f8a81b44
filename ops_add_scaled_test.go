package lathe

import (
	"errors"
	"math"
	"testing"
)

// TestAddScaled: x + α·y on every device, broadcast both ways, with one
// rounding where the device fuses, and two on wgpu:0, whose WGSL fma may
// round the product first (lavapipe's does); its gradients (g summed over
// x's broadcast dim, α·g over y's), and integers refused.
func TestAddScaled(t *testing.T) {
	xs := []float32{1.5, -2, 0.3333, 1e-3, 7, -0.125}
	ys := []float32{0.1, 3, -0.7, 2.5}
	const alpha = -0.3
	for _, dev := range Devices() {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, xs, 6, 1).To(dev).RequireGrad()
			y := FromSlice(CPU, ys, 1, 4).To(dev).RequireGrad()
			z := x.AddScaled(y, alpha)
			got, err := z.To(CPU).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			fused := dev.Kind != WGPU(0).Kind
			for i, v := range got {
				want := float64(xs[i/4]) + float64(float32(alpha))*float64(ys[i%4])
				if !closeToFused(v, want, float64(xs[i/4]), fused) {
					t.Errorf("element %d is %v, want %v", i, v, want)
				}
			}
			// A run long enough for the cpu's vector rows (256 elements).
			long := make([]float32, 1000)
			for i := range long {
				long[i] = float32(math.Sin(float64(i))) * 3
			}
			lx, ly := FromSlice(CPU, long, 1000).To(dev), FromSlice(CPU, long[1:], 999).To(dev)
			lz, err := lx.Narrow(0, 0, 999).AddScaled(ly, alpha).To(CPU).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range lz {
				want := float64(long[i]) + float64(float32(alpha))*float64(long[i+1])
				if !closeToFused(v, want, float64(long[i]), fused) {
					t.Fatalf("long run: element %d is %v, want %v", i, v, want)
				}
			}
			if err := z.Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			gx, _ := x.Grad().To(CPU).Float32s()
			gy, err := y.Grad().To(CPU).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range gx {
				if g != 4 {
					t.Errorf("x's gradient %d is %v, want 4", i, g)
				}
			}
			for i, g := range gy {
				if want := float32(6 * float32(alpha)); math.Abs(float64(g-want)) > 1e-6 {
					t.Errorf("y's gradient %d is %v, want %v", i, g, want)
				}
			}
		})
	}
	ints := FromSlice(CPU, []int32{1, 2}, 2)
	if err := ints.AddScaled(ints, 2).Err(); !errors.Is(err, ErrDType) {
		t.Errorf("int32 add_scaled: %v, want an ErrDType", err)
	}
	if got, err := ints.AddScaled(FromSlice(CPU, []float32{0.5, 1}, 2), 2).Float32s(); err != nil || got[0] != 2 || got[1] != 4 {
		t.Errorf("int32 with float32 add_scaled: %v %v, want [2 4] (promoted)", got, err)
	}
}

// ulp32 is the spacing of float32s at |v|.
func ulp32(v float64) float64 {
	a := float32(math.Abs(v))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}

// closeToFused reports whether got is want = x + α·y (exact in float64)
// rounded once to float32, or where fused is false, with α·y = want - x
// rounded first as well.
func closeToFused(got float32, want, x float64, fused bool) bool {
	most := ulp32(want) / 2
	if !fused {
		most += ulp32(want-x) / 2
	}
	return math.Abs(float64(got)-want) <= most
}
