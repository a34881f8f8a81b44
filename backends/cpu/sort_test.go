package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRadixSortKeys: the radix sort leaves packed (key, index) values in
// slices.Sort's order, over keys with many ties (few distinct values), keys
// that differ only in one byte (so that the other passes are skipped), and
// keys of every byte.
func TestRadixSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, n := range []int{1, 2, radixMin, 300, 1029} {
		for _, keys := range []func() uint32{
			func() uint32 { return uint32(rng.IntN(5)) << 24 },
			func() uint32 { return 0xabcd0000 | uint32(rng.IntN(256))<<8 },
			rng.Uint32,
		} {
			b := make([]uint64, n)
			for i := range b {
				b[i] = uint64(keys())<<32 | uint64(i)
			}
			want := slices.Clone(b)
			slices.Sort(want)
			if got := radixSortKeys(b, make([]uint64, n)); !slices.Equal(got, want) {
				t.Fatalf("n=%d: radix order differs from slices.Sort's", n)
			}
		}
	}
}

// TestRadixSortKeyed is TestRadixSortKeys for 64-bit keys: the order is
// slices.SortFunc's by (key, index), with ties, keys that differ in one
// byte only (the other seven passes skipped) and in the top byte alone,
// and keys of every byte.
func TestRadixSortKeyed(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{1, 2, radixMin, 300, 1029} {
		for _, keys := range []func() uint64{
			func() uint64 { return uint64(rng.IntN(5)) << 56 },
			func() uint64 { return 0xabcdef0123450000 | uint64(rng.IntN(256))<<8 },
			func() uint64 { return uint64(rng.IntN(3)) },
			rng.Uint64,
		} {
			b := make([]keyed, n)
			for i := range b {
				b[i] = keyed{keys(), int64(i)}
			}
			want := slices.Clone(b)
			slices.SortFunc(want, compareBy(before))
			if got := radixSortKeyed(b, make([]keyed, n)); !slices.Equal(got, want) {
				t.Fatalf("n=%d: radix order differs from slices.SortFunc's", n)
			}
		}
	}
}

// TestBelowFloat32: shim.c's scan finds the same candidates as the Go
// loop of sortKeyF32, and stops where it says, on lines of NaNs, ±Inf, ±0,
// subnormals and ordinary values (and lines of ±0 alone, where -0 must
// match +0), in both directions, for thresholds from the smallest key to
// the largest, with buffers that fill up and buffers that do not, resumed
// from where each scan stopped until the line ends.
func TestBelowFloat32(t *testing.T) {
	if !haveAVX2 {
		t.Skip("no AVX2: the scan is the Go loop")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 1, -1}
	for _, n := range []int{vectorMin, vectorMin + 3, 1001, 4099} {
		v := make([]float32, n)
		for range 200 {
			zeros := rng.IntN(4) == 0
			for i := range v {
				switch {
				case zeros:
					v[i] = specials[3+rng.IntN(2)]
				case rng.IntN(4) == 0:
					v[i] = specials[rng.IntN(len(specials))]
				default:
					v[i] = float32(rng.NormFloat64())
				}
			}
			flip := uint32(0)
			if rng.IntN(2) == 0 {
				flip = math.MaxUint32
			}
			top := sortKeyF32(v[rng.IntN(n)]) ^ flip
			switch rng.IntN(8) {
			case 0:
				top = 0
			case 1:
				top = math.MaxUint32
			}
			var want []uint64
			for i, x := range v {
				if k := sortKeyF32(x) ^ flip; k < top {
					want = append(want, uint64(k)<<32|uint64(100+i))
				}
			}
			var got []uint64
			size := []int{8, 13, 256}[rng.IntN(3)]
			for at := 0; at < n; {
				found, end, ok := belowFloat32(v[at:], top, flip, 100+at, make([]uint64, 0, size))
				if !ok || end <= 0 && len(found) == 0 {
					t.Fatalf("n=%d: the scan from %d did not run or did not move (ran %v, end %d)", n, at, ok, end)
				}
				for _, f := range found {
					if int(uint32(f))-100 >= at+end {
						t.Fatalf("n=%d: found %d past the scan's end %d", n, int(uint32(f))-100, at+end)
					}
				}
				got = append(got, found...)
				if at += end; n-at < vectorMin {
					// The kernel runs from vectorMin values on; the rest
					// is the Go loop's.
					for i := at; i < n; i++ {
						if k := sortKeyF32(v[i]) ^ flip; k < top {
							got = append(got, uint64(k)<<32|uint64(100+i))
						}
					}
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d top=%#x flip=%#x cap=%d: found %d candidates, want %d", n, top, flip, size, len(got), len(want))
			}
		}
	}
}
