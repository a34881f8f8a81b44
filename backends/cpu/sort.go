package cpu

import (
	"math"
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// argsort: each line of x along the dim is sorted on its own goroutine
// (strided.rows shares the lines out), through any strides. An element
// becomes an unsigned key whose order is torch's order of the values
// (sortKey32, sortKey64): NaN above +Inf, -0 equal to +0, and for a
// descending sort the key's complement. Ties are then broken by the
// element's index, which makes any sort a stable one: a 32-bit key and a
// 32-bit index pack into one uint64 that slices.Sort (pdqsort) orders as a
// number; a 64-bit key sorts as a (key, index) pair. O(n log n) per line
// of n, O(n) scratch per line.
//
// The narrow dtypes reach the kernel widened (registerFor), exactly, so
// their order is their values'.

func init() {
	registerFor(ops.ArgSort, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.SortDim) error {
		x := in[0]
		dim, err := ops.NormDim(s.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		switch x.DType {
		case dispatch.Float32:
			argsort32(out, x, dim, s.Descending, func(v float32) uint32 { return sortKeyF32(v) })
		case dispatch.Int32:
			argsort32(out, x, dim, s.Descending, func(v int32) uint32 { return uint32(v) ^ 1<<31 })
		case dispatch.Bool:
			argsort32(out, x, dim, s.Descending, func(v bool) uint32 {
				if v {
					return 1
				}
				return 0
			})
		case dispatch.Float64:
			argsort64(out, x, dim, s.Descending, sortKeyF64)
		case dispatch.Int64:
			argsort64(out, x, dim, s.Descending, func(v int64) uint64 { return uint64(v) ^ 1<<63 })
		default:
			return dispatch.Unsupported(out.Device, "argsort", x.DType)
		}
		return nil
	})
}

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
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
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
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
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

// argsort32 sorts lines whose keys fit 32 bits: key<<32 | index packs a
// line into uint64s whose numeric order is (key, index)'s. Lines longer
// than 2^32 cannot be, as no tensor dim is (a dim is at most the
// allocation's element count).
func argsort32[T any](out, x *dispatch.Tensor, dim int, desc bool, key func(T) uint32) {
	d, o := elems[T](x), elems[int64](out)
	flip := uint32(0)
	if desc {
		flip = math.MaxUint32
	}
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		bp, tp := packed.Get().(*[]uint64), packed.Get().(*[]uint64)
		b := slices.Grow((*bp)[:0], n)[:n]
		if f, ok := any(d).([]float32); ok { // the common case, with its key inlined rather than called
			for i := range n {
				b[i] = uint64(sortKeyF32(f[xo+i*xs])^flip)<<32 | uint64(i)
			}
		} else {
			for i := range n {
				b[i] = uint64(key(d[xo+i*xs])^flip)<<32 | uint64(i)
			}
		}
		sorted := b
		if n < radixMin {
			slices.Sort(b)
		} else {
			t := slices.Grow((*tp)[:0], n)[:n]
			sorted = radixSortKeys(b, t)
			*tp = t
		}
		for i, v := range sorted {
			o[oo+i*os] = int64(uint32(v))
		}
		*bp = b
		packed.Put(bp)
		packed.Put(tp)
	})
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
		if c[uint8(src[0]>>shift)] == len(src) {
			continue
		}
		sum := 0
		for i, n := range c {
			c[i] = sum
			sum += n
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

// keyed is one element of a line with a 64-bit key.
type keyed struct {
	key uint64
	at  int64
}

// argsort64 sorts lines of 64-bit keys as (key, index) pairs.
func argsort64[T any](out, x *dispatch.Tensor, dim int, desc bool, key func(T) uint64) {
	d, o := elems[T](x), elems[int64](out)
	flip := uint64(0)
	if desc {
		flip = math.MaxUint64
	}
	sortLines(out, x, dim, func(xo, xs, oo, os, n int) {
		b := make([]keyed, n)
		for i := range n {
			b[i] = keyed{key(d[xo+i*xs]) ^ flip, int64(i)}
		}
		slices.SortFunc(b, func(p, q keyed) int {
			switch {
			case p.key != q.key:
				return compareU64(p.key, q.key)
			case p.at < q.at:
				return -1
			case p.at > q.at:
				return 1
			}
			return 0
		})
		for i, v := range b {
			o[oo+i*os] = v.at
		}
	})
}

func compareU64(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}
