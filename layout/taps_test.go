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

// PoolTaps at int's edge: a dilation or padding near it counts the taps
// without wrapping (kernel 2, dilation 2^63-2, padding 1 over one element:
// tap 0 is in the padding and tap 1 far past the input, so none is
// inside; it was [1, 2), and the cpu's pool read place 2^63-3).
func TestPoolTapsAtTheEdge(t *testing.T) {
	const big = 1<<63 - 2
	for _, c := range []struct {
		k, s, p, d, n, o int
		lo, hi           int
	}{
		{2, big, 1, big, 1, 0, 1, 1},
		{2, 1, 0, big, 1, 0, 0, 1},
		{3, 1, 1, big / 2, 5, 0, 1, 1},
		{2, 1, 1, big, big - 1, 0, 1, 1},
		{2, 1, 1, big, big, 0, 1, 2},
	} {
		w := Window{Kernel: []int{c.k}, Stride: []int{c.s}, Padding: []int{c.p}, Dilation: []int{c.d}}
		if lo, hi := PoolTaps(w, 0, c.o, c.n); lo != c.lo || hi != c.hi {
			t.Errorf("%+v n=%d o=%d: taps [%d, %d), want [%d, %d)", w, c.n, c.o, lo, hi, c.lo, c.hi)
		}
	}
}

// UpsamplePasses: forward passes first dim to last, backward last to
// first, with the sizes each goes between; an identity filter has none.
func TestUpsamplePasses(t *testing.T) {
	dims := func(ps []Pass[float64]) (out [][3]int) {
		for _, p := range ps {
			out = append(out, [3]int{p.Dim, p.From, p.To})
		}
		return out
	}
	fwd := UpsamplePasses[float64](FilterLinear, []int{4, 5, 6}, []int{8, 5, 3}, nil, nil, false, false, false)
	if got, want := dims(fwd), [][3]int{{0, 4, 8}, {2, 6, 3}}; !slices.Equal(got, want) {
		t.Errorf("forward passes %v, want %v (dim 1 keeps its size: none)", got, want)
	}
	back := UpsamplePasses[float64](FilterLinear, []int{8, 5, 3}, []int{8, 5, 3}, []int{4, 5, 6}, nil, false, false, true)
	if got, want := dims(back), [][3]int{{2, 3, 6}, {0, 8, 4}}; !slices.Equal(got, want) {
		t.Errorf("backward passes %v, want %v", got, want)
	}
	if ps := UpsamplePasses[float64](FilterNearest, []int{3}, []int{3}, nil, nil, false, false, false); len(ps) != 0 {
		t.Errorf("nearest 3 -> 3 is a copy, got %d passes", len(ps))
	}
}

// Nearest's taps are UpSample.h's nearest_idx: an output of the input's
// size copies it and one of twice its size halves the index, whatever the
// scale factor that gave the size (H = 3 with scale 1.25 copies, 5 with
// 2.1 gives 0 0 1 1 2 ...); other sizes take floor(j / scale). The exact
// mode's nearest_exact_idx has no such cases.
func TestNearestTapsSpecialSizes(t *testing.T) {
	for _, c := range []struct {
		in, out int
		scale   float64
		exact   bool
		want    []int
	}{
		{3, 3, 1.25, false, []int{0, 1, 2}},
		{5, 5, 1.1, false, []int{0, 1, 2, 3, 4}},
		{5, 10, 2.1, false, []int{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}},
		{4, 5, 1.25, false, []int{0, 0, 1, 2, 3}},
		{5, 11, 2.3, false, []int{0, 0, 0, 1, 1, 2, 2, 3, 3, 3, 4}},
		{4, 4, 1.2, true, []int{0, 1, 2, 2}},
	} {
		tp := MakeTaps[float64](FilterNearest, c.in, c.out, c.scale, false, c.exact)
		if !slices.Equal(tp.Idx, c.want) {
			t.Errorf("nearest(exact=%v) %d -> %d, scale %g: indices %v, want %v", c.exact, c.in, c.out, c.scale, tp.Idx, c.want)
		}
	}
	if ps := UpsamplePasses[float64](FilterNearest, []int{3, 4}, []int{3, 5}, nil, []float64{1.25, 1.25}, false, false, false); len(ps) != 1 || ps[0].Dim != 1 {
		t.Errorf("nearest [3, 4] -> [3, 5] by 1.25: %d passes, want one, of dim 1 (dim 0 is a copy)", len(ps))
	}
}
