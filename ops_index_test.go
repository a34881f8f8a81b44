package lathe

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

func i64s(v ...int64) *Tensor { return FromSlice(CPU, v) }

func TestIndexSelect(t *testing.T) {
	x := vwSeq(Float32, 3, 4)
	vwRun(t, []vwCase{
		{"index_select/f32/dim0", x.IndexSelect(0, i64s(2, 0)), []int{2, 4}, []float64{8, 9, 10, 11, 0, 1, 2, 3}},
		{"index_select/f32/dim-1/i32", x.IndexSelect(-1, FromSlice(CPU, []int32{3, 3, 0})), []int{3, 3},
			[]float64{3, 3, 0, 7, 7, 4, 11, 11, 8}},
		{"index_select/f32/0d-index", x.IndexSelect(1, Scalar(CPU, int64(2))), []int{3, 1}, []float64{2, 6, 10}},
		{"index_select/f32/empty-index", x.IndexSelect(0, FromSlice(CPU, []int64{})), []int{0, 4}, nil},
		{"index_select/f32/transposed", x.MT().IndexSelect(0, i64s(1, 3)), []int{2, 3}, []float64{1, 5, 9, 3, 7, 11}},
		{"index_select/f32/strided-index", x.IndexSelect(0, i64s(2, 9, 1, 9).Slice(0, 0, 4, 2)), []int{2, 4},
			[]float64{8, 9, 10, 11, 4, 5, 6, 7}},
		{"index_select/f32/0d-x", Scalar(CPU, float32(7)).IndexSelect(0, i64s(0)), []int{}, []float64{7}},
		{"index_select/i64/3d-mid", vwSeq(Int64, 2, 3, 2).IndexSelect(1, i64s(1)), []int{2, 1, 2}, []float64{2, 3, 8, 9}},
	})
	idx2 := FromSlice(CPU, []int64{0, 1}, 1, 2)
	vwRunErr(t, []vwErrCase{
		{"index_select/negative", x.IndexSelect(0, i64s(0, -1)).Err(), ErrIndex},
		{"index_select/too-big", x.IndexSelect(1, i64s(4)).Err(), ErrIndex},
		{"index_select/0d-x/too-big", Scalar(CPU, float32(1)).IndexSelect(0, i64s(1)).Err(), ErrIndex},
		// A 0-d x takes exactly one index, as in PyTorch ≥ 2 ("Index to
		// scalar can have only 1 value").
		{"index_select/0d-x/three-indices", Scalar(CPU, float32(1)).IndexSelect(0, i64s(0, 0, 0)).Err(), ErrIndex},
		{"index_select/0d-x/no-index", Scalar(CPU, float32(1)).IndexSelect(0, FromSlice(CPU, []int64{})).Err(), ErrIndex},
		{"index_select/float-index", x.IndexSelect(0, FromSlice(CPU, []float32{0})).Err(), ErrDType},
		{"index_select/2d-index", x.IndexSelect(0, idx2).Err(), ErrShape},
		{"index_select/dim", x.IndexSelect(2, i64s(0)).Err(), ErrIndex},
	})
	t.Run("index_select/error-names-value-and-range", func(t *testing.T) {
		err := x.IndexSelect(1, i64s(1, -3)).Err()
		var e *Error
		if !errors.As(err, &e) || e.Arg != "index" || !strings.Contains(e.Detail, "-3") || !strings.Contains(e.Fix, "[0, 4)") {
			t.Fatalf("error %v, want argument index, value -3 and range [0, 4)", err)
		}
	})
}

func TestGather(t *testing.T) {
	y := vwSeq(Float32, 3, 4)
	vwRun(t, []vwCase{
		{"gather/i64/dim1", FromSlice(CPU, []int64{1, 2, 3, 4}, 2, 2).Gather(1, FromSlice(CPU, []int64{0, 0, 1, 0}, 2, 2)),
			[]int{2, 2}, []float64{1, 1, 4, 3}},
		{"gather/f32/transposed/dim0", y.MT().Gather(0, FromSlice(CPU, []int64{2, 0, 1, 3, 3, 0}, 2, 3)), []int{2, 3},
			[]float64{2, 4, 9, 3, 7, 8}},
		{"gather/f32/transposed/dim1", y.MT().Gather(1, FromSlice(CPU, []int64{2, 0, 1, 1, 0, 2, 2, 1}, 4, 2)), []int{4, 2},
			[]float64{8, 0, 5, 5, 2, 10, 11, 7}},
		{"gather/f32/dim-1/smaller", y.Gather(-1, FromSlice(CPU, []int32{3, 0}, 2, 1)), []int{2, 1}, []float64{3, 4}},
		{"gather/f32/longer-along-dim", y.Gather(1, FromSlice(CPU, []int64{0, 1, 2, 3, 3, 2}, 1, 6)), []int{1, 6},
			[]float64{0, 1, 2, 3, 3, 2}},
		{"gather/f32/expanded-x", vwSeq(Float32, 4).Expand(3, 4).Gather(1, FromSlice(CPU, []int64{3, 2, 1}, 3, 1)), []int{3, 1},
			[]float64{3, 2, 1}},
		{"gather/f32/0d", Scalar(CPU, float32(5)).Gather(0, Scalar(CPU, int64(0))), []int{}, []float64{5}},
		{"gather/f32/empty", y.Gather(0, Zeros(CPU, Int64, 0, 4)), []int{0, 4}, nil},
	})
	vwRunErr(t, []vwErrCase{
		{"gather/rank", y.Gather(1, i64s(0, 1)).Err(), ErrShape},
		{"gather/size", y.Gather(1, Zeros(CPU, Int64, 4, 1)).Err(), ErrShape},
		{"gather/out-of-range", y.Gather(0, FromSlice(CPU, []int64{3}, 1, 1)).Err(), ErrIndex},
		{"gather/negative", y.Gather(0, FromSlice(CPU, []int64{-1}, 1, 1)).Err(), ErrIndex},
		{"gather/dtype", y.Gather(0, Zeros(CPU, Float32, 1, 1)).Err(), ErrDType},
		{"gather/dim", y.Gather(-3, Zeros(CPU, Int64, 1, 1)).Err(), ErrIndex},
	})
}

func TestScatter(t *testing.T) {
	src := vwSeq(Int64, 2, 5).AddScalar(1)
	z := Zeros(CPU, Int64, 3, 5)
	y := vwSeq(Float32, 3, 4)
	idxT := FromSlice(CPU, []int64{0, 0, 2, 2, 1, 0}, 2, 3).MT() // [[0,2],[0,1],[2,0]], not contiguous
	srcT := y.Narrow(1, 0, 3).MT()                               // [3,3], not contiguous
	vwRun(t, []vwCase{
		{"scatter/i64/dim0", z.Scatter(0, FromSlice(CPU, []int64{0, 1, 2, 0}, 1, 4), src), []int{3, 5},
			[]float64{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}},
		{"scatter/i64/duplicates-last-wins", FromSlice(CPU, []int64{1, 2, 3, 4}, 2, 2).Scatter(0,
			FromSlice(CPU, []int64{1, 1, 1, 1}, 2, 2), FromSlice(CPU, []int64{5, 6, 7, 8}, 2, 2)), []int{2, 2}, []float64{1, 2, 7, 8}},
		{"scatter/i64/duplicates-along-dim1", Zeros(CPU, Int64, 1, 3).Scatter(1,
			FromSlice(CPU, []int64{2, 2, 2}, 1, 3), FromSlice(CPU, []int64{5, 6, 7}, 1, 3)), []int{1, 3}, []float64{0, 0, 7}},
		{"scatter_add/i64/dim0", z.ScatterAdd(0, FromSlice(CPU, []int64{0, 1, 2, 0, 0, 0, 0, 0}, 2, 4), src), []int{3, 5},
			[]float64{7, 7, 8, 13, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}},
		{"scatter/f32/transposed-all", Zeros(CPU, Float32, 4, 3).MT().Scatter(1, idxT, srcT), []int{3, 4},
			[]float64{0, 0, 4, 0, 1, 5, 0, 0, 6, 0, 2, 0}},
		{"scatter_add/f32/transposed-all", Ones(CPU, Float32, 4, 3).MT().ScatterAdd(-1, idxT, srcT), []int{3, 4},
			[]float64{1, 1, 5, 1, 2, 6, 1, 1, 7, 1, 3, 1}},
		{"scatter_add/f32/dim-1-dups", Zeros(CPU, Float32, 2).ScatterAdd(-1, i64s(1, 1, 0, 1), FromSlice(CPU, []float32{1, 2, 3, 4})),
			[]int{2}, []float64{3, 7}},
		{"scatter/f32/0d", Scalar(CPU, float32(1)).Scatter(0, Scalar(CPU, int64(0)), Scalar(CPU, float32(9))), []int{}, []float64{9}},
		{"scatter/f32/empty-index", y.Scatter(0, Zeros(CPU, Int64, 0, 4), y), []int{3, 4}, seqF(12)},
	})
	vwRunErr(t, []vwErrCase{
		{"scatter/src-dtype", z.Scatter(0, Zeros(CPU, Int64, 1, 1), y).Err(), ErrDType},
		{"scatter/index-dtype", z.Scatter(0, Zeros(CPU, Int32, 1, 1).Cast(Bool), src).Err(), ErrDType},
		{"scatter/rank", z.Scatter(0, i64s(0), src).Err(), ErrShape},
		{"scatter/src-smaller", z.Scatter(0, Zeros(CPU, Int64, 1, 2), Zeros(CPU, Int64, 1, 1)).Err(), ErrShape},
		{"scatter/x-smaller", z.Scatter(0, Zeros(CPU, Int64, 1, 6), Zeros(CPU, Int64, 2, 6)).Err(), ErrShape},
		{"scatter/out-of-range", z.Scatter(0, FromSlice(CPU, []int64{3}, 1, 1), src).Err(), ErrIndex},
		{"scatter_add/negative", z.ScatterAdd(1, FromSlice(CPU, []int64{-1}, 1, 1), src).Err(), ErrIndex},
		{"scatter/dim", z.Scatter(2, FromSlice(CPU, []int64{0}, 1, 1), src).Err(), ErrIndex},
	})
	t.Run("scatter/out-of-place", func(t *testing.T) {
		z.Scatter(0, FromSlice(CPU, []int64{1}, 1, 1), src)
		vwExpect(t, z, []int{3, 5}, make([]float64, 15))
	})
}

// TestIndexLarge runs gather and scatter_add past the parallel threshold and
// checks them against plain loops.
func TestIndexLarge(t *testing.T) {
	const r, c = 300, 257
	r2 := rand.New(rand.NewPCG(1, 2))
	idx := make([]int64, r*c)
	for i := range idx {
		idx[i] = int64(r2.IntN(r))
	}
	x := vwSeq(Float64, r, c)
	index := FromSlice(CPU, idx, r, c)
	t.Run("gather/f64/dim0", func(t *testing.T) {
		want := make([]float64, r*c)
		for i := range r {
			for j := range c {
				want[i*c+j] = float64(idx[i*c+j]*c + int64(j))
			}
		}
		vwExpect(t, x.Gather(0, index), []int{r, c}, want)
	})
	t.Run("scatter_add/f64/dim0", func(t *testing.T) {
		want := make([]float64, r*c)
		for i := range r {
			for j := range c {
				want[int(idx[i*c+j])*c+j] += float64(i*c + j)
			}
		}
		vwExpect(t, Zeros(CPU, Float64, r, c).ScatterAdd(0, index, x), []int{r, c}, want)
	})
	t.Run("scatter/f64/dim0/last-wins", func(t *testing.T) {
		want := make([]float64, r*c)
		for i := range r {
			for j := range c {
				want[int(idx[i*c+j])*c+j] = float64(i*c + j)
			}
		}
		vwExpect(t, Zeros(CPU, Float64, r, c).Scatter(0, index, x), []int{r, c}, want)
	})
	t.Run("embedding/f64/large", func(t *testing.T) {
		const dim = 16
		e := Embedding(index, vwSeq(Float64, r, dim))
		if got := e.Shape(); !slices.Equal(got, []int{r, c, dim}) {
			t.Fatalf("shape %v", got)
		}
		got, err := e.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for p, k := range idx {
			for j := range dim {
				if v := got[p*dim+j]; v != float64(k*dim+int64(j)) {
					t.Fatalf("element [%d, %d] is %v, want %v", p, j, v, k*dim+int64(j))
				}
			}
		}
	})
}

func TestMaskedFill(t *testing.T) {
	x := vwSeq(Float32, 2, 3)
	vwRun(t, []vwCase{
		{"masked_fill/f32/same-shape", x.MaskedFill(x.GtScalar(3), -1), []int{2, 3}, []float64{0, 1, 2, 3, -1, -1}},
		{"masked_fill/f32/bcast-row", x.MaskedFill(FromSlice(CPU, []bool{false, true, false}), 7), []int{2, 3},
			[]float64{0, 7, 2, 3, 7, 5}},
		{"masked_fill/f32/bcast-grows(torch)", vwSeq(Float32, 3).MaskedFill(FromSlice(CPU, []bool{true, false}, 2, 1), 7),
			[]int{2, 3}, []float64{7, 7, 7, 0, 1, 2}},
		{"masked_fill/f32/transposed", x.MT().MaskedFill(FromSlice(CPU, []bool{true, false}), 9), []int{3, 2},
			[]float64{9, 3, 9, 4, 9, 5}},
		{"masked_fill/i64/0d-mask", vwSeq(Int64, 2).MaskedFill(Scalar(CPU, true), 4), []int{2}, []float64{4, 4}},
		{"masked_fill/f32/empty", Zeros(CPU, Float32, 0, 3).MaskedFill(Scalar(CPU, true), 4), []int{0, 3}, nil},
	})
	vwRunErr(t, []vwErrCase{
		{"masked_fill/mask-dtype", x.MaskedFill(x, 1).Err(), ErrDType},
		{"masked_fill/shape", x.MaskedFill(FromSlice(CPU, []bool{true, false}), 1).Err(), ErrShape},
		{"masked_fill/int-fraction", vwSeq(Int32, 2).MaskedFill(Scalar(CPU, true), 1.5).Err(), ErrDType},
		{"masked_fill/nil-mask", x.MaskedFill(nil, 1).Err(), ErrValue},
	})
	t.Run("masked_fill/mask-dtype/names-mask", func(t *testing.T) {
		var e *Error
		if err := x.MaskedFill(x, 1).Err(); !errors.As(err, &e) || e.Arg != "mask" || e.Op != "masked_fill" {
			t.Fatalf("error %v, want op masked_fill, argument mask", err)
		}
	})
}

func TestOneHot(t *testing.T) {
	vwRun(t, []vwCase{
		{"one_hot/i64/infer", i64s(0, 2).OneHot(-1), []int{2, 3}, []float64{1, 0, 0, 0, 0, 1}},
		{"one_hot/i32/explicit", FromSlice(CPU, []int32{1, 0, 1, 3}, 2, 2).OneHot(4), []int{2, 2, 4},
			[]float64{0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}},
		{"one_hot/i64/0d", Scalar(CPU, int64(1)).OneHot(3), []int{3}, []float64{0, 1, 0}},
		{"one_hot/i64/transposed", FromSlice(CPU, []int64{0, 1, 0, 0}, 2, 2).MT().OneHot(2), []int{2, 2, 2},
			[]float64{1, 0, 1, 0, 0, 1, 1, 0}},
		{"one_hot/i64/empty", Zeros(CPU, Int64, 0).OneHot(3), []int{0, 3}, nil},
	})
	if dt := i64s(0).OneHot(-1).DType(); dt != Int64 {
		t.Errorf("one_hot dtype %v, want int64", dt)
	}
	vwRunErr(t, []vwErrCase{
		{"one_hot/too-big", i64s(0, 3).OneHot(3).Err(), ErrIndex},
		{"one_hot/negative", i64s(0, -1).OneHot(3).Err(), ErrIndex},
		{"one_hot/negative/infer", i64s(-1, -2).OneHot(-1).Err(), ErrIndex},
		{"one_hot/float", FromSlice(CPU, []float32{0}).OneHot(2).Err(), ErrDType},
		{"one_hot/empty/infer", Zeros(CPU, Int64, 0).OneHot(-1).Err(), ErrValue},
		{"one_hot/bad-count", i64s(0).OneHot(-2).Err(), ErrValue},
		// Classes inferred from the values: 2⁴⁰ of them do not fit in
		// memory, and max + 1 for the largest int64 does not fit an int.
		{"one_hot/infer/class-2^40", i64s(1, 1<<40).OneHot(-1).Err(), ErrOutOfMemory},
		{"one_hot/infer/class-maxint64", i64s(1, math.MaxInt64).OneHot(-1).Err(), ErrShape},
	})
}

func TestEmbedding(t *testing.T) {
	w := vwSeq(Float32, 4, 2)
	vwRun(t, []vwCase{
		{"embedding/f32/2d-indices", Embedding(FromSlice(CPU, []int64{0, 3, 3, 1}, 2, 2), w), []int{2, 2, 2},
			[]float64{0, 1, 6, 7, 6, 7, 2, 3}},
		{"embedding/f32/0d-indices", Embedding(Scalar(CPU, int32(2)), w), []int{2}, []float64{4, 5}},
		{"embedding/f32/transposed-weight", Embedding(i64s(1), vwSeq(Float32, 2, 4).MT()), []int{1, 2}, []float64{1, 5}},
		{"embedding/f32/empty", Embedding(FromSlice(CPU, []int64{}), w), []int{0, 2}, nil},
	})
	vwRunErr(t, []vwErrCase{
		{"embedding/out-of-range", Embedding(i64s(4), w).Err(), ErrIndex},
		{"embedding/weight-rank", Embedding(i64s(0), vwSeq(Float32, 4)).Err(), ErrShape},
		{"embedding/indices-dtype", Embedding(FromSlice(CPU, []float32{0}), w).Err(), ErrDType},
	})
	for _, c := range []struct {
		name, arg string
		err       error
	}{
		{"out-of-range", "indices", Embedding(i64s(-1), w).Err()},
		{"weight-rank", "weight", Embedding(i64s(0), vwSeq(Float32, 4)).Err()},
	} {
		t.Run("embedding/"+c.name+"/names-"+c.arg, func(t *testing.T) {
			var e *Error
			if !errors.As(c.err, &e) || e.Arg != c.arg || e.Op != "embedding" {
				t.Fatalf("error %v, want op embedding, argument %s", c.err, c.arg)
			}
		})
	}
}

// TestScatterGradLeavesNothing: scatter's gradient rule made the zeros it
// writes into the gradient at the overwritten places without counting them
// among its temporaries, so that every backward pass through a scatter
// left them to the collector (a pool block a step on wgpu). Warm steps
// take nothing now, with the collector off.
func TestScatterGradLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		index := FromSlice(CPU, []int64{3, 0, 3, 1, 1, 1, 2, 2, 2, 0, 0, 0}, 4, 3).To(dev)
		warmStepsTakeNothing(t, dev, "scatter", x, func(x *Tensor) *Tensor {
			return x.Narrow(1, 0, 4).Scatter(1, index, x.Narrow(1, 0, 3))
		}, false)
	}
}

// TestIndexGradLeavesNothing: advanced indexing's composites (index,
// index_put, masked_select's gather, unique) held intermediates that only
// the collector released where x needs a gradient, and the 0-d Int64
// scalars of the index arithmetic and unique's views of its sorted values
// always: each warm training step took new blocks on wgpu:0. They go with
// the result's graph now.
func TestIndexGradLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 4, 6).To(dev).RequireGrad()
		at := FromSlice(CPU, []int64{1, -3, 5}, 3).To(dev)
		v := Ones(dev, Float32, 3)
		mask := FromSlice(CPU, []bool{true, false, true, true, false, false}, 6).To(dev)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"index":           func(x *Tensor) *Tensor { return x.Reshape(-1).Index(at) },
			"index, dim 1":    func(x *Tensor) *Tensor { return x.Index(nil, at) },
			"index_put":       func(x *Tensor) *Tensor { return x.Reshape(-1).IndexPut([]*Tensor{at}, v, true) },
			"index_put dim 1": func(x *Tensor) *Tensor { return x.IndexPut([]*Tensor{nil, at}, v, false) },
			"masked_select":   func(x *Tensor) *Tensor { return x.MaskedSelect(mask) },
			"unique": func(x *Tensor) *Tensor {
				v, _, _ := x.Unique(true, false, false)
				return v
			},
			"unique_consecutive": func(x *Tensor) *Tensor {
				v, _, _ := x.UniqueConsecutive(false, false)
				return v
			},
		} {
			warmStepsTakeNothing(t, dev, name, x, f, false)
		}
	}
}
