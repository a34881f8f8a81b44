package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// A periodic Hann window for an 8-point frame, and the symmetric Kaiser
// window of 5 points with β = 4, as torch.hann_window(8) and
// torch.kaiser_window(5, False, 4.0).
func ExampleHannWindow() {
	w, _ := lathe.HannWindow(lathe.CPU, 8).Float32s()
	k, _ := lathe.KaiserWindow(lathe.CPU, 5, lathe.WindowPeriodic(false), lathe.WindowBeta(4)).Float32s()
	fmt.Printf("%.4f\n%.4f\n", w, k)
	// Output:
	// [0.0000 0.1464 0.5000 0.8536 1.0000 0.8536 0.5000 0.1464]
	// [0.0885 0.6334 1.0000 0.6334 0.0885]
}

// The modified Bessel functions of the first kind, plain and scaled by
// e^-|x|, as torch.i0 and torch.special.i1e.
func ExampleTensor_I0() {
	x := lathe.FromSlice(lathe.CPU, []float64{0, 1, -2, 50})
	i0, _ := x.I0().Float64s()
	i1e, _ := x.I1e().Float64s()
	fmt.Printf("%.6g\n%.6g\n", i0, i1e)
	// Output:
	// [1 1.26607 2.27959 2.93255e+20]
	// [0 0.20791 -0.215269 0.0559931]
}
