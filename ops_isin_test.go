package lathe

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestIsinLongTest: against a test long enough to be sorted and searched
// (past 10·n^0.145 elements), Isin gives what comparing every pair gives,
// on every device: int64s with repeats (some of them in the test, some
// not), and float32s with NaN (in nothing, in the test or not), ±Inf,
// ±0 (equal) and values just beside the test's, inverted too.
func TestIsinLongTest(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	ints, test := make([]int64, 3000), make([]int64, 900)
	for i := range ints {
		ints[i] = r.Int64N(4000) - 2000
	}
	for i := range test {
		test[i] = r.Int64N(3000) - 1500
	}
	test[0], ints[0], ints[1] = math.MinInt64, math.MinInt64, math.MaxInt64
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	floats := []float32{nan, inf, -inf, 0, float32(math.Copysign(0, -1)), 1, 1.5, 2, math.Nextafter32(2, 3), -7, 1e30, 3}
	ftest := []float32{2, nan, -inf, 0, -7, nan, 1e30}
	for len(ftest) < 200 {
		ftest = append(ftest, float32(r.IntN(1000))+0.25)
	}
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, invert := range []bool{false, true} {
				got, err := Isin(FromSlice(CPU, ints, 60, 50).To(dev), FromSlice(CPU, test, 900).To(dev), invert).Bools()
				if err != nil {
					t.Fatalf("%s: %v", dev, err)
				}
				in := map[int64]bool{}
				for _, v := range test {
					in[v] = true
				}
				for i, v := range ints {
					if got[i] != (in[v] != invert) {
						t.Fatalf("%s int64 invert=%v: %d gives %v", dev, invert, v, got[i])
					}
				}
				// float32: the elements tiled to pass the threshold's n.
				xs := make([]float32, 0, 12*100)
				for range 100 {
					xs = append(xs, floats...)
				}
				got, err = Isin(FromSlice(CPU, xs).To(dev), FromSlice(CPU, ftest, 20, 10).To(dev), invert).Bools()
				if err != nil {
					t.Fatalf("%s: %v", dev, err)
				}
				for i, v := range xs {
					want := false
					for _, w := range ftest {
						want = want || v == w
					}
					if got[i] != (want != invert) {
						t.Fatalf("%s float32 invert=%v: %v gives %v, want %v", dev, invert, v, got[i], want != invert)
					}
				}
			}
		})
	}
}

// TestIsinMemory: a million elements against 100,000 test elements would
// be 10^11 comparisons held at once; sorted and searched, the cpu pool's
// peak grows by a few times the elements' size.
func TestIsinMemory(t *testing.T) {
	t.Cleanup(func() { EmptyCache(CPU) })
	x := RandInt(CPU, Int64, 0, 1<<20, 1<<20)
	test := RandInt(CPU, Int64, 0, 1<<20, 100000)
	before, _ := MemoryStats(CPU)
	hit := Isin(x, test, false)
	count, err := hit.Cast(Int64).Sum().Int64s()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := MemoryStats(CPU)
	// About 9% of [0, 2^20) is in 100,000 draws from it.
	if c := count[0]; c < 80000 || c > 110000 {
		t.Errorf("%d of 2^20 elements are in the test; want about 9%%", c)
	}
	if grew := after.Allocated - before.Allocated; after.PeakAllocated-before.PeakAllocated > 1<<30 {
		t.Errorf("the pool's peak grew by %d bytes (allocated %d)", after.PeakAllocated-before.PeakAllocated, grew)
	}
}
