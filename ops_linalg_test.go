package lathe

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// matmulData fills a shape with small integers ((3i mod 7) - 3), exact in
// every dtype, so one table of torch.matmul results serves all four.
func matmulData(shape []int) []float64 {
	n := 1
	for _, s := range shape {
		n *= s
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64((i*3)%7 - 3)
	}
	return out
}

func TestMatMul(t *testing.T) {
	// torchMatMul holds torch.matmul's results on matmulData operands
	// (build/torchref/literals.py), by name.
	cases := []struct {
		name string
		a, b []int
	}{
		{"dot", []int{3}, []int{3}},
		{"mat/2x3.3x2", []int{2, 3}, []int{3, 2}},
		{"vecmat/3.3x2", []int{3}, []int{3, 2}},
		{"matvec/2x3.3", []int{2, 3}, []int{3}},
		{"vec-batched/3.2x3x2", []int{3}, []int{2, 3, 2}},
		{"batched-vec/2x2x3.3", []int{2, 2, 3}, []int{3}},
		{"batched/2x2x3.2x3x2", []int{2, 2, 3}, []int{2, 3, 2}},
		{"bcast/2x1x2x3.3x3x2", []int{2, 1, 2, 3}, []int{3, 3, 2}},
		{"bcast/2x2x3.3x4", []int{2, 2, 3}, []int{3, 4}},
		{"bcast/2x3.4x3x2", []int{2, 3}, []int{4, 3, 2}},
		{"bcast/1x2x3.2x1x3x1", []int{1, 2, 3}, []int{2, 1, 3, 1}},
		{"outer/3x1.1x4", []int{3, 1}, []int{1, 4}},
		{"empty/0x3.3x2", []int{0, 3}, []int{3, 2}},
		{"empty-k/2x0.0x3", []int{2, 0}, []int{0, 3}},
		{"empty-batch/0x2x3.3x2", []int{0, 2, 3}, []int{3, 2}},
	}
	if len(cases) != len(torchMatMul) {
		t.Errorf("%d cases, %d torch references", len(cases), len(torchMatMul))
	}
	for _, dt := range []DType{Float32, Float64, Int32, Int64} {
		for _, c := range cases {
			t.Run("matmul/"+dt.String()+"/"+c.name, func(t *testing.T) {
				a := FromSlice(CPU, matmulData(c.a), c.a...).Cast(dt)
				b := FromSlice(CPU, matmulData(c.b), c.b...).Cast(dt)
				got, want := a.MatMul(b), torchRef(t, torchMatMul, c.name)
				checkValues(t, got, want.Shape, want.Values, 0)
				if got.DType() != dt {
					t.Errorf("dtype %v, want %v", got.DType(), dt)
				}
			})
		}
	}
}

// TestMatMulLarge checks products big enough for gonum's blocked and
// parallel paths against a naive float64 loop.
func TestMatMulLarge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct{ batch, n, k, m int }{{1, 70, 50, 65}, {3, 17, 129, 33}, {1, 1, 300, 1}} {
		a := make([]float64, s.batch*s.n*s.k)
		b := make([]float64, s.batch*s.k*s.m)
		for i := range a {
			a[i] = r.Float64()*2 - 1
		}
		for i := range b {
			b[i] = r.Float64()*2 - 1
		}
		want := make([]float64, s.batch*s.n*s.m)
		for bi := range s.batch {
			for i := range s.n {
				for j := range s.m {
					var acc float64
					for p := range s.k {
						acc += a[bi*s.n*s.k+i*s.k+p] * b[bi*s.k*s.m+p*s.m+j]
					}
					want[bi*s.n*s.m+i*s.m+j] = acc
				}
			}
		}
		for _, dt := range []struct {
			d   DType
			tol float64
		}{{Float32, 1e-5}, {Float64, 1e-12}} {
			name := "matmul/" + dt.d.String() + "/" + fmt.Sprintf("%dx%dx%dx%d", s.batch, s.n, s.k, s.m)
			t.Run(name, func(t *testing.T) {
				x := FromSlice(CPU, a, s.batch, s.n, s.k).Cast(dt.d)
				y := FromSlice(CPU, b, s.batch, s.k, s.m).Cast(dt.d)
				checkValues(t, x.MatMul(y), []int{s.batch, s.n, s.m}, want, dt.tol)
			})
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	f := func(shape ...int) *Tensor { return Zeros(CPU, Float32, shape...) }
	cases := []struct {
		name     string
		got      *Tensor
		kind     error
		contains []string
	}{
		{"inner/2x3.2x3", f(2, 3).MatMul(f(2, 3)), ErrShape, []string{`"rhs"`, "[2, 3]", "dim 0 of rhs (2) must match dim 1 of lhs (3)"}},
		{"inner/vec/3.4", f(3).MatMul(f(4)), ErrShape, []string{"[3]", "[4]", "dim 0 of rhs (4) must match dim 0 of lhs (3)"}},
		{"inner/batched/2x2x3.2x4x2", f(2, 2, 3).MatMul(f(2, 4, 2)), ErrShape, []string{"dim 1 of rhs (4) must match dim 2 of lhs (3)"}},
		{"batch/2x2x3.3x3x2", f(2, 2, 3).MatMul(f(3, 3, 2)), ErrShape, []string{"[2, 2, 3]", "[3, 3, 2]", "batch dims [3]", "[2]", "equal or 1"}},
		{"0d/lhs", Scalar(CPU, float32(1)).MatMul(f(3)), ErrShape, []string{`"lhs"`, "0-d"}},
		{"0d/rhs", f(3).MatMul(Scalar(CPU, float32(1))), ErrShape, []string{`"rhs"`, "0-d"}},
		{"dtype/f32.f64", f(2, 2).MatMul(Zeros(CPU, Float64, 2, 2)), ErrDType, []string{`"rhs"`, "float64", "Cast"}},
		{"dtype/bool", f(2, 2).GtScalar(0).MatMul(f(2, 2).GtScalar(0)), ErrDType, []string{"bool"}},
		{"sticky", f(2, 3).MatMul(f(2, 3)).MatMul(f(3)), ErrShape, nil},
	}
	for _, c := range cases {
		t.Run("matmul/"+c.name, func(t *testing.T) {
			err := c.got.Err()
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
			for _, s := range c.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestLinearNamesTheOddDType: a Linear whose input's dtype differs from
// the weight's names x and says to cast x to the weight's dtype; an odd
// bias is named against the weight. An int64 batch into a float32 layer
// named the bias and said to cast it to int64.
func TestLinearNamesTheOddDType(t *testing.T) {
	w := Ones(CPU, Float32, 4, 3)
	for _, c := range []struct {
		name    string
		out     *Tensor
		arg     string
		cast    string
		wantsOp string
	}{
		{"int64 x", Ones(CPU, Int64, 2, 3).Linear(w, Ones(CPU, Float32, 4)), "x", "lathe.Float32", "linear"},
		{"int64 x, no bias", Ones(CPU, Int64, 2, 3).Linear(w, nil), "x", "lathe.Float32", "linear"},
		{"float64 bias", Ones(CPU, Float32, 2, 3).Linear(w, Ones(CPU, Float64, 4)), "b", "lathe.Float32", "linear"},
	} {
		var e *Error
		if err := c.out.Err(); !errors.As(err, &e) || e.Kind != ErrDType || e.Arg != c.arg || !strings.Contains(e.Fix, ".Cast("+c.cast+")") ||
			!strings.HasPrefix(e.Op, c.wantsOp) {
			t.Errorf("%s: %v, want an ErrDType naming %q with a cast to %s", c.name, err, c.arg, c.cast)
		}
	}
}

// TestLinearShapes: linear refuses shapes as torch's does, naming its own
// arguments (the matmul and add inside named "lhs" and "rhs" and the
// weight's transposed shape), refuses a 3-D weight (which it had taken as a
// batch), and takes torch's 1-D weight, whose output dim is dropped, with
// its gradient.
func TestLinearShapes(t *testing.T) {
	x := FromSlice(CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	w := Zeros(CPU, Float32, 4, 3)
	moreOpsErr(t, "in_features", x.Linear(Zeros(CPU, Float32, 4, 2), nil).Err(), ErrShape, "linear", "x")
	moreOpsErr(t, "in_features, bias", x.Linear(Zeros(CPU, Float32, 4, 2), Zeros(CPU, Float32, 4)).Err(), ErrShape, "linear", "x")
	moreOpsErr(t, "in_features, float16", x.Cast(Float16).Linear(Zeros(CPU, Float16, 4, 2), Zeros(CPU, Float16, 4)).Err(), ErrShape, "linear", "x")
	moreOpsErr(t, "3-d weight", x.Linear(Zeros(CPU, Float32, 1, 4, 3), nil).Err(), ErrShape, "linear", "w")
	moreOpsErr(t, "0-d weight", x.Linear(Zeros(CPU, Float32), nil).Err(), ErrShape, "linear", "w")
	moreOpsErr(t, "0-d x", Zeros(CPU, Float32).Linear(w, nil).Err(), ErrShape, "linear", "x")
	moreOpsErr(t, "bias [5]", x.Linear(w, Zeros(CPU, Float32, 5)).Err(), ErrShape, "linear", "b")
	moreOpsErr(t, "bias [3, 4]", x.Linear(w, Zeros(CPU, Float32, 3, 4)).Err(), ErrShape, "linear", "b")
	if err := x.Linear(w, Zeros(CPU, Float32, 2, 4)).Err(); err != nil {
		t.Errorf("a bias of the result's shape: %v", err)
	}

	v := FromSlice(CPU, []float32{1, 0, -1}, 3).RequireGrad()
	for _, c := range []struct {
		name string
		b    *Tensor
		want []float32
	}{{"no bias", nil, []float32{-2, -2}}, {"0-d bias", Scalar(CPU, float32(0.5)), []float32{-1.5, -1.5}}} {
		y := x.Linear(v, c.b)
		got, err := y.Float32s()
		if err != nil || !slices.Equal(y.Shape(), []int{2}) || !slices.Equal(got, c.want) {
			t.Errorf("1-d weight, %s: %v of shape %v (%v), want %v of shape [2] as torch", c.name, got, y.Shape(), err, c.want)
			continue
		}
		g, err := Grad(y.Sum(), []*Tensor{v})
		if err != nil {
			t.Fatal(err)
		}
		if gv, _ := g[0].Float32s(); !slices.Equal(gv, []float32{5, 7, 9}) {
			t.Errorf("1-d weight, %s: gradient %v, want [5 7 9]", c.name, gv)
		}
	}
}
