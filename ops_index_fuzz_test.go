package lathe

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzIndex draws index_select, gather, scatter, scatter_add, one_hot,
// masked_fill and embedding with indices that are mostly in range and
// sometimes negative, one past the end or near int32's and int64's edges,
// of any index rank and dtype. An index out of range must be ErrIndex (on
// wgpu:0 at the read-back), shapes must follow PyTorch's rules, and the
// values must be the ones a loop here picks, on the cpu and on wgpu:0.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0, 0, 2, 3, 4, 0, 1, 3, 0, 1, 2})
	f.Add([]byte{1, 0, 2, 3, 3, 1, 0, 2, 2, 1, 0, 2, 1, 0})
	f.Add([]byte{2, 0, 2, 2, 3, 1, 0, 2, 2, 1, 0, 2, 1, 0, 5})
	f.Add([]byte{3, 0, 2, 2, 3, 1, 0, 2, 2, 1, 0, 2, 1, 0, 5})
	f.Add([]byte{4, 1, 2, 3, 2, 5, 0, 4, 1, 3})
	f.Add([]byte{5, 0, 2, 3, 2, 1, 7, 0, 1, 1, 0, 1, 0})
	f.Add([]byte{6, 1, 2, 2, 3, 4, 2, 0, 3, 1})
	f.Add([]byte{0, 0, 2, 3, 4, 0, 1, 3, 0, 1, 255})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(7) {
		case 0:
			fuzzIndexSelect(t, r)
		case 1, 2, 3:
			fuzzGatherScatter(t, r)
		case 4:
			fuzzOneHot(t, r)
		case 5:
			fuzzMaskedFill(t, r)
		default:
			fuzzEmbedding(t, r)
		}
	})
}

// index draws n index values for a dim of the given size: mostly in
// range, else just outside it or at an integer's edge.
func (r *fzReader) index(n, size int, dt DType) (*Tensor, bool) {
	v := make([]float64, n)
	ok := true
	edges := []float64{-1, float64(size), float64(size + 1), math.MinInt32, math.MaxInt32, 1 << 40, -(1 << 40)}
	for i := range v {
		c := r.byte()
		switch {
		case c < 224 && size > 0:
			v[i] = float64(int(c) % size)
		default:
			v[i] = edges[int(c)%len(edges)]
			if dt == Int32 && math.Abs(v[i]) >= 1<<31 {
				v[i] = math.MaxInt32
			}
			ok = false
		}
	}
	return fzTensor(v, dt, []int{n}), ok
}

// indexDType is Int32 or Int64, or (rarely) a dtype indices may not have.
func (r *fzReader) indexDType() DType {
	if r.intn(16) == 0 {
		return []DType{Float32, Bool}[r.intn(2)]
	}
	return []DType{Int32, Int64}[r.intn(2)]
}

// fzIndexWant checks an indexing op's result: refused with the rule's
// kind, ErrIndex where an index is out of range (on a device, at the
// read-back), else the shape and the values ref gives.
func fzIndexWant(t *testing.T, label string, out *Tensor, refuse error, inRange bool, shape []int, ref []float64, tol float64) {
	t.Helper()
	if refuse == nil && !inRange {
		refuse = ErrIndex
	}
	fzWant(t, label, out, refuse, shape, dispatch.InvalidDType)
	if refuse != nil || out.Err() != nil || ref == nil {
		return
	}
	got, err := fzHost(out)
	if err != nil {
		t.Fatalf("%s: reading: %v", label, err)
	}
	for i := range ref {
		if !fzClose(got[i], ref[i], tol) {
			t.Fatalf("%s: element %d is %v, want %v (got %v, want %v)", label, i, got[i], ref[i], got, ref)
		}
	}
}

func fuzzIndexSelect(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	shape := r.shape(3, 27)
	x := fzOperand(r, dt, shape)
	dim := r.dim(len(shape))
	d, dimOK := normDim(dim, len(shape))
	size := 1
	if dimOK && len(shape) > 0 {
		size = shape[d]
	}
	idt := r.indexDType()
	idx, inRange := r.index(r.intn(5), size, idt)
	if r.intn(8) == 0 {
		idx = idx.Unsqueeze(0) // 2-d: refused
	}
	label := "index_select/" + dt.String() + dispatch.FormatShape(shape) + "/dim" + strconv.Itoa(dim) + "/" + idt.String() + dispatch.FormatShape(idx.Shape())
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].IndexSelect(dim, in[1]) }, x, idx)
	var refuse error
	switch {
	case idt != Int32 && idt != Int64:
		refuse = ErrDType
	case idx.Rank() > 1:
		refuse = ErrShape
	case !dimOK:
		refuse = ErrIndex
	case len(shape) == 0 && idx.Numel() != 1: // PyTorch ≥ 2: "Index to scalar can have only 1 value"
		refuse = ErrIndex
	}
	want := slices.Clone(shape)
	var ref []float64
	if refuse == nil && inRange {
		xs, _ := fzHost(x)
		is, _ := fzHost(idx)
		if len(shape) > 0 {
			want[d] = len(is)
		}
		ref = fzPick(xs, shape, want, func(o []int) []int {
			src := slices.Clone(o)
			if len(src) > 0 {
				src[d] = int(is[o[d]])
			}
			return src
		})
	}
	fzIndexWant(t, label, out, refuse, inRange, want, ref, 0)
}

// fzPick is the row-major elements of a result of shape out whose element
// o is element src(o) of xs, of shape in.
func fzPick(xs []float64, in, out []int, src func(o []int) []int) []float64 {
	n := dispatch.Numel(out)
	res := make([]float64, 0, n)
	o := make([]int, len(out))
	for range n {
		s := src(o)
		flat := 0
		for d, i := range s {
			flat = flat*in[d] + i
		}
		res = append(res, xs[flat])
		for d := len(o) - 1; d >= 0; d-- {
			if o[d]++; o[d] < out[d] {
				break
			}
			o[d] = 0
		}
	}
	return res
}

func fuzzGatherScatter(t *testing.T, r *fzReader) {
	op := []string{"gather", "scatter", "scatter_add"}[r.intn(3)]
	dt := []DType{Float32, Int32, Float64, Int64, Bool}[r.intn(5)]
	shape := r.shape(3, 27)
	x := fzOperand(r, dt, shape)
	dim := r.dim(len(shape))
	d, dimOK := normDim(dim, len(shape))
	// The index's shape: no larger than x's (but along dim for gather),
	// sometimes larger, sometimes of another rank.
	ishape := make([]int, len(shape))
	for i, s := range shape {
		ishape[i] = r.intn(s + 1)
		if r.intn(12) == 0 {
			ishape[i] = s + 1
		}
	}
	if r.intn(12) == 0 {
		ishape = append(ishape, 1)
	}
	size := 1
	if dimOK && len(shape) > 0 {
		size = shape[d]
	}
	idt := r.indexDType()
	idx, inRange := r.index(dispatch.Numel(ishape), size, idt)
	idx = idx.Reshape(ishape...)
	src := fzOperand(r, dt, ishape)
	if r.intn(12) == 0 {
		src = r.tensor(dt, append(slices.Clone(ishape), 2))
	}
	label := op + "/" + dt.String() + dispatch.FormatShape(shape) + "/dim" + strconv.Itoa(dim) + "/" + idt.String() + dispatch.FormatShape(ishape)
	fits := func(t []int, all bool) bool {
		if len(ishape) != len(t) {
			return false
		}
		for i, s := range ishape {
			if (all || i != d) && s > t[i] {
				return false
			}
		}
		return true
	}
	var refuse error
	switch {
	case idt != Int32 && idt != Int64:
		refuse = ErrDType
	case !dimOK:
		refuse = ErrIndex
	case !fits(shape, false):
		refuse = ErrShape
	case op != "gather" && !fits(src.Shape(), true):
		refuse = ErrShape
	}
	xs, _ := fzHost(x)
	is, _ := fzHost(idx)
	ss, _ := fzHost(src)
	switch op {
	case "gather":
		out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].Gather(dim, in[1]) }, x, idx)
		var ref []float64
		if refuse == nil && inRange {
			ref = fzPick(xs, shape, ishape, func(o []int) []int {
				s := slices.Clone(o)
				if len(s) > 0 {
					s[d] = int(is[fzFlat(o, ishape)])
				}
				return s
			})
		}
		fzIndexWant(t, label, out, refuse, inRange, ishape, ref, 0)
		return
	}
	call := func(in []*Tensor) *Tensor { return in[0].Scatter(dim, in[1], in[2]) }
	if op == "scatter_add" {
		call = func(in []*Tensor) *Tensor { return in[0].ScatterAdd(dim, in[1], in[2]) }
	}
	// Scatter with repeated targets keeps any one of the writes (PyTorch
	// says so too): compare values only where every target is distinct.
	// writes pairs each element of index (and of src at the same
	// position) with its target in x.
	var writes [][2]int
	distinct := true
	if refuse == nil && inRange {
		seen := map[int]bool{}
		o := make([]int, len(ishape))
		for i := range is {
			target := slices.Clone(o)
			if len(target) > 0 {
				target[d] = int(is[i])
			}
			flat := fzFlat(target, shape)
			if seen[flat] {
				distinct = false
			}
			seen[flat] = true
			writes = append(writes, [2]int{flat, fzFlat(o, src.Shape())})
			for k := len(o) - 1; k >= 0; k-- {
				if o[k]++; o[k] < ishape[k] {
					break
				}
				o[k] = 0
			}
		}
	}
	// An integer dtype's reference is kept in int64, exactly: a float64
	// sum of int64s loses their low bits past 2^53.
	var ref []float64
	var refInt []int64
	switch {
	case refuse != nil || !inRange || (op == "scatter" && !distinct):
	case dt.IsInt():
		xi, _ := fzInts(x)
		si, _ := fzInts(src)
		refInt = fzScatterRef(xi, si, writes, op == "scatter_add", func(a, b int64) int64 {
			if dt == Int32 {
				return int64(int32(a) + int32(b)) // wrapping, as int32 adds
			}
			return a + b // wrapping, as int64 adds
		})
	default:
		ref = fzScatterRef(xs, ss, writes, op == "scatter_add", func(a, b float64) float64 { return fzAdd(a, b, dt) })
	}
	tol := 0.0
	if dt == Float32 || dt == Float64 {
		tol = 1e-6 * fzSpread(src) // the order of the adds
	}
	if op == "scatter" && !distinct {
		tol = -1
	}
	out := fzDiff(t, label, tol, call, x, idx, src)
	fzIndexWant(t, label, out, refuse, inRange, shape, ref, max(tol, 0))
	if refInt == nil || out.Err() != nil {
		return
	}
	got, err := fzInts(out)
	if err != nil {
		t.Fatalf("%s: reading: %v", label, err)
	}
	if !slices.Equal(got, refInt) {
		t.Fatalf("%s: got %v, want %v", label, got, refInt)
	}
}

// fzScatterRef is x after each write {target, source} of writes: src's
// source element added to x's target element by add, or put there.
func fzScatterRef[T any](x, src []T, writes [][2]int, accumulate bool, add func(a, b T) T) []T {
	ref := slices.Clone(x)
	for _, w := range writes {
		if accumulate {
			ref[w[0]] = add(ref[w[0]], src[w[1]])
		} else {
			ref[w[0]] = src[w[1]]
		}
	}
	return ref
}

// fzInts is an integer tensor's elements, exactly.
func fzInts(x *Tensor) ([]int64, error) {
	data, err := x.host("fuzz")
	if err != nil {
		return nil, err
	}
	switch d := data.(type) {
	case []int64:
		return slices.Clone(d), nil
	case []int32:
		out := make([]int64, len(d))
		for i, v := range d {
			out[i] = int64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("fzInts: %v is not an integer dtype", x.DType())
}

// fzFlat is the row-major position of index i in shape.
func fzFlat(i, shape []int) int {
	flat := 0
	for d, v := range i {
		flat = flat*shape[d] + v
	}
	return flat
}

// fzAdd is a + b as float dtype dt, or Bool, adds.
func fzAdd(a, b float64, dt DType) float64 {
	switch dt {
	case Float32:
		return float64(float32(a) + float32(b))
	case Bool: // a sum of bools is their or, as in PyTorch
		if a != 0 || b != 0 {
			return 1
		}
		return 0
	}
	return a + b
}

func fuzzOneHot(t *testing.T, r *fzReader) {
	shape := r.shape(2, 8)
	classes := r.intn(6) - 1
	if r.intn(16) == 0 {
		classes = fzExtremes[r.intn(len(fzExtremes))]
	}
	idt := r.indexDType()
	n := dispatch.Numel(shape)
	idx, inRange := r.index(n, max(classes, 0), idt)
	idx = idx.Reshape(shape...)
	label := "one_hot/" + idt.String() + dispatch.FormatShape(shape) + "/" + strconv.Itoa(classes)
	is, _ := fzHost(idx)
	nc := classes
	if classes == -1 {
		// max + 1 of the values, which must be ≥ 0.
		nc, inRange = 0, true
		for _, v := range is {
			nc = max(nc, int(v)+1)
			if v < 0 || v >= 1<<31 {
				inRange = false
			}
		}
	}
	if classes > 0 && fzProdOverflows(n, classes) || n > 0 && nc > 1<<20 {
		t.Skip("a result of more than a million elements per index: not a fuzz case (the bad-input table has a huge one_hot)")
	}
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].OneHot(classes) }, idx)
	var refuse error
	switch {
	case idt != Int32 && idt != Int64:
		refuse = ErrDType
	case classes < -1:
		refuse = ErrValue
	case classes == -1 && n == 0:
		refuse = errAny // PyTorch: cannot infer the classes of an empty tensor
	}
	var ref []float64
	if refuse == nil && inRange {
		ref = make([]float64, n*nc)
		for i, v := range is {
			ref[i*nc+int(v)] = 1
		}
	}
	fzIndexWant(t, label, out, refuse, inRange, append(slices.Clone(shape), nc), ref, 0)
}

func fuzzMaskedFill(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	shape := r.shape(3, 27)
	x := fzOperand(r, dt, shape)
	mdt := Bool
	if r.intn(12) == 0 {
		mdt = Float32
	}
	mshape := fzBroadcastPartner(r, shape)
	mask := fzOperand(r, mdt, mshape)
	v := r.value()
	label := "masked_fill/" + dt.String() + dispatch.FormatShape(shape) + "/" + mdt.String() + dispatch.FormatShape(mshape)
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].MaskedFill(in[1], v) }, x, mask)
	bshape, ok := fzBroadcast(shape, mshape)
	var refuse error
	switch {
	case mdt != Bool:
		refuse = ErrDType
	case !ok:
		refuse = ErrShape
	default:
		refuse = fzScalarKind(dt, v) // a value x's dtype cannot hold, as torch's masked_fill
	}
	var ref []float64
	if refuse == nil {
		xs, _ := fzHost(x.Expand(bshape...))
		ms, _ := fzHost(mask.Expand(bshape...))
		fill, _ := fzHost(fzTensor([]float64{v}, dt, []int{1})) // v held exactly, or rounded to float32, or v != 0 for Bool
		ref = make([]float64, len(xs))
		for i := range xs {
			ref[i] = xs[i]
			if ms[i] != 0 {
				ref[i] = fill[0]
			}
		}
	}
	fzIndexWant(t, label, out, refuse, true, bshape, ref, 0)
}

func fuzzEmbedding(t *testing.T, r *fzReader) {
	rows, cols := r.intn(5), r.intn(4)
	wshape := []int{rows, cols}
	if r.intn(12) == 0 {
		wshape = []int{rows}
	}
	w := r.tensor(Float32, wshape)
	shape := r.shape(2, 8)
	idt := r.indexDType()
	idx, inRange := r.index(dispatch.Numel(shape), rows, idt)
	idx = idx.Reshape(shape...)
	label := "embedding/" + idt.String() + dispatch.FormatShape(shape) + "/weight" + dispatch.FormatShape(wshape)
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return Embedding(in[0], in[1]) }, idx, w)
	var refuse error
	switch {
	case idt != Int32 && idt != Int64:
		refuse = ErrDType
	case len(wshape) != 2:
		refuse = ErrShape
	}
	var ref []float64
	if refuse == nil && inRange {
		ws, _ := fzHost(w)
		is, _ := fzHost(idx)
		for _, v := range is {
			ref = append(ref, ws[int(v)*cols:int(v+1)*cols]...)
		}
	}
	fzIndexWant(t, label, out, refuse, inRange, append(slices.Clone(shape), cols), ref, 0)
}
