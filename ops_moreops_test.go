package lathe

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// Tests of the composites of ops_nan.go and their kin beyond the
// conformance suite (internal/conformance, moreops.json, which compares
// their values and gradients with torch's on every device): their rows of
// the bad-input table, and the errors that name op and argument.

// biMoreOps are the bad-input rows of the composites.
func biMoreOps() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"isnan": (*Tensor).IsNaN, "isinf": (*Tensor).IsInf, "isposinf": (*Tensor).IsPosInf,
		"isneginf": (*Tensor).IsNegInf, "isfinite": (*Tensor).IsFinite, "nan_to_num": (*Tensor).NanToNum,
	} {
		t[name] = biAnyDType(biUnary(f))
	}
	t["any"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { return x.Any(d) }))
	t["all"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { return x.AllKeepDim(d) }))
	return t
}

// moreOpsErr checks that err is a *lathe.Error of kind that names op and
// arg and says how to fix it.
func moreOpsErr(t *testing.T, what string, err, kind error, op, arg string) {
	t.Helper()
	var e *Error
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %v", what, kind)
	case !errors.As(err, &e):
		t.Errorf("%s: %v (%T) is not a *lathe.Error", what, err, err)
	case !errors.Is(err, kind):
		t.Errorf("%s: %v, want kind %v", what, err, kind)
	case e.Op != op || e.Arg != arg:
		t.Errorf("%s: %v names op %q and argument %q, want %q and %q", what, err, e.Op, e.Arg, op, arg)
	case !strings.HasPrefix(err.Error(), "lathe: "+op+":"):
		t.Errorf("%s: %q does not start with lathe: %s:", what, err, op)
	}
}

func TestMoreOpsTruthAndNaN(t *testing.T) {
	x := FromSlice(CPU, []float32{float32(math.NaN()), 1, 0}, 3)
	moreOpsErr(t, "any dim 1", x.Any(1).Err(), ErrIndex, "any", "dims")
	moreOpsErr(t, "all dim -2", x.AllKeepDim(-2).Err(), ErrIndex, "all", "dims")
	var nilT *Tensor
	moreOpsErr(t, "isnan of nil", nilT.IsNaN().Err(), ErrValue, "isnan", "x")
	moreOpsErr(t, "nan_to_num of nil", nilT.NanToNum().Err(), ErrValue, "nan_to_num", "x")
	for _, dt := range []DType{Float16, BFloat16} {
		v := FromSlice(CPU, []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, 2}, 5).Cast(dt)
		for name, c := range map[string]struct {
			got  *Tensor
			want []bool
		}{
			"isnan": {v.IsNaN(), []bool{true, false, false, false, false}}, "isinf": {v.IsInf(), []bool{false, true, true, false, false}},
			"isposinf": {v.IsPosInf(), []bool{false, true, false, false, false}},
			"isneginf": {v.IsNegInf(), []bool{false, false, true, false, false}},
			"isfinite": {v.IsFinite(), []bool{false, false, false, true, true}},
			"any":      {v.AnyKeepDim(0), []bool{true}}, "all": {v.All(), []bool{false}},
		} {
			if got, err := c.got.Bools(); err != nil || !slices.Equal(got, c.want) {
				t.Errorf("%s of %v %v: %v %v, want %v", name, dt, v, got, err, c.want)
			}
		}
	}
	// A float16 tensor's defaults are its own largest values.
	h := FromSlice(CPU, []float32{float32(math.Inf(1)), float32(math.Inf(-1))}, 2).Cast(Float16).NanToNum()
	if got, err := h.Float32s(); err != nil || got[0] != 65504 || got[1] != -65504 {
		t.Errorf("float16 nan_to_num of ±Inf: %v %v, want ±65504", got, err)
	}
}
