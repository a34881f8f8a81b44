package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// A training step normalises by the batch's statistics and moves the running
// ones towards them; evaluation normalises by the running ones.
func ExampleTensor_BatchNorm() {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 10, 3, 30}, 2, 2) // [N=2, C=2]
	mean, variance := lathe.Zeros(lathe.CPU, lathe.Float32, 2), lathe.Ones(lathe.CPU, lathe.Float32, 2)
	fmt.Println(x.BatchNorm(mean, variance, nil, nil, true, 0.5, 0))
	fmt.Println(mean, variance)
	fmt.Println(x.BatchNorm(mean, variance, nil, nil, false, 0.5, 0))
	// Output:
	// tensor([[-1., -1.],
	//         [ 1.,  1.]])
	// tensor([ 1., 10.]) tensor([  1.5000, 100.5000])
	// tensor([[0.0000, 0.0000],
	//         [1.6330, 1.9950]])
}
