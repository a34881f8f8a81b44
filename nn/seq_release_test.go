package nn_test

import (
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// keeper is a module of another package: it keeps its input.
type keeper struct{ kept *lathe.Tensor }

func (k *keeper) Forward(x *lathe.Tensor) *lathe.Tensor { k.kept = x; return x.ReLU() }
func (k *keeper) Parameters() []nn.Param                { return nil }
func (k *keeper) To(lathe.Device) error                 { return nil }
func (k *keeper) Train(bool)                            {}

// TestSeqReleasesActivations: the activations that this package's layers
// hand each other in a Seq are released when backward frees the graph
// (they waited for the garbage collector), while the Seq's input, its
// output and what a module of another package takes or makes are kept.
func TestSeqReleasesActivations(t *testing.T) {
	const rows, hidden = 256, 1024
	const activation = rows * hidden * 4 // bytes: 1 MiB, past the gradients' 0.3 MiB
	lathe.Seed(5)
	x := lathe.RandN(lathe.CPU, lathe.Float32, rows, 64)
	k := &keeper{}
	for _, c := range []struct {
		name  string
		model *nn.Seq
		held  int64 // bytes that may stay live after the step
	}{
		{"own layers", nn.Sequential(nn.NewLinear(64, hidden), nn.ReLU{}, nn.NewLinear(hidden, 8)), activation},
		{"a foreign module", nn.Sequential(nn.NewLinear(64, hidden), k, nn.NewLinear(hidden, 8)), 5 * activation / 2}, // its input and output stay
	} {
		t.Run(c.name, func(t *testing.T) {
			before := cpuAllocated(t)
			out := c.model.Forward(x)
			loss := out.Sum()
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			loss.Release()
			out.Release()
			for _, p := range c.model.Parameters() {
				p.T.ZeroGrad()
			}
			if held := cpuAllocated(t) - before; held >= c.held {
				t.Errorf("%d bytes still held after the step, want under %d", held, c.held)
			}
			if err := x.Err(); err != nil {
				t.Fatalf("the input: %v", err)
			}
		})
	}
	if _, err := k.kept.Float32s(); err != nil {
		t.Fatalf("the foreign module's input was released: %v", err)
	}
}
