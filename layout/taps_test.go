package layout

import (
	"slices"
	"testing"
)

// PoolTaps against the definition: tap k of window o reads place
// o·s - p + k·d, and counts when that place is inside [0, n).
func TestPoolTaps(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for k := 1; k <= 4; k++ {
			for s := 1; s <= 3; s++ {
				for d := 1; d <= 3; d++ {
					for p := 0; 2*p <= k; p++ {
						for _, ceil := range []bool{false, true} {
							w := Window{Kernel: []int{k}, Stride: []int{s}, Padding: []int{p}, Dilation: []int{d}, CeilMode: ceil}
							for o := range w.OutSize(0, n) {
								var want []int
								for j := range k {
									if at := o*s - p + j*d; at >= 0 && at < n {
										want = append(want, j)
									}
								}
								lo, hi := PoolTaps(w, 0, o, n)
								var got []int
								for j := lo; j < hi; j++ {
									got = append(got, j)
								}
								if !slices.Equal(got, want) {
									t.Fatalf("%+v n=%d o=%d: taps [%d, %d), want %v", w, n, o, lo, hi, want)
								}
							}
						}
					}
				}
			}
		}
	}
}
