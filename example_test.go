package lathe_test

import (
	"errors"
	"fmt"

	"github.com/lathe-ml/lathe"
)

func Example() {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	y := x.MulScalar(2).Add(lathe.Full(lathe.CPU, lathe.Float32, 0.5, 3)).ReLU()
	fmt.Println(y)
	// Output:
	// tensor([[ 2.5000,  4.5000,  6.5000],
	//         [ 8.5000, 10.5000, 12.5000]])
}

// Errors are values: a bad op fails the tensor, every op after it passes the
// failure on, and reading data returns the first error with its fix.
func Example_errors() {
	x := lathe.Ones(lathe.CPU, lathe.Float32, 2, 3)
	y := x.MatMul(lathe.Ones(lathe.CPU, lathe.Float64, 3, 2)).Exp()
	_, err := y.Float32s()
	var e *lathe.Error
	fmt.Println(errors.Is(err, lathe.ErrDType), errors.As(err, &e), e.Op, e.Arg)
	// Output: true true matmul rhs
}
