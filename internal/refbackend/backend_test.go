package refbackend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	_ "github.com/lathe-ml/lathe/internal/refbackend" // the blank import is all it takes
)

// TestFourthBackend: a backend that lathe's root package does not name
// works through the public API like the three it links.
func TestFourthBackend(t *testing.T) {
	dev, err := lathe.ParseDevice("ref:0")
	if err != nil {
		t.Fatal(err)
	}
	if dev.String() != "ref:0" || dev.GoString() != "lathe.REF(0)" {
		t.Errorf("device %q, Go expression %s", dev, dev.GoString())
	}
	if !slices.Contains(lathe.Devices(), dev) {
		t.Errorf("lathe.Devices() = %v lacks %v", lathe.Devices(), dev)
	}

	// Ops with a kernel run, broadcasting and views included.
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3).To(dev)
	y := lathe.FromSlice(lathe.CPU, []float32{10, 20, 30}, 3).To(dev)
	got, err := x.Add(y).Neg().Float32s()
	if want := []float32{-11, -22, -33, -14, -25, -36}; err != nil || !slices.Equal(got, want) {
		t.Errorf("-(x + y) = %v, %v; want %v", got, err, want)
	}
	rows, err := x.IndexSelect(0, lathe.FromSlice(lathe.CPU, []int32{1, 1, 0}, 3).To(dev)).Float32s()
	if want := []float32{4, 5, 6, 4, 5, 6, 1, 2, 3}; err != nil || !slices.Equal(rows, want) {
		t.Errorf("index_select = %v, %v; want %v", rows, err, want)
	}

	// What it lacks, dispatch answers as for any backend.
	for name, c := range map[string]struct {
		err      error
		kind     error
		contains string
	}{
		"no kernel":      {x.Exp().Err(), lathe.ErrUnsupported, "exp: has no float32 kernel on ref:0, nor one for any dtype"},
		"no dtype":       {lathe.FromSlice(lathe.CPU, []int32{1}, 1).To(dev).Neg().Err(), lathe.ErrUnsupported, "neg: has no int32 kernel on ref:0"},
		"other device":   {x.Add(lathe.Ones(lathe.CPU, lathe.Float32, 3)).Err(), lathe.ErrDevice, `argument "rhs" is on cpu but the op runs on ref:0`},
		"no allocator":   {lathe.EmptyCache(dev), lathe.ErrUnsupported, "ref:0 has no caching allocator"},
		"value on host":  {x.IndexSelect(0, lathe.FromSlice(lathe.CPU, []int32{2}, 1).To(dev)).Err(), lathe.ErrIndex, `argument "index" holds 2, out of range for dim 0 of size 2`},
		"unknown device": {func() error { _, err := lathe.ParseDevice("ref2:0"); return err }(), lathe.ErrValue, `"ref:N"`},
	} {
		if !errors.Is(c.err, c.kind) || !strings.Contains(c.err.Error(), c.contains) {
			t.Errorf("%s: %v, want a %v containing %q", name, c.err, c.kind, c.contains)
		}
	}
}
