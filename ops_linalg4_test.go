package lathe

import (
	"math"
	"runtime/debug"
	"slices"
	"testing"
)

// Tests of Pdist, UniqueConsecutiveDim, SolveSide and LstsqFull beyond
// the conformance suite (internal/conformance, linalg4.json, which
// compares their values and gradients with torch's on every device):
// their rows of the bad-input table, the errors that name op and
// argument, and that a training step through each leaves nothing behind.

// firstOfAll is the first of rs, or the error of any of the others.
func firstOfAll(rs ...*Tensor) *Tensor {
	for _, r := range rs[1:] {
		if r == nil {
			continue
		}
		if err := r.Err(); err != nil {
			return failed(err)
		}
		r.Release()
	}
	return rs[0]
}

// biLinalg4 are the bad-input rows of the ops of this file.
func biLinalg4() map[string]biOp {
	t := map[string]biOp{}
	t["pdist"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 3, 2)} },
		call: func(a []*Tensor) *Tensor { return a[0].Pdist(2) }, kinds: "f",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, 2).Pdist(2) }}
	t["unique_consecutive_dim"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return firstOfAll(a[0].UniqueConsecutiveDim(1, true, true)) }, kinds: "a",
		huge: func(dev Device) *Tensor {
			return firstOfAll(biBig(dev, biHuge, biHuge).UniqueConsecutiveDim(0, true, true))
		}}
	t["solve_left=false"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{linalgSPD(dev), biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].SolveSide(a[1], false) }, kinds: "fs",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).SolveSide(biBig(dev, 1, biHuge), false) }}
	t["lstsq_full"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 4, 3), biF(dev, 4, 2)} },
		call: func(a []*Tensor) *Tensor {
			x, r, k, s := a[0].LstsqFull(a[1], "gelsd")
			return firstOfAll(r, x, k, s)
		}, kinds: "fs",
		huge: func(dev Device) *Tensor {
			x, r, k, s := biBig(dev, biHuge, biHuge).LstsqFull(biBig(dev, biHuge, 1), "gelsd")
			return firstOfAll(x, r, k, s)
		}}
	return t
}

func TestLinalg4Errors(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	var nilT *Tensor
	linalgErr(t, "pdist p -1", x.Pdist(-1).Err(), ErrValue, "pdist", "p")
	linalgErr(t, "pdist p NaN", x.Pdist(math.NaN()).Err(), ErrValue, "pdist", "p")
	linalgErr(t, "pdist of a vector", Ones(CPU, Float32, 3).Pdist(2).Err(), ErrShape, "pdist", "x", "rank 1")
	linalgErr(t, "pdist of [2,2,2]", Ones(CPU, Float32, 2, 2, 2).Pdist(2).Err(), ErrShape, "pdist", "x", "rank 3")
	linalgErr(t, "pdist of int64", x.Cast(Int64).Pdist(2).Err(), ErrDType, "pdist", "x", "int64")
	linalgErr(t, "pdist of nil", nilT.Pdist(2).Err(), ErrValue, "pdist", "x")

	uc := func(x *Tensor, dim int) error { v, _, _ := x.UniqueConsecutiveDim(dim, true, true); return v.Err() }
	linalgErr(t, "unique_consecutive dim 2", uc(x, 2), ErrIndex, "unique_consecutive", "dim", "rank 2")
	linalgErr(t, "unique_consecutive dim -3", uc(x, -3), ErrIndex, "unique_consecutive", "dim")
	linalgErr(t, "unique_consecutive of 0-d", uc(Scalar(CPU, float32(1)), 0), ErrIndex, "unique_consecutive", "dim", "rank 0")
	linalgErr(t, "unique_consecutive of [0,3] along 1", uc(Ones(CPU, Float32, 0, 3), 1), ErrShape, "unique_consecutive", "x", "size 0")
	linalgErr(t, "unique_consecutive of nil", uc(nilT, 0), ErrValue, "unique_consecutive", "x")
	_, inv, cnt := nilT.UniqueConsecutiveDim(0, true, false)
	if inv.Err() == nil || cnt != nil {
		t.Errorf("unique_consecutive of nil: inverse %v, counts %v, want an error and nil", inv.Err(), cnt)
	}

	a := linalgSPD(CPU)
	linalgErr(t, "solve left=false of a vector", a.SolveSide(FromSlice(CPU, []float32{1, 2, 3}, 3), false).Err(),
		ErrShape, "solve", "B", "Unsqueeze(-2)")
	linalgErr(t, "solve left=false of [3,2]", a.SolveSide(Ones(CPU, Float32, 3, 2), false).Err(), ErrShape, "solve", "B", "[..., k, 3]")
	linalgErr(t, "solve left=false of mixed dtypes", a.SolveSide(Ones(CPU, Float64, 2, 3), false).Err(), ErrDType, "solve", "B")
	linalgErr(t, "solve left=false of [2,3] A", Ones(CPU, Float32, 2, 3).SolveSide(Ones(CPU, Float32, 2, 3), false).Err(),
		ErrShape, "solve", "A")
	linalgErr(t, "solve left=false of a singular A", Zeros(CPU, Float32, 2, 2).SolveSide(Ones(CPU, Float32, 1, 2), false).Err(),
		ErrValue, "solve", "A")
	linalgErr(t, "solve left=false of nil B", a.SolveSide(nilT, false).Err(), ErrValue, "solve", "B")

	ls := func(A, B *Tensor, driver string) error {
		x, r, k, s := A.LstsqFull(B, driver)
		return firstOfAll(k, x, r, s).Err()
	}
	linalgErr(t, "lstsq driver", ls(x, x, "gelsx"), ErrValue, "lstsq", "driver", "gelsy")
	linalgErr(t, "lstsq rows", ls(x, Ones(CPU, Float32, 4, 1), "gelsd"), ErrShape, "lstsq", "B", "rows")
	linalgErr(t, "lstsq dtypes", ls(x, Ones(CPU, Float64, 3, 1), "gelsd"), ErrDType, "lstsq", "B")
	linalgErr(t, "lstsq of nil", ls(nilT, x, ""), ErrValue, "lstsq", "A")
}

// TestLstsqFullResults: which results each driver gives, as torch 1.13's
// cpu (the values are the conformance suite's).
func TestLstsqFullResults(t *testing.T) {
	A := FromSlice(CPU, []float64{1, 2, 0, 3, 1, 1, 0, 1, 2, 1, 1, 1, 2, 0, 1}, 5, 3)
	B := FromSlice(CPU, []float64{1, 0, 2, 1, 0, 1, 1, 1, 3, 2}, 5, 2)
	deficient := FromSlice(CPU, []float64{1, 2, 2, 3, 1, 1, 0, 1, 1, 1, 1, 1, 2, 0, 0}, 5, 3)
	for _, c := range []struct {
		A, B                  *Tensor
		driver                string
		residuals, rank, sing []int
	}{
		{A, B, "gels", []int{2}, []int{0}, []int{0}},
		{A, B, "gelsy", []int{0}, []int{}, []int{0}},
		{A, B, "", []int{0}, []int{}, []int{0}},
		{A, B, "gelsd", []int{2}, []int{}, []int{3}},
		{A, B, "gelss", []int{2}, []int{}, []int{3}},
		{deficient, B, "gelsd", []int{0}, []int{}, []int{3}},
		{A.MT(), B.Narrow(0, 0, 3), "gelsd", []int{0}, []int{}, []int{3}},
		{A, B.Narrow(1, 0, 1).Squeeze(1), "gelsd", []int{1}, []int{}, []int{3}},
		{A.Unsqueeze(0), B.Unsqueeze(0).Expand(4, 5, 2), "gelsd", []int{4, 2}, []int{1}, []int{1, 3}},
		{Zeros(CPU, Float64, 0, 3), Zeros(CPU, Float64, 0, 2), "gelsd", []int{0}, []int{}, []int{0}},
	} {
		x, r, k, s := c.A.LstsqFull(c.B, c.driver)
		if err := firstErr(x, r, k, s); err != nil {
			t.Fatalf("%s %v: %v", c.driver, c.A.Shape(), err)
		}
		if !slices.Equal(r.Shape(), c.residuals) || !slices.Equal(k.Shape(), c.rank) || !slices.Equal(s.Shape(), c.sing) ||
			k.DType() != Int64 || r.DType() != Float64 || s.DType() != Float64 {
			t.Errorf("%s %v: residuals %v %v, rank %v %v, singular values %v %v; want shapes %v, %v, %v",
				c.driver, c.A.Shape(), r.Shape(), r.DType(), k.Shape(), k.DType(), s.Shape(), s.DType(), c.residuals, c.rank, c.sing)
		}
	}
	_, _, k, _ := deficient.LstsqFull(B, "gelsy")
	if got, err := k.Item(); err != nil || got != 2 {
		t.Errorf("gelsy rank of a rank-2 A: %v %v, want 2", got, err)
	}
}

func TestLinalg4LeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, []float32{4, 1, 0, 1, 3, 1, 0, 1, 2, 1, 1, 1}, 4, 3).To(dev).RequireGrad()
		y := FromSlice(CPU, []float32{1, -2, 0.5, 3, 1, -1, 2, 0}, 4, 2).To(dev)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"pdist":     func(x *Tensor) *Tensor { return x.Pdist(2) },
			"pdist p=3": func(x *Tensor) *Tensor { return x.Pdist(3) },
			"pdist inf": func(x *Tensor) *Tensor { return x.Pdist(math.Inf(1)) },
			"unique_consecutive_dim": func(x *Tensor) *Tensor {
				return firstOfAll(x.UniqueConsecutiveDim(1, true, true))
			},
			"solve_side": func(x *Tensor) *Tensor { return x.Narrow(0, 0, 3).SolveSide(y.MT().Narrow(1, 0, 3), false) },
			"lstsq_full": func(x *Tensor) *Tensor {
				s, r, k, v := x.LstsqFull(y, "gelsd")
				out := s.Sum().Add(r.Sum()).Add(v.Sum())
				ReleaseWithGraph(out, s, r, k, v)
				return out
			},
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}

// TestPdistSecondDerivative: Pdist's gradient is differentiable again
// (torch 1.13's is not): the Hessian-vector product against central
// finite differences of the gradient, in float64, for p where the
// distances are smooth at the point.
func TestPdistSecondDerivative(t *testing.T) {
	xs := []float64{0.3, -1.2, 0.8, 1.1, 0.4, -0.6, -0.9, 0.7, 1.5, 0.2, -0.3, -1.4}
	ws := []float64{0.5, -1, 2, 0.25, 1.5, -0.75}
	vs := []float64{1, -0.5, 0.25, 0.75, -1, 0.5, -0.25, 1, 0.5, -0.75, 0.25, 1}
	grad := func(x []float64, p float64, create bool) (*Tensor, *Tensor) {
		xt := FromSlice(CPU, x, 4, 3).RequireGrad()
		y := xt.Pdist(p).Mul(FromSlice(CPU, ws, 6)).Sum()
		var opts []GradOption
		if create {
			opts = append(opts, CreateGraph())
		}
		g, err := Grad(y, []*Tensor{xt}, opts...)
		if err != nil {
			t.Fatalf("p=%v: %v", p, err)
		}
		return xt, g[0]
	}
	for _, p := range []float64{0.5, 1, 1.5, 2, 3, math.Inf(1)} {
		x, g := grad(xs, p, true)
		hv, err := Grad(g.Mul(FromSlice(CPU, vs, 4, 3)).Sum(), []*Tensor{x})
		if err != nil {
			t.Fatalf("p=%v: the second derivative: %v", p, err)
		}
		got, err := hv[0].Float64s()
		if err != nil {
			t.Fatal(err)
		}
		const eps = 1e-6
		step := func(s float64) []float64 {
			out := make([]float64, len(xs))
			for i := range xs {
				out[i] = xs[i] + s*vs[i]
			}
			_, g := grad(out, p, false)
			v, err := g.Float64s()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		hi, lo := step(eps), step(-eps)
		for i := range got {
			want := (hi[i] - lo[i]) / (2 * eps)
			if math.Abs(got[i]-want) > 1e-5*(1+math.Abs(want)) {
				t.Errorf("p=%v: Hessian-vector product [%d] %v, finite differences %v", p, i, got[i], want)
			}
		}
	}
}
