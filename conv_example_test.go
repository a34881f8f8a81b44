package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// A 2×2 difference kernel over a 3×3 image, with one pixel of zero padding,
// then the transposed convolution back to the image's size; and an error.
func ExampleTensor_Conv2d() {
	x := lathe.Arange(lathe.CPU, lathe.Float32, 1, 10, 1).Reshape(1, 1, 3, 3)
	w := lathe.FromSlice(lathe.CPU, []float32{1, 0, 0, -1}, 1, 1, 2, 2)
	y := x.Conv2d(w, nil, lathe.Padding(1))
	vals, _ := y.Float32s()
	fmt.Println(y.Shape(), vals)
	back := y.ConvTranspose2d(w, nil, lathe.Padding(1))
	fmt.Println(back.Shape())
	_, err := x.Conv2d(w, nil, lathe.PaddingSame(), lathe.Stride(2)).Float32s()
	fmt.Println(err)
	// Output:
	// [1 1 4 4] [-1 -2 -3 0 -4 -4 -4 3 -7 -4 -4 6 0 7 8 9]
	// [1 1 3 3]
	// lathe: conv2d: argument "padding" is "same", which needs stride 1, but stride is [2, 2] (give the padding in numbers for a strided convolution) [called at conv_example_test.go:19]
}
