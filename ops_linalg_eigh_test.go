package lathe

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// Tests of ops_linalg_eigh.go and ops_linalg_norms.go beyond the
// conformance suite (internal/conformance, linalg2.json and
// grad_linalg2.json, which compare values, gradients and Hessian-vector
// products with torch's on every device, and gradients with finite
// differences): the bad-input rows, the errors, the refusal of non-finite
// input on every device, larger matrices by their residuals, and that
// nothing leaks.

// biLinalg2 are the bad-input rows of ops_linalg_eigh.go and
// ops_linalg_norms.go.
func biLinalg2() map[string]biOp {
	t := map[string]biOp{}
	hugeSq := func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge) }
	one := func(f func(a *Tensor) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev)} },
			call: func(a []*Tensor) *Tensor { return f(a[0]) }, kinds: "f",
			huge: func(dev Device) *Tensor { return f(hugeSq(dev)) }}
	}
	t["eigh"] = one(func(a *Tensor) *Tensor { _, v := a.Eigh(false); return v })
	t["eigvalsh"] = one(func(a *Tensor) *Tensor { return a.EigvalsH(true) })
	t["svd"] = one(func(a *Tensor) *Tensor { u, _, _ := a.SVD(true); return u })
	t["svdvals"] = one((*Tensor).SVDVals)
	t["pinv"] = one((*Tensor).Pinv)
	t["matrix_rank"] = one((*Tensor).MatrixRank)
	t["cond"] = one((*Tensor).Cond)
	t["matrix_norm"] = one(func(a *Tensor) *Tensor { return a.MatrixNorm(OrdNuc) })
	t["matrix_power"] = one(func(a *Tensor) *Tensor { return a.MatrixPower(-3) })
	t["matrix_exp"] = one((*Tensor).MatrixExp)
	t["lstsq"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev), biF(dev, 3, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Lstsq(a[1]) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return hugeSq(dev).Lstsq(biBig(dev, biHuge, 1)) }}
	// (A huge multi_dot is matmul's: matmul's row has no huge case.)
	t["multi_dot"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev), biF(dev, 3, 2)} },
		call: func(a []*Tensor) *Tensor { return MultiDot(a) }, kinds: "fs"}
	for _, op := range []string{"eigh", "svd"} {
		c := map[string]*dispatch.Op[infoCheck]{"eigh": checkEigh, "svd": checkSVD}[op]
		t[op+"_check"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 2), Zeros(dev, Int64)} },
			call: func(a []*Tensor) *Tensor { return apply(c, infoCheck{n: 2}, a[0], a[1]) }, kinds: "ai"}
	}
	return t
}

func TestLinalg2Errors(t *testing.T) {
	a := linalgSPD(CPU)
	b := FromSlice(CPU, []float32{1, 2, 3}, 3)
	err := func(x, _ *Tensor) error { return x.Err() }
	linalgErr(t, "eigh of a vector", err(b.Eigh(false)), ErrShape, "eigh", "A", "at least 2 dims")
	linalgErr(t, "eigh of [2,3]", err(Ones(CPU, Float32, 2, 3).Eigh(false)), ErrShape, "eigh", "A", "2 by 3")
	linalgErr(t, "eigh of float16", err(a.Cast(Float16).Eigh(false)), ErrDType, "eigh", "A", "16-bit")
	linalgErr(t, "eigvalsh of int32", a.Cast(Int32).EigvalsH(false).Err(), ErrDType, "eigh", "A", "float32 or float64")
	linalgErr(t, "svd of a vector", func() error { u, _, _ := b.SVD(false); return u.Err() }(), ErrShape, "svd", "A", "at least 2 dims")
	linalgErr(t, "svdvals of bfloat16", a.Cast(BFloat16).SVDVals().Err(), ErrDType, "svdvals", "A", "16-bit")
	linalgErr(t, "pinv of int64", a.Cast(Int64).Pinv().Err(), ErrDType, "pinv", "A")
	linalgErr(t, "matrix_rank of a vector", b.MatrixRank().Err(), ErrShape, "matrix_rank", "A")
	linalgErr(t, "matrix_norm nuc of float16", a.Cast(Float16).MatrixNorm(OrdNuc).Err(), ErrDType, "matrix_norm", "A", "16-bit")
	linalgErr(t, "matrix_norm of an int", a.Cast(Int64).MatrixNorm(OrdFro).Err(), ErrDType, "matrix_norm", "A")
	linalgErr(t, "matrix_norm of a bad ord", a.MatrixNorm(MatrixOrd(42)).Err(), ErrValue, "matrix_norm", "ord", "MatrixOrd")
	linalgErr(t, "cond of a vector", b.Cond().Err(), ErrShape, "cond", "A")
	linalgErr(t, "matrix_power of [2,3]", Ones(CPU, Float32, 2, 3).MatrixPower(2).Err(), ErrShape, "matrix_power", "A", "square")
	linalgErr(t, "matrix_power -1 of an int", a.Cast(Int64).MatrixPower(-1).Err(), ErrDType, "matrix_power", "A")
	linalgErr(t, "matrix_exp of [2,3]", Ones(CPU, Float32, 2, 3).MatrixExp().Err(), ErrShape, "matrix_exp", "A", "square")
	linalgErr(t, "matrix_exp of float16", a.Cast(Float16).MatrixExp().Err(), ErrDType, "matrix_exp", "A", "16-bit")
	linalgErr(t, "lstsq rows", a.Lstsq(Ones(CPU, Float32, 4, 1)).Err(), ErrShape, "lstsq", "B", "rows")
	linalgErr(t, "lstsq dtypes", a.Lstsq(Ones(CPU, Float64, 3, 1)).Err(), ErrDType, "lstsq", "B", "does not promote")
	linalgErr(t, "lstsq batch", Ones(CPU, Float32, 2, 3, 3).Lstsq(Ones(CPU, Float32, 3, 3, 1)).Err(), ErrShape, "lstsq", "B", "broadcast")
	linalgErr(t, "multi_dot of one", MultiDot([]*Tensor{a}).Err(), ErrValue, "multi_dot", "tensors", "at least 2")
	linalgErr(t, "multi_dot chain", MultiDot([]*Tensor{a, Ones(CPU, Float32, 2, 2)}).Err(), ErrShape, "multi_dot", "tensors[1]", "chain")
	linalgErr(t, "multi_dot dtypes", MultiDot([]*Tensor{a, a.Cast(Float64)}).Err(), ErrDType, "multi_dot", "tensors[1]")
	linalgErr(t, "multi_dot middle vector", MultiDot([]*Tensor{a, b, a}).Err(), ErrShape, "multi_dot", "tensors[1]")
	var nilT *Tensor
	linalgErr(t, "eigh of nil", err(nilT.Eigh(false)), ErrValue, "eigh", "A")
	linalgErr(t, "multi_dot of nil", MultiDot([]*Tensor{a, nilT}).Err(), ErrValue, "multi_dot", "tensors[1]")
}

// TestLinalg2NonFinite checks that an Inf or NaN makes eigh and svd fail
// with ErrValue on every device (at the next read-back on a GPU), naming
// the batch element, and that a matrix with NaN outside the triangle eigh
// reads goes through.
func TestLinalg2NonFinite(t *testing.T) {
	for _, dev := range biDevices(t) {
		nan := float32(math.NaN())
		bad := FromSlice(CPU, []float32{1, 0, 0, 1, 1, 0, nan, 1}, 2, 2, 2).To(dev)
		read := func(x *Tensor) error { _, err := x.Float32s(); return err }
		w, _ := bad.Eigh(false)
		linalgErr(t, dev.String()+" eigh of NaN", read(w), ErrValue, "eigh", "A", "in batch element 1", "Inf or NaN")
		_, s, _ := bad.SVD(false)
		linalgErr(t, dev.String()+" svd of NaN", read(s), ErrValue, "svd", "A", "in batch element 1")
		linalgErr(t, dev.String()+" svd of Inf", read(Full(dev, Float32, math.Inf(1), 2, 2).SVDVals()), ErrValue, "svd", "A")
		// With upper, the lower triangle (the NaN) is not read.
		if v, err := bad.Narrow(0, 1, 1).EigvalsH(true).Float32s(); err != nil || v[0] != 1 || v[1] != 1 {
			t.Errorf("%s: eigvalsh with NaN below the diagonal, upper: %v %v, want [1 1]", dev, v, err)
		}
	}
}

// TestLinalg2Residuals checks larger and harder matrices than the
// conformance cases by what defines the results: A·V = V·diag(w) with
// VᵀV = I, A = U·diag(S)·Vh, pinv's Penrose conditions.
func TestLinalg2Residuals(t *testing.T) {
	maxAbs := func(x *Tensor) float64 {
		v, err := x.Abs().Amax().Item()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, n := range []int{7, 16, 33} {
		x := RandN(CPU, Float64, 2, n, n)
		a := x.Add(x.MT())
		w, v := a.Eigh(false)
		if r := maxAbs(a.MatMul(v).Sub(v.Mul(w.Unsqueeze(-2)))); r > 1e-12*float64(n) {
			t.Errorf("eigh n=%d: residual %g", n, r)
		}
		if r := maxAbs(v.MT().MatMul(v).Sub(Eye(CPU, Float64, n))); r > 1e-13*float64(n) {
			t.Errorf("eigh n=%d: orthogonality %g", n, r)
		}
		if ws, _ := w.Float64s(); !sortedAsc(ws[:n]) {
			t.Errorf("eigh n=%d: eigenvalues not ascending: %v", n, ws[:n])
		}
		b := RandN(CPU, Float64, 2, n+3, n)
		u, s, vh := b.SVD(false)
		if r := maxAbs(u.Mul(s.Unsqueeze(-2)).MatMul(vh).Sub(b)); r > 1e-12*float64(n) {
			t.Errorf("svd n=%d: residual %g", n, r)
		}
		p := b.Pinv()
		if r := maxAbs(b.MatMul(p).MatMul(b).Sub(b)); r > 1e-11*float64(n) {
			t.Errorf("pinv n=%d: A·A⁺·A - A = %g", n, r)
		}
	}
	// Singular values spread over 12 orders of magnitude: one-sided Jacobi
	// gets the small ones to their relative accuracy.
	q1, _ := RandN(CPU, Float64, 6, 6).QR()
	q2, _ := RandN(CPU, Float64, 6, 6).QR()
	want := []float64{1, 1e-2, 1e-4, 1e-6, 1e-9, 1e-12}
	a := q1.Mul(FromSlice(CPU, want, 1, 6)).MatMul(q2.MT())
	got, err := a.SVDVals().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-4*want[i]+1e-15 {
			t.Errorf("graded svdvals: %v, want %v", got, want)
			break
		}
	}
}

func sortedAsc(v []float64) bool {
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			return false
		}
	}
	return true
}

// TestLinalg2SecondOrder checks eigh's and svd's second derivatives against
// finite differences of their gradients (the conformance suite checks them
// against torch's): the gradient of d/dA of a loss, along a direction.
func TestLinalg2SecondOrder(t *testing.T) {
	base := []float64{2, 0.3, -0.5, 0.1, 0.3, -1, 0.7, 0.2, -0.5, 0.7, 0.5, -0.4, 0.1, 0.2, -0.4, 3}
	dir := []float64{0.3, -0.2, 0.5, 0.1, 0.7, 0.4, -0.6, 0.2, 0.1, -0.3, 0.2, 0.8, -0.5, 0.6, 0.3, -0.1}
	losses := map[string]func(a *Tensor) *Tensor{
		"eigh": func(a *Tensor) *Tensor {
			w, v := a.Add(a.MT()).MulScalar(0.5).Eigh(false)
			return w.Square().Sum().Add(v.Square().Narrow(-1, 0, 2).MulScalar(0.7).Sum().Mul(w.Narrow(0, 3, 1).Squeeze(0)))
		},
		"svd": func(a *Tensor) *Tensor {
			u, s, vh := a.SVD(false)
			return s.PowScalar(3).Sum().Add(u.MatMul(vh).Narrow(0, 0, 2).Square().Sum().Mul(s.Narrow(0, 0, 1).Squeeze(0)))
		},
	}
	for name, loss := range losses {
		grad := func(x []float64, create bool) (*Tensor, *Tensor) {
			a := FromSlice(CPU, x, 4, 4).RequireGrad()
			l := loss(a)
			var opts []GradOption
			if create {
				opts = append(opts, CreateGraph())
			}
			g, err := Grad(l, []*Tensor{a}, opts...)
			if err != nil {
				t.Fatal(name, err)
			}
			return a, g[0]
		}
		a, g := grad(base, true)
		d := FromSlice(CPU, dir, 4, 4)
		hv, err := Grad(g.Mul(d).Sum(), []*Tensor{a})
		if err != nil {
			t.Fatal(name, err)
		}
		got, _ := hv[0].Float64s()
		const h = 1e-5
		plus, minus := make([]float64, 16), make([]float64, 16)
		for i := range base {
			plus[i], minus[i] = base[i]+h*dir[i], base[i]-h*dir[i]
		}
		_, gp := grad(plus, false)
		_, gm := grad(minus, false)
		fd, _ := gp.Sub(gm).DivScalar(2 * h).Float64s()
		for i := range fd {
			if math.Abs(got[i]-fd[i]) > 1e-6*(1+math.Abs(fd[i])) {
				t.Errorf("%s: Hessian-vector product %v, finite difference %v", name, got, fd)
				break
			}
		}
	}
}

func TestLinalg2LeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := linalgSPD(dev).RequireGrad()
		y := FromSlice(CPU, []float32{1, -2, 0.5, 3, 1, -1}, 3, 2).To(dev)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"eigh":         func(x *Tensor) *Tensor { w, v := x.Eigh(false); return v.Square().Sum().Add(w.Sum()) },
			"eigvalsh":     func(x *Tensor) *Tensor { return x.EigvalsH(true) },
			"svd":          func(x *Tensor) *Tensor { u, s, vh := x.SVD(true); return u.Square().Sum().Add(s.Sum()).Add(vh.Sum()) },
			"svdvals":      func(x *Tensor) *Tensor { return x.SVDVals() },
			"pinv":         func(x *Tensor) *Tensor { return x.Pinv() },
			"cond":         func(x *Tensor) *Tensor { return x.Cond() },
			"matrix_norm":  func(x *Tensor) *Tensor { return x.MatrixNorm(OrdNuc).Add(x.MatrixNorm(OrdInf)) },
			"matrix_power": func(x *Tensor) *Tensor { return x.MatrixPower(-2).Add(x.MatrixPower(3)) },
			"multi_dot":    func(x *Tensor) *Tensor { return MultiDot([]*Tensor{x, x, y}) },
			"matrix_exp":   func(x *Tensor) *Tensor { return x.MatrixExp() },
			"lstsq":        func(x *Tensor) *Tensor { return x.Lstsq(y) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
		// matrix_rank has no gradient.
		r := x.MatrixRank()
		if v, err := r.Int64s(); err != nil || v[0] != 3 {
			t.Errorf("%s: matrix_rank %v %v", dev, v, err)
		}
		r.Release()
	}
}
