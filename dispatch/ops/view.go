package ops

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// View ops: new layouts over the input's storage. Nothing is launched, so
// they run on any device; every one works on inputs that are views already
// (strided, offset, expanded), since it only rewrites shape, strides and
// offset. reshape, flatten, broadcast_to and mt are composites of these.

// ViewShape is the attribute of view, reshape, expand and broadcast_to:
// the target sizes (one -1 is inferred by view and reshape; -1 keeps a size
// in expand).
type ViewShape struct{ Shape []int }

// FlattenDims is the attribute of flatten: the first and last dim (either
// may be negative) of the run that becomes one; {0, -1} flattens all.
type FlattenDims struct{ Start, End int }

// PermuteDims is the attribute of permute: dim i of the result is dim Dims[i].
type PermuteDims struct{ Dims []int }

// TransposeDims is the attribute of transpose: the two dims to swap.
type TransposeDims struct{ Dim0, Dim1 int }

// SqueezeDims is the attribute of squeeze: the dims to drop where they have
// size 1; none means every size-1 dim.
type SqueezeDims struct{ Dims []int }

// UnsqueezeDim is the attribute of unsqueeze: where the new size-1 dim goes.
type UnsqueezeDim struct{ Dim int }

// NarrowRange is the attribute of narrow: Length elements of Dim from Start
// (negative Start counts from the end).
type NarrowRange struct{ Dim, Start, Length int }

// DiagonalDims is the attribute of diagonal: the diagonal Offset above the
// main one (below, negative) of the matrices in dims Dim1 and Dim2.
type DiagonalDims struct{ Offset, Dim1, Dim2 int }

// SliceRange is the attribute of slice: Python's x[start:stop:step] along
// Dim. Start and Stop follow Python's rules (negative counts from the end,
// out of range is clamped); Step is at least 1.
type SliceRange struct{ Dim, Start, Stop, Step int }

// The view ops, and the composites of them.
var (
	View        = dispatch.Register(&dispatch.Op[ViewShape]{Schema: schema("view", "x"), View: viewView})
	Reshape     = dispatch.Register(&dispatch.Op[ViewShape]{Schema: schema("reshape", "x"), Compose: reshapeCompose})
	Flatten     = dispatch.Register(&dispatch.Op[FlattenDims]{Schema: schema("flatten", "x"), Compose: flattenCompose})
	Permute     = dispatch.Register(&dispatch.Op[PermuteDims]{Schema: schema("permute", "x"), View: permuteView})
	Transpose   = dispatch.Register(&dispatch.Op[TransposeDims]{Schema: schema("transpose", "x"), View: transposeView})
	MT          = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("mt", "x"), Compose: mtCompose})
	Squeeze     = dispatch.Register(&dispatch.Op[SqueezeDims]{Schema: schema("squeeze", "x"), View: squeezeView})
	Unsqueeze   = dispatch.Register(&dispatch.Op[UnsqueezeDim]{Schema: schema("unsqueeze", "x"), View: unsqueezeView})
	Expand      = dispatch.Register(&dispatch.Op[ViewShape]{Schema: schema("expand", "x"), View: expandView})
	BroadcastTo = dispatch.Register(&dispatch.Op[ViewShape]{Schema: schema("broadcast_to", "x"), Compose: broadcastToCompose})
	Narrow      = dispatch.Register(&dispatch.Op[NarrowRange]{Schema: schema("narrow", "x"), View: narrowView})
	Slice       = dispatch.Register(&dispatch.Op[SliceRange]{Schema: schema("slice", "x"), View: sliceView})
	Diagonal    = dispatch.Register(&dispatch.Op[DiagonalDims]{Schema: schema("diagonal", "x"), View: diagonalView})

	// Piecewise is x itself, as a view, on the path through which a
	// piecewise-linear op (hardtanh, threshold) passes x on. Its gradient
	// rule passes the gradient on too and, in a recorded backward pass,
	// ties it to x with a zero derivative: the slope of a piece does not
	// change with x. So the gradient of that gradient with respect to x is
	// zero, not "does not require a gradient", as with torch's
	// hardtanh_backward and threshold_backward, which are differentiable
	// in x.
	Piecewise = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("piecewise", "x"), View: piecewiseView})
)

func piecewiseView(in []*dispatch.Tensor, _ dispatch.None) (*dispatch.Tensor, error) {
	x := in[0]
	return view(x, x.Shape, x.Strides, x.Offset)
}

// schema is the schema of an op with the named tensor arguments.
func schema(name string, args ...string) dispatch.Schema {
	return dispatch.Schema{Name: name, Args: args}
}

func flattenCompose(in []*dispatch.Tensor, a FlattenDims) (*dispatch.Tensor, error) {
	x := in[0]
	start, err := NormDim(a.Start, x.Rank(), "start_dim")
	if err != nil {
		return nil, err
	}
	end, err := NormDim(a.End, x.Rank(), "end_dim")
	if err != nil {
		return nil, err
	}
	if start > end {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "start_dim",
			Detail: "is dim " + strconv.Itoa(start) + ", after end_dim (dim " + strconv.Itoa(end) + ")", Fix: "flatten from an earlier dim to a later one"}
	}
	if x.Rank() == 0 {
		return reshapeCompose(in, ViewShape{Shape: []int{1}}) // as PyTorch: one element, 1-D
	}
	shape := append(clone(x.Shape[:start]), dispatch.Numel(x.Shape[start:end+1])) // fits: x's numel does
	return reshapeCompose(in, ViewShape{Shape: append(shape, x.Shape[end+1:]...)})
}

func broadcastToCompose(in []*dispatch.Tensor, a ViewShape) (*dispatch.Tensor, error) {
	return dispatch.Call(Expand, a, in[0])
}

// view makes the output layout, with offset 0 for an empty result so that
// no later read can slice past the storage. dispatch refuses a layout
// whose sizes overflow or that reaches outside the storage, so that no
// mistake in a view's arithmetic can hand a kernel memory it does not own.
func view(t *dispatch.Tensor, shape, strides []int, offset int) (*dispatch.Tensor, error) {
	if n, ok := dispatch.CheckedNumel(shape); ok && n == 0 {
		offset = 0
	}
	return t.CheckedView(shape, strides, offset)
}

// InferShape resolves one -1 in shape against n elements and checks that the
// sizes hold exactly n, as torch's infer_size does.
func InferShape(shape []int, n int) ([]int, error) {
	out := clone(shape)
	infer := -1
	for i, s := range out {
		switch {
		case s == -1 && infer < 0:
			infer = i
		case s < 0:
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Detail: "has size " + itoa(s) + " in " + dispatch.FormatShape(shape),
				Fix: "sizes are at least 0; one size may be -1 to be inferred"}
		}
	}
	rest := out
	if infer >= 0 {
		rest = slices.Delete(clone(out), infer, infer+1)
	}
	known, ok := dispatch.CheckedNumel(rest)
	if !ok {
		return nil, dispatch.ShapeError("shape", shape)
	}
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Detail: dispatch.FormatShape(shape) + " cannot hold " + itoa(n) + " elements",
				Fix: "give sizes whose product divides the element count"}
		}
		out[infer] = n / known
	} else if known != n {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Detail: "is " + dispatch.FormatShape(shape) + ", which holds " + itoa(known) +
			" elements, but the tensor has " + itoa(n), Fix: "give a shape whose sizes multiply to the element count"}
	}
	return out, nil
}

// ViewStrides returns strides that lay shape over t's elements without a
// copy, or ok false where none exist. It is PyTorch's computeStride
// (aten/src/ATen/TensorUtils.cpp): old dims are cut into chunks that are
// contiguous among themselves, and each chunk must be exactly covered by a
// run of new dims.
func ViewStrides(t *dispatch.Tensor, shape []int) (strides []int, ok bool) {
	n := t.Numel()
	if n <= 1 {
		// Zero or one element: any strides address it; torch keeps them
		// row-major.
		return dispatch.ContiguousStrides(shape), true
	}
	old, ostr := t.Shape, t.Strides
	strides = make([]int, len(shape))
	vd := len(shape) - 1
	base := ostr[len(ostr)-1]
	tn, vn := 1, 1
	for td := len(old) - 1; td >= 0; td-- {
		tn *= old[td]
		if td == 0 || (old[td-1] != 1 && ostr[td-1] != tn*base) {
			for vd >= 0 && (vn < tn || shape[vd] == 1) {
				strides[vd] = vn * base
				vn *= shape[vd]
				vd--
			}
			if vn != tn {
				return nil, false
			}
			if td > 0 {
				base = ostr[td-1]
				tn, vn = 1, 1
			}
		}
	}
	if vd != -1 {
		return nil, false
	}
	return strides, true
}

func viewView(in []*dispatch.Tensor, a ViewShape) (*dispatch.Tensor, error) {
	x := in[0]
	shape, err := InferShape(a.Shape, x.Numel())
	if err != nil {
		return nil, err
	}
	strides, ok := ViewStrides(x, shape)
	if !ok {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "has strides that cannot be viewed as " + dispatch.FormatShape(shape),
			Fix: "use Reshape, which copies when it must"}
	}
	return view(x, shape, strides, x.Offset)
}

// reshapeCompose is a view when the strides allow it and a contiguous copy
// viewed otherwise; both paths are registered ops, so both are recorded.
func reshapeCompose(in []*dispatch.Tensor, a ViewShape) (*dispatch.Tensor, error) {
	x := in[0]
	shape, err := InferShape(a.Shape, x.Numel())
	if err != nil {
		return nil, err
	}
	if _, ok := ViewStrides(x, shape); ok {
		return dispatch.Call(View, ViewShape{Shape: shape}, x)
	}
	dense, err := dispatch.Call(Contiguous, dispatch.None{}, x)
	if err != nil {
		return nil, err
	}
	out, err := dispatch.Call(View, ViewShape{Shape: shape}, dense)
	dispatch.ReleaseWithGraph(out, dense) // out keeps its storage
	return out, err
}

func permuteView(in []*dispatch.Tensor, a PermuteDims) (*dispatch.Tensor, error) {
	x := in[0]
	if len(a.Dims) != x.Rank() {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dims", Detail: "has " + itoa(len(a.Dims)) + " dims for a tensor of rank " + itoa(x.Rank()),
			Fix: "list every dim once, in the new order"}
	}
	if x.Rank() == 0 {
		return view(x, []int{}, []int{}, x.Offset)
	}
	dims, err := NormDims(a.Dims, x.Rank(), "dims")
	if err != nil {
		return nil, err
	}
	shape, strides := make([]int, len(dims)), make([]int, len(dims))
	for i, d := range dims {
		shape[i], strides[i] = x.Shape[d], x.Strides[d]
	}
	return view(x, shape, strides, x.Offset)
}

func transposeView(in []*dispatch.Tensor, a TransposeDims) (*dispatch.Tensor, error) {
	x := in[0]
	d0, err := NormDim(a.Dim0, x.Rank(), "dim0")
	if err != nil {
		return nil, err
	}
	d1, err := NormDim(a.Dim1, x.Rank(), "dim1")
	if err != nil {
		return nil, err
	}
	shape, strides := clone(x.Shape), clone(x.Strides)
	if x.Rank() > 0 {
		shape[d0], shape[d1] = shape[d1], shape[d0]
		strides[d0], strides[d1] = strides[d1], strides[d0]
	}
	return view(x, shape, strides, x.Offset)
}

func mtCompose(in []*dispatch.Tensor, _ dispatch.None) (*dispatch.Tensor, error) {
	if r := in[0].Rank(); r < 2 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "has rank " + itoa(r) + " but mt needs at least 2",
			Fix: "use Unsqueeze to add a dim, or Transpose/Permute"}
	}
	return dispatch.Call(Transpose, TransposeDims{Dim0: -2, Dim1: -1}, in[0])
}

func squeezeView(in []*dispatch.Tensor, a SqueezeDims) (*dispatch.Tensor, error) {
	x := in[0]
	drop := make([]bool, x.Rank())
	if len(a.Dims) == 0 {
		for d, s := range x.Shape {
			drop[d] = s == 1
		}
	} else {
		dims, err := NormDims(a.Dims, x.Rank(), "dims")
		if err != nil {
			return nil, err
		}
		for _, d := range dims {
			// A named dim not of size 1 stays, as torch.squeeze(dim) does.
			if d < x.Rank() && x.Shape[d] == 1 {
				drop[d] = true
			}
		}
	}
	shape, strides := []int{}, []int{}
	for d := range x.Shape {
		if !drop[d] {
			shape = append(shape, x.Shape[d])
			strides = append(strides, x.Strides[d])
		}
	}
	return view(x, shape, strides, x.Offset)
}

func unsqueezeView(in []*dispatch.Tensor, a UnsqueezeDim) (*dispatch.Tensor, error) {
	x := in[0]
	d, err := NormDim(a.Dim, x.Rank()+1, "dim")
	if err != nil {
		return nil, err
	}
	// The new dim's stride is what torch gives: the span of the dims after it.
	stride := 1
	if d < x.Rank() {
		stride = x.Shape[d] * x.Strides[d]
	}
	shape := append(append(clone(x.Shape[:d]), 1), x.Shape[d:]...)
	strides := append(append(clone(x.Strides[:d]), stride), x.Strides[d:]...)
	return view(x, shape, strides, x.Offset)
}

func expandView(in []*dispatch.Tensor, a ViewShape) (*dispatch.Tensor, error) {
	x := in[0]
	lead := len(a.Shape) - x.Rank()
	if lead < 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Detail: "is " + dispatch.FormatShape(a.Shape) + ", of fewer dims than x's " + dispatch.FormatShape(x.Shape),
			Fix: "give at least as many sizes as x has dims"}
	}
	shape, strides := make([]int, len(a.Shape)), make([]int, len(a.Shape))
	for i, s := range a.Shape {
		if i < lead {
			if s < 0 {
				return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Detail: "has size " + itoa(s) + " at new leading dim " + itoa(i),
					Fix: "a new dim needs a size ≥ 0; -1 keeps only an existing size"}
			}
			shape[i] = s // a new leading dim repeats everything: stride 0
			continue
		}
		old := x.Shape[i-lead]
		switch {
		case s == -1 || s == old:
			shape[i], strides[i] = old, x.Strides[i-lead]
		case old == 1 && s >= 0:
			shape[i] = s
		default:
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "shape", Expected: dispatch.FormatShape(a.Shape), Found: dispatch.FormatShape(x.Shape),
				Detail: "asks for size " + itoa(s) + " at dim " + itoa(i) + " where x has size " + itoa(old),
				Fix:    "only size-1 dims expand; keep a size with -1"}
		}
	}
	return view(x, shape, strides, x.Offset)
}

func narrowView(in []*dispatch.Tensor, a NarrowRange) (*dispatch.Tensor, error) {
	x := in[0]
	if x.Rank() == 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "is 0-d and has no dim to narrow", Fix: "use Unsqueeze first"}
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return nil, err
	}
	size := x.Shape[d]
	start := a.Start
	if start < -size || start > size {
		return nil, &dispatch.Error{Kind: dispatch.ErrIndex, Arg: "start", Detail: "is " + itoa(start) + ", out of range for dim " + itoa(a.Dim) + " of size " + itoa(size),
			Fix: "use a start in [" + itoa(-size) + ", " + itoa(size) + "]"}
	}
	if start < 0 {
		start += size
	}
	if a.Length < 0 || a.Length > size-start {
		return nil, &dispatch.Error{Kind: dispatch.ErrIndex, Arg: "length", Detail: "is " + itoa(a.Length) + "; start " + itoa(start) + " + length exceeds dim " + itoa(a.Dim) + " of size " + itoa(size),
			Fix: "use a length in [0, " + itoa(size-start) + "]"}
	}
	return slicedView(x, d, start, a.Length, 1)
}

func sliceView(in []*dispatch.Tensor, a SliceRange) (*dispatch.Tensor, error) {
	x := in[0]
	if x.Rank() == 0 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Detail: "is 0-d and has no dim to slice", Fix: "use Unsqueeze first"}
	}
	d, err := NormDim(a.Dim, x.Rank(), "dim")
	if err != nil {
		return nil, err
	}
	if a.Step < 1 {
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "step", Detail: "is " + itoa(a.Step) + " but slices step forward",
			Fix: "use a step ≥ 1; reverse with Flip"}
	}
	size := x.Shape[d]
	clamp := func(i int) int { // Python's slice index rule
		if i < 0 {
			i += size
		}
		return min(max(i, 0), size)
	}
	start, stop := clamp(a.Start), clamp(a.Stop)
	n := 0
	if stop > start {
		n = (stop-start-1)/a.Step + 1 // ceil, without overflow for a huge step
	}
	return slicedView(x, d, start, n, a.Step)
}

// slicedView keeps n elements of dim d from start, every step-th. With
// one element or none the step moves nowhere and the stride stays x's:
// a step past the dim's size would otherwise overflow it.
func slicedView(x *dispatch.Tensor, d, start, n, step int) (*dispatch.Tensor, error) {
	shape, strides := clone(x.Shape), clone(x.Strides)
	shape[d] = n
	if n > 1 {
		strides[d] *= step // (n-1)·step < size: no overflow
	}
	return view(x, shape, strides, x.Offset+start*x.Strides[d])
}

// diagonalView is torch's diagonal (aten/src/ATen/native/TensorShape.cpp):
// dims Dim1 and Dim2 go, and a last dim walks the diagonal with the sum of
// their strides, from the element at row max(-Offset, 0), column
// max(Offset, 0). An offset past the matrix gives an empty diagonal, as in
// torch, at x's offset so that nothing reads past the storage.
func diagonalView(in []*dispatch.Tensor, a DiagonalDims) (*dispatch.Tensor, error) {
	x := in[0]
	d1, err := NormDim(a.Dim1, x.Rank(), "dim1")
	if err != nil {
		return nil, err
	}
	d2, err := NormDim(a.Dim2, x.Rank(), "dim2")
	if err != nil {
		return nil, err
	}
	if d1 == d2 { // also every dim pair of a tensor of rank below 2
		return nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dim2", Detail: "is dim " + itoa(d2) + ", the same as dim1",
			Fix: "name two different dims of a tensor of rank 2 or more"}
	}
	n1, n2, off := x.Shape[d1], x.Shape[d2], a.Offset
	var size int
	if off >= 0 {
		size = max(min(n1, n2-off), 0) // n2-off cannot overflow: off ≥ 0
	} else {
		size = max(min(n1+off, n2), 0)
	}
	start := x.Offset
	switch {
	case size > 0 && off >= 0:
		start += off * x.Strides[d2] // off < n2: inside the storage
	case size > 0:
		start -= off * x.Strides[d1]
	}
	shape := make([]int, 0, x.Rank()-1)
	strides := make([]int, 0, x.Rank()-1)
	for i := range x.Shape {
		if i != d1 && i != d2 {
			shape, strides = append(shape, x.Shape[i]), append(strides, x.Strides[i])
		}
	}
	shape, strides = append(shape, size), append(strides, x.Strides[d1]+x.Strides[d2])
	return view(x, shape, strides, start)
}
