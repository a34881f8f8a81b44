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

// CTCLoss scores a target sequence against per-step class
// log-probabilities over all its alignments. With 3 equally likely
// classes over 3 steps, 6 of the 27 paths read "1" once the repeats and
// blanks (class 0) are removed: the loss is -log(6/27). A target that no
// alignment fits, "1 1" in 2 steps (repeats need a blank between them), is
// +Inf, or 0 with zeroInfinity.
func ExampleCTCLoss() {
	logProbs := lathe.Full(lathe.CPU, lathe.Float32, -1.0986123, 3, 2, 3) // log(1/3): [T, N, C]
	targets := lathe.FromSlice(lathe.CPU, []int64{1, 0, 1, 1}, 2, 2)      // padded [N, S]
	inputLengths := lathe.FromSlice(lathe.CPU, []int64{3, 2})
	targetLengths := lathe.FromSlice(lathe.CPU, []int64{1, 2})
	fmt.Println(lathe.CTCLoss(logProbs, targets, inputLengths, targetLengths, 0, lathe.ReduceNone, false))
	fmt.Println(lathe.CTCLoss(logProbs, targets, inputLengths, targetLengths, 0, lathe.ReduceNone, true))
	// Output:
	// tensor([1.5041,    inf])
	// tensor([1.5041, 0.0000])
}
