package lathe

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Tests of values and truth: isnan, isinf, isposinf, isneginf, isfinite,
// nan_to_num, any and all. Each is a composite of comparisons, where and
// sums that every backend has, so each runs on every device and dtype
// those do. The predicates give Bool, as torch's: an integer or bool x has
// no NaN and no infinity, so its answer is a constant of x's shape.
// nan_to_num routes the gradient through where, so it is zero where a value
// was replaced, as torch's (derivatives.yaml "nan_to_num": grad *
// at::isfinite(self)).

// predicateAttrs say which test a predicate op makes.
type predicateAttrs struct{ test int }

const (
	testNaN = iota
	testInf
	testPosInf
	testNegInf
	testFinite
)

func predicateOp(name string) *dispatch.Op[predicateAttrs] {
	return composite(name, []string{"x"}, func(in []*Tensor, a predicateAttrs) *Tensor { return predicate(name, in[0], a.test) })
}

var (
	opIsNaN    = predicateOp("isnan")
	opIsInf    = predicateOp("isinf")
	opIsPosInf = predicateOp("isposinf")
	opIsNegInf = predicateOp("isneginf")
	opIsFinite = predicateOp("isfinite")
)

// IsNaN is true where x is NaN, as torch.isnan; an integer or bool x gives
// all false.
func (x *Tensor) IsNaN() *Tensor { return apply(opIsNaN, predicateAttrs{testNaN}, x) }

// IsInf is true where x is +Inf or -Inf, as torch.isinf; an integer or
// bool x gives all false.
func (x *Tensor) IsInf() *Tensor { return apply(opIsInf, predicateAttrs{testInf}, x) }

// IsPosInf is true where x is +Inf, as torch.isposinf.
func (x *Tensor) IsPosInf() *Tensor { return apply(opIsPosInf, predicateAttrs{testPosInf}, x) }

// IsNegInf is true where x is -Inf, as torch.isneginf.
func (x *Tensor) IsNegInf() *Tensor { return apply(opIsNegInf, predicateAttrs{testNegInf}, x) }

// IsFinite is true where x is neither NaN nor infinite, as torch.isfinite;
// an integer or bool x gives all true.
func (x *Tensor) IsFinite() *Tensor { return apply(opIsFinite, predicateAttrs{testFinite}, x) }

func predicate(op string, x *Tensor, test int) *Tensor {
	if !x.t.DType.IsFloat() {
		return x.joined(full(op, x.t.Device, Bool, b2f(test == testFinite), x.t.Shape))
	}
	switch test {
	case testNaN:
		return x.Ne(x)
	case testInf:
		return x.Abs().EqScalar(math.Inf(1))
	case testPosInf:
		return x.EqScalar(math.Inf(1))
	case testNegInf:
		return x.EqScalar(math.Inf(-1))
	}
	return x.Abs().LtScalar(math.Inf(1)) // false for NaN and ±Inf
}

// nanToNumAttrs are the values nan_to_num puts in place of NaN, +Inf and
// -Inf.
type nanToNumAttrs struct{ nan, posInf, negInf float64 }

var opNanToNum = composite("nan_to_num", []string{"x"}, func(in []*Tensor, a nanToNumAttrs) *Tensor {
	x := in[0]
	if !x.t.DType.IsFloat() {
		return x // nothing to replace, as torch's copy
	}
	const op = "nan_to_num"
	out := Where(x.EqScalar(math.Inf(-1)), x.scalarLike(op, a.negInf), x)
	out = Where(x.EqScalar(math.Inf(1)), x.scalarLike(op, a.posInf), out)
	return Where(x.Ne(x), x.scalarLike(op, a.nan), out)
})

// NanToNum replaces NaN with 0, +Inf with the largest finite value of x's
// dtype and -Inf with the lowest, as torch.nan_to_num with its defaults.
// An integer or bool x is returned as it is. The gradient is zero where a
// value was replaced.
func (x *Tensor) NanToNum() *Tensor {
	if err := x.check("nan_to_num"); err != nil {
		return failed(err)
	}
	m := maxFinite(x.t.DType)
	return apply(opNanToNum, nanToNumAttrs{nan: 0, posInf: m, negInf: -m}, x)
}

// NanToNumWith replaces NaN with nan, +Inf with posInf and -Inf with negInf,
// as torch.nan_to_num(x, nan, posinf, neginf); each is rounded to x's dtype
// as torch rounds it (1e300 in a float32 tensor is +Inf). An integer or bool
// x is returned as it is.
func (x *Tensor) NanToNumWith(nan, posInf, negInf float64) *Tensor {
	return apply(opNanToNum, nanToNumAttrs{nan: nan, posInf: posInf, negInf: negInf}, x)
}

// maxFinite is the largest finite value of a float dtype (0 for others,
// which nan_to_num leaves alone).
func maxFinite(dt DType) float64 {
	switch dt {
	case Float64:
		return math.MaxFloat64
	case Float32:
		return math.MaxFloat32
	case Float16:
		return 65504
	case BFloat16:
		return 0x1.fep127
	}
	return 0
}

// truthAttrs are the attributes of any and all: the dims to reduce (none
// for all of them) and whether to keep them as size 1.
type truthAttrs struct {
	dims []int
	keep bool
}

var (
	opAny = composite("any", []string{"x"}, func(in []*Tensor, a truthAttrs) *Tensor { return truth(in[0], a, true) })
	opAll = composite("all", []string{"x"}, func(in []*Tensor, a truthAttrs) *Tensor { return truth(in[0], a, false) })
)

// Any is true where some element of x over dims is nonzero (NaN counts),
// as torch.any; no dims means all of them, giving a 0-d tensor. Dims may
// be negative. An empty set of elements gives false. The result is Bool
// for every dtype but Uint8, which gives Uint8 0 or 1, as torch's.
func (x *Tensor) Any(dims ...int) *Tensor {
	return apply(opAny, truthAttrs{dims: append([]int(nil), dims...)}, x)
}

// AnyKeepDim is Any keeping the reduced dims as size 1.
func (x *Tensor) AnyKeepDim(dims ...int) *Tensor {
	return apply(opAny, truthAttrs{dims: append([]int(nil), dims...), keep: true}, x)
}

// All is true where every element of x over dims is nonzero (NaN counts),
// as torch.all; otherwise as Any. An empty set of elements gives true.
func (x *Tensor) All(dims ...int) *Tensor {
	return apply(opAll, truthAttrs{dims: append([]int(nil), dims...)}, x)
}

// AllKeepDim is All keeping the reduced dims as size 1.
func (x *Tensor) AllKeepDim(dims ...int) *Tensor {
	return apply(opAll, truthAttrs{dims: append([]int(nil), dims...), keep: true}, x)
}

// truth counts the elements that decide any (the nonzero ones) or all (the
// zeros) in float32: a count of ones is never 0 unless there are none,
// however it rounds, where an integer count could wrap to 0.
func truth(x *Tensor, a truthAttrs, any bool) *Tensor {
	var hits *Tensor
	if any {
		hits = x.NeScalar(0)
	} else {
		hits = x.EqScalar(0)
	}
	n := hits.Cast(Float32)
	if a.keep {
		n = n.SumKeepDim(a.dims...)
	} else {
		n = n.Sum(a.dims...)
	}
	var out *Tensor
	if any {
		out = n.GtScalar(0)
	} else {
		out = n.EqScalar(0)
	}
	if x.t.DType == Uint8 {
		out = out.Cast(Uint8)
	}
	return out
}
