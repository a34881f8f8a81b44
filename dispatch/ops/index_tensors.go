package ops

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
)

// Advanced indexing by index tensors, as torch's x[i0, i1, ...] (aten
// index) and index_put. The index tensors broadcast together to a shape B
// and each indexes one dim of x (IndexedDims.Dims, ascending; the dims
// between them that the caller left out are full slices). Both ops are
// composites: the index tensors become one flat index into x with those
// dims moved to the front and merged (wrap negatives with remainder,
// scale, add), and the existing index_select, scatter and scatter_add do
// the reading and writing, so their kernels and gradient rules serve here
// on every device. Indices lie in [-size, size) of their dim, as in
// torch; the value checks (run on the device for cuda and wgpu) refuse any
// other before a kernel reads x.
//
// The result's layout follows torch: when the indexed dims are adjacent,
// B takes their place among x's other dims; when a full slice separates
// them, B comes first.

// IndexedDims is the attribute of index: the dim of x that each index
// tensor (in[1:]) indexes, ascending, and for error messages each one's
// place in the caller's list (a Bool mask's columns share the mask's; nil
// means the dims).
type IndexedDims struct{ Dims, Places []int }

// IndexPutAttrs is the attribute of index_put: the dims the index tensors
// (in[2:]) index and their places, as IndexedDims, and whether values add
// to x's elements (torch's accumulate) instead of replacing them.
type IndexPutAttrs struct {
	Dims, Places []int
	Accumulate   bool
}

// The operands of index are x then the index tensors; of index_put, x,
// values, then the index tensors. The root package names them for errors.
var (
	Index    = dispatch.Register(&dispatch.Op[IndexedDims]{Schema: dispatch.Schema{Name: "index", Args: []string{"operands"}, Variadic: true}, Compose: indexCompose, Checks: indexChecks})
	IndexPut = dispatch.Register(&dispatch.Op[IndexPutAttrs]{Schema: dispatch.Schema{Name: "index_put", Args: []string{"operands"}, Variadic: true}, Compose: indexPutCompose, Checks: indexPutChecks})
)

// IndexArg is the name errors give the index tensor at place p of the
// caller's list, x[i0, i1, ...].
func IndexArg(p int) string { return "indices[" + itoa(p) + "]" }

// indexing is what index and index_put share: x, its index tensors and
// the dims they index, once checked.
type indexing struct {
	x       *dispatch.Tensor
	indices []*dispatch.Tensor
	dims    []int
	names   []string           // each index tensor's, for errors
	rest    []int              // x's dims that no index tensor indexes, ascending
	bshape  []int              // the index tensors' broadcast shape
	made    []*dispatch.Tensor // intermediates that the result's graph may hold (releaseWith)
}

// newIndexing checks dims and the index tensors' dtypes and shapes.
func newIndexing(x *dispatch.Tensor, indices []*dispatch.Tensor, dims, places []int) (*indexing, error) {
	if places == nil {
		places = dims
	}
	if len(dims) == 0 || len(dims) != len(indices) || len(places) != len(dims) {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "indices", Detail: "names no index tensor", Fix: "pass at least one index tensor"}
	}
	if dims[len(dims)-1] >= x.Rank() || !slices.IsSorted(dims) || dims[0] < 0 || len(slices.Compact(slices.Clone(dims))) != len(dims) {
		return nil, &dispatch.Error{Kind: dispatch.ErrIndex, Arg: "indices", Found: itoa(dims[len(dims)-1]+1) + " indices",
			Detail: "index " + itoa(dims[len(dims)-1]+1) + " dims but x has shape " + dispatch.FormatShape(x.Shape),
			Fix:    "pass at most one index tensor per dim of x"}
	}
	ix := &indexing{x: x, indices: indices, dims: dims}
	for k, t := range indices {
		name := IndexArg(places[k])
		ix.names = append(ix.names, name)
		if t.DType == dispatch.Bool {
			return nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: name, Expected: Indices.String(), Found: t.DType.String(),
				Detail: "is a bool mask but index takes integer index tensors",
				Fix:    "index with the columns of mask.Nonzero() (lathe's Tensor.Index does so)"}
		}
		if err := checkDType(t, name, Indices); err != nil {
			return nil, err
		}
		if k == 0 {
			ix.bshape = t.Shape
			continue
		}
		b, ok := BroadcastShapes(ix.bshape, t.Shape)
		if !ok {
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name, Expected: dispatch.FormatShape(ix.bshape), Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + ", which does not broadcast with the earlier indices' " + dispatch.FormatShape(ix.bshape),
				Fix:    "give the index tensors shapes that broadcast together"}
		}
		ix.bshape = b
	}
	if _, ok := dispatch.CheckedNumel(ix.bshape); !ok {
		return nil, dispatch.ShapeError("indices", ix.bshape)
	}
	for d := range x.Rank() {
		if !slices.Contains(dims, d) {
			ix.rest = append(ix.rest, d)
		}
	}
	if shape := ix.resultShape(); !fitsInt(shape) {
		return nil, dispatch.ShapeError("indices", shape)
	}
	return ix, nil
}

func fitsInt(shape []int) bool {
	_, ok := dispatch.CheckedNumel(shape)
	return ok
}

// checks are the value checks of the index tensors, or none where
// newIndexing refuses the call (the composite then reports why).
func (ix *indexing) checks(first int) []dispatch.ValueCheck {
	// Checks run before the composite, so that no part reads a bad
	// index; but a check walks every element of an index, and an expanded
	// one may have more than any device holds. The composite's first part
	// is the Int64 linear index of that many elements: where the device
	// cannot hold it, skip the walk and let that part report ErrOutOfMemory.
	if reserve(ix.x.Device, ix.bshape) != nil {
		return nil
	}
	var cs []dispatch.ValueCheck
	for k, d := range ix.dims {
		size, name := ix.x.Shape[d], ix.names[k]
		cs = append(cs, dispatch.ValueCheck{Arg: first + k, Min: -int64(size), Max: int64(size) - 1,
			Fail: func(v int64) *dispatch.Error { return WrapIndexError(name, v, d, size) }})
	}
	return cs
}

// WrapIndexError is what an index v outside [-size, size) of dim gives.
func WrapIndexError(arg string, v int64, dim, size int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrIndex, Arg: arg, Found: itoa(int(v)),
		Detail: "holds " + itoa(int(v)) + ", out of range for dim " + itoa(dim) + " of size " + itoa(size),
		Fix:    "use indices in [-" + itoa(size) + ", " + itoa(size) + ")"}
}

func indexChecks(in []*dispatch.Tensor, a IndexedDims) []dispatch.ValueCheck {
	ix, err := newIndexing(in[0], in[1:], a.Dims, a.Places)
	if err != nil {
		return nil
	}
	return ix.checks(1)
}

func indexPutChecks(in []*dispatch.Tensor, a IndexPutAttrs) []dispatch.ValueCheck {
	if len(in) < 2 {
		return nil
	}
	ix, err := newIndexing(in[0], in[2:], a.Dims, a.Places)
	if err != nil {
		return nil
	}
	return ix.checks(2)
}

// front is the permutation that moves the indexed dims first, and whether
// it is the identity.
func (ix *indexing) front() ([]int, bool) {
	perm := append(slices.Clone(ix.dims), ix.rest...)
	for i, d := range perm {
		if i != d {
			return perm, false
		}
	}
	return perm, true
}

// flat is x with the indexed dims moved first and merged into one:
// [prod of their sizes] + the other dims' sizes.
func (ix *indexing) flat() (*dispatch.Tensor, error) {
	perm, same := ix.front()
	t := ix.x
	if !same {
		var err error
		if t, err = dispatch.Call(Permute, PermuteDims{Dims: perm}, t); err != nil {
			return nil, err
		}
	}
	n := 1
	for _, d := range ix.dims {
		n *= ix.x.Shape[d]
	}
	out, err := dispatch.Call(Reshape, ViewShape{Shape: append([]int{n}, ix.restSizes()...)}, t)
	if t != ix.x {
		ix.made = append(ix.made, t)
	}
	return out, err
}

func (ix *indexing) restSizes() []int {
	s := make([]int, len(ix.rest))
	for i, d := range ix.rest {
		s[i] = ix.x.Shape[d]
	}
	return s
}

// linear is the flat index into flat() that the index tensors name, of
// shape bshape, as Int64: the sum of each index (negatives wrapped by
// remainder, which is floor-mod in torch and here) times the product of
// the sizes of the indexed dims after its own. Indices need no gradient,
// so no tape holds the steps on the way, and each goes back to the pool
// as soon as the next is made.
func (ix *indexing) linear() (*dispatch.Tensor, error) {
	var lin *dispatch.Tensor
	stride := 1
	step := func(op *dispatch.Op[dispatch.None], t *dispatch.Tensor, v int) (*dispatch.Tensor, error) {
		next, err := ix.scalarOp(op, t, v)
		ix.drop(t)
		return next, err
	}
	for k := len(ix.dims) - 1; k >= 0; k-- {
		size := ix.x.Shape[ix.dims[k]]
		i, err := ix.indices[k], error(nil)
		if i.DType != dispatch.Int64 { // an Int32 index, widened so that the sum cannot wrap
			if i, err = dispatch.Call(Cast, CastTo{DType: dispatch.Int64}, i); err != nil {
				ix.drop(lin)
				return nil, err
			}
		}
		if size > 0 { // else i is empty (the checks refused any value)
			if i, err = step(Remainder, i, size); err != nil {
				ix.drop(lin)
				return nil, err
			}
		}
		if stride != 1 {
			if i, err = step(Mul, i, stride); err != nil {
				ix.drop(lin)
				return nil, err
			}
		}
		if lin == nil {
			lin = i
		} else {
			sum, err := dispatch.Call(Add, dispatch.None{}, i, lin)
			ix.drop(i)
			ix.drop(lin)
			if err != nil {
				return nil, err
			}
			lin = sum
		}
		stride *= size
	}
	if !slices.Equal(lin.Shape, ix.bshape) {
		wide, err := dispatch.Call(Expand, ViewShape{Shape: ix.bshape}, lin)
		ix.drop(lin) // the view keeps the storage
		return wide, err
	}
	return lin, nil
}

// drop releases an intermediate of the index arithmetic: never one of the
// caller's index tensors.
func (ix *indexing) drop(t *dispatch.Tensor) {
	if t != nil && !slices.Contains(ix.indices, t) {
		t.Release()
	}
}

// releaseWith releases the intermediates ts of a composite with the graph
// that made its result out: at once where out was not recorded (or the
// composite failed, out nil), else when the backward pass that frees that
// graph has used them. Left to the collector, they would keep their
// memory, and a training step would take new memory every step (views of
// them keep their storage as long as they need it).
func releaseWith(out *dispatch.Tensor, ts ...*dispatch.Tensor) {
	dispatch.ReleaseWithGraph(out, ts...)
}

// scalarOp is op(t, v) with v an Int64 0-d tensor on t's device.
func (ix *indexing) scalarOp(op *dispatch.Op[dispatch.None], t *dispatch.Tensor, v int) (*dispatch.Tensor, error) {
	s, err := dispatch.Upload(t.Device, []int64{int64(v)}, dispatch.Int64, []int{})
	if err != nil {
		return nil, err
	}
	defer s.Release() // integers: no tape entry holds it
	return dispatch.Call(op, dispatch.None{}, t, s)
}

// split reports whether a full slice separates the indexed dims, which
// puts B first in the result (torch's rule); otherwise B takes the
// indexed dims' place, after the dims before them.
func (ix *indexing) split() bool { return ix.dims[len(ix.dims)-1]-ix.dims[0] != len(ix.dims)-1 }

// resultShape is x[indices]'s shape.
func (ix *indexing) resultShape() []int {
	rest := ix.restSizes()
	if ix.split() {
		return append(slices.Clone(ix.bshape), rest...)
	}
	before := ix.dims[0]
	return slices.Concat(rest[:before], ix.bshape, rest[before:])
}

// placeB is the permutation between the gathered layout (B then the other
// dims) and the result's (the other dims before the indexed ones, B, the
// rest): toResult moves B into place, and its inverse moves it back. nil
// when the two layouts are the same.
func (ix *indexing) placeB(toResult bool) []int {
	before := ix.dims[0]
	if ix.split() || before == 0 {
		return nil
	}
	nb, nr := len(ix.bshape), len(ix.rest)
	perm := make([]int, 0, nb+nr)
	for i := range before {
		perm = append(perm, nb+i)
	}
	for i := range nb {
		perm = append(perm, i)
	}
	for i := before; i < nr; i++ {
		perm = append(perm, nb+i)
	}
	if toResult {
		return perm
	}
	back := make([]int, len(perm))
	for to, from := range perm {
		back[from] = to
	}
	return back
}

// indexCompose is x[indices]: index_select of the linear indices from
// flat(), reshaped to B + the other dims and permuted into torch's layout.
func indexCompose(in []*dispatch.Tensor, a IndexedDims) (*dispatch.Tensor, error) {
	ix, err := newIndexing(in[0], in[1:], a.Dims, a.Places)
	if err != nil {
		return nil, err
	}
	var out *dispatch.Tensor
	defer func() { releaseWith(out, ix.made...) }()
	src, err := ix.flat()
	if err != nil {
		return nil, err
	}
	if src != ix.x {
		ix.made = append(ix.made, src)
	}
	lin, err := ix.linear()
	if err != nil {
		return nil, err
	}
	flatIdx, err := dispatch.Call(Reshape, ViewShape{Shape: []int{-1}}, lin)
	ix.drop(lin) // flatIdx, a view, keeps the storage
	if err != nil {
		return nil, err
	}
	ix.made = append(ix.made, flatIdx) // index_select's tape entry may hold it
	got, err := dispatch.Call(IndexSelect, IndexDim{Dim: 0}, src, flatIdx)
	if err != nil {
		return nil, err
	}
	ix.made = append(ix.made, got)
	shaped, err := dispatch.Call(Reshape, ViewShape{Shape: append(slices.Clone(ix.bshape), ix.restSizes()...)}, got)
	if err != nil {
		return nil, err
	}
	if perm := ix.placeB(true); perm != nil {
		ix.made = append(ix.made, shaped)
		if shaped, err = dispatch.Call(Permute, PermuteDims{Dims: perm}, shaped); err != nil {
			return nil, err
		}
	}
	out = shaped
	return out, nil
}

// indexPutCompose is torch.index_put(x, indices, values, accumulate):
// values broadcast to x[indices]'s shape and laid out as the gathered
// rows, then scattered (or scatter-added) along the merged dim of flat(),
// which is reshaped and permuted back to x's layout. Where an index
// repeats without accumulate, the last write in row-major order wins on
// the cpu (torch leaves it unspecified).
func indexPutCompose(in []*dispatch.Tensor, a IndexPutAttrs) (*dispatch.Tensor, error) {
	if len(in) < 3 {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "indices", Detail: "names no index tensor", Fix: "pass at least one index tensor"}
	}
	x, values := in[0], in[1]
	ix, err := newIndexing(x, in[2:], a.Dims, a.Places)
	if err != nil {
		return nil, err
	}
	if values.DType != x.DType {
		return nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: "values", Expected: x.DType.String(), Found: values.DType.String(),
			Detail: "is " + values.DType.String() + " but x is " + x.DType.String(), Fix: "cast it with .Cast(" + x.DType.GoString() + ")"}
	}
	want := ix.resultShape()
	if b, ok := BroadcastShapes(values.Shape, want); !ok || !slices.Equal(b, want) {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "values", Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(values.Shape),
			Detail: "has shape " + dispatch.FormatShape(values.Shape) + ", which does not broadcast to x[indices]'s " + dispatch.FormatShape(want),
			Fix:    "give values a shape that broadcasts to " + dispatch.FormatShape(want)}
	}
	// The steps' results, released with the result's graph (releaseWith).
	var steps []*dispatch.Tensor
	var result *dispatch.Tensor
	defer func() { releaseWith(result, append(steps, ix.made...)...) }()
	then := func(t *dispatch.Tensor, err error) (*dispatch.Tensor, error) {
		if err == nil {
			steps = append(steps, t)
		}
		return t, err
	}
	v, err := then(dispatch.Call(Expand, ViewShape{Shape: want}, values))
	if err != nil {
		return nil, err
	}
	if perm := ix.placeB(false); perm != nil {
		if v, err = then(dispatch.Call(Permute, PermuteDims{Dims: perm}, v)); err != nil {
			return nil, err
		}
	}
	rows := append([]int{dispatch.Numel(ix.bshape)}, ix.restSizes()...)
	if v, err = then(dispatch.Call(Reshape, ViewShape{Shape: rows}, v)); err != nil {
		return nil, err
	}
	dst, err := then(ix.flat())
	if err != nil {
		return nil, err
	}
	idx, err := ix.rowIndex(rows)
	if err != nil {
		return nil, err
	}
	steps = append(steps, idx)
	op := Scatter
	if a.Accumulate {
		op = ScatterAdd
	}
	out, err := dispatch.Call(op, IndexDim{Dim: 0}, dst, idx, v)
	if err != nil {
		return nil, err
	}
	steps = append(steps, out)
	sizes := make([]int, 0, x.Rank())
	for _, d := range ix.dims {
		sizes = append(sizes, x.Shape[d])
	}
	shaped, err := dispatch.Call(Reshape, ViewShape{Shape: append(sizes, ix.restSizes()...)}, out)
	if err != nil {
		return nil, err
	}
	if perm, same := ix.front(); !same {
		steps = append(steps, shaped)
		back := make([]int, len(perm))
		for i, d := range perm {
			back[d] = i
		}
		if shaped, err = dispatch.Call(Permute, PermuteDims{Dims: back}, shaped); err != nil {
			return nil, err
		}
	}
	result = shaped
	return result, nil
}

// rowIndex is the linear index laid along dim 0 of rows and expanded over
// the other dims, as scatter takes it (an expanded view: no copy).
func (ix *indexing) rowIndex(rows []int) (*dispatch.Tensor, error) {
	lin, err := ix.linear()
	if err != nil {
		return nil, err
	}
	lay := make([]int, len(rows))
	for i := range lay {
		lay[i] = 1
	}
	lay[0] = rows[0]
	col, err := dispatch.Call(Reshape, ViewShape{Shape: lay}, lin)
	ix.drop(lin) // col, a view, keeps the storage
	if err != nil {
		return nil, err
	}
	idx, err := dispatch.Call(Expand, ViewShape{Shape: rows}, col)
	ix.drop(col)
	return idx, err
}
