package lathe

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzSort draws sort, argsort or topk of a tensor of any dtype and a
// shape with empty dims, along a dim that may be out of range, either
// direction, over values full of ties, NaN, infinities and both zeros.
// The result must follow the rule (ErrIndex for the dim, ErrValue for a k
// past the dim's size, ErrDType for topk of bool) and equal a stable sort
// of each line done here, NaN largest and -0 equal to 0, as torch's
// stable sort orders them (topk is its first k), and match wgpu:0 exactly.
func FuzzSort(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 4, 1, 0, 3, 7, 3, 11, 0, 0, 0, 5, 5, 5, 200, 3, 1})
	f.Add([]byte{1, 1, 1, 5, 0, 1, 0, 7, 3, 7, 3, 19, 23})
	f.Add([]byte{2, 2, 3, 2, 2, 3, 0, 1, 2, 0, 4, 8, 0, 4, 8, 12, 3, 7, 2})
	f.Add([]byte{0, 3, 2, 4, 2, 0, 6, 1, 1, 1, 2, 2, 2, 1, 1, 0})
	f.Add([]byte{2, 4, 1, 3, 7, 1, 1, 2, 3})
	f.Add([]byte{1, 0, 0, 250, 1})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		op := []string{"sort", "argsort", "topk"}[r.intn(3)]
		dt := fzDTypes[r.intn(len(fzDTypes))]
		shape := r.shape(3, 64)
		x := fzOperand(r, dt, shape)
		dim := r.dim(len(shape))
		desc := r.intn(2) == 1
		k := r.intn(6)
		label := op + "/" + dt.String() + dispatch.FormatShape(shape) + "/dim" + strconv.Itoa(dim)
		if op == "topk" {
			label += "/k" + strconv.Itoa(k)
		}
		if desc {
			label += "/descending"
		}
		run := func(in []*Tensor) (values, indices *Tensor) {
			switch op {
			case "sort":
				return in[0].Sort(dim, desc)
			case "argsort":
				return nil, in[0].ArgSort(dim, desc)
			}
			return in[0].TopK(k, dim, desc)
		}

		// The rule.
		rank := max(len(shape), 1)
		var refuse error
		d := dim
		if d < 0 {
			d += rank
		}
		n := 1
		switch {
		case op == "topk" && dt == Bool: // before the dim, as torch has no bool kernel
			refuse = ErrDType
		case dim < -rank || dim >= rank:
			refuse = ErrIndex
		case len(shape) > 0:
			n = shape[d]
		}
		outShape := slices.Clone(shape)
		if refuse == nil && op == "topk" {
			if k > n {
				refuse = ErrValue
			} else if len(shape) > 0 {
				outShape[d] = k
			}
		}
		indices := fzDiff(t, label+"/indices", 0, func(in []*Tensor) *Tensor { _, i := run(in); return i }, x)
		fzWant(t, label+"/indices", indices, refuse, outShape, Int64)
		var values *Tensor
		if op != "argsort" {
			values = fzDiff(t, label+"/values", 0, func(in []*Tensor) *Tensor { v, _ := run(in); return v }, x)
			fzWant(t, label+"/values", values, refuse, outShape, dt)
		}
		if refuse != nil || indices.Err() != nil {
			return
		}
		wantIdx, wantVals := fzSortRef(t, x, shape, d, desc, k, op == "topk")
		if got, err := fzHost(indices); err != nil || !slices.Equal(got, wantIdx) {
			xs, _ := fzHost(x)
			t.Fatalf("%s: indices %v (%v), a stable sort gives %v (x %v)", label, got, err, wantIdx, xs)
		}
		if values == nil {
			return
		}
		got, err := fzHost(values)
		if err != nil {
			t.Fatal(err)
		}
		for i := range wantVals {
			if !fzClose(got[i], wantVals[i], 0) {
				t.Fatalf("%s: values %v, want %v", label, got, wantVals)
			}
		}
	})
}

// fzSortRef is the indices and values, row-major, of a stable sort of each
// line of x along dim d (NaN largest, -0 = 0; descending keeps ties in
// order), the first k of each line for topk.
func fzSortRef(t *testing.T, x *Tensor, shape []int, d int, desc bool, k int, topk bool) (idx, vals []float64) {
	v, err := fzHost(x)
	if err != nil {
		t.Fatal(err)
	}
	if len(shape) == 0 {
		return []float64{0}, v // a 0-d x is its own sort and topk (k 0 or 1), as in torch
	}
	outer, n, inner := dispatch.Numel(shape[:d]), shape[d], dispatch.Numel(shape[d+1:])
	keep := n
	if topk {
		keep = k
	}
	less := func(a, b float64) bool {
		switch {
		case math.IsNaN(a):
			return false
		case math.IsNaN(b):
			return true
		}
		return a < b
	}
	idx, vals = make([]float64, outer*keep*inner), make([]float64, outer*keep*inner)
	for o := range outer {
		for in := range inner {
			at := func(i int) float64 { return v[(o*n+i)*inner+in] }
			line := make([]int, n)
			for i := range line {
				line[i] = i
			}
			slices.SortStableFunc(line, func(i, j int) int {
				a, b := at(i), at(j)
				if desc {
					a, b = b, a
				}
				switch {
				case less(a, b):
					return -1
				case less(b, a):
					return 1
				}
				return 0
			})
			for i := range keep {
				idx[(o*keep+i)*inner+in], vals[(o*keep+i)*inner+in] = float64(line[i]), at(line[i])
			}
		}
	}
	return idx, vals
}
