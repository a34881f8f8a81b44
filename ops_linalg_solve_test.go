package lathe

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// Tests of ops_linalg_solve.go beyond the conformance suite
// (internal/conformance, linalg.json, which compares values and gradients
// with torch's on every device): the bad-input rows, the errors, the
// failures found on a device (singular, not positive-definite), residuals
// of ill-conditioned systems, det's gradient at a singular matrix, and
// that nothing leaks.

// linalgSPD is a symmetric positive-definite 3×3 matrix on dev.
func linalgSPD(dev Device) *Tensor {
	return FromSlice(CPU, []float32{4, 1, 0, 1, 3, 1, 0, 1, 2}, 3, 3).To(dev)
}

// biLinalg are the bad-input rows of ops_linalg_solve.go.
func biLinalg() map[string]biOp {
	t := map[string]biOp{}
	hugeSq := func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge) }
	one := func(f func(a *Tensor) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev)} },
			call: func(a []*Tensor) *Tensor { return f(a[0]) }, kinds: "f",
			huge: func(dev Device) *Tensor { return f(hugeSq(dev)) }}
	}
	t["cholesky"] = one(func(a *Tensor) *Tensor { return a.Cholesky(false) })
	t["inv"] = one((*Tensor).Inv)
	t["det"] = one((*Tensor).Det)
	t["slogdet"] = one(func(a *Tensor) *Tensor { _, l := a.SlogDet(); return l })
	t["qr"] = one(func(a *Tensor) *Tensor { _, r := a.QR(); return r })
	two := func(f func(a, b *Tensor) *Tensor, huge func(dev Device) *Tensor) biOp {
		return biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev), biF(dev, 3, 2)} },
			call: func(a []*Tensor) *Tensor { return f(a[0], a[1]) }, kinds: "fs", huge: huge}
	}
	t["solve"] = two((*Tensor).Solve, func(dev Device) *Tensor { return hugeSq(dev).Solve(biBig(dev, biHuge)) })
	t["solve_triangular"] = two(func(a, b *Tensor) *Tensor { return a.SolveTriangular(b, true, true, false) },
		func(dev Device) *Tensor {
			return hugeSq(dev).SolveTriangular(biBig(dev, biHuge, 1), false, true, false)
		})
	t["cholesky_solve"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 3, 2), linalgSPD(dev)} },
		call: func(a []*Tensor) *Tensor { return a[0].CholeskySolve(a[1], false) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, 1).CholeskySolve(hugeSq(dev), false) }}
	// The checks that the factorizations run on their pivots (an Int64
	// code per matrix, 0 where it went through).
	for _, op := range []string{"solve", "inv", "cholesky"} {
		c := map[string]*dispatch.Op[infoCheck]{"solve": checkSolve, "inv": checkInv, "cholesky": checkCholesky}[op]
		t[op+"_check"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 2), Zeros(dev, Int64)} },
			call: func(a []*Tensor) *Tensor { return apply(c, infoCheck{n: 2}, a[0], a[1]) }, kinds: "ai"}
	}
	return t
}

// linalgErr is moreOpsErr, and the message holds each of words.
func linalgErr(t *testing.T, what string, err, kind error, op, arg string, words ...string) {
	t.Helper()
	moreOpsErr(t, what, err, kind, op, arg)
	for _, w := range words {
		if err != nil && !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q does not say %q", what, err, w)
		}
	}
}

func TestLinalgErrors(t *testing.T) {
	a := linalgSPD(CPU)
	b := FromSlice(CPU, []float32{1, 2, 3}, 3)
	linalgErr(t, "inv of a vector", b.Inv().Err(), ErrShape, "inv", "A", "at least 2 dims")
	linalgErr(t, "det of [2,3]", Ones(CPU, Float32, 2, 3).Det().Err(), ErrShape, "det", "A", "2 by 3")
	linalgErr(t, "cholesky of float16", a.Cast(Float16).Cholesky(false).Err(), ErrDType, "cholesky", "A", "Cast(lathe.Float32)")
	linalgErr(t, "slogdet of bfloat16", func() error { s, _ := a.Cast(BFloat16).SlogDet(); return s.Err() }(), ErrDType, "slogdet", "A", "16-bit")
	linalgErr(t, "inv of int64", a.Cast(Int64).Inv().Err(), ErrDType, "inv", "A", "float32 or float64")
	linalgErr(t, "solve of mixed dtypes", a.Solve(b.Cast(Float64)).Err(), ErrDType, "solve", "B", "does not promote")
	linalgErr(t, "solve [3,3]x[2]", a.Solve(Ones(CPU, Float32, 2)).Err(), ErrShape, "solve", "B")
	linalgErr(t, "solve batch", Ones(CPU, Float32, 2, 3, 3).Solve(Ones(CPU, Float32, 3, 3, 1)).Err(), ErrShape, "solve", "B", "broadcast")
	linalgErr(t, "solve_triangular of a vector", a.SolveTriangular(b, true, true, false).Err(), ErrShape, "solve_triangular", "B")
	linalgErr(t, "right solve_triangular", a.SolveTriangular(Ones(CPU, Float32, 3, 2), true, false, false).Err(),
		ErrShape, "solve_triangular", "B", "[..., k, 3]")
	linalgErr(t, "cholesky_solve [2,2]", Ones(CPU, Float32, 2, 2).CholeskySolve(a, false).Err(), ErrShape, "cholesky_solve", "B")
	linalgErr(t, "cholesky_solve of a non-square L", b.Unsqueeze(-1).CholeskySolve(Ones(CPU, Float32, 3, 2), false).Err(),
		ErrShape, "cholesky_solve", "L")
	var nilT *Tensor
	linalgErr(t, "solve of nil B", a.Solve(nilT).Err(), ErrValue, "solve", "B")
	linalgErr(t, "det of nil", nilT.Det().Err(), ErrValue, "det", "A")
	linalgErr(t, "qr of a vector", func() error { q, _ := b.QR(); return q.Err() }(), ErrShape, "qr", "A", "at least 2 dims")
	linalgErr(t, "qr of float16", func() error { _, r := a.Cast(Float16).QR(); return r.Err() }(), ErrDType, "qr", "A")
}

// TestLinalgFailures checks the value failures, as torch's errors, on
// every device: at once on the cpu, at the next read-back on a GPU, with
// the matrix of the batch that failed first and the pivot or minor; and
// that det of a singular matrix is 0, not an error.
func TestLinalgFailures(t *testing.T) {
	for _, dev := range biDevices(t) {
		sing := FromSlice(CPU, []float32{1, 0, 0, 1, 1, 2, 3, 2, 4, 6, 1, 0, 1}, 13).Narrow(0, 4, 9).Reshape(3, 3)
		batch := Stack([]*Tensor{Eye(CPU, Float32, 3), Eye(CPU, Float32, 3), sing}, 0).To(dev)
		read := func(x *Tensor) error {
			_, err := x.Float32s()
			return err
		}
		linalgErr(t, dev.String()+" inv of a singular matrix", read(sing.To(dev).Inv()), ErrValue, "inv", "A",
			"the diagonal element 3 is zero")
		linalgErr(t, dev.String()+" inv of a singular batch", read(batch.Inv()), ErrValue, "inv", "A",
			"in batch element 2", "diagonal element 3")
		linalgErr(t, dev.String()+" solve of a singular batch", read(batch.Solve(Ones(dev, Float32, 3))), ErrValue, "solve", "A",
			"is singular in batch element 2")
		npd := FromSlice(CPU, []float32{4, 2, 0, 2, 1, 0, 0, 0, 1}, 3, 3)
		linalgErr(t, dev.String()+" cholesky of a semidefinite matrix",
			read(Stack([]*Tensor{npd, Eye(CPU, Float32, 3)}, 0).To(dev).Cholesky(true)), ErrValue, "cholesky", "A",
			"in batch element 0", "leading minor of order 2")
		if d, err := sing.To(dev).Det().Float32s(); err != nil || d[0] != 0 {
			t.Errorf("%s: det of a singular matrix: %v %v, want 0", dev, d, err)
		}
		s, l := sing.To(dev).SlogDet()
		sv, err1 := s.Float32s()
		lv, err2 := l.Float32s()
		if err1 != nil || err2 != nil || sv[0] != 0 || !math.IsInf(float64(lv[0]), -1) {
			t.Errorf("%s: slogdet of a singular matrix: %v %v %v %v, want 0 and -Inf", dev, sv, lv, err1, err2)
		}
		// A device's check reaches what is made from the result.
		if err := read(sing.To(dev).Inv().MulScalar(2).Sum()); err == nil {
			t.Errorf("%s: a sum of a failed inverse read back without an error", dev)
		}
		// After a failure the device goes on working.
		if x, err := linalgSPD(dev).Inv().Float32s(); err != nil || math.Abs(float64(x[0])-5.0/18) > 1e-6 {
			t.Errorf("%s: inv after a failed one: %v %v", dev, x, err)
		}
	}
}

// hilbert is the Hilbert matrix of order n in float64.
func hilbert(n int) *Tensor {
	v := make([]float64, n*n)
	for i := range n {
		for j := range n {
			v[i*n+j] = 1 / float64(i+j+1)
		}
	}
	return FromSlice(CPU, v, n, n)
}

// TestLinalgIllConditioned checks that solves of ill-conditioned systems
// are backward stable, as LAPACK's are: the residual ‖A·X - B‖ is a small
// multiple of ε·‖A‖·‖X‖ however large the condition number (the Hilbert
// matrix of order 10 has about 1.6e13), while X itself may be far from the
// exact solution. And a Cholesky factor reproduces A.
func TestLinalgIllConditioned(t *testing.T) {
	maxAbs := func(x *Tensor) float64 {
		v, err := x.Abs().Max().Cast(Float64).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	for _, n := range []int{6, 8, 10} {
		a := hilbert(n)
		b := Arange(CPU, Float64, 1, float64(n+1), 1).Reshape(n, 1)
		for name, x := range map[string]*Tensor{
			"solve": a.Solve(b), "inv·B": a.Inv().MatMul(b), "cholesky_solve": b.CholeskySolve(a.Cholesky(false), false),
			"cholesky_solve upper": b.CholeskySolve(a.Cholesky(true), true),
		} {
			if err := x.Err(); err != nil {
				t.Fatalf("%s of Hilbert %d: %v", name, n, err)
			}
			r := maxAbs(a.MatMul(x).Sub(b)) / (maxAbs(a) * maxAbs(x) * float64(n))
			if name == "inv·B" {
				r /= float64(n) // the inverse's own residual, once more through a product
			}
			if r > 64*0x1p-52 {
				t.Errorf("%s of Hilbert %d: relative residual %g, want a few ε", name, n, r)
			}
		}
		l := a.Cholesky(false)
		if e := maxAbs(l.MatMul(l.MT()).Sub(a)); e > 16*float64(n)*0x1p-52 {
			t.Errorf("cholesky of Hilbert %d: ‖L·Lᵀ - A‖ = %g", n, e)
		}
	}
	// QR of Hilbert 10: Q orthonormal and Q·R = A to a few ε, the
	// condition number notwithstanding.
	a10 := hilbert(10)
	q, r := a10.QR()
	if e := maxAbs(q.MT().MatMul(q).Sub(Eye(CPU, Float64, 10))); e > 64*0x1p-52 {
		t.Errorf("qr of Hilbert 10: ‖QᵀQ - I‖ = %g", e)
	}
	if e := maxAbs(q.MatMul(r).Sub(a10)); e > 64*0x1p-52 {
		t.Errorf("qr of Hilbert 10: ‖QR - A‖ = %g", e)
	}
	if e := maxAbs(r.Tril(-1)); e != 0 {
		t.Errorf("qr of Hilbert 10: R has %g below its diagonal", e)
	}
	// float32, Hilbert 5 (condition number 4.8e5): X is off by digits,
	// the residual not.
	a, b := hilbert(5).Cast(Float32), Ones(CPU, Float32, 5, 2)
	x := a.Solve(b)
	if r := maxAbs(a.MatMul(x).Sub(b)) / (maxAbs(a) * maxAbs(x) * 5); r > 64*0x1p-23 {
		t.Errorf("float32 solve of Hilbert 5: relative residual %g", r)
	}
}

// TestLinalgDetGradSingular checks det's gradient at a singular matrix
// against the adjugate (a central difference of det, a polynomial): torch
// 1.13 gives zero there.
func TestLinalgDetGradSingular(t *testing.T) {
	v := []float64{1, 2, 3, 2, 4, 6, 1, 0, 1}
	a := FromSlice(CPU, v, 3, 3).RequireGrad()
	d := a.Det()
	if err := d.Backward(); err != nil {
		t.Fatal(err)
	}
	got, err := a.Grad().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	det := func(w []float64) float64 {
		return w[0]*(w[4]*w[8]-w[5]*w[7]) - w[1]*(w[3]*w[8]-w[5]*w[6]) + w[2]*(w[3]*w[7]-w[4]*w[6])
	}
	for i := range v {
		w := append([]float64(nil), v...)
		w[i] += 1e-6
		p := det(w)
		w[i] -= 2e-6
		want := (p - det(w)) / 2e-6
		if math.Abs(got[i]-want) > 1e-6 {
			t.Errorf("d det / d a[%d] = %v, want %v", i, got[i], want)
		}
	}
}

// TestLinalgSecondOrder checks a second derivative through the recorded
// elimination: d²/dt² of det(A + t·E) at t = 0 is 2·Σ of E's 2×2 minors'
// determinants against the complementary entries of A, here checked by a
// central difference of the first derivative.
func TestLinalgSecondOrder(t *testing.T) {
	av := []float64{2, 1, 0.5, -1, 3, 0.25, 0.5, -0.75, 4}
	ev := []float64{0.3, -0.2, 0.1, 0.4, 0.2, -0.5, 0.1, 0.6, -0.3}
	e := FromSlice(CPU, ev, 3, 3)
	// f'(t) = <∇det(A+tE), E>.
	first := func(tt float64, create bool) (*Tensor, *Tensor) {
		x := FromSlice(CPU, av, 3, 3).Add(e.MulScalar(tt)).Detach().RequireGrad()
		var opts []GradOption
		if create {
			opts = append(opts, CreateGraph())
		}
		g, err := Grad(x.Inv().Sum().Add(x.Det()), []*Tensor{x}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return x, g[0].Mul(e).Sum()
	}
	x, d1 := first(0, true)
	g2, err := Grad(d1, []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := g2[0].Mul(e).Sum().Float64s()
	_, p := first(1e-5, false)
	_, m := first(-1e-5, false)
	pv, _ := p.Float64s()
	mv, _ := m.Float64s()
	want := (pv[0] - mv[0]) / 2e-5
	if math.Abs(got[0]-want) > 1e-6*math.Max(1, math.Abs(want)) {
		t.Errorf("second derivative of sum(inv)+det along E: %v, want %v (central difference)", got[0], want)
	}
}

// TestLinalgLeaveNothing checks that a training step through each op
// leaves no memory behind (the collector off).
func TestLinalgLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := linalgSPD(dev).RequireGrad()
		y := FromSlice(CPU, []float32{1, -2, 0.5, 3, 1, -1}, 3, 2).To(dev)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"cholesky":         func(x *Tensor) *Tensor { return x.Cholesky(true) },
			"solve":            func(x *Tensor) *Tensor { return x.Solve(y) },
			"solve_vector":     func(x *Tensor) *Tensor { return x.Solve(y.Narrow(1, 0, 1).Squeeze(1)) },
			"inv":              func(x *Tensor) *Tensor { return x.Inv() },
			"det":              func(x *Tensor) *Tensor { return x.Det() },
			"slogdet":          func(x *Tensor) *Tensor { s, l := x.SlogDet(); s.Release(); return l },
			"solve_triangular": func(x *Tensor) *Tensor { return x.SolveTriangular(y, false, true, false) },
			"cholesky_solve":   func(x *Tensor) *Tensor { return y.CholeskySolve(x, false) },
			"qr":               func(x *Tensor) *Tensor { q, r := x.QR(); return q.Sum().Add(r.Sum()) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}
