package lathe

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// maxCategories is torch's limit on a distribution's categories, 2^24
// (FLOAT32_MAX_CONSECUTIVE_INT in its Distributions.cpp), kept so that a
// program that runs on lathe runs on torch.
const maxCategories = 1 << 24

// Multinomial draws numSamples category indices from each row of probs,
// as torch.multinomial(probs, numSamples, replacement): probs is a 1-D
// tensor of weights (a result of [numSamples]) or a 2-D tensor of rows of
// them (a result of [rows, numSamples]), of a float dtype, each weight
// finite and ≥ 0 and each row's sum > 0; rows need not sum to 1. Category
// i of a row is drawn with probability weight i over the row's sum. With
// replacement a category may come again; without it numSamples is at most
// the row's length, the samples are distinct, and once a row's categories
// of nonzero weight are all drawn the rest come from its zero-weight ones
// in random order (torch 1.13 also returns them, in an unspecified order).
// The indices are Int64, on probs' device.
//
// Multinomial syncs: it reads probs back to the host, draws there from the
// stream that Seed resets, and uploads the indices. A bad weight or
// argument is ErrValue (a bad rank ErrShape, an integer dtype ErrDType)
// and draws nothing. The result is integer and leaves the tape, as in
// torch: no gradient flows back to probs through it.
func Multinomial(probs *Tensor, numSamples int, replacement bool) *Tensor {
	const op = "multinomial"
	if err := probs.CheckArg(op, "probs"); err != nil {
		return failed(err)
	}
	shape := probs.t.Shape
	switch {
	case len(shape) != 1 && len(shape) != 2:
		return failed(errorf(op, ErrShape, "probs", "has shape "+dispatch.FormatShape(shape)+", but multinomial takes a 1-D or 2-D tensor of weights",
			"give one distribution as a vector or a batch of them as the rows of a matrix"))
	case !probs.t.DType.IsFloat():
		return failed(errorf(op, ErrDType, "probs", "is "+probs.t.DType.String()+", but multinomial takes float weights",
			"cast them with .Cast(lathe.Float32)"))
	case numSamples <= 0:
		return failed(errorf(op, ErrValue, "numSamples", "is "+strconv.Itoa(numSamples), "draw at least one sample"))
	}
	categories := shape[len(shape)-1]
	rows := 1
	if len(shape) == 2 {
		rows = shape[0]
	}
	switch {
	case !replacement && numSamples > categories:
		return failed(errorf(op, ErrValue, "numSamples", "is "+strconv.Itoa(numSamples)+", more than the "+strconv.Itoa(categories)+
			" categories, without replacement", "draw at most one sample per category, or pass replacement true"))
	case categories > maxCategories:
		return failed(errorf(op, ErrValue, "probs", "has "+strconv.Itoa(categories)+" categories, more than torch's 2^24",
			"use fewer categories"))
	}
	outShape := []int{numSamples}
	if len(shape) == 2 {
		outShape = []int{rows, numSamples}
	}
	if _, ok := dispatch.CheckedNumel(outShape); !ok {
		return failed(located(dispatch.ShapeError("numSamples", outShape), op))
	}
	if err := checkHost(op, "numSamples", rows*numSamples, 8); err != nil {
		return failed(err)
	}
	// The cpu lends its weights where they are (a copy was a fifth of a
	// draw from 8×50000); probs is held until the draws are made.
	data, done, err := probs.lend(op, "probs")
	if err != nil {
		return relabel(failed(err), op) // a view's copy that failed says so, under the caller's op
	}
	defer done()
	var draw func(*rand.Rand) []int64
	switch d := data.(type) {
	case []float64:
		draw, err = sampler(d, rows, numSamples, replacement, len(shape) == 2)
	case []float32:
		draw, err = sampler(d, rows, numSamples, replacement, len(shape) == 2)
	default: // float16 and bfloat16, widened exactly
		draw, err = sampler(halfFloat32s(d), rows, numSamples, replacement, len(shape) == 2)
	}
	if err != nil {
		return failed(err)
	}
	return drawAndUpload(op, probs.t.Device, Int64, outShape, func(rng *rand.Rand) any { return draw(rng) })
}

// sampler checks the weights w, rows of them in a row-major slice, and
// returns the draw of numSamples from each row, which cannot fail.
func sampler[T float32 | float64](w []T, rows, numSamples int, replacement, batched bool) (func(*rand.Rand) []int64, error) {
	categories := len(w) / max(rows, 1)
	blocks := (categories + sumBlock - 1) / sumBlock
	var ends []float64
	if replacement || numSamples == 1 {
		// The blocks' running sums take nothing from the stream: made
		// here, in the checks' pass, they keep the stream's lock for the
		// draws alone.
		ends = floats(rows * blocks)
	}
	scale := make([]float64, rows)
	for r := range rows {
		row := w[r*categories : (r+1)*categories]
		var rowEnds []float64
		if ends != nil {
			rowEnds = ends[r*blocks : (r+1)*blocks]
		}
		sum, err := checkWeights(row, rowEnds, r, batched)
		if err != nil {
			if ends != nil {
				floatBuffers.Put(&ends)
			}
			return nil, err
		}
		scale[r] = 1
		if math.IsInf(sum, 1) || sum < 0x1p-900 {
			// float64 weights whose sum overflows, or so small that they
			// lose precision: scaled by a power of two near 1/most, which
			// is exact and leaves each draw as it would be without
			// overflow or underflow.
			_, e := math.Frexp(largest(row))
			scale[r] = math.Ldexp(1, min(max(-e, -1000), 1000))
			if rowEnds != nil {
				blockSums(row, scale[r], rowEnds)
			}
		}
	}
	if ends != nil {
		return func(rng *rand.Rand) []int64 {
			out := make([]int64, rows*numSamples)
			for r := range rows {
				drawFromBlocks(rng, w[r*categories:(r+1)*categories], scale[r], ends[r*blocks:(r+1)*blocks], out[r*numSamples:(r+1)*numSamples])
			}
			floatBuffers.Put(&ends)
			return out
		}, nil
	}
	return func(rng *rand.Rand) []int64 {
		out := make([]int64, rows*numSamples)
		keys := floats(categories) // a row's keys, reused
		for r := range rows {
			drawWithoutReplacement(rng, w[r*categories:(r+1)*categories], scale[r], keys, out[r*numSamples:(r+1)*numSamples])
		}
		floatBuffers.Put(&keys)
		return out
	}, nil
}

// floatBuffers holds the buffers of Multinomial's running sums and keys,
// so that a decoder's steps reuse them.
var floatBuffers sync.Pool

// floats is a buffer of n float64s (of any contents) from floatBuffers.
func floats(n int) []float64 {
	if b, ok := floatBuffers.Get().(*[]float64); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]float64, n)
}

// sumBlock is the categories per block of the running sums that a draw
// with replacement searches: the checks' pass keeps one running sum per
// block, and a draw walks the block that its search lands in. A running
// sum per category was 8 bytes stored for each weight read, and the pass
// took twice as long as without them.
const sumBlock = 256

// checkWeights refuses a row with a negative, infinite or NaN weight, or
// whose weights are all 0 (an empty row too), as torch does, and returns
// the weights' sum (+Inf where float64 weights overflow it); it writes the
// running sum at the end of each block of sumBlock weights to ends, unless
// that is nil, in the same pass.
func checkWeights[T float32 | float64](w []T, ends []float64, row int, batched bool) (sum float64, err error) {
	sum, ok := blockSums(w, 1, ends)
	if ok && sum > 0 && !math.IsInf(sum, 1) {
		return sum, nil
	}
	// A negative or NaN weight, an infinite one (the sum is then
	// infinite), or none positive: the serial pass names the first bad
	// one. An infinite sum of finite weights is float64's overflow, which
	// the caller scales away.
	const op = "multinomial"
	for i, v := range w {
		if x := float64(v); !(x >= 0) || math.IsInf(x, 1) {
			return 0, errorf(op, ErrValue, "probs", "has the weight "+ftoa(x)+" at category "+strconv.Itoa(i)+rowName(" of", row, batched)+
				", but weights are finite and ≥ 0", "clean the weights, e.g. with softmax of finite logits")
		}
	}
	if sum == 0 {
		return 0, errorf(op, ErrValue, "probs", "has weights that sum to 0"+rowName(" in", row, batched)+", which is no distribution",
			"give each row at least one positive weight")
	}
	return sum, nil
}

// blockSums sums the weights w times scale a block of sumBlock at a time,
// writing the running sum at each block's end to ends (unless nil), and
// returns the total; ok is false where a weight is negative or NaN. A
// block is four interleaved chains (a sum's adds would otherwise each wait
// for the last), and the check is a branch that is never taken: Go's max
// and min, which keep a NaN, cost more than the sums.
func blockSums[T float32 | float64](w []T, scale float64, ends []float64) (sum float64, ok bool) {
	bad := false
	for b := 0; b < len(w); b += sumBlock {
		blk := w[b:min(b+sumBlock, len(w))]
		var s0, s1, s2, s3 float64
		i := 0
		for ; i+4 <= len(blk); i += 4 {
			x0, x1, x2, x3 := float64(blk[i]), float64(blk[i+1]), float64(blk[i+2]), float64(blk[i+3])
			if !(x0 >= 0 && x1 >= 0 && x2 >= 0 && x3 >= 0) {
				bad = true
			}
			s0, s1, s2, s3 = s0+x0*scale, s1+x1*scale, s2+x2*scale, s3+x3*scale
		}
		for ; i < len(blk); i++ {
			x := float64(blk[i])
			if !(x >= 0) {
				bad = true
			}
			s0 += x * scale
		}
		sum += (s0 + s1) + (s2 + s3)
		if ends != nil {
			ends[b/sumBlock] = sum
		}
	}
	return sum, !bad
}

// largest is the largest of the weights w.
func largest[T float32 | float64](w []T) float64 {
	most := 0.0
	for _, v := range w {
		most = max(most, float64(v))
	}
	return most
}

// rowName is " of row 3" (prep " of") where probs has rows, else "".
func rowName(prep string, row int, batched bool) string {
	if !batched {
		return ""
	}
	return prep + " row " + strconv.Itoa(row)
}

// drawFromBlocks fills samples with independent draws from the weights w
// times scale, whose blocks' running sums are ends: a uniform draw u below
// the total, the block whose running sums pass it found by bisection, then
// the first category in it whose running sum passes u. A zero weight
// repeats the sum before it, so the category found has a positive weight.
func drawFromBlocks[T float32 | float64](rng *rand.Rand, w []T, scale float64, ends []float64, samples []int64) {
	sum := ends[len(ends)-1]
	for s := range samples {
		u := rng.Float64() * sum
		// u can round up to sum itself: then the block holding the top of
		// the range, the first whose running sum is the total.
		b := sort.Search(len(ends), func(i int) bool { return ends[i] > u })
		if b == len(ends) {
			b = slices.Index(ends, sum)
		}
		samples[s] = int64(b*sumBlock + inBlock(w[b*sumBlock:min((b+1)*sumBlock, len(w))], scale, ends, b, u))
	}
}

// inBlock is the index in blk, block b of the weights, of the first
// category whose running sum from the block's start passes u. The block's
// running sum (ends[b]) passes u, but was added in another order: where
// this order falls short of u by a rounding, the block's last positive
// weight, the one at the top of its range.
func inBlock[T float32 | float64](blk []T, scale float64, ends []float64, b int, u float64) int {
	acc, last := 0.0, 0
	if b > 0 {
		acc = ends[b-1]
	}
	for i, v := range blk {
		if v > 0 {
			acc += float64(v) * scale
			last = i
			if acc > u {
				return i
			}
		}
	}
	return last
}

// drawWithoutReplacement draws len(samples) distinct categories, each
// next one with probability its weight over the weights left: the
// categories with the largest keys w/E, E exponential (Efraimidis and
// Spirakis, "Weighted random sampling with a reservoir", 2006; torch
// 1.13's multinomial takes the same top-k). A zero weight's key is -E,
// below every positive weight's and in random order among the zeros.
func drawWithoutReplacement[T float32 | float64](rng *rand.Rand, w []T, scale float64, keys []float64, samples []int64) {
	for i, v := range w {
		e := rng.ExpFloat64()
		if v > 0 {
			keys[i] = float64(v) * scale / e
		} else {
			keys[i] = -e
		}
	}
	largestKeys(keys, samples)
}

// largestKeys fills top with the indices of the len(top) largest keys,
// largest first, keeping them in a min-heap as it scans (n log k, where a
// sort of all n would cost n log n: a few candidates from a vocabulary).
func largestKeys(keys []float64, top []int64) {
	k := len(top)
	heap := top[:0]
	less := func(a, b int64) bool { return keys[a] < keys[b] || keys[a] == keys[b] && a > b } // a later index loses a tie
	down := func(i int) {
		for {
			least, l, r := i, 2*i+1, 2*i+2
			if l < len(heap) && less(heap[l], heap[least]) {
				least = l
			}
			if r < len(heap) && less(heap[r], heap[least]) {
				least = r
			}
			if least == i {
				return
			}
			heap[i], heap[least] = heap[least], heap[i]
			i = least
		}
	}
	for i := range keys {
		c := int64(i)
		switch {
		case len(heap) < k:
			heap = append(heap, c)
			for j := len(heap) - 1; j > 0 && less(heap[j], heap[(j-1)/2]); j = (j - 1) / 2 {
				heap[j], heap[(j-1)/2] = heap[(j-1)/2], heap[j]
			}
		case less(heap[0], c):
			heap[0] = c
			down(0)
		}
	}
	slices.SortFunc(top, func(a, b int64) int {
		if less(b, a) {
			return -1
		}
		return 1
	})
}
