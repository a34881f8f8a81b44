package lathe

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// The promotion tables against torch (promote_torchref_test.go, written by
// build/torchref/promote.py): the result type of every pair of lathe's
// dtypes as tensors, 0-d tensors and Go scalars, and the dtype and values
// of add, sub, mul, div, lt, eq and where on them, on every device.

// promoteOperand parses an operand as promote.py writes it.
func promoteOperand(s string) (dt DType, p dispatch.Priority, scalar float64) {
	switch s {
	case "2":
		return Int64, dispatch.Scalar, 2
	case "2.5":
		return Float64, dispatch.Scalar, 2.5
	case "true":
		return Bool, dispatch.Scalar, 1
	}
	p = dispatch.Dimensioned
	if strings.HasSuffix(s, "[]") {
		s, p = strings.TrimSuffix(s, "[]"), dispatch.ZeroDim
	}
	return promoteDType(s), p, 0
}

func promoteDType(s string) DType {
	for dt := Float32; dt <= Bool; dt++ {
		if dt.String() == s {
			return dt
		}
	}
	return dispatch.InvalidDType
}

func TestResultTypeTorch(t *testing.T) {
	pass := 0
	for _, c := range torchResultTypes {
		a, pa, _ := promoteOperand(c.LHS)
		b, pb, _ := promoteOperand(c.RHS)
		got := dispatch.ResultType(dispatch.Operand{DType: a, Priority: pa}, dispatch.Operand{DType: b, Priority: pb})
		if got.String() != c.Result {
			t.Errorf("result_type(%s, %s) = %v, torch says %s", c.LHS, c.RHS, got, c.Result)
			continue
		}
		pass++
	}
	t.Logf("%d of %d result types as torch's", pass, len(torchResultTypes))
}

// promoteLHS, promoteRHS and promoteCond are promote.py's LHS, RHS and COND.
var (
	promoteLHS  = []float64{2.5, -2, 0}
	promoteRHS  = []float64{2, -2, 1.5}
	promoteCond = []bool{true, false, true}
)

// promoteTensor is the operand s of promote.py's data on dev.
func promoteTensor(dev Device, s string, data []float64) *Tensor {
	dt, p, _ := promoteOperand(s)
	x := fzTensor(data, Float64, []int{3}).Cast(dt) // a cast truncates and tests nonzero, as torch's
	if p == dispatch.ZeroDim {
		x = x.Narrow(0, 0, 1).Reshape()
	}
	return x.Contiguous().To(dev)
}

func TestPromotedOpsTorch(t *testing.T) {
	ops := map[string]func(x, y *Tensor) *Tensor{
		"add": (*Tensor).Add, "sub": (*Tensor).Sub, "mul": (*Tensor).Mul, "div": (*Tensor).Div,
		"lt": (*Tensor).Lt, "eq": (*Tensor).Eq,
	}
	scalarOps := map[string]func(x *Tensor, s float64) *Tensor{
		"add": (*Tensor).AddScalar, "sub": (*Tensor).SubScalar, "mul": (*Tensor).MulScalar, "div": (*Tensor).DivScalar,
		"lt": (*Tensor).LtScalar, "eq": (*Tensor).EqScalar,
	}
	for _, dev := range Devices() {
		pass, n := 0, 0
		for key, want := range torchPromoted {
			parts := strings.Split(key, "/")
			op, lhs, rhs := parts[0], parts[1], parts[2]
			if rhs == "true" {
				continue // no Go API takes a bool scalar; TestResultTypeTorch has its result type
			}
			n++
			x := promoteTensor(dev, lhs, promoteLHS)
			var got *Tensor
			switch _, p, s := promoteOperand(rhs); {
			case p == dispatch.Scalar:
				got = scalarOps[op](x, s)
			case op == "where":
				cond := FromSlice(dev, promoteCond)
				got = Where(cond, x, promoteTensor(dev, rhs, promoteRHS))
			default:
				got = ops[op](x, promoteTensor(dev, rhs, promoteRHS))
			}
			if msg := promoteCheck(dev, got, lhs, rhs, want.DType, want.Values); msg != "" {
				t.Errorf("%v: %s: %s", dev, key, msg)
				continue
			}
			pass++
		}
		t.Logf("%v: %d of %d op cases as torch's", dev, pass, n)
	}
}

// promoteCheck says how got differs from torch's dtype and values (an
// empty dtype: torch raises, and lathe must refuse with ErrDType). A
// device without a 64-bit dtype that the case needs must refuse with
// ErrUnsupported.
func promoteCheck(dev Device, got *Tensor, lhs, rhs, dtype string, values []float64) string {
	err := got.Err()
	switch {
	case !promoteHas(dev, lhs, rhs, dtype):
		if !errors.Is(err, ErrUnsupported) {
			return "wants a 64-bit dtype that " + dev.String() + " lacks, but gives " + errString(err) + ", not ErrUnsupported"
		}
		return ""
	case dtype == "":
		if !errors.Is(err, ErrDType) {
			return "torch raises, lathe gives " + errString(err)
		}
		return ""
	case err != nil:
		return "error " + err.Error()
	case got.DType().String() != dtype:
		return "dtype " + got.DType().String() + ", torch's is " + dtype
	}
	vals, err := got.Cast(Float32).Float32s()
	if got.DType() == Float64 || got.DType() == Int64 {
		var v64 []float64
		v64, err = got.Cast(Float64).Float64s()
		vals = nil
		for _, v := range v64 {
			vals = append(vals, float32(v))
		}
	}
	if err != nil {
		return "reading: " + err.Error()
	}
	for i, w := range values {
		v := float64(vals[i])
		if !(v == float64(float32(w)) || math.IsNaN(v) && math.IsNaN(w) || math.Abs(v-w) <= 1e-6*math.Abs(w)) {
			return "element " + strconv.Itoa(i) + " is " + ftoa(v) + ", torch's is " + ftoa(w)
		}
	}
	return ""
}

// promoteHas reports whether dev has every dtype of the case.
func promoteHas(dev Device, names ...string) bool {
	for _, s := range names {
		dt, p, _ := promoteOperand(s)
		if p == dispatch.Scalar || s == "" {
			continue
		}
		if Zeros(dev, dt).Err() != nil {
			return false
		}
	}
	return true
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
