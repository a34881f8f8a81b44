package cpu

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestScatterAddSlices: scatter_add with an index that varies along dim 0
// alone, expanded over the other dims (index_select's backward), adds
// slice by slice (scatterAddSlices) and gives the same bits as the general
// walk, to which the same index written out goes: duplicate indices (the
// adds in order), float32, float64 and the integers, 2-D and 3-D, a src at
// an offset and a src of one value expanded.
func TestScatterAddSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
		for _, shape := range [][]int{{300, 7}, {50, 4, 33}, {9, 1}} {
			n := shape[0] // the index's length along dim 0; out has 11 rows
			outShape := append([]int{11}, shape[1:]...)
			inner := dispatch.Numel(shape[1:])
			srcData := make([]float64, 3+n*inner)
			for i := range srcData {
				srcData[i] = math.Round(rng.NormFloat64() * 1000)
				if dt.IsFloat() {
					srcData[i] = rng.NormFloat64() * 1e3
				}
			}
			base := tensorOf(dispatch.Float64, srcData, len(srcData))
			wide := dispatch.NewTensor(cpu0, dt, []int{len(srcData)}, newBuffer(dt, len(srcData)))
			castInto(wide, base)
			src := wide.View(shape, dispatch.ContiguousStrides(shape), 3)
			idx := make([]int64, n)
			for i := range idx {
				idx[i] = int64(rng.IntN(11)) // duplicates abound
			}
			line := tensorOf(dispatch.Int64, idx, n)
			strides := make([]int, len(shape))
			strides[0] = 1
			expanded := line.View(shape, strides, 0)
			written := dispatch.NewTensor(cpu0, dispatch.Int64, slices.Clone(shape), newBuffer(dispatch.Int64, dispatch.Numel(shape)))
			castInto(written, expanded)
			zeros := dispatch.NewTensor(cpu0, dt, outShape, newBuffer(dt, dispatch.Numel(outShape)))
			castInto(zeros, tensorOf(dispatch.Float64, make([]float64, dispatch.Numel(outShape)), outShape...))
			if !scatterAddSlices(zeros.View(outShape, dispatch.ContiguousStrides(outShape), 0), src, expanded, 0) {
				t.Fatalf("%v %v: the slice path refused index_select's backward layout", dt, shape)
			}
			// src as it is, and one value expanded over it (the gradient of
			// a sum).
			for _, s := range []*dispatch.Tensor{src, wide.View(shape, make([]int, len(shape)), 5)} {
				got := denseF64(call(t, ops.ScatterAdd, ops.IndexDim{Dim: 0}, zeros, expanded, s))
				want := denseF64(call(t, ops.ScatterAdd, ops.IndexDim{Dim: 0}, zeros, written, s))
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("%v %v src strides %v: [%d] = %v by slices, %v by the general walk", dt, shape, s.Strides, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestScatterAddSlicesRefuses: layouts whose slices are not one run each
// (an index along dim 1 of a row-major matrix: columns), a 0-d index and
// an index that varies off its dim go to the general walk.
func TestScatterAddSlicesRefuses(t *testing.T) {
	out := tensorOf(dispatch.Float32, make([]float32, 8), 4, 2)
	src := tensorOf(dispatch.Float32, make([]float32, 12), 4, 3)
	line := tensorOf(dispatch.Int64, []int64{0, 1, 0}, 3)
	dense := tensorOf(dispatch.Int64, make([]int64, 12), 4, 3)
	scalar := tensorOf(dispatch.Int64, []int64{0}, 1).View(nil, nil, 0)
	for name, c := range map[string]struct {
		out, src, index *dispatch.Tensor
		d               int
	}{
		"columns":      {out, src, line.View([]int{4, 3}, []int{0, 1}, 0), 1},
		"0-d":          {scalar, scalar, scalar, 0},
		"varies off d": {tensorOf(dispatch.Float32, make([]float32, 12), 4, 3), src, dense, 0},
	} {
		if scatterAddSlices(c.out, c.src, c.index, c.d) {
			t.Errorf("%s: the slice path took it", name)
		}
	}
}

// TestCheckExpandedIndex: a value check of an expanded index reads each
// value once (distinct), and one of a contiguous Int64 index reads its
// elements in place; each names the first bad value in row-major order,
// as the walk over any layout does.
func TestCheckExpandedIndex(t *testing.T) {
	line := tensorOf(dispatch.Int64, []int64{2, 9, 1, 12, -3}, 5)
	for name, index := range map[string]*dispatch.Tensor{
		"expanded":   line.View([]int{5, 1000}, []int{1, 0}, 0),
		"contiguous": line,
		"int32":      tensorOf(dispatch.Int32, []int32{2, 9, 1, 12, -3}, 5),
		"strided":    line.View([]int{3}, []int{2}, 0), // 2, 1, -3
	} {
		var seen []int64
		c := &dispatch.ValueCheck{Min: 0, Max: 10, Fail: func(v int64) *dispatch.Error {
			seen = append(seen, v)
			return &dispatch.Error{Kind: dispatch.ErrIndex}
		}}
		want := int64(12)
		if name == "strided" {
			want = -3
		}
		err := backend{}.CheckValues(index, c)
		if !errors.Is(err, dispatch.ErrIndex) || !slices.Equal(seen, []int64{want}) {
			t.Errorf("%s: %v for %v, want the error of %d", name, err, seen, want)
		}
	}
}
