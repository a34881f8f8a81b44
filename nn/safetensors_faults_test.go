package nn

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lathe-ml/lathe"
)

// TestLoadDuplicateNames: a model whose tensors share a name (a module
// that joins its children's parameters without prefixes) is refused, as
// Save refuses it, before anything is read or changed; one decoded tensor
// tied both handles together before.
func TestLoadDuplicateNames(t *testing.T) {
	var file bytes.Buffer
	mustOK(t, Save(&file, tensors{{"a", lathe.FromSlice(lathe.CPU, []float32{1, 2})}}))
	x, y := lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad(), lathe.Zeros(lathe.CPU, lathe.Float32, 2)
	err := Load(&file, tensors{{"a", x}, {"a", y}})
	if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("got %v, want an ErrValue naming \"a\"", err)
	}
	for _, p := range []*lathe.Tensor{x, y} {
		if v, err := p.Float32s(); err != nil || !slices.Equal(v, []float32{0, 0}) {
			t.Errorf("a parameter is now %v, %v", v, err)
		}
	}
}

// TestLoadReaderFails: a reader that fails part way through a tensor's
// data is a load error naming the tensor that wraps the reader's error,
// and leaves the model as it was.
func TestLoadReaderFails(t *testing.T) {
	m := tensors{{"a", lathe.FromSlice(lathe.CPU, []float32{1, 2, 3})}}
	var file bytes.Buffer
	mustOK(t, Save(&file, m))
	into := tensors{{"a", lathe.Zeros(lathe.CPU, lathe.Float32, 3)}}
	boom := errors.New("disk read failed")
	err := Load(io.MultiReader(bytes.NewReader(file.Bytes()[:file.Len()-4]), iotest.ErrReader(boom)), into)
	var le *lathe.Error
	if !errors.Is(err, boom) || !errors.As(err, &le) || le.Op != "load" || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("got %v, want a load error naming \"a\" that wraps the reader's", err)
	}
	if v, _ := into[0].T.Float32s(); !slices.Equal(v, []float32{0, 0, 0}) {
		t.Errorf("the model's tensor is now %v", v)
	}
}

// TestLoadOptimizerGivesBack: a LoadOptimizer that fails releases the
// state it read, and one that succeeds releases the state it replaces,
// so neither leaves blocks in the pool for the collector to find.
func TestLoadOptimizerGivesBack(t *testing.T) {
	lathe.Seed(1)
	model := Sequential(NewLinear(256, 256))
	adam, err := NewAdam(model.Parameters(), 0.01)
	mustOK(t, err)
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 256)
	mustOK(t, MSE(model.Forward(x), x).Backward(), adam.Step())
	var file bytes.Buffer
	mustOK(t, SaveOptimizer(&file, adam))
	// Settled: a cleanup of what earlier steps left to the collector,
	// run during the loads, lowered the count (1 MiB fewer after than
	// before, once, under load).
	before := settledAllocated(t, lathe.CPU)
	for range 3 {
		if err := LoadOptimizer(bytes.NewReader(file.Bytes()[:file.Len()-1]), adam); err == nil {
			t.Fatal("a truncated file loaded")
		}
		mustOK(t, LoadOptimizer(bytes.NewReader(file.Bytes()), adam))
	}
	if after := settledAllocated(t, lathe.CPU); after != before {
		t.Errorf("three failed and three good loads left %d bytes allocated, %d before", after, before)
	}
	runtime.KeepAlive(model) // and the optimizer's state, which the counts hold
	runtime.KeepAlive(adam)
}
