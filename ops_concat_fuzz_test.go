package lathe

import (
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzConcat draws Concat or Stack of one to three tensors whose shapes
// agree but for the joined dim (Concat) most of the time and sometimes do
// not, of one dtype or (rarely) two, some transposed, along a dim that may
// be out of range. The result must follow the rule (ErrIndex for the dim,
// ErrShape for sizes that do not agree or ranks that differ, ErrDType for
// two dtypes: lathe does not promote, unlike torch, README), equal the
// join done here element by element, and match wgpu:0 exactly.
func FuzzConcat(f *testing.F) {
	f.Add([]byte{0, 2, 0, 2, 3, 2, 1, 0, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49})
	f.Add([]byte{1, 3, 0, 2, 2, 3, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13})
	f.Add([]byte{0, 1, 3, 3, 1, 2, 4, 1, 3, 3, 7})
	f.Add([]byte{1, 2, 2, 1, 4, 6, 0, 9, 9})
	f.Add([]byte{0, 3, 1, 2, 2, 2, 0, 1, 2, 0, 1, 3, 2})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		stack := r.intn(2) == 1
		count := 1 + r.intn(3)
		dt := fzDTypes[r.intn(len(fzDTypes))]
		shape := r.shape(3, 24)
		rank := len(shape)
		if stack {
			rank++
		}
		dim := r.dim(max(rank, 1))
		var in []*Tensor
		var shapes [][]int
		dtypes := map[DType]bool{}
		for range count {
			s := slices.Clone(shape)
			if !stack && len(s) > 0 && r.intn(2) == 0 {
				s[((dim%len(s))+len(s))%len(s)] = r.intn(4) // the joined dim's size varies
			}
			if len(s) > 0 && r.intn(10) == 0 {
				s[r.intn(len(s))] = r.intn(4) // and sometimes another
			}
			d := dt
			if r.intn(10) == 0 {
				d = fzDTypes[r.intn(len(fzDTypes))]
			}
			dtypes[d] = true
			shapes = append(shapes, s)
			in = append(in, fzOperand(r, d, s))
		}
		name := "concat"
		if stack {
			name = "stack"
		}
		label := name + "/" + dt.String() + "/dim" + strconv.Itoa(dim)
		for _, s := range shapes {
			label += dispatch.FormatShape(s)
		}
		want, outShape, refuse := fzJoinRef(t, in, shapes, dim, stack)
		if len(dtypes) > 1 {
			refuse = orEither(refuse, ErrDType) // two faults: either may be found first
		}
		out := fzDiff(t, label, 0, func(ts []*Tensor) *Tensor {
			if stack {
				return Stack(ts, dim)
			}
			return Concat(ts, dim)
		}, in...)
		fzWant(t, label, out, refuse, outShape, in[0].DType())
		if refuse != nil || out.Err() != nil {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if !fzClose(got[i], want[i], 0) {
				t.Fatalf("%s: %v, want %v", label, got, want)
			}
		}
	})
}

// fzJoinRef is the join done here: the result's elements, row-major, and
// shape, or the kind of refusal. Stack is a concat of each input with a
// size-1 dim inserted at dim.
func fzJoinRef(t *testing.T, in []*Tensor, shapes [][]int, dim int, stack bool) ([]float64, []int, error) {
	rank := len(shapes[0])
	if stack {
		rank++
	}
	if rank == 0 { // concat of 0-d tensors, refused before the dim, as torch does
		return nil, nil, errAny
	}
	if dim < -rank || dim >= rank {
		return nil, nil, ErrIndex
	}
	if dim < 0 {
		dim += rank
	}
	joined := make([][]int, len(shapes))
	for i, s := range shapes {
		if len(s) != len(shapes[0]) {
			return nil, nil, ErrShape
		}
		if stack {
			if !slices.Equal(s, shapes[0]) {
				return nil, nil, ErrShape
			}
			s = slices.Insert(slices.Clone(s), dim, 1)
		}
		joined[i] = s
	}
	out := slices.Clone(joined[0])
	out[dim] = 0
	for _, s := range joined {
		for d := range s {
			if d != dim && s[d] != joined[0][d] {
				return nil, nil, ErrShape
			}
		}
		out[dim] += s[dim]
	}
	outer, inner := dispatch.Numel(out[:dim]), dispatch.Numel(out[dim+1:])
	var vals []float64
	for o := range outer {
		for i, x := range in {
			v, err := fzHost(x)
			if err != nil {
				t.Fatal(err)
			}
			n := joined[i][dim] * inner
			vals = append(vals, v[o*n:(o+1)*n]...)
		}
	}
	return vals, out, nil
}

// orEither is errAny where a refusal is already due, else err: an input with
// two faults may be refused for either.
func orEither(refuse, err error) error {
	if refuse != nil {
		return errAny
	}
	return err
}
