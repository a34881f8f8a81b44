package lathe_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestRandIsTheStream: Rand's float32 and float64 values are those of
// math/rand/v2's Float32 and Float64 drawn one by one from the PCG that
// Seed seeds, for runs short enough to draw serially and long enough to
// be drawn in parts in parallel (from 2^15 draws a part), and the stream
// goes on after each run where one-by-one drawing would be, on every
// device that opens.
func TestRandIsTheStream(t *testing.T) {
	sizes := []int{1, 7, 1 << 16, 1<<17 + 3, 1<<20 + 1}
	for _, dev := range randomDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64} {
			t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
				skipWithout(t, dev, dt)
				lathe.Seed(41)
				ref := rand.New(rand.NewPCG(41, 0x65))
				for _, n := range sizes {
					got, err := floatsOf(lathe.Rand(dev, dt, n))
					if err != nil {
						t.Fatal(err)
					}
					for i, v := range got {
						var want float64
						if dt == lathe.Float32 {
							want = float64(ref.Float32())
						} else {
							want = ref.Float64()
						}
						if v != want {
							t.Fatalf("Rand of %d: element %d is %v, want %v (the stream's draw)", n, i, v, want)
						}
					}
				}
			})
		}
	}
}

// TestRandConcurrentRuns: long draws from many goroutines (each drawn in
// parallel parts) are each one unbroken run of the stream: the runs that
// the same calls made one after another give.
func TestRandConcurrentRuns(t *testing.T) {
	const calls, n = 8, 1<<16 + 5
	draw := func() []float32 {
		v, err := lathe.Rand(lathe.CPU, lathe.Float32, n).Float32s()
		if err != nil {
			t.Error(err)
		}
		return v
	}
	lathe.Seed(43)
	var runs [][]float32
	for range calls {
		runs = append(runs, draw())
	}
	lathe.Seed(43)
	got := make([][]float32, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { got[i] = draw() })
	}
	wg.Wait()
	for i, g := range got {
		at := slices.IndexFunc(runs, func(r []float32) bool { return r != nil && slices.Equal(r, g) })
		if at < 0 {
			t.Fatalf("goroutine %d drew a run that is no run of the stream", i)
		}
		runs[at] = nil
	}
}

// floatsOf is a float32 or float64 tensor's values as float64s.
func floatsOf(x *lathe.Tensor) ([]float64, error) {
	if x.DType() == lathe.Float64 {
		return x.Float64s()
	}
	f, err := x.Float32s()
	out := make([]float64, len(f))
	for i, v := range f {
		out[i] = float64(v)
	}
	return out, err
}
