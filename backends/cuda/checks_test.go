package cuda

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// TestValueChecks: an index out of range and an integer pow's negative
// exponent are the cpu's errors, found before any kernel is launched.
func TestValueChecks(t *testing.T) {
	old := readInts
	t.Cleanup(func() { readInts = old })
	vals := []int64{0, 2, 3}
	readInts = func(*dispatch.Tensor) ([]int64, error) { return vals, nil }
	idx := tensor(dispatch.Int32, []int{3})
	err := checkIndices(idx, "index", 1, 3)
	var de *dispatch.Error
	if !errors.As(err, &de) || !errors.Is(err, dispatch.ErrIndex) || de.Found != "3" || de.Arg != "index" {
		t.Errorf("index 3 of a dim of 3: %v, want an ErrIndex that found 3", err)
	}
	if err := checkIndices(idx, "index", 1, 4); err != nil {
		t.Errorf("indices in range: %v", err)
	}
	if err := checkPlaneIndices(idx, []int{1, 3}); !errors.Is(err, dispatch.ErrIndex) {
		t.Errorf("plane index 3 of 3 places: %v, want an ErrIndex", err)
	}
	vals = []int64{2, -1}
	if err := checkExponents(tensor(dispatch.Int64, []int{2})); !errors.Is(err, dispatch.ErrValue) {
		t.Errorf("exponent -1 of an int64 pow: %v, want an ErrValue", err)
	}
	if err := checkExponents(tensor(dispatch.Float32, []int{2})); err != nil {
		t.Errorf("a float pow's exponents are not checked: %v", err)
	}
}
