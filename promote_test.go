package lathe

import (
	"errors"
	"math"
	"slices"
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
	for dt := Float32; dt.Valid(); dt++ {
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
		want := c.Result
		if want == "int16" {
			want = "int32" // uint8 with int8: lathe has no int16 (dispatch.ties)
		}
		if got.String() != want {
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
		v64, err = got.To(CPU).Cast(Float64).Float64s() // wgpu:0 has int64 but no float64
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

// TestPromotedGrad: the casts that promotion inserts are on the tape, so
// each input's gradient comes back in its own dtype: d/dx of
// (x + y).sum() for a float32 x and a float64 y is float32 ones and
// float64 ones, as torch's. Mul, Div and Where of mixed dtypes match
// central differences in float64, through the float32 input's rounding.
func TestPromotedGrad(t *testing.T) {
	x := FromSlice(CPU, []float32{1.5, -2, 0.25}).RequireGrad()
	y := FromSlice(CPU, []float64{2, 0.5, -3}).RequireGrad()
	if err := x.Add(y).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	gx, errx := x.Grad().Float32s()
	gy, erry := y.Grad().Float64s()
	if errx != nil || erry != nil || x.Grad().DType() != Float32 || y.Grad().DType() != Float64 {
		t.Fatalf("grads %v %v (%v, %v), want float32 and float64", x.Grad().DType(), y.Grad().DType(), errx, erry)
	}
	for i := range gx {
		if gx[i] != 1 || gy[i] != 1 {
			t.Fatalf("grads %v %v, want ones", gx, gy)
		}
	}
	// A 0-d float64 does not lift a float32 x: the gradient stays float32,
	// and the 0-d's is the sum, in float64.
	x.ZeroGrad()
	s := Scalar(CPU, 3.0).RequireGrad()
	out := x.Mul(s)
	if out.DType() != Float32 {
		t.Fatalf("float32 · 0-d float64 is %v, want float32", out.DType())
	}
	if err := out.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Grad().Float64s(); err != nil || s.Grad().DType() != Float64 || g[0] != -0.25 {
		t.Fatalf("d/ds of sum(x·s) is %v %v (%v), want float64 -0.25", s.Grad().DType(), g, err)
	}

	// Central differences in y (float64; x is fixed, its float32 values
	// exact in float64).
	cond := FromSlice(CPU, []bool{true, false, true})
	fns := map[string]func(x, y *Tensor) *Tensor{
		"mul":   func(x, y *Tensor) *Tensor { return x.Mul(y).Mul(y) },
		"div":   func(x, y *Tensor) *Tensor { return x.Div(y) },
		"where": func(x, y *Tensor) *Tensor { return Where(cond, x, y.Mul(y)) },
	}
	yv := []float64{2, 0.5, -3}
	for name, f := range fns {
		y := FromSlice(CPU, yv).RequireGrad()
		x := FromSlice(CPU, []float32{1.5, -2, 0.25}).RequireGrad()
		if err := f(x, y).Sum().Backward(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g, _ := y.Grad().Float64s()
		if x.Grad().DType() != Float32 {
			t.Errorf("%s: x's grad is %v, want float32", name, x.Grad().DType())
		}
		for i := range yv {
			const h = 1e-6
			at := func(d float64) float64 {
				v := append([]float64(nil), yv...)
				v[i] += d
				s, _ := f(FromSlice(CPU, []float32{1.5, -2, 0.25}), FromSlice(CPU, v)).Sum().Float64s()
				return s[0]
			}
			if fd := (at(h) - at(-h)) / (2 * h); math.Abs(fd-g[i]) > 1e-6*max(1, math.Abs(fd)) {
				t.Errorf("%s: d/dy[%d] is %v, central difference %v", name, i, g[i], fd)
			}
		}
	}
}

// TestPromotedNarrow: the narrow dtypes promote by the same table on the
// cpu, values included: float16 with bfloat16 meet in float32, int8 with
// uint8 in int32 (torch: int16, which lathe lacks).
func TestPromotedNarrow(t *testing.T) {
	f := func(dt DType, v ...float64) *Tensor { return FromSlice(CPU, v).Cast(dt) }
	for _, c := range []struct {
		name string
		got  *Tensor
		dt   DType
		want []float64
	}{
		{"f16+f32", f(Float16, 1.5, -2).Add(f(Float32, 0.25, 1)), Float32, []float64{1.75, -1}},
		{"f16+bf16", f(Float16, 1.5, -2).Add(f(BFloat16, 0.25, 1)), Float32, []float64{1.75, -1}},
		{"i8+u8", f(Int8, -100, 7).Add(f(Uint8, 200, 255)), Int32, []float64{100, 262}},
		{"u8*2.5", f(Uint8, 2, 3).MulScalar(2.5), Float32, []float64{5, 7.5}},
		{"bf16+f64 0-d", f(BFloat16, 1, 2).Add(Scalar(CPU, 0.5)), BFloat16, []float64{1.5, 2.5}},
		{"i8<u8", f(Int8, -1, 7).Lt(f(Uint8, 255, 3)), Bool, []float64{1, 0}},
	} {
		if err := c.got.Err(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		v, _ := fzHost(c.got)
		if c.got.DType() != c.dt || !slices.Equal(v, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.name, c.got.DType(), v, c.dt, c.want)
		}
	}
}
