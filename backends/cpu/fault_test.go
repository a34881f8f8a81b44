package cpu_test

import (
	"errors"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/backends/cpu"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/faulttest"
)

// TestAllocationFailures fails each raw allocation of a training step on
// the cpu in turn: the step says ErrOutOfMemory, nothing stays allocated,
// and the next step works (faulttest).
func TestAllocationFailures(t *testing.T) {
	f, restore := cpu.FaultyAllocs()
	defer restore()
	n := faulttest.AllocFailures(t, lathe.CPU, f)
	t.Logf("failed each of a step's %d raw allocations in turn", n)
}

// faultOp is an op whose cpu kernel reports an error, as a kernel that
// finds a fault on the device does.
var faultOp = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: dispatch.Schema{Name: "test_kernel_fault", Args: []string{"x"}},
	Infer: func(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
		return in[0].DType, append([]int(nil), in[0].Shape...), nil
	}})

var errKernel = errors.New("injected kernel fault")

func init() {
	dispatch.RegisterKernel(dispatch.Host, faultOp, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		return &dispatch.Error{Kind: dispatch.ErrUnavailable, Detail: "the device reported a fault", Err: errKernel}
	})
}

// TestKernelError: a kernel that reports an error fails its op with that
// error, wrapped and naming the op, and its output goes back to the pool;
// the next ops work.
func TestKernelError(t *testing.T) {
	before, err := lathe.MemoryStats(lathe.CPU)
	if err != nil {
		t.Fatal(err)
	}
	x, err := dispatch.Upload(dispatch.Device{Kind: dispatch.Host}, []float32{1, 2, 3}, dispatch.Float32, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = dispatch.Call(faultOp, dispatch.None{}, x)
	var e *lathe.Error
	if !errors.As(err, &e) || e.Op != "test_kernel_fault" || !errors.Is(err, lathe.ErrUnavailable) || !errors.Is(err, errKernel) {
		t.Fatalf("error %v, want the kernel's, naming test_kernel_fault", err)
	}
	after, _ := lathe.MemoryStats(lathe.CPU)
	if after.Allocated > before.Allocated { // less is no leak: a collected tensor's cleanup
		t.Errorf("allocated %d before the failed op, %d after", before.Allocated, after.Allocated)
	}
	faulttest.MidStep(t, lathe.CPU, "a kernel error", nil, func() {
		if _, err := dispatch.Call(faultOp, dispatch.None{}, x); err == nil {
			t.Error("the faulty kernel succeeded")
		}
	}, nil)
}
