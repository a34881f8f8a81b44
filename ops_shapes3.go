package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Everyday torch functions made of lathe's own ops: the views select, t,
// movedim, swapaxes, ravel, expand_as, reshape_as, view_as, unflatten and
// the atleast family; type_as, msort, positive, clamp_min, clamp_max,
// aminmax, sgn and rsub; broadcast_tensors and broadcast_shapes; the
// products dot, vdot, inner, mv, mm and bmm; diagflat, dist and
// float_power. Each checks its arguments first, so that its errors name
// it and the argument at fault, and then runs ops every backend has, so
// it runs on every device and its gradient, to any order, is theirs.

// Select is x indexed at index along dim, as torch.select(x, dim, index)
// (x[..., index, ...]): a view of x's rank - 1. A negative index counts
// from the end; one out of range is ErrIndex, as is a 0-d x.
func (x *Tensor) Select(dim, index int) *Tensor {
	const op = "select"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrIndex, "x", "is 0-d but select needs a dim to index", "use Unsqueeze first, or Item"))
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return failed(located(err, op))
	}
	n := x.t.Shape[d]
	if index < -n || index >= n {
		e := errorf(op, ErrIndex, "index", "is "+strconv.Itoa(index)+", out of range for size "+strconv.Itoa(n)+" of dim "+strconv.Itoa(dim)+
			" of shape "+dispatch.FormatShape(x.t.Shape), "use an index in ["+strconv.Itoa(-n)+", "+strconv.Itoa(n)+")")
		e.Found = strconv.Itoa(index)
		return failed(e)
	}
	if index < 0 {
		index += n
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Narrow(d, index, 1).Squeeze(d) }, x), op)
}

// T is the transpose of a matrix, as torch.Tensor.t: a view with the two
// dims swapped; a vector or 0-d x is returned as it is (in a handle of
// the caller's own). x of rank above 2 is ErrShape (use MT or Transpose).
func (x *Tensor) T() *Tensor {
	const op = "t"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	switch r := x.t.Rank(); {
	case r == 2:
		return relabel(x.Transpose(0, 1), op)
	case r > 2:
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but t takes a tensor of rank at most 2", "use MT for the last two dims, or Transpose"))
	}
	return relabel(x.alias(), op)
}

// MoveDim moves x's dims source[i] to the positions destination[i], the
// others keeping their order in the places left, as torch.movedim: a view.
// Dims may be negative; source and destination must have one length and
// no dim twice (ErrValue), each in range (ErrIndex).
func (x *Tensor) MoveDim(source, destination []int) *Tensor {
	const op = "movedim"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if len(source) != len(destination) {
		return failed(errorf(op, ErrValue, "destination", "has "+strconv.Itoa(len(destination))+" dims but source has "+strconv.Itoa(len(source)),
			"give one destination per source dim"))
	}
	r := x.t.Rank()
	src, err := distinctDims(op, "source", source, r)
	if err != nil {
		return failed(err)
	}
	dst, err := distinctDims(op, "destination", destination, r)
	if err != nil {
		return failed(err)
	}
	if r == 0 {
		return relabel(x.alias(), op)
	}
	perm := slices.Repeat([]int{-1}, r)
	for i := range src {
		perm[dst[i]] = src[i]
	}
	rest := 0
	for i := range perm {
		if perm[i] >= 0 {
			continue
		}
		for slices.Contains(src, rest) {
			rest++
		}
		perm[i] = rest
		rest++
	}
	return relabel(x.Permute(perm...), op)
}

// SwapAxes swaps dims a and b of x, as torch.swapaxes (torch.transpose): a
// view. A 0-d x takes dims 0 and -1 and is returned as it is.
func (x *Tensor) SwapAxes(a, b int) *Tensor {
	const op = "swapaxes"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	for _, d := range []struct {
		v   int
		arg string
	}{{a, "a"}, {b, "b"}} {
		if _, err := ops.NormDim(d.v, x.t.Rank(), d.arg); err != nil {
			return failed(located(err, op))
		}
	}
	if x.t.Rank() == 0 {
		return relabel(x.alias(), op)
	}
	return relabel(x.Transpose(a, b), op)
}

// Ravel is x as a vector, as torch.ravel: a view where x's strides allow
// one, else a contiguous copy. A 0-d x gives one element.
func (x *Tensor) Ravel() *Tensor {
	const op = "ravel"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return relabel(x.Reshape(-1), op)
}

// likeShape checks x and other, other's shape being what the op takes.
func likeShape(op string, x, other *Tensor) error {
	if err := x.check(op); err != nil {
		return err
	}
	return other.CheckArg(op, "other")
}

// ExpandAs is x expanded to other's shape, as torch.Tensor.expand_as: a
// view (Expand's rules).
func (x *Tensor) ExpandAs(other *Tensor) *Tensor {
	const op = "expand_as"
	if err := likeShape(op, x, other); err != nil {
		return failed(err)
	}
	return relabel(x.Expand(other.t.Shape...), op)
}

// ReshapeAs is x in other's shape, as torch.Tensor.reshape_as: a view
// where x's strides allow, else a copy (Reshape's rules).
func (x *Tensor) ReshapeAs(other *Tensor) *Tensor {
	const op = "reshape_as"
	if err := likeShape(op, x, other); err != nil {
		return failed(err)
	}
	return relabel(x.Reshape(other.t.Shape...), op)
}

// ViewAs is x viewed in other's shape, as torch.Tensor.view_as: never a
// copy (View's rules: ErrShape where the strides do not allow it).
func (x *Tensor) ViewAs(other *Tensor) *Tensor {
	const op = "view_as"
	if err := likeShape(op, x, other); err != nil {
		return failed(err)
	}
	return relabel(x.View(other.t.Shape...), op)
}

// TypeAs is x cast to other's dtype and moved to other's device, as
// torch.Tensor.type_as (Cast's rules; x itself, in a handle of its own,
// where dtype and device agree).
func (x *Tensor) TypeAs(other *Tensor) *Tensor {
	const op = "type_as"
	if err := likeShape(op, x, other); err != nil {
		return failed(err)
	}
	if other.t.Device != x.t.Device {
		return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(other.t.DType).To(other.t.Device) }, x), op)
	}
	return relabel(x.Cast(other.t.DType), op)
}

// Unflatten splits dim of x into the given sizes, as torch.unflatten: a
// view. One size may be -1, inferred from the others (not where they
// multiply to 0); the sizes must multiply to the dim's size (ErrShape)
// and may not be empty (ErrValue). A 0-d x is ErrIndex, as torch's.
func (x *Tensor) Unflatten(dim int, sizes ...int) *Tensor {
	const op = "unflatten"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+" but x is 0-d", "use Unsqueeze or Reshape for a 0-d tensor"))
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return failed(located(err, op))
	}
	if len(sizes) == 0 {
		return failed(errorf(op, ErrValue, "sizes", "is empty", "give the sizes dim is split into"))
	}
	n := x.t.Shape[d]
	infer, prod := -1, 1
	for i, s := range sizes {
		switch {
		case s == -1 && infer >= 0:
			return failed(errorf(op, ErrValue, "sizes", "has -1 twice", "infer at most one size"))
		case s == -1:
			infer = i
			continue
		case s < 0:
			return failed(errorf(op, ErrValue, "sizes", "has size "+strconv.Itoa(s), "use sizes ≥ 0, or -1 for one to infer"))
		}
		p, ok := dispatch.CheckedMul(prod, s)
		if !ok {
			return failed(errorf(op, ErrShape, "sizes", "are "+dispatch.FormatShape(sizes)+", more elements than an int counts",
				"give sizes that multiply to "+strconv.Itoa(n)))
		}
		prod = p
	}
	shape := slices.Clone(sizes)
	if infer >= 0 {
		if prod == 0 || n%prod != 0 {
			return failed(errorf(op, ErrShape, "sizes", "are "+dispatch.FormatShape(sizes)+", which cannot be inferred for size "+strconv.Itoa(n)+
				" of dim "+strconv.Itoa(dim), "give sizes whose product divides the dim's size, and nonzero where one is -1"))
		}
		shape[infer] = n / prod
	} else if prod != n {
		return failed(errorf(op, ErrShape, "sizes", "are "+dispatch.FormatShape(sizes)+", which multiply to "+strconv.Itoa(prod)+
			", not the size "+strconv.Itoa(n)+" of dim "+strconv.Itoa(dim), "give sizes that multiply to "+strconv.Itoa(n)))
	}
	full := slices.Concat(x.t.Shape[:d], shape, x.t.Shape[d+1:])
	return relabel(x.View(full...), op)
}

// Msort is x sorted along dim 0, ascending, as torch.msort (Sort's values;
// a 0-d x is returned as its one value).
func (x *Tensor) Msort() *Tensor {
	const op = "msort"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { v, _ := a[0].Sort(0, false); return v }, x), op)
}

// Positive is x, as torch.positive (+x), in a handle of the caller's own;
// a bool x is ErrDType, as torch's.
func (x *Tensor) Positive() *Tensor {
	const op = "positive"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.DType == Bool {
		return failed(errorf(op, ErrDType, "x", "is bool but positive takes numbers (torch refuses + on bool)", "cast it with .Cast(lathe.Int64) first"))
	}
	return relabel(x.alias(), op)
}

// clampDType is the dtype torch's clamp with the bound v gives x: an
// integer x with a fractional or infinite bound becomes Float32 (torch's
// default dtype), a bool x Int64 (Float32 for a fractional bound). Go
// cannot tell 2.0 from 2, so an integral float bound counts as an integer.
func clampDType(x *Tensor, v float64) DType {
	whole := v == math.Trunc(v) && !math.IsInf(v, 0)
	switch dt := x.t.DType; {
	case dt.IsFloat():
		return dt
	case !whole:
		return Float32
	case dt == Bool:
		return Int64
	default:
		return dt
	}
}

// clampOne is clamp with one bound, in the dtype torch gives.
func (x *Tensor) clampOne(op, arg string, lo, hi float64) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	v := lo
	if math.IsInf(lo, -1) {
		v = hi
	}
	if math.IsNaN(v) {
		return failed(errorf(op, ErrValue, arg, "is NaN", "pass a number, or ±Inf for no bound"))
	}
	dt := clampDType(x, v)
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(dt).Clamp(lo, hi) }, x), op)
}

// ClampMin is x with every element below min raised to min, as
// torch.clamp_min (clamp(x, min=min)); NaN stays NaN. An integer x with a
// fractional min gives Float32, a bool x Int64, as torch's promotion.
func (x *Tensor) ClampMin(min float64) *Tensor {
	return x.clampOne("clamp_min", "min", min, math.Inf(1))
}

// ClampMax is x with every element above max lowered to max, as
// torch.clamp_max; otherwise as ClampMin.
func (x *Tensor) ClampMax(max float64) *Tensor {
	return x.clampOne("clamp_max", "max", math.Inf(-1), max)
}

// Clip is Clamp, as torch.clip is torch.clamp.
func (x *Tensor) Clip(lo, hi float64) *Tensor { return x.Clamp(lo, hi) }

// Aminmax is the smallest and largest elements of x, as torch.aminmax(x):
// two 0-d tensors. An empty x is ErrShape (min and max have no identity).
func (x *Tensor) Aminmax() (min, max *Tensor) {
	const op = "aminmax"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	if x.t.Numel() == 0 {
		err := errorf(op, ErrShape, "x", "is empty (shape "+dispatch.FormatShape(x.t.Shape)+"): min and max have no identity",
			"give a tensor with at least one element")
		return failed(err), failed(err)
	}
	return relabel(x.Amin(), op), relabel(x.Amax(), op)
}

// AminmaxDim is the smallest and largest elements of x along dim, as
// torch.aminmax(x, dim=dim, keepdim=keepdim). An empty dim is ErrIndex,
// as torch's.
func (x *Tensor) AminmaxDim(dim int, keepdim bool) (min, max *Tensor) {
	const op = "aminmax"
	if err := x.check(op); err != nil {
		return failed(err), failed(err)
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return failed(located(err, op)), failed(located(err, op))
	}
	if x.t.Rank() > 0 && x.t.Shape[d] == 0 {
		err := errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+", of size 0 in shape "+dispatch.FormatShape(x.t.Shape)+
			": min and max have no identity", "reduce along a dim of nonzero size")
		return failed(err), failed(err)
	}
	if x.t.Rank() == 0 {
		return relabel(x.alias(), op), relabel(x.alias(), op)
	}
	if keepdim {
		return relabel(x.AminKeepDim(d), op), relabel(x.AmaxKeepDim(d), op)
	}
	return relabel(x.Amin(d), op), relabel(x.Amax(d), op)
}

// Sgn is the sign of x, as torch.sgn of a real tensor (torch.sign): -1, 0
// or 1, NaN for NaN. A bool x is its own sign, as torch's.
func (x *Tensor) Sgn() *Tensor {
	const op = "sgn"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if x.t.DType == Bool {
		return relabel(x.alias(), op)
	}
	return relabel(x.Sign(), op)
}

// Rsub is other - alpha·x, broadcast, as torch.rsub(x, other, alpha): the
// dtypes promote as Sub's. For floats the product and the difference are
// rounded once, as torch's fused loop (AddScaled). Integers take an
// integral alpha (ErrValue else, as torch); a bool x or other is ErrDType.
func (x *Tensor) Rsub(other *Tensor, alpha float64) *Tensor {
	const op = "rsub"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := other.CheckArg(op, "other"); err != nil {
		return failed(err)
	}
	if err := noBool(op, []string{"x", "other"}, x, other); err != nil {
		return failed(err)
	}
	dt, err := ops.BinaryDType(ops.Sub, dispatch.OperandOf(other.t), dispatch.OperandOf(x.t))
	if err != nil {
		return failed(located(err, op))
	}
	if math.IsNaN(alpha) || math.IsInf(alpha, 0) || (!dt.IsFloat() && alpha != math.Trunc(alpha)) {
		return failed(errorf(op, ErrValue, "alpha", "is "+ftoa(alpha)+" but x and other give "+dt.String(),
			"use a finite alpha, integral for integer tensors"))
	}
	if _, ok := ops.BroadcastShapes(x.t.Shape, other.t.Shape); !ok {
		return failed(located(broadcastError(x, other, "other", "x"), op))
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		x, o := a[0], a[1]
		switch {
		case dt.IsFloat():
			return o.AddScaled(x, -alpha)
		case alpha == 1:
			return o.Sub(x)
		}
		return o.Sub(x.Cast(dt).MulScalar(alpha))
	}, x, other), op)
}

// noBool refuses a bool among ts (named names), which torch does not
// subtract.
func noBool(op string, names []string, ts ...*Tensor) error {
	for i, t := range ts {
		if t.t.DType == Bool {
			return errorf(op, ErrDType, names[i], "is bool, which "+op+" does not subtract (as torch's -)",
				"cast it with .Cast(lathe.Int32), or use LogicalXor for masks")
		}
	}
	return nil
}

// AtLeast1D is x with at least one dim, as torch.atleast_1d: a 0-d x
// becomes [1], a view; others are returned as they are.
func AtLeast1D(x *Tensor) *Tensor {
	return atLeast("atleast_1d", x, func(s []int) []int {
		if len(s) == 0 {
			return []int{1}
		}
		return s
	})
}

// AtLeast2D is x with at least two dims, as torch.atleast_2d: a 0-d x
// becomes [1, 1], a vector [1, n] (views).
func AtLeast2D(x *Tensor) *Tensor { return atLeast("atleast_2d", x, atLeast2D) }

// AtLeast3D is x with at least three dims, as torch.atleast_3d: a 0-d x
// becomes [1, 1, 1], a vector [1, n, 1], a matrix [m, n, 1] (views).
func AtLeast3D(x *Tensor) *Tensor { return atLeast("atleast_3d", x, atLeast3D) }

func atLeast(op string, x *Tensor, shape func([]int) []int) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	s := shape(x.t.Shape)
	if len(s) == x.t.Rank() {
		return relabel(x.alias(), op)
	}
	return relabel(x.View(s...), op)
}

// BroadcastShapes is the shape that shapes broadcast to, as
// torch.broadcast_shapes: [] for none. A negative size is ErrValue, shapes
// that do not broadcast ErrShape.
func BroadcastShapes(shapes ...[]int) ([]int, error) {
	const op = "broadcast_shapes"
	out := []int{}
	for i, s := range shapes {
		arg := "shapes[" + strconv.Itoa(i) + "]"
		for _, n := range s {
			if n < 0 {
				return nil, errorf(op, ErrValue, arg, "is "+dispatch.FormatShape(s)+", with a negative size", "use sizes ≥ 0")
			}
		}
		b, ok := ops.BroadcastShapes(out, s)
		if !ok {
			e := errorf(op, ErrShape, arg, "is "+dispatch.FormatShape(s)+", which does not broadcast with "+dispatch.FormatShape(out),
				"make each dimension equal or 1")
			e.Expected, e.Found = dispatch.FormatShape(out), dispatch.FormatShape(s)
			return nil, e
		}
		out = slices.Clone(b)
	}
	return out, nil
}

// BroadcastTensors is tensors expanded to the shape they broadcast to, as
// torch.broadcast_tensors: views, one per tensor. Shapes that do not
// broadcast are ErrShape, naming the first that does not.
func BroadcastTensors(tensors ...*Tensor) ([]*Tensor, error) {
	const op = "broadcast_tensors"
	shapes := make([][]int, len(tensors))
	for i, t := range tensors {
		if err := t.CheckArg(op, "tensors["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
		shapes[i] = t.t.Shape
	}
	shape, err := BroadcastShapes(shapes...)
	if err != nil {
		e := located(err, op)
		e.Op = op
		e.Arg = "tensors" + e.Arg[len("shapes"):]
		return nil, e
	}
	out := make([]*Tensor, len(tensors))
	for i, t := range tensors {
		out[i] = relabel(t.Expand(shape...), op)
		if err := out[i].Err(); err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, err
		}
	}
	return out, nil
}

// strictArgs checks the operands of a product that takes the ranks given
// (ranks[i] for argument names[i]), of one dtype, as torch's mm, mv, bmm
// and dot: no promotion.
func strictArgs(op string, names []string, ranks []int, ts ...*Tensor) error {
	for i, t := range ts {
		if err := t.CheckArg(op, names[i]); err != nil {
			return err
		}
		if r := t.t.Rank(); ranks[i] >= 0 && r != ranks[i] {
			return errorf(op, ErrShape, names[i], "has shape "+dispatch.FormatShape(t.t.Shape)+" (rank "+strconv.Itoa(r)+") but "+op+
				" takes a tensor of rank "+strconv.Itoa(ranks[i]), "give a tensor of rank "+strconv.Itoa(ranks[i])+", or use MatMul")
		}
		if t.t.DType == Bool {
			return errorf(op, ErrDType, names[i], "is bool but "+op+" multiplies numbers (torch has none for bool)", "cast it with .Cast(lathe.Float32)")
		}
		if i > 0 && t.t.DType != ts[0].t.DType {
			return errorf(op, ErrDType, names[i], "is "+t.t.DType.String()+" but "+names[0]+" is "+ts[0].t.DType.String()+
				" ("+op+" does not promote, as torch's)", "cast it with .Cast("+ts[0].t.DType.GoString()+")")
		}
	}
	return nil
}

// sizeMismatch is the error of a product whose sizes do not meet.
func sizeMismatch(op, arg string, a, b *Tensor, what string) *Error {
	e := errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(b.t.Shape)+", whose "+what+" does not match "+
		dispatch.FormatShape(a.t.Shape), "make the sizes equal")
	e.Found = dispatch.FormatShape(b.t.Shape)
	return e
}

// Dot is Σ x[i]·y[i] of two vectors of one length and dtype, as torch.dot:
// a 0-d tensor (of their dtype, integers too, as torch's).
func (x *Tensor) Dot(y *Tensor) *Tensor {
	const op = "dot"
	if err := strictArgs(op, []string{"x", "y"}, []int{1, 1}, x, y); err != nil {
		return failed(err)
	}
	if x.t.Shape[0] != y.t.Shape[0] {
		return failed(sizeMismatch(op, "y", x, y, "length"))
	}
	return relabel(x.MatMul(y), op)
}

// Vdot is Dot, as torch.vdot of real tensors (no conjugate to take).
func (x *Tensor) Vdot(y *Tensor) *Tensor {
	const op = "vdot"
	if err := strictArgs(op, []string{"x", "y"}, []int{1, 1}, x, y); err != nil {
		return failed(err)
	}
	if x.t.Shape[0] != y.t.Shape[0] {
		return failed(sizeMismatch(op, "y", x, y, "length"))
	}
	return relabel(x.MatMul(y), op)
}

// Inner is the inner product over the last dims of x and y, as
// torch.inner: the result's shape is x's others then y's others; a 0-d
// operand multiplies the other (Mul, which promotes, as torch's);
// otherwise x and y have one dtype.
func (x *Tensor) Inner(y *Tensor) *Tensor {
	const op = "inner"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	if x.t.Rank() == 0 || y.t.Rank() == 0 {
		return relabel(x.Mul(y), op)
	}
	if err := strictArgs(op, []string{"x", "y"}, []int{-1, -1}, x, y); err != nil {
		return failed(err)
	}
	if a, b := x.t.Shape[x.t.Rank()-1], y.t.Shape[y.t.Rank()-1]; a != b {
		return failed(sizeMismatch(op, "y", x, y, "last dim"))
	}
	return relabel(x.TensorDot(y, []int{-1}, []int{-1}), op)
}

// Mv is the product of the matrix x and the vector v, as torch.mv: x
// [n, m], v [m], one dtype.
func (x *Tensor) Mv(v *Tensor) *Tensor {
	const op = "mv"
	if err := strictArgs(op, []string{"x", "vec"}, []int{2, 1}, x, v); err != nil {
		return failed(err)
	}
	if x.t.Shape[1] != v.t.Shape[0] {
		return failed(sizeMismatch(op, "vec", x, v, "length"))
	}
	return relabel(x.MatMul(v), op)
}

// Mm is the product of the matrices x [n, k] and y [k, m], as torch.mm:
// no broadcasting, one dtype.
func (x *Tensor) Mm(y *Tensor) *Tensor {
	const op = "mm"
	if err := strictArgs(op, []string{"x", "mat2"}, []int{2, 2}, x, y); err != nil {
		return failed(err)
	}
	if x.t.Shape[1] != y.t.Shape[0] {
		return failed(sizeMismatch(op, "mat2", x, y, "first dim"))
	}
	return relabel(x.MatMul(y), op)
}

// Bmm is the batched product of x [b, n, k] and y [b, k, m], as torch.bmm:
// equal batches, no broadcasting, one dtype.
func (x *Tensor) Bmm(y *Tensor) *Tensor {
	const op = "bmm"
	if err := strictArgs(op, []string{"x", "mat2"}, []int{3, 3}, x, y); err != nil {
		return failed(err)
	}
	if x.t.Shape[0] != y.t.Shape[0] {
		return failed(sizeMismatch(op, "mat2", x, y, "batch size"))
	}
	if x.t.Shape[2] != y.t.Shape[1] {
		return failed(sizeMismatch(op, "mat2", x, y, "dim 1"))
	}
	return relabel(x.MatMul(y), op)
}

// DiagFlat is the square matrix with x, flattened, on its offset-th
// diagonal (above the main one, below it negative) and zeros elsewhere,
// as torch.diagflat (Diag of x flattened).
func (x *Tensor) DiagFlat(offset int) *Tensor {
	const op = "diagflat"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Reshape(-1).Diag(offset) }, x), op)
}

// Dist is the p-norm of x - y, broadcast, as torch.dist(x, y, p): a 0-d
// tensor, in the float dtype x and y promote to (Sub's; torch refuses
// two integer tensors); p is
// any number, ±Inf and 0 too (the count of differing elements).
func (x *Tensor) Dist(y *Tensor, p float64) *Tensor {
	const op = "dist"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "y"); err != nil {
		return failed(err)
	}
	if err := noBool(op, []string{"x", "y"}, x, y); err != nil {
		return failed(err)
	}
	dt, err := ops.BinaryDType(ops.Sub, dispatch.OperandOf(x.t), dispatch.OperandOf(y.t))
	if err != nil {
		return failed(located(err, op))
	}
	if !dt.IsFloat() {
		return failed(errorf(op, ErrDType, "x", "and y are "+x.t.DType.String()+" and "+y.t.DType.String()+
			" but dist takes floats (as torch's norm)", "cast one with .Cast(lathe.Float32)"))
	}
	if math.IsNaN(p) {
		return failed(errorf(op, ErrValue, "p", "is NaN", "use a number, or math.Inf(1) for the largest difference"))
	}
	if _, ok := ops.BroadcastShapes(x.t.Shape, y.t.Shape); !ok {
		return failed(located(broadcastError(x, y, "y", "x"), op))
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Sub(a[1]).Norm(p) }, x, y), op)
}

// FloatPower is x to the power y, broadcast, computed in float64 as
// torch.float_power: the result is Float64 whatever the dtypes.
func (x *Tensor) FloatPower(y *Tensor) *Tensor {
	const op = "float_power"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if err := y.CheckArg(op, "exponent"); err != nil {
		return failed(err)
	}
	if y.t.Device != x.t.Device {
		return failed(errorf(op, ErrDevice, "exponent", "is on "+y.t.Device.String()+" but x is on "+x.t.Device.String(),
			"move it with .To("+x.t.Device.String()+")"))
	}
	if _, ok := ops.BroadcastShapes(x.t.Shape, y.t.Shape); !ok {
		return failed(located(broadcastError(x, y, "exponent", "x"), op))
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(Float64).Pow(a[1].Cast(Float64)) }, x, y), op)
}

// FloatPowerScalar is x to the power e in float64, as
// torch.float_power(x, e): the result is Float64.
func (x *Tensor) FloatPowerScalar(e float64) *Tensor {
	const op = "float_power"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor { return a[0].Cast(Float64).PowScalar(e) }, x), op)
}

// splitBy is hsplit, vsplit or dsplit by sections: along dim of an x of
// rank at least minRank, whose size sections must divide (as torch's,
// unlike TensorSplit).
func (x *Tensor) splitBy(op string, minRank, dim, sections int) ([]*Tensor, error) {
	if err := x.splitRank(op, minRank); err != nil {
		return nil, err
	}
	if n := x.t.Shape[dim]; sections < 1 || n%sections != 0 {
		return nil, errorf(op, ErrValue, "sections", "is "+strconv.Itoa(sections)+", which does not divide size "+strconv.Itoa(n)+
			" of dim "+strconv.Itoa(dim), "use sections ≥ 1 that divide the size, or TensorSplit for unequal pieces")
	}
	out, err := x.TensorSplit(sections, dim)
	if err != nil {
		return nil, located(err, op)
	}
	return out, nil
}

// splitAt is hsplit, vsplit or dsplit at indices (TensorSplitAt's rules).
func (x *Tensor) splitAt(op string, minRank, dim int, indices []int) ([]*Tensor, error) {
	if err := x.splitRank(op, minRank); err != nil {
		return nil, err
	}
	out, err := x.TensorSplitAt(indices, dim)
	if err != nil {
		return nil, located(err, op)
	}
	return out, nil
}

func (x *Tensor) splitRank(op string, minRank int) error {
	if err := x.check(op); err != nil {
		return err
	}
	if r := x.t.Rank(); r < minRank {
		return errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+") but "+op+
			" needs rank at least "+strconv.Itoa(minRank), "give a tensor of rank "+strconv.Itoa(minRank)+" or more, e.g. with Unsqueeze")
	}
	return nil
}

// hdim is the dim hsplit cuts: 0 of a vector, else 1.
func (x *Tensor) hdim() int {
	if x != nil && x.t != nil && x.t.Rank() == 1 {
		return 0
	}
	return 1
}

// HSplit cuts x into sections equal views along dim 1 (dim 0 of a
// vector), as torch.hsplit(x, sections): sections must divide the size
// (ErrValue); a 0-d x is ErrShape.
func (x *Tensor) HSplit(sections int) ([]*Tensor, error) {
	return x.splitBy("hsplit", 1, x.hdim(), sections)
}

// HSplitAt cuts x along dim 1 (dim 0 of a vector) before each of indices,
// as torch.hsplit(x, indices) (TensorSplitAt's rules).
func (x *Tensor) HSplitAt(indices []int) ([]*Tensor, error) {
	return x.splitAt("hsplit", 1, x.hdim(), indices)
}

// VSplit cuts x, of rank at least 2, into sections equal views along dim
// 0, as torch.vsplit(x, sections).
func (x *Tensor) VSplit(sections int) ([]*Tensor, error) { return x.splitBy("vsplit", 2, 0, sections) }

// VSplitAt cuts x, of rank at least 2, along dim 0 before each of indices,
// as torch.vsplit(x, indices).
func (x *Tensor) VSplitAt(indices []int) ([]*Tensor, error) {
	return x.splitAt("vsplit", 2, 0, indices)
}

// DSplit cuts x, of rank at least 3, into sections equal views along dim
// 2, as torch.dsplit(x, sections).
func (x *Tensor) DSplit(sections int) ([]*Tensor, error) { return x.splitBy("dsplit", 3, 2, sections) }

// DSplitAt cuts x, of rank at least 3, along dim 2 before each of indices,
// as torch.dsplit(x, indices).
func (x *Tensor) DSplitAt(indices []int) ([]*Tensor, error) {
	return x.splitAt("dsplit", 3, 2, indices)
}

// Combinations is the r-element combinations of the vector x's elements,
// in order, as torch.combinations(x, r, with_replacement): a [count, r]
// tensor of x's dtype ([0] for r = 0, as torch's), made by IndexSelect so
// that gradients flow to x. r < 0 is ErrValue, x of a rank other than 1
// ErrShape; indices past the host's memory are ErrOutOfMemory.
func (x *Tensor) Combinations(r int, withReplacement bool) *Tensor {
	const op = "combinations"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if rk := x.t.Rank(); rk != 1 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(rk)+
			") but combinations takes a vector", "give a tensor of rank 1, e.g. with Flatten"))
	}
	if r < 0 {
		return failed(errorf(op, ErrValue, "r", "is "+strconv.Itoa(r), "use r ≥ 0"))
	}
	n := x.t.Shape[0]
	if r == 0 {
		return relabel(x.Narrow(0, 0, 0), op)
	}
	// The count, C(n, r) or C(n+r-1, r), and the indices' host memory.
	top := n
	if withReplacement {
		top = n + r - 1
	}
	count := 0
	if r <= top {
		count = 1
		for i := range min(r, top-r) {
			// C(top, i)·(top-i) is (i+1)·C(top, i+1): the division is exact.
			c, ok := dispatch.CheckedMul(count, top-i)
			if !ok {
				return failed(errorf(op, ErrOutOfMemory, "r", "is "+strconv.Itoa(r)+", which makes more combinations of "+strconv.Itoa(n)+
					" elements than an int counts", "use a smaller r or a shorter vector"))
			}
			count = c / (i + 1)
		}
	}
	total, ok := dispatch.CheckedMul(count, r)
	if !ok {
		total = math.MaxInt
	}
	if err := checkHost(op, "r", total, 8); err != nil {
		return failed(err)
	}
	if count == 0 {
		// r past the elements, however large: nothing to walk.
		return relabel(x.Narrow(0, 0, 0).Reshape(0, r), op)
	}
	idx := make([]int64, 0, count*r)
	cur := make([]int, r) // all 0 with replacement
	if !withReplacement {
		for i := range cur {
			cur[i] = i
		}
	}
	for count > 0 {
		for _, c := range cur {
			idx = append(idx, int64(c))
		}
		// The next combination in lexicographic order.
		i := r - 1
		for i >= 0 {
			limit := n - 1
			if !withReplacement {
				limit = n - r + i
			}
			if cur[i] < limit {
				break
			}
			i--
		}
		if i < 0 {
			break
		}
		cur[i]++
		for j := i + 1; j < r; j++ {
			if withReplacement {
				cur[j] = cur[i]
			} else {
				cur[j] = cur[j-1] + 1
			}
		}
	}
	rows := len(idx) / r
	index := FromSlice(x.t.Device, idx, len(idx))
	out := relabel(Compose(func(a []*Tensor) *Tensor { return a[0].IndexSelect(0, index).Reshape(rows, r) }, x), op)
	if out.err != nil {
		index.Release()
		return out
	}
	ReleaseWithGraph(out, index) // IndexSelect's backward reads it
	return out
}

// trapezoidArgs checks y and dim, and x where given: a vector of the
// dim's length or a tensor that broadcasts with y. It returns dim made
// positive.
func trapezoidArgs(op string, y, x *Tensor, hasX bool, dim int) (int, error) {
	if err := y.CheckArg(op, "y"); err != nil {
		return 0, err
	}
	if y.t.Rank() == 0 {
		return 0, errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+" but y is 0-d", "give y at least one dim")
	}
	if y.t.DType == Bool {
		return 0, errorf(op, ErrDType, "y", "is bool but "+op+" adds numbers", "cast it with .Cast(lathe.Float32)")
	}
	d, err := ops.NormDim(dim, y.t.Rank(), "dim")
	if err != nil {
		return 0, located(err, op)
	}
	if !hasX {
		return d, nil
	}
	if err := x.CheckArg(op, "x"); err != nil {
		return 0, err
	}
	if x.t.DType == Bool {
		return 0, errorf(op, ErrDType, "x", "is bool but "+op+" takes numbers", "cast it with .Cast(lathe.Float32)")
	}
	n := y.t.Shape[d]
	switch {
	case x.t.Rank() == 1:
		if x.t.Shape[0] != n {
			return 0, errorf(op, ErrShape, "x", "has "+strconv.Itoa(x.t.Shape[0])+" points but y has "+strconv.Itoa(n)+" along dim "+strconv.Itoa(dim),
				"give one x value for each sample point")
		}
	default:
		// torch slices x along y's dim counted from the front.
		if d >= x.t.Rank() || x.t.Shape[d] != n {
			return 0, errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+", which has no dim "+strconv.Itoa(d)+" of y's size "+
				strconv.Itoa(n), "give one x value for each sample point")
		}
		if _, ok := ops.BroadcastShapes(x.t.Shape, y.t.Shape); !ok {
			return 0, located(broadcastError(y, x, "x", "y"), op)
		}
	}
	return d, nil
}

// trapezoidFloat is t in the float dtype trapezoid computes in: its own
// for floats, Float32 (torch's default) for integers.
func trapezoidFloat(t *Tensor, dt DType) *Tensor {
	if dt.IsFloat() {
		return t.Cast(dt)
	}
	return t.Cast(Float32)
}

// trapezoidParts are, along d, the widths dx·(y[i+1]+y[i])/2 of y's
// trapezoids (x nil: the spacing dx) in the dtype y and x promote to.
func trapezoidParts(y, x *Tensor, dx float64, d int) *Tensor {
	n := y.t.Shape[d]
	dt := y.t.DType
	if x != nil {
		if p, err := ops.BinaryDType(ops.Sub, dispatch.OperandOf(y.t), dispatch.OperandOf(x.t)); err == nil {
			dt = p
		}
	}
	yf := trapezoidFloat(y, dt)
	mid := yf.Narrow(d, 1, n-1).Add(yf.Narrow(d, 0, n-1))
	if x == nil {
		return mid.MulScalar(dx / 2)
	}
	xf := trapezoidFloat(x, dt)
	if xf.t.Rank() == 1 {
		shape := slices.Repeat([]int{1}, y.t.Rank())
		shape[d] = n
		xf = xf.Reshape(shape...)
	}
	w := xf.Narrow(d, 1, n-1).Sub(xf.Narrow(d, 0, n-1))
	return w.Mul(mid).MulScalar(0.5)
}

// Trapezoid is the trapezoidal rule's integral of y along dim with the
// samples dx apart, as torch.trapezoid(y, dx=dx, dim=dim): y's rank - 1
// dims, 0 where the dim has fewer than two samples. Integer y gives
// Float32. A 0-d or bool y is refused.
func Trapezoid(y *Tensor, dx float64, dim int) *Tensor {
	const op = "trapezoid"
	d, err := trapezoidArgs(op, y, nil, false, dim)
	if err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		if a[0].t.Shape[d] < 2 {
			return trapezoidFloat(a[0], a[0].t.DType).Sum(d).MulScalar(0)
		}
		return trapezoidParts(a[0], nil, dx, d).Sum(d)
	}, y), op)
}

// TrapezoidX is the trapezoidal rule's integral of y along dim at the
// sample points x, as torch.trapezoid(y, x, dim=dim): x is a vector of the
// dim's length, or a tensor that broadcasts with y whose dim (counted from
// the front, as torch slices it) has that length; the widths broadcast
// with y. The result's dtype is y's and x's promoted
// (Float32 for integers). Where the dim has fewer than two samples the
// result is zeros of y's shape without it (torch's, with an x of higher
// rank than y, takes a shape from x there).
func TrapezoidX(y, x *Tensor, dim int) *Tensor {
	const op = "trapezoid"
	d, err := trapezoidArgs(op, y, x, true, dim)
	if err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		if a[0].t.Shape[d] < 2 {
			return trapezoidFloat(a[0], a[0].t.DType).Sum(d).MulScalar(0)
		}
		return trapezoidParts(a[0], a[1], 0, d).Sum(d)
	}, y, x), op)
}

// CumulativeTrapezoid is the running trapezoidal integral of y along dim
// with the samples dx apart, as torch.cumulative_trapezoid(y, dx=dx,
// dim=dim): the dim has one element fewer (none for an empty one).
func CumulativeTrapezoid(y *Tensor, dx float64, dim int) *Tensor {
	const op = "cumulative_trapezoid"
	d, err := trapezoidArgs(op, y, nil, false, dim)
	if err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		if a[0].t.Shape[d] < 2 {
			return trapezoidFloat(a[0], a[0].t.DType).Narrow(d, 0, 0)
		}
		return trapezoidParts(a[0], nil, dx, d).CumSum(d)
	}, y), op)
}

// CumulativeTrapezoidX is the running trapezoidal integral of y along dim
// at the sample points x, as torch.cumulative_trapezoid(y, x, dim=dim)
// (x as TrapezoidX's).
func CumulativeTrapezoidX(y, x *Tensor, dim int) *Tensor {
	const op = "cumulative_trapezoid"
	d, err := trapezoidArgs(op, y, x, true, dim)
	if err != nil {
		return failed(err)
	}
	return relabel(Compose(func(a []*Tensor) *Tensor {
		if a[0].t.Shape[d] < 2 {
			return trapezoidFloat(a[0], a[0].t.DType).Narrow(d, 0, 0)
		}
		return trapezoidParts(a[0], a[1], 0, d).CumSum(d)
	}, y, x), op)
}
