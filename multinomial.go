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
	if err := probs.check(op); err != nil {
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
	data, err := probs.host(op)
	if err != nil {
		return relabel(failed(err), op) // a view's copy that failed says so, under the caller's op
	}
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
	var cum []float64
	if replacement || numSamples == 1 {
		// The running sums take nothing from the stream: made here, in
		// the checks' pass, they keep the stream's lock for the draws
		// alone.
		cum = floats(len(w))
	}
	scale := make([]float64, rows)
	for r := range rows {
		row := w[r*categories : (r+1)*categories]
		var sums []float64
		if cum != nil {
			sums = cum[r*categories : (r+1)*categories]
		}
		most, sum, err := checkWeights(row, sums, r, batched)
		if err != nil {
			if cum != nil {
				floatBuffers.Put(&cum)
			}
			return nil, err
		}
		scale[r] = 1
		if math.IsInf(sum, 1) || sum < 0x1p-900 {
			// float64 weights whose sum overflows, or so small that they
			// lose precision: scaled by a power of two near 1/most, which
			// is exact and leaves each draw as it would be without
			// overflow or underflow.
			_, e := math.Frexp(most)
			scale[r] = math.Ldexp(1, min(max(-e, -1000), 1000))
			if sums != nil {
				runningSums(row, scale[r], sums)
			}
		}
	}
	if cum != nil {
		return func(rng *rand.Rand) []int64 {
			out := make([]int64, rows*numSamples)
			for r := range rows {
				drawFromSums(rng, cum[r*categories:(r+1)*categories], out[r*numSamples:(r+1)*numSamples])
			}
			floatBuffers.Put(&cum)
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
// so that a decoder's steps reuse them: a fresh 3 MB for 8 rows of 50000
// costs more in page faults than the sums themselves.
var floatBuffers sync.Pool

// floats is a buffer of n float64s (of any contents) from floatBuffers.
func floats(n int) []float64 {
	if b, ok := floatBuffers.Get().(*[]float64); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]float64, n)
}

// checkWeights refuses a row with a negative, infinite or NaN weight, or
// whose weights are all 0 (an empty row too), as torch does, and returns
// the largest weight and their sum; it writes the running sums to sums,
// unless that is nil, in the same pass.
func checkWeights[T float32 | float64](w []T, sums []float64, row int, batched bool) (most, sum float64, err error) {
	if len(w) >= 4*minChunk {
		if most, sum, ok := weightsFour(w, sums); ok {
			return most, sum, nil
		}
		// A bad weight somewhere: the serial pass below names the first.
	}
	const op = "multinomial"
	for i, v := range w {
		x := float64(v)
		if !(x >= 0) || math.IsInf(x, 1) {
			return 0, 0, errorf(op, ErrValue, "probs", "has the weight "+ftoa(x)+" at category "+strconv.Itoa(i)+rowName(" of", row, batched)+
				", but weights are finite and ≥ 0", "clean the weights, e.g. with softmax of finite logits")
		}
		most = max(most, x)
		sum += x
		if sums != nil {
			sums[i] = sum
		}
	}
	if most == 0 {
		return 0, 0, errorf(op, ErrValue, "probs", "has weights that sum to 0"+rowName(" in", row, batched)+", which is no distribution",
			"give each row at least one positive weight")
	}
	return most, sum, nil
}

// minChunk is the row length per chain below which weightsFour's four
// chains and fix-up pass cost more than they save.
const minChunk = 1024

// weightsFour is checkWeights' pass over a long row as four interleaved
// chains, one per quarter of the row: a running sum is a chain of adds,
// each waiting for the last, and four independent chains keep the adder
// busy. Each quarter's running sums then get the sums of the quarters
// before it added. ok is false where a weight is negative, infinite or NaN
// (the caller's serial pass then names it) or all are 0.
func weightsFour[T float32 | float64](w []T, sums []float64) (most, sum float64, ok bool) {
	q := len(w) / 4
	bounds := [5]int{0, q, 2 * q, 3 * q, len(w)}
	w0, w1, w2, w3 := w[:q], w[q:2*q], w[2*q:3*q], w[3*q:3*q+q]
	// Each chain keeps its sum, largest and smallest weight. Go's max and
	// min keep a NaN, so the checks come after the loop, which has no
	// branch: a NaN or a negative weight leaves the smallest below 0 or
	// NaN, +Inf leaves the largest infinite.
	var s0, s1, s2, s3, m0, m1, m2, m3, l0, l1, l2, l3 float64
	if sums != nil {
		u0, u1, u2, u3 := sums[:q], sums[q:2*q], sums[2*q:3*q], sums[3*q:3*q+q]
		for i := range w0 {
			x0, x1, x2, x3 := float64(w0[i]), float64(w1[i]), float64(w2[i]), float64(w3[i])
			s0, s1, s2, s3 = s0+x0, s1+x1, s2+x2, s3+x3
			u0[i], u1[i], u2[i], u3[i] = s0, s1, s2, s3
			m0, m1, m2, m3 = max(m0, x0), max(m1, x1), max(m2, x2), max(m3, x3)
			l0, l1, l2, l3 = min(l0, x0), min(l1, x1), min(l2, x2), min(l3, x3)
		}
	} else {
		for i := range w0 {
			x0, x1, x2, x3 := float64(w0[i]), float64(w1[i]), float64(w2[i]), float64(w3[i])
			s0, s1, s2, s3 = s0+x0, s1+x1, s2+x2, s3+x3
			m0, m1, m2, m3 = max(m0, x0), max(m1, x1), max(m2, x2), max(m3, x3)
			l0, l1, l2, l3 = min(l0, x0), min(l1, x1), min(l2, x2), min(l3, x3)
		}
	}
	for i := 4 * q; i < len(w); i++ { // the last quarter's tail
		x := float64(w[i])
		s3 += x
		if sums != nil {
			sums[i] = s3
		}
		m3, l3 = max(m3, x), min(l3, x)
	}
	most = max(m0, m1, m2, m3)
	if !(min(l0, l1, l2, l3) >= 0) || !(most <= math.MaxFloat64) || most == 0 {
		return 0, 0, false
	}
	if sums != nil {
		off := 0.0
		for c, sc := range [3]float64{s0, s1, s2} {
			off += sc
			part := sums[bounds[c+1]:bounds[c+2]]
			for i := range part {
				part[i] += off
			}
		}
	}
	return most, s0 + s1 + s2 + s3, true
}

// rowName is " of row 3" (prep " of") where probs has rows, else "".
func rowName(prep string, row int, batched bool) string {
	if !batched {
		return ""
	}
	return prep + " row " + strconv.Itoa(row)
}

// runningSums fills cum with the running sums of the weights w times scale.
func runningSums[T float32 | float64](w []T, scale float64, cum []float64) {
	sum := 0.0
	for i, v := range w {
		sum += float64(v) * scale
		cum[i] = sum
	}
}

// drawFromSums fills samples with independent draws from the weights
// whose running sums are cum: a uniform draw below the total, found by
// bisection.
func drawFromSums(rng *rand.Rand, cum []float64, samples []int64) {
	sum := cum[len(cum)-1]
	for s := range samples {
		u := rng.Float64() * sum
		// The first running sum past u belongs to a category of positive
		// weight (a zero weight repeats the sum before it). u*sum can
		// round up to sum itself: then the last category of positive
		// weight, which is the one holding the top of the range.
		i := sort.Search(len(cum), func(i int) bool { return cum[i] > u })
		if i == len(cum) {
			i = slices.IndexFunc(cum, func(c float64) bool { return c == sum })
		}
		samples[s] = int64(i)
	}
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
