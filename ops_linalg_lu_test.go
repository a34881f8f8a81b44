package lathe

import (
	"math"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// Tests of ops_linalg_lu.go beyond the conformance suite
// (internal/conformance, linalg3.json, which compares values and
// gradients with torch's on every device): the bad-input rows, the
// errors, the failures on a GPU, and that nothing is left behind.

// luPivots3 are valid pivots of a 3×3 factorization on dev.
func luPivots3(dev Device) *Tensor { return FromSlice(CPU, []int32{2, 3, 3}, 3).To(dev) }

// biLinalg3 are the bad-input rows of ops_linalg_lu.go.
func biLinalg3() map[string]biOp {
	t := map[string]biOp{}
	hugeSq := func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge) }
	hugePiv := func(dev Device, shape ...int) *Tensor {
		return Ones(dev, Int32, slices.Repeat([]int{1}, len(shape))...).Expand(shape...)
	}
	one := func(f func(a *Tensor) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev)} },
			call: func(a []*Tensor) *Tensor { return f(a[0]) }, kinds: "f",
			huge: func(dev Device) *Tensor { return f(hugeSq(dev)) }}
	}
	t["logdet"] = one((*Tensor).LogDet)
	t["cholesky_inverse"] = one(func(a *Tensor) *Tensor { return a.CholeskyInverse(true) })
	t["lu_factor"] = one(func(a *Tensor) *Tensor { lu, _ := a.LUFactor(); return lu })
	t["lu_factor_ex"] = one(func(a *Tensor) *Tensor { _, _, info := a.LUFactorEx(); return info })
	t["lu"] = one(func(a *Tensor) *Tensor { _, l, _ := a.LU(); return l })
	t["cholesky_ex"] = one(func(a *Tensor) *Tensor { _, info := a.CholeskyEx(false); return info })
	t["inv_ex"] = one(func(a *Tensor) *Tensor { x, _ := a.InvEx(); return x })
	t["first_bad"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3).GtScalar(1)} },
		call: func(a []*Tensor) *Tensor { return apply(opFirstBad, none, a[0]) }, kinds: "c"}
	t["lu_factor_info"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev)} },
		call: func(a []*Tensor) *Tensor { return apply(opLUInfo, none, a[0]) }, kinds: "f"}
	t["vecdot"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Vecdot(a[1], -1) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Vecdot(biF(dev, 1), 0) }}
	t["lu_unpack"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev), luPivots3(dev)} },
		call: func(a []*Tensor) *Tensor { _, l, _ := LUUnpack(a[0], a[1]); return l }, kinds: "fi",
		huge: func(dev Device) *Tensor {
			_, l, _ := LUUnpack(biBig(dev, biHuge, biHuge, 2), hugePiv(dev, biHuge, 2))
			return l
		}}
	t["lu_solve"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{linalgSPD(dev), luPivots3(dev), biF(dev, 3, 2)}
	},
		call: func(a []*Tensor) *Tensor { return LUSolve(a[0], a[1], a[2], true, false) }, kinds: "fis",
		huge: func(dev Device) *Tensor {
			return LUSolve(hugeSq(dev), hugePiv(dev, biHuge), biBig(dev, biHuge, 1), true, false)
		}}
	for name, c := range map[string]*dispatch.Op[infoCheck]{"lu_factor_check": checkLUFactor,
		"lu_unpack_pivots_check": checkLUPivots, "lu_solve_pivots_check": checkLUSolvePivots} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 2), Zeros(dev, Int64)} },
			call: func(a []*Tensor) *Tensor { return apply(c, infoCheck{n: 2}, a[0], a[1]) }, kinds: "ai"}
	}
	return t
}

func TestLinalg3Errors(t *testing.T) {
	a := linalgSPD(CPU)
	v := FromSlice(CPU, []float32{1, 2, 3}, 3)
	piv := luPivots3(CPU)
	first := func(x, _ *Tensor) error { return x.Err() }
	linalgErr(t, "lu_factor of a vector", first(v.LUFactor()), ErrShape, "lu_factor", "A", "at least 2 dims")
	linalgErr(t, "lu_factor of float16", first(a.Cast(Float16).LUFactor()), ErrDType, "lu_factor", "A", "16-bit")
	linalgErr(t, "lu of int64", func() error { p, _, _ := a.Cast(Int64).LU(); return p.Err() }(), ErrDType, "lu", "A")
	linalgErr(t, "lu_unpack of int64 pivots", func() error { p, _, _ := LUUnpack(a, piv.Cast(Int64)); return p.Err() }(),
		ErrDType, "lu_unpack", "pivots", "Int32")
	linalgErr(t, "lu_unpack of short pivots", func() error { p, _, _ := LUUnpack(a, piv.Narrow(0, 0, 2)); return p.Err() }(),
		ErrShape, "lu_unpack", "pivots", "[3]")
	linalgErr(t, "lu_unpack of pivots out of range", func() error {
		p, _, _ := LUUnpack(a, FromSlice(CPU, []int32{1, 0, 3}, 3))
		return p.Err()
	}(), ErrValue, "lu_unpack", "pivots", "pivot number 2")
	linalgErr(t, "lu_solve of pivots out of range", LUSolve(a, FromSlice(CPU, []int32{1, 4, 3}, 3), Ones(CPU, Float32, 3, 1), true, false).Err(),
		ErrValue, "lu_solve", "pivots", "pivot number 2")
	linalgErr(t, "lu_solve of a non-square LU", LUSolve(Ones(CPU, Float32, 3, 2), piv.Narrow(0, 0, 2), Ones(CPU, Float32, 3, 1), true, false).Err(),
		ErrShape, "lu_solve", "LU", "square")
	linalgErr(t, "lu_solve of mixed dtypes", LUSolve(a, piv, Ones(CPU, Float64, 3, 1), true, false).Err(), ErrDType, "lu_solve", "B")
	linalgErr(t, "right lu_solve", LUSolve(a, piv, Ones(CPU, Float32, 3, 2), false, false).Err(), ErrShape, "lu_solve", "B", "[..., k, 3]")
	linalgErr(t, "logdet of [2,3]", Ones(CPU, Float32, 2, 3).LogDet().Err(), ErrShape, "logdet", "A", "2 by 3")
	linalgErr(t, "cholesky_ex of a vector", first(v.CholeskyEx(false)), ErrShape, "cholesky_ex", "A", "at least 2 dims")
	linalgErr(t, "inv_ex of bfloat16", first(a.Cast(BFloat16).InvEx()), ErrDType, "inv_ex", "A", "16-bit")
	linalgErr(t, "cholesky_inverse of int32", a.Cast(Int32).CholeskyInverse(false).Err(), ErrDType, "cholesky_inverse", "L")
	linalgErr(t, "vecdot of int64", v.Cast(Int64).Vecdot(v.Cast(Int64), 0).Err(), ErrDType, "vecdot", "x")
	linalgErr(t, "vecdot of mixed dtypes", v.Vecdot(v.Cast(Float64), 0).Err(), ErrDType, "vecdot", "y", "does not promote")
	linalgErr(t, "vecdot of shapes", v.Vecdot(Ones(CPU, Float32, 2), 0).Err(), ErrShape, "vecdot", "y", "broadcast")
	linalgErr(t, "vecdot dim", v.Vecdot(v, 1).Err(), ErrIndex, "vecdot", "dim")
	if got, err := v.Sum().Vecdot(v.Sum().MulScalar(2), -1).Float32s(); err != nil || got[0] != 72 {
		t.Errorf("vecdot of 0-d tensors: %v %v, want [72] (their product, as torch's)", got, err)
	}
	linalgErr(t, "vecdot of 0-d, dim 1", v.Sum().Vecdot(v.Sum(), 1).Err(), ErrIndex, "vecdot", "dim")
	var nilT *Tensor
	linalgErr(t, "lu_factor of nil", first(nilT.LUFactor()), ErrValue, "lu_factor", "A")
	linalgErr(t, "lu_solve of nil pivots", LUSolve(a, nilT, v.Unsqueeze(-1), true, false).Err(), ErrValue, "lu_solve", "pivots")
	linalgErr(t, "vecdot of nil", v.Vecdot(nilT, 0).Err(), ErrValue, "vecdot", "y")
}

// TestLinalg3Failures checks lu_factor's failure on a singular matrix on
// every device (on a GPU at the next read-back), with the batch element
// and U's place, the info of lu_factor_ex, cholesky_ex and inv_ex instead
// (no error), and logdet's NaN and -Inf.
func TestLinalg3Failures(t *testing.T) {
	for _, dev := range biDevices(t) {
		sing := FromSlice(CPU, []float32{1, 2, 3, 2, 4, 6, 1, 0, 1}, 3, 3)
		batch := Stack([]*Tensor{Eye(CPU, Float32, 3), sing}, 0).To(dev)
		lu, _ := batch.LUFactor()
		_, err := lu.Float32s()
		linalgErr(t, dev.String()+" lu_factor of a singular batch", err, ErrValue, "lu_factor", "A", "in batch element 1", "U[3,3]")
		_, _, info := batch.LUFactorEx()
		if got, err := info.Cast(Int64).Int64s(); err != nil || got[0] != 0 || got[1] != 3 {
			t.Errorf("%s: lu_factor_ex info %v %v, want [0 3]", dev, got, err)
		}
		_, cinfo := Stack([]*Tensor{Eye(CPU, Float32, 3), sing}, 0).To(dev).CholeskyEx(false)
		if got, err := cinfo.Cast(Int64).Int64s(); err != nil || got[0] != 0 || got[1] != 2 {
			t.Errorf("%s: cholesky_ex info %v %v, want [0 2]", dev, got, err)
		}
		inv, iinfo := batch.InvEx()
		if got, err := iinfo.Cast(Int64).Int64s(); err != nil || got[0] != 0 || got[1] != 3 {
			t.Errorf("%s: inv_ex info %v %v, want [0 3]", dev, got, err)
		}
		if got, err := inv.Float32s(); err != nil || got[0] != 1 || got[1] != 0 {
			t.Errorf("%s: inv_ex of a batch with a singular matrix: %v %v, want the identity first", dev, got, err)
		}
		neg := FromSlice(CPU, []float32{0, 1, 1, 0, 1, 2, 2, 4}, 2, 2, 2).To(dev)
		if got, err := neg.LogDet().Float32s(); err != nil || !math.IsNaN(float64(got[0])) || !math.IsInf(float64(got[1]), -1) {
			t.Errorf("%s: logdet %v %v, want [NaN -Inf]", dev, got, err)
		}
	}
}

// TestLinalg3LeaveNothing checks, with the collector off, that warm
// training steps through each op take no memory, called directly (the
// results it does not use released) and within Compose.
func TestLinalg3LeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := RandN(CPU, Float32, 2, 3, 3).To(dev).RequireGrad()
		y := RandN(CPU, Float32, 3).To(dev)
		spd := linalgSPD(dev)
		lu, piv := spd.LUFactor()
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"vecdot": func(x *Tensor) *Tensor { return x.Vecdot(y, -1) },
			"logdet": func(x *Tensor) *Tensor { return x.LogDet() },
			"lu_factor": func(x *Tensor) *Tensor {
				lu, piv := x.LUFactor()
				piv.Release()
				return lu
			},
			"lu_factor_ex": func(x *Tensor) *Tensor {
				lu, piv, info := x.LUFactorEx()
				piv.Release()
				info.Release()
				return lu
			},
			"lu": func(x *Tensor) *Tensor {
				p, l, u := x.LU()
				p.Release()
				l.Release()
				return u
			},
			"lu_solve":         func(x *Tensor) *Tensor { return LUSolve(lu, piv, x, true, true) },
			"cholesky_inverse": func(x *Tensor) *Tensor { return x.CholeskyInverse(false) },
			"cholesky_ex": func(x *Tensor) *Tensor {
				l, info := x.CholeskyEx(true)
				info.Release()
				return l
			},
			"inv_ex": func(x *Tensor) *Tensor {
				inv, info := x.InvEx()
				info.Release()
				return inv
			},
		} {
			warmStepsTakeNothing(t, dev, name, x, f, false)
			warmStepsTakeNothing(t, dev, name+"/composed", x, f, true)
		}
	}
}
