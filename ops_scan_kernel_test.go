package lathe

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestCumExtremeKernel: the cpu's argcumextreme kernel gives the indices
// of lathe's composite (doubling over (value, index) pairs, which the
// conformance suite holds to torch's), for each dtype, along each dim of a
// [3, 5, 37] tensor and of its transpose, for the maximum and the
// minimum, over values with many ties and, for floats, NaNs and
// infinities; and CumMax's values are x at those indices.
func TestCumExtremeKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	vals := make([]float64, 3*5*37)
	for i := range vals {
		vals[i] = float64(rng.IntN(7) - 3)
		switch rng.IntN(20) {
		case 0:
			vals[i] = math.NaN()
		case 1:
			vals[i] = math.Inf(1 - 2*rng.IntN(2))
		}
	}
	ints := make([]float64, len(vals))
	for i, v := range vals {
		if v == v && !math.IsInf(v, 0) {
			ints[i] = v
		}
	}
	for _, dt := range []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Int8, Uint8, Bool} {
		src := vals
		if !dt.IsFloat() {
			src = ints
		}
		base := FromSlice(CPU, src, 3, 5, 37).Cast(dt)
		for _, x := range []*Tensor{base, base.Permute(2, 0, 1)} {
			for d := range 3 {
				for _, max := range []bool{true, false} {
					got, err := apply(ops.ArgCumExtreme, ops.CumExtreme{Dim: d, Max: max}, x).Int64s()
					if err != nil {
						t.Fatal(err)
					}
					want, err := Compose(func(a []*Tensor) *Tensor { return cumExtremeIndex(a[0], d, max) }, x).Int64s()
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%v %v dim %d max %v: kernel %v, composite %v", dt, x.Shape(), d, max, got, want)
					}
				}
			}
		}
	}
	x := FromSlice(CPU, []float32{1, 3, 3, float32(math.NaN()), 5, float32(math.NaN()), 2})
	v, i := x.CumMax(0)
	gotV, _ := v.Float32s()
	gotI, _ := i.Int64s()
	if want := []int64{0, 1, 2, 3, 3, 5, 5}; !slices.Equal(gotI, want) || gotV[2] != 3 || gotV[4] == gotV[4] {
		t.Errorf("cummax: values %v, indices %v; want indices %v", gotV, gotI, want)
	}
}
