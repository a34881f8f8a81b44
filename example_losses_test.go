package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// The losses take torch's parameters as options, with torch's defaults;
// an option that a loss does not take is refused.
func ExampleTensor_HuberLoss() {
	x := lathe.FromSlice(lathe.CPU, []float32{0, 1, 4})
	y := lathe.FromSlice(lathe.CPU, []float32{0.5, 1, 1})
	fmt.Println(x.HuberLoss(y, lathe.Delta(2), lathe.WithReduction(lathe.ReduceNone)))
	fmt.Println(x.L1Loss(y, lathe.Delta(2)).Err())
	// Output:
	// tensor([0.1250, 0.0000, 4.0000])
	// lathe: l1_loss: argument "Delta" is not an option of this loss (leave Delta out) [called at example_losses_test.go:15]
}
