package data_test

import (
	"fmt"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/data"
)

// A dataset of ten examples, each a row of x and its label y, split 8/2
// and walked in shuffled batches of three.
func Example() {
	x := lathe.Arange(lathe.CPU, lathe.Float32, 0, 20, 1).Reshape(10, 2)
	y := lathe.Arange(lathe.CPU, lathe.Int64, 0, 10, 1)
	defer x.Release()
	defer y.Release()
	ds, err := data.NewTensorDataset(x, y)
	if err != nil {
		fmt.Println(err)
		return
	}
	parts, err := data.RandomSplit(ds, 7, 8, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	train := &data.Loader{Dataset: parts[0], BatchSize: 3, Shuffle: true, Seed: 1}
	seen := 0
	for batch, err := range train.All() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(batch[0].Shape(), batch[1].Shape())
		seen += batch[1].Dim(0)
		batch.Release()
	}
	fmt.Println(seen, "training examples in", train.Len(), "batches;", parts[1].Len(), "held out")
	// Output:
	// [3 2] [3]
	// [3 2] [3]
	// [2 2] [2]
	// 8 training examples in 3 batches; 2 held out
}
