package lathe_test

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestRandNIsTheStream: RandN's values are those of math/rand/v2's
// NormFloat64 drawn one by one from the PCG that Seed seeds (rounded once
// for float32), for runs drawn serially and runs drawn in parallel parts,
// over several rounds of parts, and the stream goes on after each run
// where one-by-one drawing would be. With 64 parts to a round, a run of 2^21
// draws has 63 places where a part's guessed start may fall inside a value
// of the part before (a ziggurat value of more than one word, about three
// in a hundred). TestDrawNormalStitches meets many more.
func TestRandNIsTheStream(t *testing.T) {
	for _, c := range []struct {
		name  string
		procs int
		seeds int
		sizes []int
	}{
		{"2 procs", 2, 1, []int{1, 7, 1<<16 - 1, 1 << 16, 1<<17 + 3, 1<<20 + 1}},
		{"64 procs", 64, 6, []int{1 << 21, 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
			for _, dev := range randomDevices(t) {
				for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64} {
					t.Run(dev.String()+"/"+dt.String(), func(t *testing.T) {
						skipWithout(t, dev, dt)
						for seed := range uint64(c.seeds) {
							lathe.Seed(seed + 7)
							ref := rand.New(rand.NewPCG(seed+7, 0x65))
							for _, n := range c.sizes {
								got, err := floatsOf(lathe.RandN(dev, dt, n))
								if err != nil {
									t.Fatal(err)
								}
								for i, v := range got {
									want := ref.NormFloat64()
									if dt == lathe.Float32 {
										want = float64(float32(want))
									}
									if v != want {
										t.Fatalf("seed %d: RandN of %d: element %d is %v, want %v (the stream's draw)", seed+7, n, i, v, want)
									}
								}
							}
						}
					})
				}
			}
		})
	}
}
