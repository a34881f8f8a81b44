package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// More of torch's shape functions: tensor_split and unbind (views, as
// Split's), the stacks (hstack, vstack, dstack, column_stack), the flips
// and rotations, diag_embed, block_diag and vander. Each is views and one
// copy (Concat, Flip, Pad) of ops every backend has, so each runs on every
// device, and its gradient, to any order, is those ops' rules.

// TensorSplit cuts x along dim into sections views, as
// torch.tensor_split(x, sections, dim): the first size%sections of them
// have size/sections+1 elements, the rest size/sections (so some are empty
// when sections passes the size). sections < 1 is ErrValue, a 0-d x
// ErrShape.
func (x *Tensor) TensorSplit(sections, dim int) ([]*Tensor, error) {
	const op = "tensor_split"
	d, n, err := x.pieceDim(op, dim)
	if err != nil {
		return nil, err
	}
	if sections < 1 {
		return nil, errorf(op, ErrValue, "sections", "is "+strconv.Itoa(sections), "use sections ≥ 1")
	}
	if err := checkHost(op, "sections", sections, pieceBytes); err != nil {
		return nil, err
	}
	sizes := make([]int, sections)
	for i := range sizes {
		sizes[i] = n / sections
		if i < n%sections {
			sizes[i]++
		}
	}
	return x.pieces(op, d, sizes)
}

// TensorSplitAt cuts x along dim before each of indices, as
// torch.tensor_split(x, indices, dim): the views x[:indices[0]],
// x[indices[0]:indices[1]], ..., x[indices[last]:] along dim, each index
// read as Python's slices read it (negative counts from the end, past the
// ends is clamped, a stop before its start gives an empty view), so
// len(indices)+1 views. A 0-d x is ErrShape.
func (x *Tensor) TensorSplitAt(indices []int, dim int) ([]*Tensor, error) {
	const op = "tensor_split"
	d, n, err := x.pieceDim(op, dim)
	if err != nil {
		return nil, err
	}
	out := make([]*Tensor, 0, len(indices)+1)
	start := 0
	for _, stop := range append(append([]int(nil), indices...), n) {
		t := apply(ops.Slice, ops.SliceRange{Dim: d, Start: start, Stop: stop, Step: 1}, x)
		if t.err != nil {
			return nil, located(t.err, op)
		}
		out = append(out, t)
		start = stop
	}
	return out, nil
}

// Unbind returns the slices of x along dim, as torch.unbind: size(dim)
// views of x's rank - 1. A 0-d x is ErrShape.
func (x *Tensor) Unbind(dim int) ([]*Tensor, error) {
	const op = "unbind"
	d, n, err := x.pieceDim(op, dim)
	if err != nil {
		return nil, err
	}
	if err := checkHost(op, "dim", n, pieceBytes); err != nil {
		return nil, err
	}
	out := make([]*Tensor, n)
	for i := range n {
		nw := apply(ops.Narrow, ops.NarrowRange{Dim: d, Start: i, Length: 1}, x)
		out[i] = nw.Squeeze(d)
		if out[i].err != nil {
			return nil, located(out[i].err, op)
		}
		ReleaseWithGraph(out[i], nw) // the squeezed view keeps the storage
	}
	return out, nil
}

// stackArgs checks the tensors of a stack: at least one, each live.
func stackArgs(op string, tensors []*Tensor) error {
	if len(tensors) == 0 {
		return errorf(op, ErrValue, "tensors", "is empty", "pass at least one tensor")
	}
	for i, t := range tensors {
		if err := t.CheckArg(op, "tensors["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// stackWith concatenates tensors, each first reshaped by shape (views
// that add size-1 dims), along the dim that dim gives for the reshaped
// first tensor's rank, releasing the reshaped views (Compose).
func stackWith(op string, tensors []*Tensor, shape func(s []int) []int, dim func(rank int) int) *Tensor {
	if err := stackArgs(op, tensors); err != nil {
		return failed(err)
	}
	return relabel(Compose(func(args []*Tensor) *Tensor {
		parts := make([]*Tensor, len(args))
		for i, a := range args {
			parts[i] = a.Reshape(shape(a.t.Shape)...)
		}
		return Concat(parts, dim(len(shape(args[0].t.Shape))))
	}, tensors...), op)
}

// HStack joins tensors column-wise, as torch.hstack: 0-d tensors count as
// 1-D, 1-D tensors join along dim 0, others along dim 1. As Concat, the
// tensors must have one dtype (torch promotes them).
func HStack(tensors []*Tensor) *Tensor {
	return stackWith("hstack", tensors, func(s []int) []int {
		if len(s) == 0 {
			return []int{1}
		}
		return s
	}, func(rank int) int { return min(rank-1, 1) })
}

// VStack joins tensors row-wise, as torch.vstack (and torch.row_stack):
// each is made at least 2-D (a 0-d tensor [1, 1], a vector [1, n]) and
// they join along dim 0. The tensors must have one dtype.
func VStack(tensors []*Tensor) *Tensor {
	return stackWith("vstack", tensors, atLeast2D, func(int) int { return 0 })
}

// RowStack is VStack, as torch.row_stack is torch.vstack.
func RowStack(tensors []*Tensor) *Tensor { return VStack(tensors) }

func atLeast2D(s []int) []int {
	switch len(s) {
	case 0:
		return []int{1, 1}
	case 1:
		return []int{1, s[0]}
	}
	return s
}

// DStack joins tensors depth-wise, as torch.dstack: each is made at least
// 3-D (a 0-d tensor [1, 1, 1], a vector [1, n, 1], a matrix [m, n, 1]) and
// they join along dim 2. The tensors must have one dtype.
func DStack(tensors []*Tensor) *Tensor {
	return stackWith("dstack", tensors, atLeast3D, func(int) int { return 2 })
}

// atLeast3D is a shape made at least 3-D as torch.atleast_3d makes it.
func atLeast3D(s []int) []int {
	switch len(s) {
	case 0, 1:
		return append(atLeast2D(s), 1)
	case 2:
		return []int{s[0], s[1], 1}
	}
	return s
}

// ColumnStack joins tensors as columns, as torch.column_stack: a 0-d or
// 1-D tensor of n elements becomes a column [n, 1], others stay as they
// are, and they join along dim 1. The tensors must have one dtype.
func ColumnStack(tensors []*Tensor) *Tensor {
	return stackWith("column_stack", tensors, func(s []int) []int {
		if len(s) <= 1 {
			return []int{dispatch.Numel(s), 1}
		}
		return s
	}, func(int) int { return 1 })
}

// flipAtLeast is x.Flip(dim) where x has at least rank dims.
func (x *Tensor) flipAtLeast(op string, rank, dim int) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if r := x.t.Rank(); r < rank {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but "+op+" takes a tensor of rank "+strconv.Itoa(rank)+" or more", "add dims with Unsqueeze or Reshape"))
	}
	return relabel(x.Flip(dim), op)
}

// Fliplr reverses x along dim 1 (left to right), as torch.fliplr; x must
// have rank 2 or more (ErrShape).
func (x *Tensor) Fliplr() *Tensor { return x.flipAtLeast("fliplr", 2, 1) }

// Flipud reverses x along dim 0 (up to down), as torch.flipud; x must have
// rank 1 or more (ErrShape).
func (x *Tensor) Flipud() *Tensor { return x.flipAtLeast("flipud", 1, 0) }

// rot90Attrs are rot90's: the quarter turns in [0, 4) and the two dims.
type rot90Attrs struct{ k, d0, d1 int }

var opRot90 = composite("rot90", []string{"x"}, func(in []*Tensor, a rot90Attrs) *Tensor {
	x := in[0]
	switch a.k {
	case 1:
		return x.Flip(a.d1).Transpose(a.d0, a.d1)
	case 2:
		return x.Flip(a.d0, a.d1)
	case 3:
		return x.Flip(a.d0).Transpose(a.d0, a.d1)
	}
	return x
})

// Rot90 rotates x by k quarter turns in the plane of two dims, from the
// first towards the second, as torch.rot90(x, k, dims): no dims means (0,
// 1); other than none or two is ErrValue, as are two equal dims. k may be
// negative (the other way). x must have rank 2 or more (ErrShape). The
// result is a view of a flipped copy (x itself for a multiple of four
// turns).
func (x *Tensor) Rot90(k int, dims ...int) *Tensor {
	const op = "rot90"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	switch len(dims) {
	case 0:
		dims = []int{0, 1}
	case 2:
	default:
		return failed(errorf(op, ErrValue, "dims", "has "+strconv.Itoa(len(dims))+" dims", "pass two dims, or none for (0, 1)"))
	}
	if r := x.t.Rank(); r < 2 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but rot90 turns a plane of two dims", "give a tensor of rank 2 or more"))
	}
	d, err := ops.NormDims(dims, x.t.Rank(), "dims")
	if err != nil {
		return failed(located(err, op))
	}
	return apply(opRot90, rot90Attrs{k: ((k % 4) + 4) % 4, d0: d[0], d1: d[1]}, x)
}

// diagEmbedAttrs are diag_embed's: the offset and the two dims of the
// result (normalised).
type diagEmbedAttrs struct{ offset, d1, d2 int }

var opDiagEmbed = composite("diag_embed", []string{"x"}, func(in []*Tensor, a diagEmbedAttrs) *Tensor {
	x := in[0]
	r := x.t.Rank()
	lead := x.t.Shape[:r-1]
	n, k := x.t.Shape[r-1], a.offset
	m := n + max(k, -k)
	shape := func(s ...int) []int { return append(append([]int(nil), lead...), s...) }
	var mat *Tensor
	if n == 0 { // zeros made from x, on its graph
		mat = x.Pad([]int{0, m * m}, 0).Reshape(shape(m, m)...)
	} else {
		// Diag's layout, batched: each element followed by m zeros, so
		// that the elements lie m+1 apart in the flattened matrix.
		start := max(k, 0) + max(-k, 0)*m
		u := x.Unsqueeze(r).Pad([]int{0, m}, 0).Reshape(shape(n * (m + 1))...)
		mat = u.Pad([]int{start, m*m - start - n*(m+1)}, 0).Reshape(shape(m, m)...)
	}
	perm := make([]int, r+1)
	at := 0
	for i := range perm {
		switch i {
		case a.d1:
			perm[i] = r - 1
		case a.d2:
			perm[i] = r
		default:
			perm[i] = at
			at++
		}
	}
	return mat.Permute(perm...)
})

// DiagEmbed puts the last dim of x on the diagonal offset (above the main
// one; below, negative) of the planes in dims dim1 and dim2 of the result,
// zeros elsewhere, as torch.diag_embed(x, offset, dim1, dim2) (torch's
// defaults are 0, -2, -1): the result has rank x's + 1, the diagonal dims
// of size len + |offset|. Dims count in the result (negative from its
// end); out of range is ErrIndex, equal ErrValue. A 0-d x is ErrIndex (as
// torch). Every dtype; the gradient is the gradient's diagonal.
func (x *Tensor) DiagEmbed(offset, dim1, dim2 int) *Tensor {
	const op = "diag_embed"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	r := x.t.Rank()
	if r == 0 {
		return failed(errorf(op, ErrIndex, "x", "is 0-d but diag_embed puts its last dim on a diagonal", "give x a dim, e.g. with Reshape(1)"))
	}
	d1, err := ops.NormDim(dim1, r+1, "dim1")
	if err != nil {
		return failed(located(err, op))
	}
	d2, err := ops.NormDim(dim2, r+1, "dim2")
	if err != nil {
		return failed(located(err, op))
	}
	if d1 == d2 {
		return failed(errorf(op, ErrValue, "dim2", "is dim "+strconv.Itoa(d2)+", the same as dim1", "use two different dims"))
	}
	n, k := x.t.Shape[r-1], offset
	if k < 0 {
		k = -k
	}
	m, ok := dispatch.CheckedAdd(n, k)
	if ok && k >= 0 {
		mm, ok2 := dispatch.CheckedMul(m, m+1)
		lead := append(append([]int(nil), x.t.Shape[:r-1]...), mm)
		_, ok3 := dispatch.CheckedNumel(lead)
		ok = ok2 && ok3
	}
	if !ok || k < 0 {
		return failed(errorf(op, ErrShape, "offset", "is "+strconv.Itoa(offset)+", which with x's "+dispatch.FormatShape(x.t.Shape)+
			" makes more elements than an int counts", "use a smaller offset"))
	}
	return apply(opDiagEmbed, diagEmbedAttrs{offset: offset, d1: d1, d2: d2}, x)
}

// BlockDiag is the block-diagonal matrix of tensors, as torch.block_diag:
// each is a block (a 0-d tensor [1, 1], a vector of n elements [1, n]),
// placed after the last one's rows and columns, zeros elsewhere; the
// result has the sums of their rows and columns, in the dtype they
// promote to (as torch's). A tensor of rank past 2 is ErrShape; no tensor
// at all is ErrValue (torch gives an empty float32 [1, 0], on no device).
func BlockDiag(tensors ...*Tensor) *Tensor {
	const op = "block_diag"
	if err := stackArgs(op, tensors); err != nil {
		return failed(err)
	}
	operands := make([]dispatch.Operand, len(tensors))
	cols := 0
	for i, t := range tensors {
		if r := t.t.Rank(); r > 2 {
			return failed(errorf(op, ErrShape, "tensors["+strconv.Itoa(i)+"]", "has shape "+dispatch.FormatShape(t.t.Shape)+
				" (rank "+strconv.Itoa(r)+") but blocks have rank 2 or less", "give matrices, vectors or 0-d tensors"))
		}
		if t.t.Device != tensors[0].t.Device {
			name := "tensors[" + strconv.Itoa(i) + "]"
			return failed(errorf(op, ErrDevice, name, "is on "+t.t.Device.String()+" but tensors[0] is on "+tensors[0].t.Device.String(),
				"move it with "+name+".To("+tensors[0].t.Device.GoString()+")"))
		}
		operands[i] = dispatch.OperandOf(t.t)
		c := 1
		if t.t.Rank() > 0 {
			c = t.t.Shape[t.t.Rank()-1]
		}
		var ok bool
		if cols, ok = dispatch.CheckedAdd(cols, c); !ok {
			return failed(errorf(op, ErrShape, "tensors", "have more columns than an int counts", "give smaller blocks"))
		}
	}
	dt := dispatch.ResultType(operands...)
	return relabel(Compose(func(args []*Tensor) *Tensor {
		rows := make([]*Tensor, len(args))
		at := 0
		for i, a := range args {
			b := a.Reshape(atLeast2D(a.t.Shape)...).Cast(dt)
			c := b.t.Shape[1]
			rows[i] = b.Pad([]int{at, cols - at - c}, 0)
			at += c
		}
		return Concat(rows, 0)
	}, tensors...), op)
}

// vanderAttrs are vander's: the columns and their order.
type vanderAttrs struct {
	n          int
	increasing bool
}

var opVander = composite("vander", []string{"x"}, func(in []*Tensor, a vanderAttrs) *Tensor {
	x := in[0]
	dt := x.t.DType
	if !dt.IsFloat() {
		dt = Int64 // torch promotes with int64
	}
	col := x.Cast(dt).Unsqueeze(1)
	if a.n == 0 {
		return col.Narrow(1, 0, 0)
	}
	out := col.fullLike("vander", 1, []int{x.t.Shape[0], 1})
	if a.n > 1 {
		out = Concat([]*Tensor{out, col.Expand(x.t.Shape[0], a.n-1).CumProd(1)}, 1)
	}
	if !a.increasing {
		out = out.Flip(1)
	}
	return out
})

// Vander is the Vandermonde matrix of the vector x, as torch.vander(x, N,
// increasing): n columns of powers of x, x^(n-1) down to x^0, or x^0 up
// to x^(n-1) where increasing; n -1 means len(x) (torch's N=None). The
// powers are running products (CumProd, as torch's), in x's dtype for
// floats and int64 for integers and bool (as torch). x of another rank is
// ErrShape, n below -1 ErrValue.
func (x *Tensor) Vander(n int, increasing bool) *Tensor {
	const op = "vander"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if r := x.t.Rank(); r != 1 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but vander takes a vector", "give a tensor of rank 1, e.g. with Flatten"))
	}
	switch {
	case n == -1:
		n = x.t.Shape[0]
	case n < -1:
		return failed(errorf(op, ErrValue, "n", "is "+strconv.Itoa(n), "use n ≥ 0, or -1 for len(x)"))
	}
	if _, ok := dispatch.CheckedMul(x.t.Shape[0], n); !ok {
		return failed(errorf(op, ErrShape, "n", "is "+strconv.Itoa(n)+", which makes more elements than an int counts", "use a smaller n"))
	}
	return apply(opVander, vanderAttrs{n: n, increasing: increasing}, x)
}
