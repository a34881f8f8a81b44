//go:build cgo

package cuda_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestUseAfterClose: a tensor made on cuda:0 before lathe.Close is an
// ErrReleased of every op, read and copy that would give its address to
// the device opened after (whose context never held that memory: on a GPU
// the kernel faults, and the fault ends every later call on the device),
// and the tensors made after Close work. It runs where cuda:0 opens: a GPU
// (gpu-check's cuda-unit step), or the host emulation (TestEmulatedCUDA).
func TestUseAfterClose(t *testing.T) {
	dev := lathe.CUDA(0)
	x := lathe.FromSlice(dev, []float32{1, 2, 3})
	if err := x.Err(); err != nil {
		testenv.SkipDevice(t, "cuda:0", "cuda:0 does not open: %v", err)
	}
	if err := lathe.Close(); err != nil {
		t.Fatal(err)
	}
	y := lathe.FromSlice(dev, []float32{4, 5, 6})
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, lathe.ErrReleased) || !strings.Contains(err.Error(), "lathe.Close") {
			t.Errorf("%s of a tensor from before Close: %v, want an ErrReleased that says why", what, err)
		}
	}
	refused("add", x.Add(x).Err())
	refused("add beside a new tensor", y.Add(x).Err())
	refused("sum", x.Sum().Err())
	refused("copy to the cpu", x.To(lathe.CPU).Err())
	_, err := x.Float32s()
	refused("read", err)
	if got, err := y.Add(y).Float32s(); err != nil || !slices.Equal(got, []float32{8, 10, 12}) {
		t.Errorf("a tensor made after Close: %v, %v; want [8 10 12]", got, err)
	}
	x.Release()
	if err := lathe.Synchronize(dev); err != nil {
		t.Errorf("the device after the refusals: %v", err)
	}
}
