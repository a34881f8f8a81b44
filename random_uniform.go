package lathe

import (
	endian "encoding/binary"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Uniform draws in parallel, the values of one unbroken run of the stream.
//
// math/rand/v2's PCG is a 128-bit linear congruential generator (state ←
// state·mul + inc, mod 2¹²⁸) with an output function of the new state. One
// uniform float takes one step, so the part of a run that starts k draws
// in starts from the state k steps on, which the generator's jump ahead
// gives in 128 steps of squaring whatever k is. Each part is drawn on its
// own goroutine by a PCG of its own and the values are those that drawing
// one by one gives: Seed still fixes every value, however the run is split.

// uint128 is a PCG state or multiplier, arithmetic mod 2¹²⁸.
type uint128 struct{ hi, lo uint64 }

func (a uint128) times(b uint128) uint128 {
	hi, lo := bits.Mul64(a.lo, b.lo)
	return uint128{hi + a.hi*b.lo + a.lo*b.hi, lo}
}

func (a uint128) plus(b uint128) uint128 {
	lo, carry := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, carry)
	return uint128{hi, lo}
}

// pcgMul and pcgInc are math/rand/v2's PCG constants (pcg.go).
var (
	pcgMul = uint128{2549297995355413924, 4865540595714422341}
	pcgInc = uint128{6364136223846793005, 1442695040888963407}
)

// pcgJump is the state k steps after s: the k-fold step is again
// state·m + c, and (m, c) for k is built from those for the powers of two
// in k (Brown, "Random number generation with arbitrary strides", 1994).
func pcgJump(s uint128, k uint64) uint128 {
	m, c := uint128{0, 1}, uint128{} // the step k draws make, so far
	pm, pc := pcgMul, pcgInc         // the step of 2^i draws
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			m, c = m.times(pm), c.times(pm).plus(pc)
		}
		pm, pc = pm.times(pm), pm.plus(uint128{0, 1}).times(pc)
	}
	return m.times(s).plus(c)
}

// pcgState is p's state (PCG keeps it unexported; its binary form is
// "pcg:", then the high and the low word, big-endian).
func pcgState(p *rand.PCG) uint128 {
	b, _ := p.MarshalBinary()
	return uint128{endian.BigEndian.Uint64(b[4:]), endian.BigEndian.Uint64(b[12:])}
}

// uniformFloat is a float dtype that Rand draws as math/rand/v2's Rand does.
type uniformFloat interface{ float32 | float64 }

// uniformOf is (*rand.Rand).Float32 or Float64 of the word w that the
// PCG's step gives: the top 24 of its high 32 bits over 2²⁴, or its low
// 53 bits over 2⁵³.
func uniformOf[T uniformFloat](w uint64) T {
	var zero T
	if _, ok := any(zero).(float32); ok {
		return T(float32(uint32(w>>32)<<8>>8) / (1 << 24))
	}
	return T(float64(w<<11>>11) / (1 << 53))
}

func fillUniform[T uniformFloat](p *rand.PCG, d []T) {
	for i := range d {
		d[i] = uniformOf[T](p.Uint64())
	}
}

// uniformPart is the fewest draws a goroutine of drawUniform takes: below
// it, starting one costs more than the draws (about 2 ns each).
const uniformPart = 1 << 15

// drawUniform fills d with the stream's next len(d) uniform draws and moves
// the stream past them. rngMu must be held.
func drawUniform[T uniformFloat](d []T) {
	parts := min(runtime.GOMAXPROCS(0), len(d)/uniformPart)
	if parts <= 1 {
		fillUniform(pcg(), d)
		return
	}
	start := pcgState(pcg())
	var wg sync.WaitGroup
	for i := range parts {
		lo, hi := i*len(d)/parts, (i+1)*len(d)/parts
		s := pcgJump(start, uint64(lo))
		wg.Go(func() { fillUniform(rand.NewPCG(s.hi, s.lo), d[lo:hi]) })
	}
	wg.Wait()
	end := pcgJump(start, uint64(len(d)))
	pcg().Seed(end.hi, end.lo)
}
