package lathe

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestDrawNormalStitches: with parts of a few draws, a run of 2^18 has
// tens of thousands of places where a part's guessed start may miss the
// run's: where the value before runs over into the part's words (about
// three in a hundred), and where the part's own guess is then inside a
// value too, so that the run catches up one draw at a time (about one in
// a thousand). The values and where the stream goes on are one-by-one
// drawing's all the same.
func TestDrawNormalStitches(t *testing.T) {
	defer func(r, p int) { normalRound, normalPart = r, p }(normalRound, normalPart)
	normalRound, normalPart = 4, 2
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	rngMu.Lock()
	defer rngMu.Unlock()
	for seed := range uint64(3) {
		pcg().Seed(seed, 0x65)
		ref := rand.New(rand.NewPCG(seed, 0x65))
		for _, n := range []int{1 << 18, 300, 1} {
			got := make([]float64, n)
			drawNormal(got)
			for i, v := range got {
				if want := ref.NormFloat64(); v != want {
					t.Fatalf("seed %d, a run of %d: draw %d is %v, want %v", seed, n, i, v, want)
				}
			}
		}
		if got, want := pcg().Uint64(), ref.Uint64(); got != want {
			t.Fatalf("seed %d: the stream goes on at %#x, want %#x", seed, got, want)
		}
	}
}
