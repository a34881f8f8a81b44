package lathe

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzSelect draws masked_select (masks broadcasting or not), nonzero,
// index and index_put with accumulate (1-D index tensors of one length,
// full slices anywhere, indices mostly in [-size, size), else just
// outside it or at an integer's edge) over every dtype, strided or not
// (index_put's values are halves, so that sums in any order are exact). A bad shape or index must be refused
// with its kind (an index on wgpu:0 at the read-back), and the result must
// be what a loop here picks, on the cpu and on wgpu:0.
func FuzzSelect(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 4, 0, 1, 3, 0, 1, 2})
	f.Add([]byte{1, 1, 2, 3, 3, 1, 0, 2, 2, 1, 0, 2, 1, 0})
	f.Add([]byte{2, 0, 3, 2, 3, 4, 5, 1, 0, 2, 2, 1, 0, 2, 1, 0, 5})
	f.Add([]byte{2, 3, 3, 3, 1, 2, 3, 0, 1, 2, 250, 1, 0})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(4) {
		case 0:
			fuzzMaskedSelect(t, r)
		case 1:
			fuzzNonzero(t, r)
		default:
			fuzzIndexTensors(t, r)
		}
	})
}

func fuzzMaskedSelect(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	xs := r.shape(3, 64)
	ms := fzBroadcastPartner(r, xs)
	x, mask := fzOperand(r, dt, xs), fzOperand(r, Bool, ms)
	label := fmt.Sprintf("masked_select %v%v mask %v", dt, xs, ms)
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].MaskedSelect(in[1]) }, x, mask)
	shape, ok := fzBroadcast(xs, ms)
	if !ok {
		fzWant(t, label, out, ErrShape, nil, dt)
		return
	}
	xv, _ := fzHost(x.Expand(shape...))
	mv, _ := fzHost(mask.Expand(shape...))
	var ref []float64
	for i, m := range mv {
		if m != 0 {
			ref = append(ref, xv[i])
		}
	}
	fzIndexWant(t, label, out, nil, true, []int{len(ref)}, ref, 0)
}

func fuzzNonzero(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	xs := r.shape(3, 64)
	x := fzOperand(r, dt, xs)
	label := fmt.Sprintf("nonzero %v%v", dt, xs)
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].Nonzero() }, x)
	xv, _ := fzHost(x)
	var ref []float64
	count := 0
	at := make([]int, len(xs))
	for _, v := range xv {
		if v != 0 { // NaN too
			count++
			for _, c := range at {
				ref = append(ref, float64(c))
			}
		}
		for d := len(xs) - 1; d >= 0; d-- {
			if at[d]++; at[d] < xs[d] {
				break
			}
			at[d] = 0
		}
	}
	fzIndexWant(t, label, out, nil, true, []int{count, len(xs)}, ref, 0)
}

func fuzzIndexTensors(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	xs := r.shape(3, 64)
	put := r.intn(2) == 0 && dt != Bool
	x := fzOperand(r, dt, xs)
	if put { // halves, so that sums in any order are exact and never wrap
		x = fzTensor(fzHalves(r, dispatch.Numel(xs)), dt, xs)
	}
	n := r.small(5)
	entries := r.small(len(xs) + 2) // one past the rank sometimes
	indices := make([]*Tensor, entries)
	vals := make([][]int, entries)
	inRange, some := true, false
	for d := range indices {
		if r.intn(3) == 0 {
			continue // a full slice
		}
		size := 1
		if d < len(xs) {
			size = xs[d]
		}
		v := make([]float64, n)
		vals[d] = make([]int, n)
		for i := range v {
			c := r.byte()
			if c < 224 && size > 0 {
				v[i] = float64(int(c)%(2*size) - size) // [-size, size)
				vals[d][i] = (int(v[i]) + size) % size
				continue
			}
			edges := []float64{float64(size), float64(-size - 1), math.MaxInt32, math.MinInt32, 1 << 40}
			v[i] = edges[int(c)%len(edges)]
			inRange = false
		}
		dti := []DType{Int32, Int64}[r.intn(2)]
		if dti == Int32 {
			for i := range v {
				v[i] = max(min(v[i], math.MaxInt32), math.MinInt32)
			}
		}
		indices[d], some = fzTensor(v, dti, []int{n}), true
	}
	label := fmt.Sprintf("index %v%v by %d entries of %d", dt, xs, entries, n)
	var values *Tensor
	var shape []int
	var ref []float64
	if some && entries <= len(xs) && inRange {
		shape, ref = fzIndexRef(x, xs, vals, n)
	}
	call := func(in []*Tensor) *Tensor { return in[0].Index(in[1:]...) }
	args := append([]*Tensor{x}, indices...)
	if put {
		label = "index_put " + label
		vs := shape
		if vs == nil {
			vs = []int{1}
		}
		values = fzTensor(fzHalves(r, dispatch.Numel(vs)), dt, vs)
		v, _ := fzHost(values) // as the dtype holds them
		call = func(in []*Tensor) *Tensor { return in[0].IndexPut(in[2:], in[1], true) }
		args = append([]*Tensor{x, values}, indices...)
		if shape != nil { // the call is valid
			ref, shape = fzIndexPutRef(x, xs, vals, n, v, dt), xs
		}
	}
	out := fzDiff(t, label, 0, call, args...)
	switch {
	case entries > len(xs):
		fzWant(t, label, out, ErrIndex, nil, dt)
		return
	case !some:
		fzWant(t, label, out, ErrValue, nil, dt)
		return
	}
	fzIndexWant(t, label, out, nil, inRange, shape, ref, 0)
}

// fzIndexRef is x[vals...] by torch's rule for index lists of one length n
// (nil a full slice): the shape, and the values in row-major order.
func fzIndexRef(x *Tensor, xs []int, vals [][]int, n int) ([]int, []float64) {
	var dims, rest []int
	for d := range xs {
		if d < len(vals) && vals[d] != nil {
			dims = append(dims, d)
		} else {
			rest = append(rest, d)
		}
	}
	// order lists the result's dims: -1 is the index dim, else x's dim.
	var order []int
	if dims[len(dims)-1]-dims[0] != len(dims)-1 {
		order = append([]int{-1}, rest...)
	} else {
		for d := range xs {
			if d == dims[0] {
				order = append(order, -1)
			}
			if !slices.Contains(dims, d) {
				order = append(order, d)
			}
		}
	}
	shape := make([]int, len(order))
	for i, d := range order {
		shape[i] = n
		if d >= 0 {
			shape[i] = xs[d]
		}
	}
	xv, _ := fzHost(x)
	var ref []float64
	if dispatch.Numel(shape) == 0 {
		return shape, ref
	}
	pos := make([]int, len(order))
	coord := make([]int, len(xs))
	for {
		for i, d := range order {
			if d >= 0 {
				coord[d] = pos[i]
			} else {
				for _, dd := range dims {
					coord[dd] = vals[dd][pos[i]]
				}
			}
		}
		ref = append(ref, xv[fzFlat(coord, xs)])
		i := len(pos) - 1
		for ; i >= 0; i-- {
			if pos[i]++; pos[i] < shape[i] {
				break
			}
			pos[i] = 0
		}
		if i < 0 {
			return shape, ref
		}
	}
}

// fzIndexPutRef is x with v (laid out as x[vals...]) added at the places
// that fzIndexRef reads, in dtype dt.
func fzIndexPutRef(x *Tensor, xs []int, vals [][]int, n int, v []float64, dt DType) []float64 {
	places := make([]float64, dispatch.Numel(xs))
	for i := range places {
		places[i] = float64(i)
	}
	out, _ := fzHost(x)
	_, where := fzIndexRef(fzTensor(places, Float64, xs), xs, vals, n)
	for i, p := range where {
		out[int(p)] = fzAdd(out[int(p)], v[i], dt)
	}
	return out
}

// fzHalves is n multiples of a half in [-4, 4].
func fzHalves(r *fzReader, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(int(r.byte())%17-8) / 2
	}
	return v
}
