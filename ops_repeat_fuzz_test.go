package lathe

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzRepeat draws Repeat, Tile or RepeatInterleave of a tensor of any
// dtype and of rank 0 to 4, some transposed, with counts that are mostly
// small and sometimes negative or near int's edge (so that a dim's size or
// the count of elements passes int), fewer counts than dims, and a dim
// that may be out of range; or Tril and Triu of a tensor of rank 0 to 4
// (the leading dims a batch) with a diagonal anywhere, far past the matrix
// and int's edges included. RepeatInterleave takes one int count,
// RepeatInterleaveCounts a tensor of them: one per element of the dim,
// one for all, or a wrong number; int64, int32 or (refused) float32.
//
// The oracle is torch 1.13's rule, checked there on 7,800 of these draws:
// an ErrValue for fewer counts than dims (repeat) and for a negative count,
// an ErrDType for counts that are not int32 or int64, an ErrShape for a
// number of counts that is neither the dim's size nor 1,
// an ErrIndex for a dim out of range and for repeat_interleave of a 0-d
// tensor, an ErrShape for tril and triu of rank below 2 (torch 1.13's
// IndexError from its dim wrap; Tril's comment says ErrShape), with x left
// as it was; else torch's shape, x's dtype, the elements picked here index
// by index, and wgpu:0 exactly. Where torch 1.13's int64 arithmetic wraps
// or skips a check, lathe's documented rule stands: a dim's size past int
// is an ErrShape (torch wraps 3·(2⁶³-1) to 2⁶³-3), a negative count is an
// ErrValue even where the dim is empty (torch takes -1·0), an empty result
// whose other dims are huge is taken (torch refuses some for their
// strides), and tril of an empty 1-d tensor is refused (torch returns it).
func FuzzRepeat(f *testing.F) {
	f.Add([]byte{0, 0, 2, 2, 3, 1, 4, 8, 12, 16, 20, 24, 1, 0, 2, 1, 3})         // repeat [2, 3] (2, 1, 3)
	f.Add([]byte{1, 2, 2, 3, 2, 0, 1, 5, 9, 13, 17, 21, 0, 1, 2})                // tile int32 [3, 2]ᵀ (2)
	f.Add([]byte{2, 5, 2, 2, 3, 1, 0, 4, 8, 12, 16, 20, 2, 2})                   // repeat_interleave float16 [2, 3] 2 at -1
	f.Add([]byte{3, 6, 3, 2, 2, 3, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 3}) // tril bfloat16 [2, 2, 3] -1
	f.Add([]byte{4, 7, 2, 4, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 5})    // triu int8 [4, 3]ᵀ 1
	f.Add([]byte{0, 0, 2, 0, 3, 1, 0, 0, 242, 1})                                // repeat [0, 3] (MaxInt, 1): [0, 3]
	f.Add([]byte{0, 0, 1, 2, 4, 8, 1, 0, 248, 248})                              // repeat [2] (2⁶², 2⁶²): past int
	f.Add([]byte{2, 0, 0, 4, 240, 0})                                            // repeat_interleave 0-d -1 at -1
	fzGPUFor(f)                                                                  // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		names := []string{"repeat", "tile", "repeat_interleave", "tril", "triu", "repeat_interleave_counts"}
		name := names[r.intn(len(names))]
		dt := fzCastDTypes[r.intn(len(fzCastDTypes))]
		shape := r.shape(4, 16)
		x := fzOperand(r, dt, shape)
		xv, err := fzHost(x)
		if err != nil {
			t.Fatal(err)
		}
		label := name + "/" + dt.String() + dispatch.FormatShape(shape)

		var call func(in []*Tensor) *Tensor
		var outShape []int
		var src func(o []int) []int // the element of x that out's element o copies, nil for a zero
		var refuse error
		switch name {
		case "repeat", "tile":
			n := len(shape) + r.intn(3)
			if name == "repeat" && r.intn(8) == 7 || name == "tile" {
				n = r.intn(len(shape) + 2) // fewer counts than dims
			}
			reps := make([]int, n)
			for i := range reps {
				reps[i] = r.count()
			}
			label += "/reps" + fzAttrs(reps...)
			call = func(in []*Tensor) *Tensor {
				if name == "tile" {
					return in[0].Tile(reps...)
				}
				return in[0].Repeat(reps...)
			}
			if name == "tile" && len(reps) < len(shape) {
				reps = append(slices.Repeat([]int{1}, len(shape)-len(reps)), reps...)
			}
			outShape, src, refuse = fzRepeatRule(shape, reps)
		case "repeat_interleave":
			count, dim := r.count(), r.dim(len(shape))
			label += "/" + fzAttrs(count, dim)
			call = func(in []*Tensor) *Tensor { return in[0].RepeatInterleave(count, dim) }
			outShape, src, refuse = fzInterleaveRule(shape, count, dim)
		case "repeat_interleave_counts":
			dim := r.dim(len(shape))
			n := 1
			if d := dim + len(shape); len(shape) > 0 && d >= 0 && d < 2*len(shape) {
				n = shape[d%len(shape)] // the dim's size, where dim is in range
			}
			switch r.intn(8) {
			case 6:
				n = 1
			case 7:
				n = r.intn(4)
			}
			counts, drawn := make([]int64, n), make([]int, n)
			for i := range counts {
				drawn[i] = r.count()
				counts[i] = int64(drawn[i])
			}
			cdt := []DType{Int64, Int64, Int32, Float32}[r.intn(4)]
			label += "/" + cdt.String() + fzAttrs(drawn...) + "/" + strconv.Itoa(dim)
			call = func(in []*Tensor) *Tensor {
				return in[0].RepeatInterleaveCounts(FromSlice(in[0].Device(), counts).Cast(cdt), dim)
			}
			outShape, src, refuse = fzCountsRule(shape, counts, cdt, dim)
		default:
			diagonal := r.dim(3) // mostly in [-4, 4], one time in 32 near int's edge
			label += "/" + strconv.Itoa(diagonal)
			upper := name == "triu"
			call = func(in []*Tensor) *Tensor {
				if upper {
					return in[0].Triu(diagonal)
				}
				return in[0].Tril(diagonal)
			}
			outShape, src, refuse = fzTriangleRule(shape, diagonal, upper)
		}
		if refuse == nil && dispatch.Numel(outShape) > 1<<12 {
			return // a count near int's edge that torch takes: more than the test should hold
		}
		out := fzDiff(t, label, 0, call, x)
		fzWant(t, label, out, refuse, outShape, dt)
		if refuse != nil {
			if v, err := fzHost(x); err != nil || !slices.EqualFunc(v, xv, func(a, b float64) bool { return fzClose(a, b, 0) }) {
				t.Fatalf("%s: a refused call changed x: %v, was %v (%v)", label, v, xv, err)
			}
			return
		}
		if out.Err() != nil {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatalf("%s: reading the result: %v", label, err)
		}
		for o := range fzOdometer(outShape) {
			want := 0.0
			if i := src(o); i != nil {
				want = xv[fzFlat(i, shape)]
			}
			if g := got[fzFlat(o, outShape)]; !fzClose(g, want, 0) {
				t.Fatalf("%s: element %v is %v, want %v (got %v)", label, o, g, want, got)
			}
		}
	})
}

// count is a repeat count: mostly 0 to 3, one time in 16 an extreme of
// fzExtremes (negative, or near int's edge).
func (r *fzReader) count() int {
	c := r.byte()
	if c >= 240 {
		return fzExtremes[int(c-240)%len(fzExtremes)]
	}
	return int(c) % 4
}

// fzRepeatRule is torch's repeat of a tensor of shape by reps (as many
// as its rank or more): the output's shape and the source of each element,
// or the refusal.
func fzRepeatRule(shape, reps []int) ([]int, func(o []int) []int, error) {
	if len(reps) < len(shape) {
		return nil, nil, ErrValue
	}
	lead := len(reps) - len(shape)
	out := make([]int, len(reps))
	var faults []error
	for i, c := range reps {
		s := 1
		if i >= lead {
			s = shape[i-lead]
		}
		switch {
		case c < 0:
			faults = append(faults, ErrValue)
		case fzProdOverflows(c, s):
			faults = append(faults, ErrShape)
		}
		out[i] = c * s
	}
	if len(faults) == 0 && fzProdOverflows(out...) {
		faults = append(faults, ErrShape)
	}
	if refuse := fzOneKind(faults); refuse != nil {
		return nil, nil, refuse
	}
	return out, func(o []int) []int {
		i := make([]int, len(shape))
		for d := range i {
			i[d] = o[lead+d] % shape[d]
		}
		return i
	}, nil
}

// fzInterleaveRule is torch's repeat_interleave with an int count.
func fzInterleaveRule(shape []int, count, dim int) ([]int, func(o []int) []int, error) {
	var faults []error
	if count < 0 {
		faults = append(faults, ErrValue)
	}
	rank := len(shape)
	switch {
	case rank == 0 || dim < -rank || dim >= rank:
		faults = append(faults, ErrIndex)
	case count >= 0:
		if dim < 0 {
			dim += rank
		}
		out := slices.Clone(shape)
		out[dim] *= count
		if fzProdOverflows(shape[dim], count) || fzProdOverflows(out...) {
			faults = append(faults, ErrShape)
		}
		if len(faults) == 0 {
			return out, func(o []int) []int {
				i := slices.Clone(o)
				i[dim] /= count
				return i
			}, nil
		}
	}
	return nil, nil, fzOneKind(faults)
}

// fzCountsRule is torch's repeat_interleave with a tensor of counts (of
// dtype cdt): element i of dim repeated counts[i] times (counts[0] for
// each where there is one count), or the refusal.
func fzCountsRule(shape []int, counts []int64, cdt DType, dim int) ([]int, func(o []int) []int, error) {
	var faults []error
	if cdt != Int64 && cdt != Int32 {
		faults = append(faults, ErrDType)
	}
	rank := len(shape)
	if rank == 0 || dim < -rank || dim >= rank {
		return nil, nil, fzOneKind(append(faults, ErrIndex))
	}
	if dim < 0 {
		dim += rank
	}
	n := shape[dim]
	if len(counts) != n && len(counts) != 1 {
		faults = append(faults, ErrShape)
	}
	// Where the counts are int32, FromSlice's int64 values pass through a
	// cast, which wraps those past int32.
	each := func(i int) int64 {
		c := counts[min(i, len(counts)-1)]
		if cdt == Int32 {
			c = int64(int32(c))
		}
		return c
	}
	total, starts := 0, make([]int, 0, n)
	for i := range n {
		if len(counts) == 0 {
			break
		}
		c := each(i)
		if c < 0 {
			faults = append(faults, ErrValue)
			break
		}
		starts = append(starts, total)
		if c > math.MaxInt-int64(total) {
			faults = append(faults, ErrShape)
			break
		}
		total += int(c)
	}
	out := slices.Clone(shape)
	out[dim] = total
	if len(faults) == 0 && fzProdOverflows(out...) {
		faults = append(faults, ErrShape)
	}
	if len(faults) > 0 {
		return nil, nil, fzOneKind(faults)
	}
	return out, func(o []int) []int {
		i := slices.Clone(o)
		// The last element whose run starts at or before o[dim] (one of
		// count 0 starts where the next does).
		k, _ := slices.BinarySearch(starts, o[dim]+1)
		i[dim] = k - 1
		return i
	}, nil
}

// fzTriangleRule is torch's tril (triu where upper): element (i, j) of
// each matrix kept where j-i ≤ diagonal (≥ for triu), else zero.
func fzTriangleRule(shape []int, diagonal int, upper bool) ([]int, func(o []int) []int, error) {
	rank := len(shape)
	if rank < 2 {
		return nil, nil, ErrShape
	}
	return shape, func(o []int) []int {
		// j-i is small; diagonal may be near int's edge, so compare, not subtract.
		d := o[rank-1] - o[rank-2]
		if upper && d >= diagonal || !upper && d <= diagonal {
			return o
		}
		return nil
	}, nil
}
