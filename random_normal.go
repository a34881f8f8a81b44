package lathe

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// Normal draws in parallel, the values of one unbroken run of the stream.
//
// (*rand.Rand).NormFloat64 is a ziggurat: most values take one word of the
// stream, and about three in a hundred take more (its wedge and tail tests
// draw again: 1.04 words a value), so where a value starts is known only by drawing the values
// before it. The parts of a run therefore guess: each draws values from a
// word of its own as if one started there, and records the word at which
// each of its values ends. Stitching the parts in order gives the values
// of the true run. Where the run reaches a part at a word that the part
// also started a value at, the two agree from there on: the same words,
// drawn by the same code. Where it does not (a value before ran over into
// the part's words), values are drawn one by one from the run's word until
// it meets one of the part's starts, which nearly every word is.

// countingSource is a PCG that counts the words drawn from it.
type countingSource struct {
	pcg   *rand.PCG
	words int
}

func (s *countingSource) Uint64() uint64 {
	s.words++
	return s.pcg.Uint64()
}

// normalRun is what a part drew: its values, and for each the count of the
// part's words that it and those before it took.
type normalRun[T uniformFloat] struct {
	vals []T
	ends []int32 // a part takes fewer than 2^31 words (normalRound)
}

// drawNormalRun draws values from state s, as if one started there, until
// they have taken words words.
func drawNormalRun[T uniformFloat](s uint128, words int, run *normalRun[T]) {
	src := &countingSource{pcg: rand.NewPCG(s.hi, s.lo)}
	r := rand.New(src)
	// Local slices: the parts' headers lie side by side in memory, and
	// appending to them in place would pass their cache line between cores
	// at every draw.
	vals, ends := run.vals[:0], run.ends[:0]
	if cap(vals) < words {
		vals, ends = make([]T, 0, words), make([]int32, 0, words)
	}
	for src.words < words {
		vals = append(vals, T(r.NormFloat64()))
		ends = append(ends, int32(src.words))
	}
	run.vals, run.ends = vals, ends
}

// startAt is the index of the run's value that starts off words into it,
// if one does.
func (run *normalRun[T]) startAt(off int) (int, bool) {
	if off == 0 {
		return 0, len(run.vals) > 0
	}
	j, ok := slices.BinarySearch(run.ends, int32(off))
	return j + 1, ok && j+1 < len(run.vals)
}

// normalRound is the most values a part draws at a time, which bounds the
// memory a run of any length holds beside its tensor; normalPart the
// fewest, below which starting a goroutine costs more than the draws
// (about 6 ns each). Variables for the test that shrinks them, so that a
// run has parts enough to meet the rare stitches.
var (
	normalRound = 1 << 15
	normalPart  = 1 << 15
)

// drawNormal fills d with the stream's next len(d) normal draws, those of
// (*rand.Rand).NormFloat64 one by one (rounded to float32 for float32),
// and moves the stream past them. rngMu must be held.
func drawNormal[T uniformFloat](d []T) {
	parts := min(runtime.GOMAXPROCS(0), len(d)/normalPart)
	if parts <= 1 {
		r := rng()
		for i := range d {
			d[i] = T(r.NormFloat64())
		}
		return
	}
	start := pcgState(pcg())
	at, out := 0, 0 // the next value's first word, counted from start; its place in d
	// drawOne draws d[out] from word at, by a source kept where the last
	// one left it.
	var one *rand.Rand
	var src *countingSource
	srcAt := -1
	drawOne := func() {
		if srcAt != at {
			s := pcgJump(start, uint64(at))
			src = &countingSource{pcg: rand.NewPCG(s.hi, s.lo)}
			one, srcAt = rand.New(src), at
		}
		w := src.words
		d[out] = T(one.NormFloat64())
		out++
		at += src.words - w
		srcAt = at // where src goes on
	}
	runs := make([]normalRun[T], parts)
	for out < len(d) {
		want := min(len(d)-out, parts*normalRound)
		if want < 2*normalPart {
			break // the rest one by one
		}
		// Words for want values and some over: the values take 1.04
		// words each, and a round that falls short leaves the rest to the
		// next.
		per := (want+want/16+256)/parts + 1
		base := at
		var wg sync.WaitGroup
		for i := range runs {
			wg.Go(func() { drawNormalRun(pcgJump(start, uint64(base+i*per)), per, &runs[i]) })
		}
		wg.Wait()
		for i := range runs {
			first := base + i*per
			for out < len(d) && at < first+per {
				if j, ok := runs[i].startAt(at - first); ok {
					n := copy(d[out:], runs[i].vals[j:])
					out += n
					at = first + int(runs[i].ends[j+n-1])
					break
				}
				drawOne()
			}
		}
	}
	for out < len(d) {
		drawOne()
	}
	end := pcgJump(start, uint64(at))
	pcg().Seed(end.hi, end.lo)
}
