package lathe

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// The reference values of TestReduceFloat and TestReduceInt, and their
// data, are PyTorch 1.13's, written to ops_torchref_test.go by
// build/torchref/literals.py from the torch expression of each case name.

// reduceCase is a reduction by name; its reference is the entry of that
// name in torchReduceFloat or torchReduceInt.
type reduceCase struct {
	name string
	f    func(x *Tensor) *Tensor
}

var (
	nan_ = math.NaN()
	inf_ = math.Inf(1)
)

// floatReduceCases are checked against torch's float64 results; the
// float32 run checks the same values within float32's tolerance.
var floatReduceCases = []reduceCase{
	{"sum/all", func(x *Tensor) *Tensor { return x.Sum() }},
	{"sum/dims[0]", func(x *Tensor) *Tensor { return x.Sum(0) }},
	{"sum/dims[1]", func(x *Tensor) *Tensor { return x.Sum(1) }},
	{"sum/dims[-1]", func(x *Tensor) *Tensor { return x.Sum(-1) }},
	{"sum/dims[0,2]", func(x *Tensor) *Tensor { return x.Sum(0, 2) }},
	{"sum/dims[2,0]", func(x *Tensor) *Tensor { return x.Sum(2, 0) }},
	{"sum/dims[1]/keepdim", func(x *Tensor) *Tensor { return x.SumKeepDim(1) }},
	{"sum/dims[0,2]/keepdim", func(x *Tensor) *Tensor { return x.SumKeepDim(0, 2) }},
	{"sum/all/keepdim", func(x *Tensor) *Tensor { return x.SumKeepDim() }},
	{"mean/all", func(x *Tensor) *Tensor { return x.Mean() }},
	{"mean/dims[1]", func(x *Tensor) *Tensor { return x.Mean(1) }},
	{"mean/dims[0,2]/keepdim", func(x *Tensor) *Tensor { return x.MeanKeepDim(0, -1) }},
	{"prod/dims[2]", func(x *Tensor) *Tensor { return x.Prod(2) }},
	{"prod/dims[0]/keepdim", func(x *Tensor) *Tensor { return x.ProdKeepDim(0) }},
	{"max/all", func(x *Tensor) *Tensor { return x.Max() }},
	{"max/dims[1]", func(x *Tensor) *Tensor { return x.Max(1) }},
	{"max/dims[-1]/keepdim", func(x *Tensor) *Tensor { return x.MaxKeepDim(-1) }},
	{"max/dims[0,1]", func(x *Tensor) *Tensor { return x.Max(0, 1) }},
	{"min/all", func(x *Tensor) *Tensor { return x.Min() }},
	{"min/dims[0]", func(x *Tensor) *Tensor { return x.Min(0) }},
	{"min/dims[1,2]/keepdim", func(x *Tensor) *Tensor { return x.MinKeepDim(1, 2) }},
	{"var/unbiased/dims[2]", func(x *Tensor) *Tensor { return x.Var(true, 2) }},
	{"var/biased/dims[0,1]", func(x *Tensor) *Tensor { return x.Var(false, 0, 1) }},
	{"var/unbiased/all", func(x *Tensor) *Tensor { return x.Var(true) }},
	{"var/biased/dims[1]/keepdim", func(x *Tensor) *Tensor { return x.VarKeepDim(false, 1) }},
	{"std/unbiased/all", func(x *Tensor) *Tensor { return x.Std(true) }},
	{"std/biased/dims[-1]", func(x *Tensor) *Tensor { return x.Std(false, -1) }},
	{"std/unbiased/dims[1]/keepdim", func(x *Tensor) *Tensor { return x.StdKeepDim(true, 1) }},
	{"logsumexp/all", func(x *Tensor) *Tensor { return x.LogSumExp() }},
	{"logsumexp/dims[2]", func(x *Tensor) *Tensor { return x.LogSumExp(2) }},
	{"logsumexp/dims[0]/keepdim", func(x *Tensor) *Tensor { return x.LogSumExpKeepDim(0) }},
	{"argmax/flat", func(x *Tensor) *Tensor { return x.ArgMax() }},
	{"argmax/dims[1]", func(x *Tensor) *Tensor { return x.ArgMax(1) }},
	{"argmax/dims[2]/keepdim", func(x *Tensor) *Tensor { return x.ArgMaxKeepDim(2) }},
	{"argmin/flat", func(x *Tensor) *Tensor { return x.ArgMin() }},
	{"argmin/dims[0]", func(x *Tensor) *Tensor { return x.ArgMin(0) }},
	{"argmin/dims[-1]/keepdim", func(x *Tensor) *Tensor { return x.ArgMinKeepDim(-1) }},
	{"cumsum/dim0", func(x *Tensor) *Tensor { return x.CumSum(0) }},
	{"cumsum/dim1", func(x *Tensor) *Tensor { return x.CumSum(1) }},
	{"cumsum/dim-1", func(x *Tensor) *Tensor { return x.CumSum(-1) }},
}

var intReduceCases = []reduceCase{
	{"sum/all", func(x *Tensor) *Tensor { return x.Sum() }},
	{"sum/dims[0,2]", func(x *Tensor) *Tensor { return x.Sum(0, 2) }},
	{"sum/dims[1]/keepdim", func(x *Tensor) *Tensor { return x.SumKeepDim(1) }},
	{"prod/dims[2]", func(x *Tensor) *Tensor { return x.Prod(2) }},
	{"max/dims[1]", func(x *Tensor) *Tensor { return x.Max(1) }},
	{"min/all", func(x *Tensor) *Tensor { return x.Min() }},
	{"argmax/flat", func(x *Tensor) *Tensor { return x.ArgMax() }},
	{"argmax/dims[2]", func(x *Tensor) *Tensor { return x.ArgMax(2) }},
	{"argmin/dims[0]/keepdim", func(x *Tensor) *Tensor { return x.ArgMinKeepDim(0) }},
	{"cumsum/dim2", func(x *Tensor) *Tensor { return x.CumSum(2) }},
	{"cumsum/dim0", func(x *Tensor) *Tensor { return x.CumSum(0) }},
}

// values64 reads any tensor's elements as float64s, failing the test on an
// error.
func values64(t *testing.T, x *Tensor) []float64 {
	t.Helper()
	data, err := x.host("test")
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return asFloat64s(data)
}

// close reports whether got is want within tol relative (NaN equals NaN,
// infinities must match exactly).
func closeTo(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want):
		return math.IsNaN(got)
	case math.IsInf(want, 0):
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func checkValues(t *testing.T, got *Tensor, shape []int, want []float64, tol float64) {
	t.Helper()
	if err := got.Err(); err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if !slices.Equal(got.Shape(), shape) {
		t.Fatalf("shape %v, want %v", got.Shape(), shape)
	}
	vals := values64(t, got)
	if len(vals) != len(want) {
		t.Fatalf("got %d values, want %d", len(vals), len(want))
	}
	for i := range want {
		if !closeTo(vals[i], want[i], tol) {
			t.Fatalf("element %d = %v, want %v (all: %v)", i, vals[i], want[i], vals)
		}
	}
}

func wantDType(name string, x DType) DType {
	if len(name) >= 3 && name[:3] == "arg" {
		return Int64
	}
	return x
}

func TestReduceFloat(t *testing.T) {
	for _, dt := range []struct {
		name string
		x    *Tensor
		tol  float64
	}{
		{"f32", FromSlice(CPU, reduceData, 2, 3, 4).Cast(Float32), 1e-6},
		{"f64", FromSlice(CPU, reduceData, 2, 3, 4), 1e-12},
	} {
		for _, c := range floatReduceCases {
			t.Run(c.name+"/"+dt.name, func(t *testing.T) {
				got, want := c.f(dt.x), torchRef(t, torchReduceFloat, c.name)
				checkValues(t, got, want.Shape, want.Values, dt.tol)
				if w := wantDType(c.name, dt.x.DType()); got.DType() != w {
					t.Errorf("dtype %v, want %v", got.DType(), w)
				}
			})
		}
	}
}

func TestReduceInt(t *testing.T) {
	for _, dt := range []DType{Int32, Int64} {
		x := FromSlice(CPU, reduceInts, 2, 3, 4).Cast(dt)
		for _, c := range intReduceCases {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				got, want := c.f(x), torchRef(t, torchReduceInt, c.name)
				checkValues(t, got, want.Shape, want.Values, 0)
				// As torch's: sums, products and indices are int64,
				// the extremes keep the dtype.
				w := Int64
				if strings.HasPrefix(c.name, "max") || strings.HasPrefix(c.name, "min") {
					w = dt
				}
				if got.DType() != w {
					t.Errorf("dtype %v, want %v", got.DType(), w)
				}
			})
		}
	}
}

// torchRef is the reference named name, failing the test where
// build/torchref/literals.py wrote none.
func torchRef(t *testing.T, refs map[string]torchValue, name string) torchValue {
	t.Helper()
	v, ok := refs[name]
	if !ok {
		t.Fatalf("no torch reference %q: add its torch expression to build/torchref/literals.py and run make refs", name)
	}
	return v
}

// TestTorchRefsUsed: every reference literals.py wrote has its case, so
// that a renamed case cannot leave its reference unchecked.
func TestTorchRefsUsed(t *testing.T) {
	for _, set := range []struct {
		refs  map[string]torchValue
		names []string
	}{
		{torchReduceFloat, caseNames(floatReduceCases)},
		{torchReduceInt, caseNames(intReduceCases)},
		{torchNN, nnValueNames},
	} {
		for name := range set.refs {
			if !slices.Contains(set.names, name) {
				t.Errorf("torch reference %q has no case", name)
			}
		}
	}
}

func caseNames(cs []reduceCase) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return out
}

// TestReduceSpecial checks edge cases by their rules rather than against
// torch: identities of empty reductions, 0-d tensors, NaN and ties, the
// float64 accumulation of float32 sums and the wrapping of int32 ones
// (where torch would widen), and values computed by hand.
func TestReduceSpecial(t *testing.T) {
	scalar := Scalar(CPU, 3.5)
	empty := Zeros(CPU, Float32, 2, 0)
	nan := FromSlice(CPU, []float64{1, nan_, 3, nan_})
	big := FromSlice(CPU, []float32{16777216, 1, 1, 1, 1})
	cases := []struct {
		name  string
		got   *Tensor
		shape []int
		want  []float64
	}{
		// A 0-d tensor takes dim 0 and -1, and reducing it gives it back.
		{"sum/0d", scalar.Sum(), []int{}, []float64{3.5}},
		{"sum/0d/dims[0]", scalar.Sum(0), []int{}, []float64{3.5}},
		{"sum/0d/dims[-1]/keepdim", scalar.SumKeepDim(-1), []int{}, []float64{3.5}},
		{"prod/0d", scalar.Prod(), []int{}, []float64{3.5}},
		{"mean/0d", scalar.Mean(0), []int{}, []float64{3.5}},
		{"max/0d", scalar.Max(), []int{}, []float64{3.5}},
		{"min/0d/dims[0]", scalar.Min(0), []int{}, []float64{3.5}},
		{"logsumexp/0d", scalar.LogSumExp(), []int{}, []float64{3.5}},
		{"var/biased/0d", scalar.Var(false), []int{}, []float64{0}},
		{"var/unbiased/0d", scalar.Var(true), []int{}, []float64{nan_}}, // N-1 = 0: 0/0
		{"argmax/0d", scalar.ArgMax(), []int{}, []float64{0}},
		{"argmin/0d/dims[0]", scalar.ArgMin(0), []int{}, []float64{0}},
		{"cumsum/0d", scalar.CumSum(0), []int{}, []float64{3.5}},

		// Empty reductions give the identity (PyTorch's rules).
		{"sum/empty", empty.Sum(), []int{}, []float64{0}},
		{"sum/empty/dims[1]", empty.Sum(1), []int{2}, []float64{0, 0}},
		{"sum/empty/dims[0]", empty.Sum(0), []int{0}, []float64{}},
		{"prod/empty/dims[1]", empty.Prod(1), []int{2}, []float64{1, 1}},
		{"mean/empty", empty.Mean(), []int{}, []float64{nan_}},
		{"mean/empty/dims[1]/keepdim", empty.MeanKeepDim(1), []int{2, 1}, []float64{nan_, nan_}},
		{"var/empty/dims[1]", empty.Var(true, 1), []int{2}, []float64{nan_, nan_}},
		{"logsumexp/empty/dims[1]", empty.LogSumExp(1), []int{2}, []float64{-inf_, -inf_}},
		{"max/empty/dims[0]", empty.Max(0), []int{0}, []float64{}}, // dim 0 has size 2: nothing empty is reduced
		{"argmax/empty/dims[0]", empty.ArgMax(0), []int{0}, []float64{}},
		{"cumsum/empty", empty.CumSum(1), []int{2, 0}, []float64{}},

		// NaN is the maximum and the minimum; the first one wins. Ties go
		// to the first index.
		{"argmax/nan", nan.ArgMax(), []int{}, []float64{1}},
		{"argmin/nan", nan.ArgMin(0), []int{}, []float64{1}},
		{"max/nan", nan.Max(), []int{}, []float64{nan_}},
		{"min/nan", nan.Min(), []int{}, []float64{nan_}},
		{"argmax/ties", FromSlice(CPU, []float32{1, 3, 3}).ArgMax(), []int{}, []float64{1}},
		{"argmin/ties", FromSlice(CPU, []int32{1, 1, 3}).ArgMin(), []int{}, []float64{0}},
		{"argmax/ties/dims[1]/keepdim", FromSlice(CPU, []int64{2, 2, 1, 0, 5, 5}, 2, 3).ArgMaxKeepDim(1), []int{2, 1}, []float64{0, 1}},

		// logsumexp is shifted by the maximum; infinite maxima pass through.
		{"logsumexp/all-neg-inf", FromSlice(CPU, []float64{-inf_, -inf_}).LogSumExp(), []int{}, []float64{-inf_}},
		{"logsumexp/pos-inf", FromSlice(CPU, []float64{inf_, 1, -inf_}).LogSumExp(), []int{}, []float64{inf_}},
		{"logsumexp/large", FromSlice(CPU, []float32{1000, 1000}).LogSumExp(), []int{}, []float64{1000 + math.Ln2}},
		{"logsumexp/small", FromSlice(CPU, []float64{-1000, -1000}).LogSumExp(0), []int{}, []float64{-1000 + math.Ln2}},
		{"logsumexp/nan", nan.LogSumExp(), []int{}, []float64{nan_}},

		// float32 sums accumulate in float64: a float32 running sum would
		// stay at 2^24.
		{"sum/f32/accumulate", big.Sum(), []int{}, []float64{16777220}},
		{"mean/f32/accumulate", big.Mean(), []int{}, []float64{16777220.0 / 5}},
		{"cumsum/f32/accumulate", big.CumSum(0), []int{5}, []float64{16777216, 16777216, 16777218, 16777220, 16777220}},
		// int32 sums to int64, as PyTorch's, so it does not wrap.
		{"sum/i32/widens", FromSlice(CPU, []int32{math.MaxInt32, 1}).Sum(), []int{}, []float64{math.MaxInt32 + 1}},
		{"cumsum/i32/widens", FromSlice(CPU, []int32{math.MaxInt32, 1}).CumSum(0), []int{2}, []float64{math.MaxInt32, math.MaxInt32 + 1}},
		{"prod/u8/widens", FromSlice(CPU, []uint8{200, 3}).Prod(), []int{}, []float64{600}},
		// A bool sum counts the true values.
		{"sum/bool/counts", FromSlice(CPU, []bool{true, false, true, true}, 2, 2).Sum(1), []int{2}, []float64{1, 2}},
		{"cumsum/bool/counts", FromSlice(CPU, []bool{true, false, true}).CumSum(0), []int{3}, []float64{1, 1, 2}},
		{"prod/bool", FromSlice(CPU, []bool{true, false}).Prod(), []int{}, []float64{0}},
		{"sum/i64/large", FromSlice(CPU, []int64{math.MaxInt64 - 1, 1}).Sum(), []int{}, []float64{math.MaxInt64}},

		// var is two-pass: a large mean does not cancel the deviations.
		{"var/f32/offset", FromSlice(CPU, []float32{1e6 + 1, 1e6 + 2, 1e6 + 3}).Var(true), []int{}, []float64{1}},
		{"std/biased/1elem", FromSlice(CPU, []float64{2}).Std(false), []int{}, []float64{0}},
		{"std/unbiased/1elem", FromSlice(CPU, []float64{2}).Std(true), []int{}, []float64{nan_}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkValues(t, c.got, c.shape, c.want, 1e-6) })
	}
}

func TestReduceErrors(t *testing.T) {
	x := FromSlice(CPU, reduceData, 2, 3, 4)
	b := x.GtScalar(0)
	i := x.Cast(Int32)
	cases := []struct {
		name string
		got  *Tensor
		kind error
	}{
		{"max/bool", b.Max(), ErrDType},
		{"argmax/bool", b.ArgMax(), ErrDType},
		{"mean/i32", i.Mean(), ErrDType},
		{"var/i32", i.Var(true), ErrDType},
		{"std/i32", i.StdKeepDim(false, 0), ErrDType},
		{"logsumexp/i32", i.LogSumExp(), ErrDType},
		{"sum/dims[3]", x.Sum(3), ErrIndex},
		{"sum/dims[-4]", x.SumKeepDim(-4), ErrIndex},
		{"mean/dims[7]", x.Mean(0, 7), ErrIndex},
		{"var/dims[9]", x.Var(true, 9), ErrIndex},
		{"max/dims[3]", x.Max(3), ErrIndex},
		{"argmax/dims[3]", x.ArgMax(3), ErrIndex},
		{"argmin/keepdim/dims[-5]", x.ArgMinKeepDim(-5), ErrIndex},
		{"cumsum/dim[3]", x.CumSum(3), ErrIndex},
		{"sum/0d/dims[1]", Scalar(CPU, float32(1)).Sum(1), ErrIndex},
		{"sum/dims[0,0]", x.Sum(0, 0), ErrValue},
		{"mean/dims[0,-3]", x.Mean(0, -3), ErrValue},
		{"argmax/dims[0,1]", x.ArgMax(0, 1), ErrValue},
		{"max/empty", Zeros(CPU, Float32, 2, 0).Max(), ErrShape},
		{"max/empty/dims[1]", Zeros(CPU, Float32, 2, 0).Max(1), ErrShape},
		{"min/empty/dims[-1]/keepdim", Zeros(CPU, Int32, 0, 0).MinKeepDim(-1), ErrShape},
		{"argmax/empty", Zeros(CPU, Float64, 0).ArgMax(), ErrShape},
		{"argmin/empty/dims[0]", Zeros(CPU, Int64, 0, 3).ArgMin(0), ErrShape},
		{"sum/sticky", x.Sum(5).Mean(), ErrIndex},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.got.Err()
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
			var e *Error
			if !errors.As(err, &e) || e.Op == "" || e.Site == "" {
				t.Errorf("error %#v lacks op or call site", err)
			}
		})
	}
}
