package lathe

import (
	"errors"
	"testing"
)

func TestEmptyCache(t *testing.T) {
	x := Ones(CPU, Float32, 64)
	x.Release()
	if err := EmptyCache(CPU); err != nil {
		t.Fatalf("cpu: %v", err)
	}
	if err := EmptyCache(CUDA(0)); err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("cuda:0: %v, want nil or ErrUnavailable", err)
	} else if err != nil {
		t.Logf("cuda:0: %v", err)
	}
}
