package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Diagonals and products of vectors: Diagonal is a view (strides summed, as
// torch's, with a gradient rule of its own in autodiff); Diag, Trace and
// Outer are composites of it and of ops every backend has, so each runs on
// every device and dtype those do, differentiable to any order.

// Diagonal is the diagonal offset above the main one (below, negative) of
// the matrices in dims dim1 and dim2 of x, as torch.diagonal(x, offset,
// dim1, dim2): those two dims go and a last dim holds the diagonal, of
// min(size1, size2-offset) elements (none where the offset passes the
// matrix). It is a view of x, sharing its storage. Dims may be negative; a
// dim out of range is ErrIndex, dim1 and dim2 the same dim ErrValue.
func (x *Tensor) Diagonal(offset, dim1, dim2 int) *Tensor {
	return apply(ops.Diagonal, ops.DiagonalDims{Offset: offset, Dim1: dim1, Dim2: dim2}, x)
}

var opDiag = composite("diag", []string{"x"}, func(in []*Tensor, diagonal int) *Tensor {
	x := in[0]
	if x.t.Rank() == 2 {
		return x.Diagonal(diagonal, 0, 1)
	}
	// A vector onto the diagonal of an [m, m] matrix of zeros, in one pad:
	// flattened, that matrix's diagonal elements lie m+1 apart, so as
	// m rows of m+1 they form one column, whose first m·m elements are the
	// matrix. x, as a column, is padded to that: on the diagonal k ≥ 0
	// element i is at flat k + i(m+1), row i and column k; on k < 0 at
	// |k|·m + i(m+1), row i+|k|-1 and column m+1-|k|.
	n := x.t.Shape[0]
	k := diagonal
	m := n + max(k, -k)
	if n == 0 { // zeros made from x, so that the result is on x's graph, as torch's
		return x.Pad([]int{0, m * m}, 0).Reshape(m, m)
	}
	col, row := k, 0
	if k < 0 {
		col, row = m+1+k, -k-1
	}
	rows := x.Unsqueeze(1).Pad([]int{col, m - col, row, m - n - row}, 0)
	return rows.Reshape(m*(m+1)).Narrow(0, 0, m*m).Reshape(m, m)
})

// Diag is torch.diag(x, diagonal): of a vector, the square matrix with x on
// that diagonal (above the main one, below it negative) and zeros
// elsewhere; of a matrix, its diagonal (Diagonal(diagonal, 0, 1)). x of
// another rank is ErrShape. Every dtype, bool too.
func (x *Tensor) Diag(diagonal int) *Tensor {
	const op = "diag"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	switch r := x.t.Rank(); r {
	case 1:
		n, k := x.t.Shape[0], diagonal
		if k < 0 {
			k = -k // MinInt stays negative: refused below
		}
		if _, ok := dispatch.CheckedMul(n, n); !ok {
			return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", whose square matrix has more elements than an int counts",
				"give a shorter vector"))
		}
		if _, ok := dispatch.CheckedMul(n+k, n+k); k < 0 || k > math.MaxInt-n || !ok {
			return failed(errorf(op, ErrShape, "diagonal", "is "+strconv.Itoa(diagonal)+", which makes a matrix of more elements than an int counts",
				"use a diagonal within the sizes a tensor can have"))
		}
		// A matrix the device cannot hold fails here, before the composite
		// pads x to n·(m+1) elements on the way (2^31 int64s, 16 GiB, for
		// one element on diagonal 2^31).
		if err := roomFor(op, x.t.Device, x.t.DType, []int{n + k, n + k}); err != nil {
			return failed(err)
		}
	case 2:
	default:
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but diag takes a vector or a matrix", "give a tensor of rank 1 or 2, or use Diagonal for a batch"))
	}
	return apply(opDiag, diagonal, x)
}

var opTrace = composite("trace", []string{"x"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return in[0].Diagonal(0, 0, 1).Sum()
})

// Trace is the sum of the main diagonal of the matrix x, as torch.trace: a
// 0-d tensor, 0 for an empty matrix. Integers give Int64, as Sum's and
// torch's do. x of another rank is ErrShape, bool x ErrDType (as torch).
func (x *Tensor) Trace() *Tensor {
	const op = "trace"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if r := x.t.Rank(); r != 2 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but trace takes a matrix", "give a tensor of rank 2"))
	}
	if x.t.DType == Bool {
		return failed(errorf(op, ErrDType, "x", "is bool but trace adds numbers (torch has no trace for bool)",
			"cast it with .Cast(lathe.Int64) first"))
	}
	return apply(opTrace, none, x)
}

var opOuter = composite("outer", []string{"x", "y"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	return in[0].Unsqueeze(1).Mul(in[1].Unsqueeze(0))
})

// Outer is the outer product of the vectors x and y, as torch.outer: the
// matrix of x[i]·y[j], in the dtype they promote to (Mul's). Either of a
// rank other than 1 is ErrShape.
func (x *Tensor) Outer(y *Tensor) *Tensor {
	const op = "outer"
	for i, a := range []*Tensor{x, y} {
		name := opOuter.ArgName(i)
		if err := a.CheckArg(op, name); err != nil {
			return failed(err)
		}
		if r := a.t.Rank(); r != 1 {
			return failed(errorf(op, ErrShape, name, "has shape "+dispatch.FormatShape(a.t.Shape)+" (rank "+strconv.Itoa(r)+
				") but outer takes vectors", "give a tensor of rank 1, e.g. with Flatten"))
		}
	}
	return apply(opOuter, none, x, y)
}
