package lathe

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// FuzzElementwise draws a unary, binary, scalar or where op, dtypes,
// shapes that broadcast (or almost), strided inputs and values with NaN,
// infinities and the edges of float32 and int32, and holds the result to
// the schema's rule (dtype sets, promotion as torch.result_type from
// torch's own table, NumPy broadcasting, Bool for comparisons), to the same op on inputs expanded and copied beforehand
// (the broadcasting paths against the plain one), and to wgpu:0.
func FuzzElementwise(f *testing.F) {
	f.Add([]byte{1, 0, 0, 2, 3, 1, 2, 3, 9, 9, 9, 9, 9, 9, 9, 9})
	f.Add([]byte{0, 5, 0, 3, 2, 3, 4, 7, 11, 15, 19, 23, 27, 31})
	f.Add([]byte{2, 0, 2, 2, 2, 2, 3, 7, 0, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 2, 4, 1, 1, 2, 4, 0, 3, 7, 11})
	f.Add([]byte{1, 13, 2, 2, 2, 4, 1, 4, 1, 200, 100, 50, 25})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		switch r.intn(4) {
		case 0:
			fuzzUnary(t, r)
		case 1:
			fuzzBinary(t, r)
		case 2:
			fuzzScalar(t, r)
		default:
			fuzzWhere(t, r)
		}
	})
}

// fzOperand is a tensor of dt and shape, made strided (transposed and
// copied back) when the reader says so, so that kernels see views.
func fzOperand(r *fzReader, dt DType, shape []int) *Tensor {
	if len(shape) >= 2 && r.intn(4) == 0 {
		ts := slices.Clone(shape)
		ts[0], ts[1] = ts[1], ts[0]
		return r.tensor(dt, ts).Transpose(0, 1)
	}
	return r.tensor(dt, shape)
}

// fzBroadcastPartner is a shape that broadcasts with s most of the time:
// each dim kept, set to 1, dropped from the front, or (rarely) changed.
func fzBroadcastPartner(r *fzReader, s []int) []int {
	out := slices.Clone(s)
	if n := r.intn(len(s) + 1); r.intn(2) == 0 {
		out = out[n:]
	}
	for i := range out {
		switch r.intn(8) {
		case 0, 1:
			out[i] = 1
		case 2:
			out[i] = r.intn(5)
		}
	}
	if r.intn(8) == 0 {
		out = append([]int{1 + r.intn(3)}, out...)
	}
	return out
}

// fzElementwiseTol is the tolerance between devices: float32 math
// functions differ in their last bits.
const fzElementwiseTol = 2e-5

func fuzzUnary(t *testing.T, r *fzReader) {
	u := ops.UnaryOps[r.intn(len(ops.UnaryOps))]
	dt := fzDTypes[r.intn(len(fzDTypes))]
	shape := r.shape(4, 64)
	x := fzOperand(r, dt, shape)
	p := ops.Params{}
	var call func(in []*Tensor) *Tensor
	want := dt
	switch u.Name {
	case "clamp":
		lo, hi := r.value(), r.value()
		call = func(in []*Tensor) *Tensor { return in[0].Clamp(lo, hi) }
		if math.IsNaN(lo) || math.IsNaN(hi) || lo > hi {
			fzWant(t, "clamp", call([]*Tensor{x}), ErrValue, nil, 0)
			return
		}
		want = fzClampDType(dt, lo, hi)
	case "leaky_relu":
		p.A = r.value()
	}
	if call == nil {
		call = func(in []*Tensor) *Tensor { return apply(u.Op, p, in[0]) }
	}
	label := u.Name + "/" + dt.String() + dispatch.FormatShape(shape)
	out := fzDiff(t, label, fzElementwiseTol, call, x)
	var refuse error
	if !u.DTypes.Has(want) {
		refuse = ErrDType
	}
	fzWant(t, label, out, refuse, shape, want)
}

// fzClampDType is torch's dtype for clamp of a dt tensor with the finite
// bounds among lo and hi (an infinite one is lathe's "no bound", torch's
// None): a fractional bound takes integers and bools to float32, a whole
// one bools to int64.
func fzClampDType(dt DType, lo, hi float64) DType {
	if dt.IsFloat() {
		return dt
	}
	out := dt
	for _, v := range []float64{lo, hi} {
		switch {
		case math.IsInf(v, 0):
		case v != math.Trunc(v):
			return Float32
		case dt == Bool:
			out = Int64
		}
	}
	return out
}

func fuzzBinary(t *testing.T, r *fzReader) {
	b := ops.BinaryOps[r.intn(len(ops.BinaryOps))]
	dt := fzDTypes[r.intn(len(fzDTypes))]
	dt2 := dt
	if r.intn(8) == 0 {
		dt2 = fzDTypes[r.intn(len(fzDTypes))]
	}
	sa := r.shape(4, 64)
	sb := fzBroadcastPartner(r, sa)
	x, y := fzOperand(r, dt, sa), fzOperand(r, dt2, sb)
	label := b.Name + "/" + dt.String() + dispatch.FormatShape(sa) + "," + dt2.String() + dispatch.FormatShape(sb)
	if b.Name == "pow" && (dt.IsInt() || dt == Bool) && dt2.IsInt() {
		// An integer power overflows as the dtype wraps; only the
		// device's wrapping may differ, so compare small exponents.
		y = y.Abs().MinimumScalar(3).MaximumScalar(0) // |MinInt32| wraps to itself
	}
	call := func(in []*Tensor) *Tensor { return binary(b.Op, in[0], in[1]) }
	out := fzDiff(t, label, fzElementwiseTol, call, x, y)
	shape, ok := fzBroadcast(sa, sb)
	// The dtypes promote as torch's (fzBinaryDType); logical ops take any.
	var refuse error
	compute := fzBinaryDType(b.Name, fzOperandName(dt, sa), fzOperandName(dt2, sb))
	logical := b.Name == "logical_and" || b.Name == "logical_or"
	if logical {
		compute = dispatch.InvalidDType
	}
	switch {
	case !logical && (compute == dispatch.InvalidDType || !b.DTypes.Has(compute) && !(compute == Bool && fzBoolByInt32[b.Name])):
		refuse = ErrDType
	case !ok:
		refuse = ErrShape
	case (b.Name == "remainder" || b.Name == "fmod" || b.Name == "floor_divide") && compute.IsInt() && fzHasZero(t, y):
		refuse = ErrValue // an integer divisor of zero: torch's ZeroDivisionError
	}
	want := compute
	if b.Bool {
		want = Bool
	}
	fzWant(t, label, out, refuse, shape, want)
	if refuse != nil || out.Err() != nil || (slices.Equal(sa, shape) && slices.Equal(sb, shape)) {
		return
	}
	// Broadcasting in the kernel gives what the same op gives on the
	// inputs expanded and copied first, cast to the dtype it computed in
	// (an expanded 0-d operand is 0-d no more, and would promote as a
	// tensor).
	xe, ye := x.Expand(shape...).Contiguous(), y.Expand(shape...).Contiguous()
	if compute.Valid() {
		xe, ye = xe.Cast(compute), ye.Cast(compute)
	}
	plain := call([]*Tensor{xe, ye})
	fzSame(t, label+" vs expanded copies", out, plain, 0)
}

// fzOperandName is a tensor operand as promote.py writes it: its dtype,
// with [] for a 0-d one.
func fzOperandName(dt DType, shape []int) string {
	if len(shape) == 0 {
		return dt.String() + "[]"
	}
	return dt.String()
}

// fzResultType is torch.result_type of two operands, from torch's own
// table (promote_torchref_test.go).
func fzResultType(lhs, rhs string) DType {
	for _, c := range torchResultTypes {
		if c.LHS == lhs && c.RHS == rhs {
			return promoteDType(c.Result)
		}
	}
	panic("no torch result type for " + lhs + ", " + rhs)
}

// fzBinaryDType is the dtype that the binary op named op computes in, or
// InvalidDType where torch refuses (sub of a bool): the result type, a
// float for div and atan2.
func fzBinaryDType(op, lhs, rhs string) DType {
	if op == "sub" && (strings.HasPrefix(lhs, "bool") || strings.HasPrefix(rhs, "bool") || rhs == "true") {
		return dispatch.InvalidDType
	}
	dt := fzResultType(lhs, rhs)
	if (op == "div" || op == "atan2" || op == "special_zeta") && !dt.IsFloat() {
		dt = Float32
	}
	return dt
}

// fzBoolByInt32 are the ops that take two bools as torch does, though
// they have no bool kernel.
var fzBoolByInt32 = map[string]bool{"add": true, "mul": true, "maximum": true, "minimum": true,
	"lt": true, "le": true, "gt": true, "ge": true}

// fzBroadcast is NumPy's rule, written again here.
func fzBroadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	out := make([]int, n)
	for i := range n {
		da, db := 1, 1
		if j := len(a) - n + i; j >= 0 {
			da = a[j]
		}
		if j := len(b) - n + i; j >= 0 {
			db = b[j]
		}
		switch {
		case da == db || db == 1:
			out[i] = da
		case da == 1:
			out[i] = db
		default:
			return nil, false
		}
	}
	return out, true
}

// fzScalarOps are the root package's scalar forms.
var fzScalarOps = []struct {
	name string
	f    func(*Tensor, float64) *Tensor
	bool bool
}{
	{"add_scalar", (*Tensor).AddScalar, false}, {"sub_scalar", (*Tensor).SubScalar, false},
	{"mul_scalar", (*Tensor).MulScalar, false}, {"div_scalar", (*Tensor).DivScalar, false},
	{"pow_scalar", (*Tensor).PowScalar, false}, {"maximum_scalar", (*Tensor).MaximumScalar, false},
	{"minimum_scalar", (*Tensor).MinimumScalar, false}, {"eq_scalar", (*Tensor).EqScalar, true},
	{"ne_scalar", (*Tensor).NeScalar, true}, {"lt_scalar", (*Tensor).LtScalar, true},
	{"le_scalar", (*Tensor).LeScalar, true}, {"gt_scalar", (*Tensor).GtScalar, true},
	{"ge_scalar", (*Tensor).GeScalar, true},
}

func fuzzScalar(t *testing.T, r *fzReader) {
	op := fzScalarOps[r.intn(len(fzScalarOps))]
	dt := fzDTypes[r.intn(len(fzDTypes))]
	shape := r.shape(4, 64)
	x := fzOperand(r, dt, shape)
	s := r.value()
	if op.name == "pow_scalar" && (dt.IsInt() || dt == Bool) {
		s = math.Min(math.Abs(s), 3) // as in fuzzBinary: wrapping aside (NaN stays NaN)
	}
	label := op.name + "/" + dt.String() + dispatch.FormatShape(shape)
	out := fzDiff(t, label, fzElementwiseTol, func(in []*Tensor) *Tensor { return op.f(in[0], s) }, x)
	// The rule: s is an integer where it has no fraction and a float
	// otherwise (2 and 2.5 to torch), and promotes as torch's scalars
	// (fzBinaryDType); a dtype that the op does not take is its own error,
	// and an integer the result's dtype cannot hold an ErrValue
	// (fzScalarKind); a comparison takes any scalar and is exact, as
	// torch's.
	var refuse error
	b := ops.BinaryOps[slices.IndexFunc(ops.BinaryOps, func(b ops.BinaryOp) bool { return b.Name+"_scalar" == op.name })]
	scalar := "2"
	if s != math.Trunc(s) || math.IsInf(s, 0) {
		scalar = "2.5"
	}
	want := fzBinaryDType(b.Name, fzOperandName(dt, shape), scalar)
	switch {
	case op.bool:
		want = Bool
	case want == dispatch.InvalidDType || !b.DTypes.Has(want):
		refuse = ErrDType
	case want.IsInt():
		refuse = fzScalarKind(want, s)
	}
	fzWant(t, label, out, refuse, shape, want)
	if !op.bool || out.Err() != nil {
		return
	}
	// Every element of x is a float64 exactly (fzTensor), so a float64
	// comparison of it with s is exact; a float32 x meets s rounded to
	// float32, as torch's float32 comparison does.
	xs, _ := fzHost(x)
	got, err := fzHost(out)
	if err != nil {
		t.Fatalf("%s: reading: %v", label, err)
	}
	bound := s
	if dt == Float32 {
		bound = float64(float32(s))
	}
	for i, v := range xs {
		if w := b2f(fzCompare(b.Name, v, bound)); got[i] != w {
			t.Fatalf("%s: element %d: %v %s %v is %v, want %v", label, i, v, b.Name, s, got[i], w)
		}
	}
}

// fzCompare is a op b for the comparison named op.
func fzCompare(op string, a, b float64) bool {
	switch op {
	case "eq":
		return a == b
	case "ne":
		return a != b
	case "lt":
		return a < b
	case "le":
		return a <= b
	case "gt":
		return a > b
	}
	return a >= b
}

func fuzzWhere(t *testing.T, r *fzReader) {
	dt := fzDTypes[r.intn(len(fzDTypes))]
	cdt := Bool
	if r.intn(8) == 0 {
		cdt = fzDTypes[r.intn(len(fzDTypes))]
	}
	sc := r.shape(3, 27)
	sx, sy := fzBroadcastPartner(r, sc), fzBroadcastPartner(r, sc)
	dt2 := dt
	if r.intn(4) == 0 {
		dt2 = fzDTypes[r.intn(len(fzDTypes))]
	}
	c, x, y := fzOperand(r, cdt, sc), fzOperand(r, dt, sx), fzOperand(r, dt2, sy)
	label := "where/" + cdt.String() + dispatch.FormatShape(sc) + "," + dt.String() + dispatch.FormatShape(sx) + "," + dt2.String() + dispatch.FormatShape(sy)
	out := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return Where(in[0], in[1], in[2]) }, c, x, y)
	shape, ok := fzBroadcast(sc, sx)
	if ok {
		shape, ok = fzBroadcast(shape, sy)
	}
	var refuse error
	switch {
	case cdt != Bool:
		refuse = ErrDType
	case !ok:
		refuse = ErrShape
	}
	fzWant(t, label, out, refuse, shape, fzResultType(fzOperandName(dt, sx), fzOperandName(dt2, sy)))
}

// fzHasZero reports whether y holds a zero.
func fzHasZero(t *testing.T, y *Tensor) bool {
	v, err := y.Cast(Float64).Float64s()
	if err != nil {
		t.Fatalf("reading the divisor: %v", err)
	}
	return slices.Contains(v, 0)
}
