package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// A spatial transformer: AffineGrid makes the sampling grid of an affine
// map, GridSample reads the input there (here, a left-right mirror).
func ExampleGridSample() {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2, 3, 4, 5, 6}, 1, 1, 2, 3)
	theta := lathe.FromSlice(lathe.CPU, []float64{-1, 0, 0, 0, 1, 0}, 1, 2, 3)
	grid := lathe.AffineGrid(theta, x.Shape(), false)
	y := lathe.GridSample(x, grid, lathe.GridMode("bilinear"), lathe.GridPadding("border"))
	v, _ := y.Float64s()
	fmt.Printf("%.4g\n", v)

	// Mistakes are errors, not panics.
	err := lathe.GridSample(x, lathe.Zeros(lathe.CPU, lathe.Float64, 1, 2, 2, 3)).Err()
	fmt.Println(err)
	// Output:
	// [3 2 1 6 5 4]
	// lathe: grid_sample: argument "grid" has shape [1, 2, 2, 3], but a 4-d x needs a grid (N, Ho, Wo, 2) (give one 2-vector of coordinates per output point, last) [called at example_grid_test.go:20]
}
