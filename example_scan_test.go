package lathe_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
)

// The running maximum and where it was reached: ties give the last index,
// as torch.cummax.
func ExampleTensor_CumMax() {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 3, 2, 3, 5}, 5)
	values, indices := x.CumMax(0)
	v, _ := values.Float32s()
	i, _ := indices.Int64s()
	fmt.Println(v, i)
	// Output: [1 3 3 3 5] [0 1 1 3 4]
}

// Where values would go in a sorted sequence, and how many of each value
// a tensor of counts holds.
func ExampleSearchSorted() {
	seq := lathe.FromSlice(lathe.CPU, []float32{1, 2, 2, 4}, 4)
	values := lathe.FromSlice(lathe.CPU, []float32{0, 2, 3, 9}, 4)
	left, _ := lathe.SearchSorted(seq, values).Int64s()
	right, _ := lathe.SearchSorted(seq, values, lathe.SearchRight()).Int64s()
	counts, _ := lathe.FromSlice(lathe.CPU, []int64{0, 2, 2, 5}, 4).Bincount(nil, 0).Int64s()
	fmt.Println(left, right, counts)
	// Output: [0 1 3 4] [0 3 3 4] [1 0 2 0 0 1]
}
