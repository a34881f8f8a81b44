package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// One step of a decoder's sampling: keep the k most likely tokens of each
// row of logits, soften them with a temperature, draw one by its
// probability, and map the draw back to the vocabulary.
func ExampleMultinomial() {
	lathe.Seed(7)
	logits := lathe.FromSlice(lathe.CPU, []float32{
		2.0, 0.5, -1, 3.0, 1.0, -2, // two sequences over a vocabulary of 6
		0.1, 4.0, 0.2, 0.3, 3.5, 0,
	}, 2, 6)
	top, vocab := logits.TopK(3, -1, true)         // the 3 best logits and their token ids
	probs := top.DivScalar(0.8).Softmax(-1)        // temperature 0.8
	pick := lathe.Multinomial(probs, 1, false)     // [2, 1]: a place among the 3
	tokens, err := vocab.Gather(-1, pick).Int64s() // back to token ids
	fmt.Println(tokens, err)

	// Integer draws, and a permutation, from the same stream.
	ids, _ := lathe.RandInt(lathe.CPU, lathe.Int64, 0, 10, 5).Int64s()
	order, _ := lathe.RandPerm(lathe.CPU, lathe.Int64, 5).Int64s()
	fmt.Println(ids, order)

	// Weights must be finite and non-negative.
	fmt.Println(lathe.Multinomial(lathe.FromSlice(lathe.CPU, []float32{1, -1}), 1, true).Err() != nil)
	// Output:
	// [3 4] <nil>
	// [5 9 7 2 2] [4 2 3 0 1]
	// true
}
