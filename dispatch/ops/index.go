package ops

import "github.com/lathe-ml/lathe/dispatch"

// Indexing ops: index_select, gather, scatter, scatter_add and one_hot run
// kernels; masked_fill and embedding are composites. Index tensors are Int32
// or Int64 and are not wrapped: a negative index is out of range, as in
// torch's index_select and gather. Whether each index is in range depends on
// the data, so the kernels check it and return IndexError.

// IndexDim is the attribute of index_select, gather, scatter and scatter_add.
type IndexDim struct{ Dim int }

// FillValue is the attribute of masked_fill: the value written where the
// mask is true.
type FillValue struct{ Value float64 }

// OneHotClasses is the attribute of one_hot: the length of the new last
// dim. The root package resolves torch's -1 (max + 1) before the call.
type OneHotClasses struct{ NumClasses int }

// The indexing ops.
var (
	IndexSelect = dispatch.Register(&dispatch.Op[IndexDim]{Schema: schema("index_select", "x", "index"), Infer: indexSelectInfer, Checks: indexAlongDim})
	Gather      = dispatch.Register(&dispatch.Op[IndexDim]{Schema: schema("gather", "x", "index"), Infer: gatherInfer, Checks: indexAlongDim})
	Scatter     = dispatch.Register(&dispatch.Op[IndexDim]{Schema: schema("scatter", "x", "index", "src"), Infer: scatterInfer, Checks: indexAlongDim})
	ScatterAdd  = dispatch.Register(&dispatch.Op[IndexDim]{Schema: schema("scatter_add", "x", "index", "src"), Infer: scatterInfer, Checks: indexAlongDim})
	OneHot      = dispatch.Register(&dispatch.Op[OneHotClasses]{Schema: schema("one_hot", "x"), Infer: oneHotInfer, Checks: oneHotChecks})
	MaskedFill  = dispatch.Register(&dispatch.Op[FillValue]{Schema: schema("masked_fill", "x", "mask"), Compose: maskedFillCompose})
	Embedding   = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("embedding", "indices", "weight"), Compose: embeddingCompose, Checks: embeddingChecks})
)

// indexAlongDim is the check of index_select, gather, scatter and
// scatter_add: every index lies in [0, size) of x's dim (a 0-d x has one
// element, index 0). Indices do not wrap: a negative one is out of range,
// as in torch's index_select and gather.
func indexAlongDim(in []*dispatch.Tensor, a IndexDim) []dispatch.ValueCheck {
	x := in[0]
	d, size := 0, 1
	if x.Rank() > 0 {
		d = a.Of(x)
		size = x.Shape[d]
	}
	return []dispatch.ValueCheck{{Arg: 1, Max: int64(size) - 1, Fail: func(v int64) *dispatch.Error { return IndexError("index", v, d, size) }}}
}

func oneHotChecks(_ []*dispatch.Tensor, a OneHotClasses) []dispatch.ValueCheck {
	return []dispatch.ValueCheck{{Arg: 0, Max: int64(a.NumClasses) - 1, Fail: func(v int64) *dispatch.Error { return ClassError("x", v, a.NumClasses) }}}
}

// embeddingChecks checks the indices against weight's rows before
// index_select does, so that the error names embedding's arguments.
func embeddingChecks(in []*dispatch.Tensor, _ dispatch.None) []dispatch.ValueCheck {
	indices, weight := in[0], in[1]
	if !Indices.Has(indices.DType) || weight.Rank() != 2 {
		return nil // the composite reports these
	}
	n := weight.Shape[0]
	return []dispatch.ValueCheck{{Arg: 0, Max: int64(n) - 1, Fail: func(v int64) *dispatch.Error {
		e := IndexError("indices", v, 0, n)
		e.Detail = "holds " + itoa(int(v)) + ", out of range for the " + itoa(n) + " rows of weight"
		return e
	}}}
}

// IndexError is what a kernel returns for an index value outside [0, size)
// of dim of argument arg.
func IndexError(arg string, v int64, dim, size int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrIndex, Arg: arg, Found: itoa(int(v)),
		Detail: "holds " + itoa(int(v)) + ", out of range for dim " + itoa(dim) + " of size " + itoa(size),
		Fix:    "use indices in [0, " + itoa(size) + "); negative indices do not wrap here"}
}

// ClassError is what one_hot's kernels return for a class v of argument
// arg outside [0, classes).
func ClassError(arg string, v int64, classes int) *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrIndex, Arg: arg, Found: itoa(int(v)),
		Detail: "holds class " + itoa(int(v)) + ", out of range for " + itoa(classes) + " classes",
		Fix:    "use classes in [0, " + itoa(classes) + "), or num_classes -1 for max + 1"}
}

// PlaneError is what max_unpool's kernels return for a pooling index v
// outside a plane of the given spatial sizes.
func PlaneError(v int64, spatial []int) *dispatch.Error {
	n := dispatch.Numel(spatial)
	return &dispatch.Error{Kind: dispatch.ErrIndex, Arg: "indices", Found: itoa(int(v)),
		Detail: "holds " + itoa(int(v)) + ", out of range for a plane of " + dispatch.FormatShape(spatial) + " (" + itoa(n) + " places)",
		Fix:    "use flat indices in [0, " + itoa(n) + ") within each (n, c) plane, as max pooling gives"}
}

// NegativeExponentError is what an integer pow returns for a negative
// exponent in rhs, which an integer result cannot hold (torch refuses it too).
func NegativeExponentError() *dispatch.Error {
	return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "rhs", Detail: "has a negative exponent, which an integer power cannot take", Fix: "cast to a float dtype first"}
}

// Of is the op's dim normalised against x (Infer has checked it).
func (a IndexDim) Of(x *dispatch.Tensor) int {
	d, _ := NormDim(a.Dim, x.Rank(), "dim")
	return d
}

func indexSelectInfer(in []*dispatch.Tensor, a IndexDim) (dispatch.DType, []int, error) {
	x, index := in[0], in[1]
	if err := checkDType(index, "index", Indices); err != nil {
		return 0, nil, err
	}
	if index.Rank() > 1 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "index", Detail: "has shape " + dispatch.FormatShape(index.Shape) + " but must be 1-D or 0-d",
			Fix: "flatten it with .Flatten(), or use Gather"}
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return 0, nil, err
	}
	if x.Rank() == 0 {
		// torch keeps a 0-d x 0-d, and so takes exactly one index
		// (PyTorch ≥ 2: "Index to scalar can have only 1 value").
		if n := index.Numel(); n != 1 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrIndex, Arg: "index", Expected: "1 index", Found: itoa(n) + " indices",
				Detail: "holds " + itoa(n) + " indices, but x is 0-d and takes exactly one (0)",
				Fix:    "pass a single index, or Unsqueeze x to select several"}
		}
		return x.DType, []int{}, nil
	}
	shape := clone(x.Shape)
	shape[d] = index.Numel()
	return x.DType, shape, nil
}

func gatherInfer(in []*dispatch.Tensor, a IndexDim) (dispatch.DType, []int, error) {
	x, index := in[0], in[1]
	if err := checkDType(index, "index", Indices); err != nil {
		return 0, nil, err
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return 0, nil, err
	}
	if err := fitsIndex(index, x, "x", d, false); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(index.Shape), nil
}

func scatterInfer(in []*dispatch.Tensor, a IndexDim) (dispatch.DType, []int, error) {
	x, index, src := in[0], in[1], in[2]
	if err := checkDType(index, "index", Indices); err != nil {
		return 0, nil, err
	}
	if src.DType != x.DType {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: "src", Expected: x.DType.String(), Found: src.DType.String(),
			Detail: "is " + src.DType.String() + " but \"x\" is " + x.DType.String(), Fix: "cast it with .Cast(" + x.DType.GoString() + ")"}
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return 0, nil, err
	}
	if err := fitsIndex(index, x, "x", d, false); err != nil {
		return 0, nil, err
	}
	if err := fitsIndex(index, src, "src", d, true); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(x.Shape), nil
}

// fitsIndex checks that index has t's rank and no larger sizes, except
// along dim unless all is set (torch's gather/scatter shape rule).
func fitsIndex(index, t *dispatch.Tensor, name string, dim int, all bool) error {
	if index.Rank() != t.Rank() {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "index", Expected: "rank " + itoa(t.Rank()), Found: "rank " + itoa(index.Rank()),
			Detail: "has rank " + itoa(index.Rank()) + " but " + name + " has rank " + itoa(t.Rank()),
			Fix:    "give index as many dims as " + name + ", e.g. with Unsqueeze"}
	}
	fix := "index may be no larger than " + name + " in any dim"
	if !all {
		fix += " but dim " + itoa(dim)
	}
	for d, s := range index.Shape {
		if (all || d != dim) && s > t.Shape[d] {
			return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "index", Expected: dispatch.FormatShape(t.Shape), Found: dispatch.FormatShape(index.Shape),
				Detail: "has shape " + dispatch.FormatShape(index.Shape) + ", larger than " + name + "'s " + dispatch.FormatShape(t.Shape) + " at dim " + itoa(d),
				Fix:    fix}
		}
	}
	return nil
}

func oneHotInfer(in []*dispatch.Tensor, a OneHotClasses) (dispatch.DType, []int, error) {
	if err := checkDType(in[0], "x", Indices); err != nil {
		return 0, nil, err
	}
	if a.NumClasses < 0 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "num_classes", Detail: "is " + itoa(a.NumClasses), Fix: "use a count ≥ 0, or -1 for max + 1"}
	}
	return dispatch.Int64, append(clone(in[0].Shape), a.NumClasses), nil
}

// maskedFillCompose is where(mask, value, x), with value a 0-d tensor of x's
// dtype on x's device; like torch's out-of-place masked_fill, the result has
// the broadcast shape of x and mask.
func maskedFillCompose(in []*dispatch.Tensor, a FillValue) (*dispatch.Tensor, error) {
	x, mask := in[0], in[1]
	if err := checkDType(mask, "mask", 1<<dispatch.Bool); err != nil {
		return nil, err
	}
	if _, ok := BroadcastShapes(x.Shape, mask.Shape); !ok {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "mask", Expected: dispatch.FormatShape(x.Shape), Found: dispatch.FormatShape(mask.Shape),
			Detail: "has shape " + dispatch.FormatShape(mask.Shape) + ", which does not broadcast with x's " + dispatch.FormatShape(x.Shape),
			Fix:    "make each dimension equal or 1"}
	}
	if err := CheckScalar(x.DType, a.Value, "value"); err != nil {
		return nil, err
	}
	s, err := dispatch.Upload(x.Device, ScalarData(x.DType, a.Value), x.DType, []int{})
	if err != nil {
		return nil, err
	}
	out, err := dispatch.Call(Where, dispatch.None{}, mask, s, x)
	dispatch.ReleaseWithGraph(out, s)
	return out, err
}

// embeddingCompose is torch.nn.functional.embedding: the rows of weight
// that indices name, as weight.index_select(0, indices.flatten()) reshaped
// to indices.shape + [dim]. Errors of the parts name embedding's arguments.
func embeddingCompose(in []*dispatch.Tensor, _ dispatch.None) (*dispatch.Tensor, error) {
	indices, weight := in[0], in[1]
	if err := checkDType(indices, "indices", Indices); err != nil {
		return nil, err
	}
	if weight.Rank() != 2 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "weight", Detail: "has shape " + dispatch.FormatShape(weight.Shape) + " but must be [num_embeddings, embedding_dim]",
			Fix: "pass a 2-D weight"}
	}
	flat, err := dispatch.Call(Reshape, ViewShape{Shape: []int{-1}}, indices)
	if err != nil {
		return nil, err
	}
	rows, err := dispatch.Call(IndexSelect, IndexDim{Dim: 0}, weight, flat)
	if err != nil {
		if e, ok := err.(*dispatch.Error); ok {
			c := *e
			if name, ok := map[string]string{"x": "weight", "index": "indices"}[e.Arg]; ok {
				c.Arg = name
			}
			return nil, &c
		}
		return nil, err
	}
	out, err := dispatch.Call(Reshape, ViewShape{Shape: append(clone(indices.Shape), weight.Shape[1])}, rows)
	dispatch.ReleaseWithGraph(out, flat, rows) // views of them keep their storage
	return out, err
}
