package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// Interpolate resamples the spatial dims, as torch.nn.functional.interpolate.
func ExampleTensor_Interpolate() {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4}, 1, 1, 2, 2)
	y := x.Interpolate(lathe.ScaleFactor(2), lathe.Mode("bilinear"), lathe.AlignCorners())
	fmt.Println(y.Shape())
	v, _ := y.Float32s()
	fmt.Println(v[:4])

	// Mistakes are errors, not panics.
	err := x.Interpolate(lathe.Size(3), lathe.Mode("trilinear")).Err()
	fmt.Println(err != nil)
	// Output:
	// [1 1 4 4]
	// [1 1.3333333 1.6666667 2]
	// true
}
