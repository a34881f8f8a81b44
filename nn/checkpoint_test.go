package nn

import (
	"errors"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
)

// A checkpointed block trains as the plain one does: the same loss and,
// bit for bit, the same gradients for every parameter, under the same
// names.
func TestCheckpointModule(t *testing.T) {
	build := func() Module {
		lathe.Seed(5)
		return Sequential(NewLinear(6, 12), ReLU{}, NewLinear(12, 3))
	}
	run := func(m Module) [][]float64 {
		lathe.Seed(9)
		x := lathe.RandN(lathe.CPU, lathe.Float32, 4, 6)
		if err := m.Forward(x).Tanh().Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		var gs [][]float64
		for _, p := range m.Parameters() {
			g, err := p.T.Grad().Cast(lathe.Float64).Float64s()
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			gs = append(gs, g)
		}
		return gs
	}
	plain, wrapped := build(), Checkpoint(build())
	want, got := run(plain), run(wrapped)
	names := func(m Module) (out []string) {
		for _, p := range m.Parameters() {
			out = append(out, p.Name)
		}
		return out
	}
	if !slices.Equal(names(plain), names(wrapped)) {
		t.Errorf("parameter names %v, want %v", names(wrapped), names(plain))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("gradient of %s differs through Checkpoint", names(plain)[i])
		}
	}
	var nilMod Module
	if y := Checkpoint(nilMod).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 1)); !errors.Is(y.Err(), lathe.ErrValue) {
		t.Errorf("Checkpoint(nil).Forward: %v, want ErrValue", y.Err())
	}
}
