package cpu

import (
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
