package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Products of torch that lathe builds as composites: the cross product
// (torch.linalg.cross), the Kronecker product (torch.kron), tensordot
// (torch.tensordot) and the pairwise distances of torch.cdist, from
// narrows, broadcast products, permutes and one matmul, so that each runs
// on every device and is differentiable to any order.

// crossAttrs are cross's dim (from the front) and the shape x and y
// broadcast to.
type crossAttrs struct {
	dim   int
	shape []int
}

// cross is torch's formula, component by component: (a1·b2 - a2·b1,
// a2·b0 - a0·b2, a0·b1 - a1·b0), each rounded as torch's.
var opCross = composite("cross", []string{"x", "y"}, func(in []*Tensor, a crossAttrs) *Tensor {
	x, y := in[0].BroadcastTo(a.shape...), in[1].BroadcastTo(a.shape...)
	c := func(t *Tensor, i int) *Tensor { return t.Narrow(a.dim, i, 1) }
	return Concat([]*Tensor{
		c(x, 1).Mul(c(y, 2)).Sub(c(x, 2).Mul(c(y, 1))),
		c(x, 2).Mul(c(y, 0)).Sub(c(x, 0).Mul(c(y, 2))),
		c(x, 0).Mul(c(y, 1)).Sub(c(x, 1).Mul(c(y, 0))),
	}, a.dim)
})

// Cross is the cross product of x and y along dim, as
// torch.linalg.cross(x, y, dim=dim) (torch's default dim is -1): x and y
// have one rank and one dtype (as torch's: another is ErrDType), their
// shapes broadcast, and both have size 3 along dim. Bool is ErrDType, as
// torch's.
func (x *Tensor) Cross(y *Tensor, dim int) *Tensor {
	const op = "cross"
	if _, err := mathPair(op, "y", x, y, nil); err != nil {
		return failed(err)
	}
	if x.t.DType == Bool {
		return failed(errorf(op, ErrDType, "x", "is bool, which cross does not take (as torch's)", "cast it with .Cast(lathe.Int32) first"))
	}
	if x.t.Rank() != y.t.Rank() {
		return failed(errorf(op, ErrShape, "y", "has rank "+strconv.Itoa(y.t.Rank())+" but x has rank "+strconv.Itoa(x.t.Rank())+
			" (torch's linalg.cross needs one rank)", "reshape one of them, e.g. with Unsqueeze"))
	}
	d, err := sortDim(op, dim, x.t.Rank())
	if err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrShape, "x", "is 0-d, which has no vector of 3", "give tensors with a dim of size 3"))
	}
	for i, t := range []*Tensor{x, y} {
		if n := t.t.Shape[d]; n != 3 {
			return failed(errorf(op, ErrShape, []string{"x", "y"}[i], "has size "+strconv.Itoa(n)+" along dim "+strconv.Itoa(dim)+
				" (shape "+dispatch.FormatShape(t.t.Shape)+"), but a cross product takes vectors of 3", "give a dim of size 3"))
		}
	}
	shape, _ := ops.BroadcastShapes(x.t.Shape, y.t.Shape)
	return apply(opCross, crossAttrs{dim: d, shape: slices.Clone(shape)}, x, y)
}

// kron interleaves x's and y's dims (both of rank r, y's size b): x
// reshaped to [a0, 1, a1, 1, …] times y to [1, b0, 1, b1, …], merged to
// [a0·b0, a1·b1, …].
var opKron = composite("kron", []string{"x", "y"}, func(in []*Tensor, _ dispatch.None) *Tensor {
	x, y := in[0], in[1]
	r := max(x.t.Rank(), y.t.Rank())
	pad := func(s []int) []int { return append(slices.Repeat([]int{1}, r-len(s)), s...) }
	a, b := pad(x.t.Shape), pad(y.t.Shape)
	xs, ys, out := make([]int, 0, 2*r), make([]int, 0, 2*r), make([]int, r)
	for i := range r {
		xs, ys = append(xs, a[i], 1), append(ys, 1, b[i])
		out[i] = a[i] * b[i]
	}
	return x.Reshape(xs...).Mul(y.Reshape(ys...)).Reshape(out...)
})

// Kron is the Kronecker product of x and y, as torch.kron: the shorter
// shape is padded with leading 1s, and the result has shape
// [a0·b0, a1·b1, …] with element [i·b + j] = x[i]·y[j]. Dtypes promote as
// Mul's.
func (x *Tensor) Kron(y *Tensor) *Tensor {
	const op = "kron"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	n := 1
	r := max(x.t.Rank(), y.t.Rank())
	for i := range r {
		d := 1
		if j := i - (r - x.t.Rank()); j >= 0 {
			d *= x.t.Shape[j]
		}
		if j := i - (r - y.t.Rank()); j >= 0 {
			d *= y.t.Shape[j]
		}
		if d != 0 && n > (1<<62)/d {
			return failed(errorf(op, ErrOutOfMemory, "y", "makes a result of more elements than an int counts ("+
				dispatch.FormatShape(x.t.Shape)+" ⊗ "+dispatch.FormatShape(y.t.Shape)+")", "use smaller tensors"))
		}
		n *= d
	}
	return apply(opKron, none, x, y)
}

// tensordotAttrs are the dims of x and of y (from the front) that
// tensordot contracts, pairwise.
type tensordotAttrs struct{ xd, yd []int }

var opTensorDot = composite("tensordot", []string{"x", "y"}, func(in []*Tensor, a tensordotAttrs) *Tensor {
	x, y := in[0], in[1]
	free := func(t *Tensor, c []int) []int {
		var f []int
		for d := range t.t.Rank() {
			if !slices.Contains(c, d) {
				f = append(f, d)
			}
		}
		return f
	}
	fx, fy := free(x, a.xd), free(y, a.yd)
	k := 1
	for _, d := range a.xd {
		k *= x.t.Shape[d]
	}
	var shape []int
	m, n := 1, 1
	for _, d := range fx {
		shape, m = append(shape, x.t.Shape[d]), m*x.t.Shape[d]
	}
	for _, d := range fy {
		shape, n = append(shape, y.t.Shape[d]), n*y.t.Shape[d]
	}
	xm := x.Permute(append(slices.Clone(fx), a.xd...)...).Reshape(m, k)
	ym := y.Permute(append(slices.Clone(a.yd), fy...)...).Reshape(k, n)
	return xm.MatMul(ym).Reshape(shape...)
})

// distinctDims is dims (the argument arg of op) normalised against a
// rank: an ErrIndex where one is out of range, an ErrValue where two name
// the same dim.
func distinctDims(op, arg string, dims []int, rank int) ([]int, error) {
	out := make([]int, len(dims))
	for i, d := range dims {
		n, err := ops.NormDim(d, rank, arg)
		if err != nil {
			return nil, located(err, op)
		}
		if slices.Contains(out[:i], n) {
			return nil, errorf(op, ErrValue, arg, "names dim "+strconv.Itoa(d)+" twice", "name each dim once")
		}
		out[i] = n
	}
	return out, nil
}

// TensorDot contracts dims xDims of x with dims yDims of y, pairwise, as
// torch.tensordot(x, y, dims=(xDims, yDims)): the result's dims are x's
// others, then y's others, in order. torch's tensordot(x, y, n) is xDims
// the last n of x and yDims the first n of y. Dims may be negative; the
// paired sizes must be equal (no broadcasting), x and y have one dtype,
// as torch's, and the dtypes are MatMul's.
func (x *Tensor) TensorDot(y *Tensor, xDims, yDims []int) *Tensor {
	const op = "tensordot"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	if y.t.DType != x.t.DType {
		return failed(errorf(op, ErrDType, "y", "is "+y.t.DType.String()+" but x is "+x.t.DType.String()+" (tensordot does not promote, as torch's)",
			"cast it with .Cast("+x.t.DType.GoString()+")"))
	}
	if len(xDims) != len(yDims) {
		return failed(errorf(op, ErrValue, "yDims", "has "+strconv.Itoa(len(yDims))+" dims but xDims has "+strconv.Itoa(len(xDims)),
			"pair each contracted dim of x with one of y"))
	}
	norm := func(t *Tensor, dims []int, arg string) ([]int, error) {
		if t.t.Rank() == 0 {
			for _, d := range dims {
				if _, err := ops.NormDim(d, 0, arg); err != nil {
					return nil, located(err, op)
				}
				return nil, errorf(op, ErrIndex, arg, "names dim "+strconv.Itoa(d)+" of a 0-d tensor", "contract no dims of a 0-d tensor")
			}
		}
		return distinctDims(op, arg, dims, t.t.Rank())
	}
	xd, err := norm(x, xDims, "xDims")
	if err != nil {
		return failed(err)
	}
	yd, err := norm(y, yDims, "yDims")
	if err != nil {
		return failed(err)
	}
	for i := range xd {
		if a, b := x.t.Shape[xd[i]], y.t.Shape[yd[i]]; a != b {
			return failed(errorf(op, ErrShape, "y", "has size "+strconv.Itoa(b)+" in dim "+strconv.Itoa(yDims[i])+" but x has "+
				strconv.Itoa(a)+" in dim "+strconv.Itoa(xDims[i])+", which it is contracted with", "pair dims of equal size"))
		}
	}
	return apply(opTensorDot, tensordotAttrs{xd: xd, yd: yd}, x, y)
}

// cdistAttrs are cdist's p and whether it takes the matrix-product form.
type cdistAttrs struct {
	p  float64
	mm bool
}

// sqrtPos is √s where s > 0 (or NaN, which goes through) and 0
// elsewhere, with gradient 0 there (as torch's cdist backward at a zero
// distance) rather than ∞·0.
func sqrtPos(op string, s *Tensor) *Tensor {
	pos := positiveOrNaN(s)
	return Where(pos, Where(pos, s, s.scalarLike(op, 1)).Sqrt(), s.scalarLike(op, 0))
}

// positiveOrNaN is where s > 0 or s is NaN: the places where a distance
// is computed rather than set to 0, so that a NaN goes through to the
// result, as in torch.
func positiveOrNaN(s *Tensor) *Tensor { return s.GtScalar(0).LogicalOr(s.IsNaN()) }

var opCdist = composite("cdist", []string{"x", "y"}, func(in []*Tensor, a cdistAttrs) *Tensor {
	return inFloat32(in, func(in []*Tensor) *Tensor { return cdist(in[0], in[1], a) })
})

func cdist(x, y *Tensor, a cdistAttrs) *Tensor {
	const op = "cdist"
	if a.mm {
		// torch's _euclidean_dist: [-2x, |x|², 1] · [y, 1, |y|²]ᵀ, clamped
		// at 0 and square-rooted.
		xn, yn := x.Square().SumKeepDim(-1), y.Square().SumKeepDim(-1)
		xs := Concat([]*Tensor{x.MulScalar(-2), xn, xn.scalarLike(op, 1).Expand(xn.Shape()...)}, -1)
		ys := Concat([]*Tensor{y, yn.scalarLike(op, 1).Expand(yn.Shape()...), yn}, -1)
		return sqrtPos(op, xs.MatMul(ys.MT()))
	}
	return inBlocks(x, y, func(x, y *Tensor) *Tensor { return pnormLast(op, x, x.Unsqueeze(-2).Sub(y.Unsqueeze(-3)), a.p) })
}

// distanceBlock is how many elements of differences cdist's direct form
// and pdist take at once: their memory grows with the result, as
// torch's kernels', not with the result times the features. Blocks of
// 16 MiB of float32 also took pdist of [1000, 64] from 78 to 14 ms.
const distanceBlock = 1 << 22

// inBlocks is f(x, y) for f of rows x [B…, P, M] and y [B…, R, M] that
// gives [B…, P, R] from their [B…, P, R, M] differences, taken in blocks
// of rows of x and of y whose differences have about distanceBlock
// elements, and concatenated. Each block is a Compose, which lets go of
// its differences once it has its distances (with the graph, where one
// is recorded).
func inBlocks(x, y *Tensor, f func(x, y *Tensor) *Tensor) *Tensor {
	rx, ry := x.t.Rank(), y.t.Rank()
	p, r, m := x.t.Shape[rx-2], y.t.Shape[ry-2], max(x.t.Shape[rx-1], 1)
	batch, _ := ops.BroadcastShapes(x.t.Shape[:rx-2], y.t.Shape[:ry-2])
	perRow := m * max(dispatch.Numel(batch), 1)
	cr := min(r, max(1, distanceBlock/perRow))
	cp := min(p, max(1, distanceBlock/(perRow*max(cr, 1))))
	if cp >= p && cr >= r {
		return f(x, y)
	}
	var rows []*Tensor
	for i := 0; i < p; i += cp {
		xb := x.Narrow(-2, i, min(cp, p-i))
		var cols []*Tensor
		for j := 0; j < r; j += cr {
			cols = append(cols, Compose(func(a []*Tensor) *Tensor { return f(a[0], a[1]) }, xb, y.Narrow(-2, j, min(cr, r-j))))
		}
		rows = append(rows, Concat(cols, -1))
	}
	return Concat(rows, -2)
}

// pnormLast is the p-norm of the differences d along their last dim, as
// cdist's and pdist's: p = 0 counts the nonzero ones, +Inf takes the
// largest, a NaN difference makes the distance NaN (as torch's, but for
// cdist's p = +Inf, which skips NaN in torch 1.13), and the gradient at a
// zero distance or a zero difference is 0, as torch's backward of either.
// x (d's source) gives the scalars' dtype.
func pnormLast(op string, x, d *Tensor, p float64) *Tensor {
	ad := d.Abs()
	switch {
	case p == 0: // a count, whose gradient is 0 (a zero that keeps x's graph)
		da := detached(ad)
		nz := Where(da.IsNaN(), da, da.GtScalar(0).Cast(x.t.DType)).Sum(-1)
		return nz.Add(Where(ad.IsFinite(), d, d.scalarLike(op, 0)).MulScalar(0).Sum(-1))
	case p == 1:
		return ad.Sum(-1)
	case p == 2:
		return sqrtPos(op, d.Square().Sum(-1))
	case math.IsInf(p, 1):
		// The largest |d|, whose gradient goes whole to each element that
		// ties for it, as torch's _cdist_backward (not split, as amax's).
		m := detached(ad).AmaxKeepDim(-1)
		// An infinite tie passes none (∞ - ∞ would make the distance NaN).
		tie := ad.Eq(m).LogicalAnd(ad.IsFinite())
		return m.Squeeze(-1).Add(Where(tie, ad.Sub(detached(ad)), ad.scalarLike(op, 0)).Sum(-1))
	default:
		pos := positiveOrNaN(ad)
		t := Where(pos, Where(pos, ad, ad.scalarLike(op, 1)).PowScalar(p), ad.scalarLike(op, 0))
		s := t.Sum(-1)
		sp := positiveOrNaN(s)
		return Where(sp, Where(sp, s, s.scalarLike(op, 1)).PowScalar(1/p), s.scalarLike(op, 0))
	}
}

// Cdist is the p-norm distance between each row of x [B…, P, M] and each
// of y [B…, R, M], as torch.cdist(x, y, p): shape [B…, P, R], the batch
// dims broadcast (torch's default p is 2). p = 0 counts the differing
// elements, +Inf takes the largest difference. For p = 2 with more than 25
// rows in x or y it computes as torch does, by a matrix product
// (|x|² + |y|² - 2x·y, clamped at 0), which is faster and less exact; the
// gradient at a zero distance is 0, as torch's. Floats only, one dtype, as
// torch's; float16 and bfloat16, which torch's cdist does not take, are
// computed in float32 and rounded once. A negative or NaN p is ErrValue.
func (x *Tensor) Cdist(y *Tensor, p float64) *Tensor {
	const op = "cdist"
	if !(p >= 0) {
		return failed(errorf(op, ErrValue, "p", "is "+ftoa(p)+" but cdist takes p ≥ 0, as torch's", "use p = 2 (torch's default), 1, 0 or +Inf"))
	}
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	if y.t.DType != x.t.DType {
		return failed(errorf(op, ErrDType, "y", "is "+y.t.DType.String()+" but x is "+x.t.DType.String()+" (cdist does not promote, as torch's)",
			"cast it with .Cast("+x.t.DType.GoString()+")"))
	}
	for i, t := range []*Tensor{x, y} {
		if t.t.Rank() < 2 {
			return failed(errorf(op, ErrShape, []string{"x", "y"}[i], "has rank "+strconv.Itoa(t.t.Rank())+" but cdist takes rows [..., rows, features]",
				"reshape it to rank 2 or more, e.g. with Unsqueeze(0)"))
		}
	}
	rx, ry := x.t.Rank(), y.t.Rank()
	if a, b := x.t.Shape[rx-1], y.t.Shape[ry-1]; a != b {
		return failed(errorf(op, ErrShape, "y", "has "+strconv.Itoa(b)+" features (last dim) but x has "+strconv.Itoa(a), "give rows of one length"))
	}
	if _, ok := ops.BroadcastShapes(x.t.Shape[:rx-2], y.t.Shape[:ry-2]); !ok {
		return failed(errorf(op, ErrShape, "y", "has batch dims "+dispatch.FormatShape(y.t.Shape[:ry-2])+", which do not broadcast with x's "+
			dispatch.FormatShape(x.t.Shape[:rx-2]), "make each batch dim equal or 1"))
	}
	mm := p == 2 && (x.t.Shape[rx-2] > 25 || y.t.Shape[ry-2] > 25)
	return apply(opCdist, cdistAttrs{p: p, mm: mm}, x, y)
}

// pdistAttrs are pdist's p.
type pdistAttrs struct{ p float64 }

// pdist gathers the rows of each pair (i < j, in row-major order of the
// upper triangle) and takes the p-norm of their difference, for
// distanceBlock elements of differences at a time, the pairs' indices
// made on the host block by block (all of them at once took four times
// the result's memory).
var opPdist = composite("pdist", []string{"x"}, func(in []*Tensor, a pdistAttrs) *Tensor {
	const op = "pdist"
	return inFloat32(in, func(in []*Tensor) *Tensor {
		x := in[0]
		n, m := x.t.Shape[0], x.t.Shape[1]
		pairs := 0
		if n >= 2 {
			pairs = n * (n - 1) / 2
		}
		step := max(1, distanceBlock/max(m, 1))
		var parts []*Tensor
		i, j := 0, 1
		for s := 0; s == 0 || s < pairs; s += step {
			c := min(step, pairs-s)
			is, js := make([]int64, c), make([]int64, c)
			for k := range c {
				is[k], js[k] = int64(i), int64(j)
				if j++; j == n {
					i++
					j = i + 1
				}
			}
			ti, tj := x.joined(FromSlice(x.t.Device, is, c)), x.joined(FromSlice(x.t.Device, js, c))
			parts = append(parts, Compose(func(in []*Tensor) *Tensor {
				x := in[0]
				return pnormLast(op, x, x.IndexSelect(0, in[1]).Sub(x.IndexSelect(0, in[2])), a.p)
			}, x, ti, tj))
		}
		if len(parts) == 1 {
			return parts[0]
		}
		return Concat(parts, 0)
	})
})

// Pdist is the p-norm distance between each pair of rows of the 2-D x
// [N, M], as torch.nn.functional.pdist(x, p) (torch's default p is 2):
// the upper triangle of Cdist(x, x, p) without its diagonal, row by row,
// shape [N·(N-1)/2] (empty for N < 2, zeros for M = 0). p = 0 counts the
// differing elements, +Inf takes the largest difference; a NaN element
// makes its distances NaN. Gradients as torch's: 0 at a zero distance
// (and, for p < 1, through a zero difference), and for p = +Inf the whole
// gradient to each element that ties for the largest difference; lathe's
// is differentiable again (torch 1.13 has no second derivative of
// pdist). It computes the differences directly, never by a matrix
// product, a block of them at a time, so that its memory is about twice
// the result's (a result too large is ErrOutOfMemory before anything
// runs). Floats only (integers and Bool ErrDType, as torch's); float16
// and bfloat16, which torch's pdist takes only under autocast (which
// casts them to float32), are computed in float32 and rounded once, as
// Cdist's. x not 2-D is ErrShape, a negative or NaN p ErrValue.
func (x *Tensor) Pdist(p float64) *Tensor {
	const op = "pdist"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if !(p >= 0) {
		return failed(errorf(op, ErrValue, "p", "is "+ftoa(p)+" but pdist takes p ≥ 0, as torch's", "use p = 2 (torch's default), 1, 0 or +Inf"))
	}
	if err := x.floatsOnly(op); err != nil {
		return failed(err)
	}
	if r := x.t.Rank(); r != 2 {
		return failed(errorf(op, ErrShape, "x", "has rank "+strconv.Itoa(r)+" but pdist takes a 2-D [rows, features] tensor, as torch's",
			"reshape it to [rows, features]"))
	}
	n, m := x.t.Shape[0], x.t.Shape[1]
	if n >= 1<<31 { // n·(n-1)/2 pairs: no device holds them
		return failed(located(dispatch.ShapeError("", []int{n, n, max(m, 1)}), op))
	}
	pairs := n * (n - 1) / 2
	if n < 2 {
		pairs = 0
	}
	if err := roomFor(op, x.t.Device, x.t.DType, []int{pairs, 2}); err != nil { // the blocks and their concatenation
		return failed(err)
	}
	return apply(opPdist, pdistAttrs{p: p}, x)
}
