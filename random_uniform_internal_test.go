package lathe

import (
	"math/rand/v2"
	"testing"
)

// TestPCGJump: the jump ahead lands where stepping math/rand/v2's PCG
// one draw at a time does, for nothing, one, a few and many draws.
func TestPCGJump(t *testing.T) {
	p := rand.NewPCG(0x6c617468, 0x65)
	for _, k := range []uint64{0, 1, 2, 3, 1000, 1<<20 + 7} {
		from := pcgState(p)
		for range k {
			p.Uint64()
		}
		if got, want := pcgJump(from, k), pcgState(p); got != want {
			t.Errorf("jump of %d draws: state %x, want %x", k, got, want)
		}
	}
}
