package cpu

import (
	"math"
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// argsort and argtopk: each line of x along the dim is sorted on its own
// goroutine (strided.rows shares the lines out), through any strides. An
// element becomes an unsigned key whose order is torch's order of the
// values (sortKeyF32, sortKeyF64): NaN above +Inf, -0 equal to +0, and for
// a descending sort (the largest first) the key's complement. Ties are
// then broken by the element's index, which makes any sort a stable one:
// a 32-bit key and a 32-bit index pack into one uint64 that orders as a
// number; a 64-bit key sorts as a (key, index) pair.
//
// argtopk wants only the first k of that order. Where k is a small part
// of the line (k*selectRatio <= n) it keeps the k smallest pairs seen in a
// max-heap, in one pass over the line, and sorts those k at the end:
// O(n + k log k log(n/k)) on data in no particular order, against the
// O(n log n) (or radix O(n)) of sorting all n. An ascending line asked for
// its largest is the worst case, O(n log k). Otherwise the whole line is
// sorted and its first k kept, as argsort does with k = n.
//
// The narrow dtypes reach the kernel widened (registerFor), exactly, so
// their order is their values'.

func init() {
	registerFor(ops.ArgSort, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.SortDim) error {
		dim, err := ops.NormDim(s.Dim, in[0].Rank(), "dim")
		if err != nil {
			return err
		}
		return argselect(out, in[0], dim, math.MaxInt, s.Descending)
	})
	registerFor(ops.ArgTopK, dispatch.Numeric, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.TopKDim) error {
		dim, err := ops.NormDim(a.Dim, in[0].Rank(), "dim")
		if err != nil {
			return err
		}
		return argselect(out, in[0], dim, a.K, a.Largest)
	})
}

// argselect writes to out the first min(k, n) entries of the stable order
// of each line of n elements of x along dim.
func argselect(out, x *dispatch.Tensor, dim, k int, desc bool) error {
	if out.Numel() == 0 {
		return nil
	}
	switch x.DType {
	case dispatch.Float32:
		argselect32(out, x, dim, k, desc, func(v float32) uint32 { return sortKeyF32(v) })
	case dispatch.Int32:
		argselect32(out, x, dim, k, desc, func(v int32) uint32 { return uint32(v) ^ 1<<31 })
	case dispatch.Bool:
		argselect32(out, x, dim, k, desc, func(v bool) uint32 {
			if v {
				return 1
			}
			return 0
		})
	case dispatch.Float64:
		argselect64(out, x, dim, k, desc, sortKeyF64)
	case dispatch.Int64:
		argselect64(out, x, dim, k, desc, func(v int64) uint64 { return uint64(v) ^ 1<<63 })
	default:
		return dispatch.Unsupported(out.Device, "argsort", x.DType)
	}
	return nil
}

// selectRatio: a line of n is searched with a heap for its first k where
// k*selectRatio <= n. On [8, 50000] random float32s (TopK's values and
// indices, two runs each), the heap took 3.3 ms at k = n/64 against the
// sort's 2.6-3.6, and 3.3-3.9 ms at n/32 against 1.9-2.6; at k = 20 it
// takes a twentieth of the sort's time.
const selectRatio = 64

// sortKeyF32 maps a float32 to a uint32 that orders as torch's sort does:
// the sign-magnitude bits turned into an unsigned order (negative values
// complemented, the others with the top bit set), -0 taken as +0 and
// every NaN as the largest key.
func sortKeyF32(v float32) uint32 {
	if v != v {
		return math.MaxUint32
	}
	if v == 0 {
		v = 0 // -0 → +0
	}
	b := math.Float32bits(v)
	// Negative values complemented, the others with the top bit set, with
	// no branch: on random signs a branch misses half the time.
	return b ^ (uint32(int32(b)>>31) | 1<<31)
}

// sortKeyF64 is sortKeyF32 for float64.
func sortKeyF64(v float64) uint64 {
	if v != v {
		return math.MaxUint64
	}
	if v == 0 {
		v = 0
	}
	b := math.Float64bits(v)
	return b ^ (uint64(int64(b)>>63) | 1<<63)
}

// sortLines calls line for every line of x along dim, with x's offset of
// its first element and step, and out's (int64) offset and step. A 0-d x
// is one line of one element.
func sortLines(out, x *dispatch.Tensor, dim int, line func(xo, xs, oo, os, n int)) {
	if x.Rank() == 0 {
		line(x.Offset, 0, out.Offset, 0, 1)
		return
	}
	var shape, so, sx []int
	for d := range x.Shape {
		if d != dim {
			shape, so, sx = append(shape, x.Shape[d]), append(so, out.Strides[d]), append(sx, x.Strides[d])
		}
	}
	// One row per line: the line itself is the walk's last dim, which
	// rows hands over whole (its stride is the line's step).
	l := strided{layout.Walk{Shape: append(shape, x.Shape[dim]),
		Strides: [][]int{append(so, out.Strides[dim]), append(sx, x.Strides[dim])}}, []int{out.Offset, x.Offset}}
	os, xs := out.Strides[dim], x.Strides[dim]
	l.rows(func(offs []int, n int) { line(offs[1], xs, offs[0], os, n) })
}

var packed = sync.Pool{New: func() any { return new([]uint64) }}

// argselect32 orders lines whose keys fit 32 bits: key<<32 | index packs
// an element into a uint64 whose numeric order is (key, index)'s. Lines
// longer than 2^32 cannot be, as no tensor dim is (a dim is at most the
// allocation's element count).
func argselect32[T any](out, x *dispatch.Tensor, dim, k int, desc bool, key func(T) uint32) {
	d, o := elems[T](x), elems[int64](out)
	flip := uint32(0)
	if desc {
		flip = math.MaxUint32
	}
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		k := min(k, n)
		bp := packed.Get().(*[]uint64)
		defer packed.Put(bp)
		var first []uint64
		if k*selectRatio <= n {
			h := slices.Grow((*bp)[:0], k)[:k]
			*bp = h
			first = smallest(h, n, func(b []uint64) { packKeys(b, d, xo, xs, flip, key) }, func(found []uint64, at int, top uint64) ([]uint64, int) {
				return keysBelow(found, d, xo, xs, at, n, uint32(top>>32), flip, key)
			}, lessU64)
		} else {
			b := slices.Grow((*bp)[:0], n)[:n]
			*bp = b
			packKeys(b, d, xo, xs, flip, key)
			first = b
			if n >= radixMin {
				tp := packed.Get().(*[]uint64)
				defer packed.Put(tp)
				t := slices.Grow((*tp)[:0], n)[:n]
				*tp = t
				first = radixSortKeys(b, t)
			} else {
				slices.Sort(b)
			}
			first = first[:k]
		}
		for i, v := range first {
			o[oo+i*os] = int64(uint32(v))
		}
	})
}

// packKeys fills b with the packed keys of the line's first len(b)
// elements: b[i] = (key(e)^flip)<<32 | i for e the line's element i.
func packKeys[T any](b []uint64, d []T, xo, xs int, flip uint32, key func(T) uint32) {
	if f, ok := any(d).([]float32); ok { // the common case, with its key inlined rather than called
		for i := range b {
			b[i] = uint64(sortKeyF32(f[xo+i*xs])^flip)<<32 | uint64(i)
		}
		return
	}
	for i := range b {
		b[i] = uint64(key(d[xo+i*xs])^flip)<<32 | uint64(i)
	}
}

// keysBelow appends to found, up to its capacity, the packed keys of the
// line's elements from at (of n) whose key key(e)^flip is below top, and
// returns them and the index where it stopped: n, or where found filled.
func keysBelow[T any](found []uint64, d []T, xo, xs, at, n int, top, flip uint32, key func(T) uint32) ([]uint64, int) {
	if f, ok := any(d).([]float32); ok {
		if xs == 1 && at < n {
			if found, end, ok := belowFloat32(f[xo+at:xo+n], top, flip, at, found); ok {
				return found, at + end
			}
		}
		for i := at; i < n; i++ {
			if len(found) == cap(found) {
				return found, i
			}
			if k := sortKeyF32(f[xo+i*xs]) ^ flip; k < top {
				found = append(found, uint64(k)<<32|uint64(i))
			}
		}
		return found, n
	}
	for i := at; i < n; i++ {
		if len(found) == cap(found) {
			return found, i
		}
		if k := key(d[xo+i*xs]) ^ flip; k < top {
			found = append(found, uint64(k)<<32|uint64(i))
		}
	}
	return found, n
}

// selectChunk is how many candidates a scan of smallest hands back at
// most: a buffer on the stack.
const selectChunk = 256

// smallest returns the len(h) smallest of a line's n keys under less,
// sorted, in h. pack(b) fills b with the keys of the line's first len(b)
// elements; below(found, at, top) appends to found (up to its capacity)
// the keys below top of the elements from at on, in order, and returns
// them and the index where it stopped. h starts as the first len(h) keys,
// made a max-heap; each later key below the heap's top replaces it. The
// scan, the part that sees every element, compares each with one key and
// writes nothing for nearly all of them; its candidates, found against a
// top that has since come down, are compared again. The keys are distinct
// (their indices differ), so the result is the first len(h) of the line's
// order.
func smallest[E any](h []E, n int, pack func(b []E), below func(found []E, at int, top E) ([]E, int), less func(a, b E) bool) []E {
	if len(h) == 0 {
		return h
	}
	pack(h)
	heapify(h, less)
	var buf [selectChunk]E
	for at := len(h); at < n; {
		var found []E
		found, at = below(buf[:0], at, h[0])
		for _, v := range found {
			if less(v, h[0]) {
				h[0] = v
				siftDown(h, 0, less)
			}
		}
	}
	slices.SortFunc(h, compareBy(less))
	return h
}

// compareBy is the three-way comparison of an order given by less.
func compareBy[E any](less func(a, b E) bool) func(p, q E) int {
	return func(p, q E) int {
		if less(p, q) {
			return -1
		}
		if less(q, p) {
			return 1
		}
		return 0
	}
}

func lessU64(a, b uint64) bool { return a < b }

// heapify makes h a max-heap under less.
func heapify[E any](h []E, less func(a, b E) bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
}

// siftDown moves h[i] down a max-heap under less to where it belongs.
func siftDown[E any](h []E, i int, less func(a, b E) bool) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && less(h[c], h[c+1]) {
			c++
		}
		if !less(h[i], h[c]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// radixMin is the line length from which argsort32 sorts by radix: below
// it, a comparison sort of a few dozen values costs less than four
// passes with their counts.
const radixMin = 64

// radixSortKeys sorts b, elements key<<32 | index in index order, by key:
// a stable least-significant-digit radix sort, four passes of eight bits
// between b and tmp (of b's length), which leaves the order (key, index),
// b's numeric order, as slices.Sort would, in O(n) where that takes
// O(n log n) (a line of 1024 float32s: a sixth of the time). A pass whose
// digit every key shares is skipped. It returns whichever of b and tmp
// holds the result.
func radixSortKeys(b, tmp []uint64) []uint64 {
	var counts [4][256]int
	for _, v := range b {
		k := uint32(v >> 32)
		counts[0][uint8(k)]++
		counts[1][uint8(k>>8)]++
		counts[2][uint8(k>>16)]++
		counts[3][uint8(k>>24)]++
	}
	src, dst := b, tmp
	for pass := range counts {
		c := &counts[pass]
		shift := 32 + 8*pass
		if !radixStarts(c, uint8(src[0]>>shift), len(src)) {
			continue
		}
		for _, v := range src {
			dg := uint8(v >> shift)
			dst[c[dg]] = v
			c[dg]++
		}
		src, dst = dst, src
	}
	return src
}

// radixStarts turns one pass's counts of each digit into the place where
// the digit's keys start, and reports whether the pass moves anything:
// not where every one of the n keys has the digit of the first, key.
func radixStarts(c *[256]int, key uint8, n int) bool {
	if c[key] == n {
		return false
	}
	sum := 0
	for i, k := range c {
		c[i] = sum
		sum += k
	}
	return true
}

// radixSortKeyed is radixSortKeys for 64-bit keys: it sorts b, in index
// order, by key, stably, in eight passes of eight bits between b and tmp
// (of b's length), skipping a pass whose digit every key shares, and
// returns whichever of b and tmp holds the result. Int64s below 2^16
// take two passes. Against slices.SortFunc on 2^20 int64s or float64s it
// takes a fifth of the time or less.
func radixSortKeyed(b, tmp []keyed) []keyed {
	var counts [8][256]int
	for _, v := range b {
		k := v.key
		counts[0][uint8(k)]++
		counts[1][uint8(k>>8)]++
		counts[2][uint8(k>>16)]++
		counts[3][uint8(k>>24)]++
		counts[4][uint8(k>>32)]++
		counts[5][uint8(k>>40)]++
		counts[6][uint8(k>>48)]++
		counts[7][uint8(k>>56)]++
	}
	src, dst := b, tmp
	for pass := range counts {
		c := &counts[pass]
		shift := 8 * pass
		if !radixStarts(c, uint8(src[0].key>>shift), len(src)) {
			continue
		}
		for _, v := range src {
			dg := uint8(v.key >> shift)
			dst[c[dg]] = v
			c[dg]++
		}
		src, dst = dst, src
	}
	return src
}

// keyed is one element of a line with a 64-bit key.
type keyed struct {
	key uint64
	at  int64
}

// before is keyed's order: by key, then by index.
func before(p, q keyed) bool { return p.key < q.key || p.key == q.key && p.at < q.at }

// argselect64 orders lines of 64-bit keys as (key, index) pairs.
func argselect64[T any](out, x *dispatch.Tensor, dim, k int, desc bool, key func(T) uint64) {
	d, o := elems[T](x), elems[int64](out)
	flip := uint64(0)
	if desc {
		flip = math.MaxUint64
	}
	pack := func(b []keyed, xo, xs int) {
		for i := range b {
			b[i] = keyed{key(d[xo+i*xs]) ^ flip, int64(i)}
		}
	}
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		k := min(k, n)
		var first []keyed
		if k*selectRatio <= n {
			first = smallest(make([]keyed, k), n, func(b []keyed) { pack(b, xo, xs) }, func(found []keyed, at int, top keyed) ([]keyed, int) {
				for i := at; i < n; i++ {
					if len(found) == cap(found) {
						return found, i
					}
					if k := key(d[xo+i*xs]) ^ flip; k < top.key {
						found = append(found, keyed{k, int64(i)})
					}
				}
				return found, n
			}, before)
		} else {
			first = make([]keyed, n)
			pack(first, xo, xs)
			if n >= radixMin {
				first = radixSortKeyed(first, make([]keyed, n))
			} else {
				slices.SortFunc(first, compareBy(before))
			}
			first = first[:k]
		}
		for i, v := range first {
			o[oo+i*os] = v.at
		}
	})
}
