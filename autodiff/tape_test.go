package autodiff_test

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

func scalar(v float64) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, []float64{v}) }

func value(t *testing.T, x *lathe.Tensor) float64 {
	t.Helper()
	v, err := x.Item()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBackwardChain(t *testing.T) {
	x := scalar(0.7).RequireGrad()
	y := x.Mul(x).Exp() // d/dx exp(x²) = 2x·exp(x²)
	if err := y.Backward(); err != nil {
		t.Fatal(err)
	}
	want := 2 * 0.7 * math.Exp(0.49)
	if got := value(t, x.Grad()); math.Abs(got-want) > 1e-12 {
		t.Fatalf("grad = %v, want %v", got, want)
	}
	if !x.IsLeaf() || y.IsLeaf() || !y.RequiresGrad() {
		t.Errorf("leaf flags: x leaf %v, y leaf %v, y requires %v", x.IsLeaf(), y.IsLeaf(), y.RequiresGrad())
	}
}

func TestRetainGraphAccumulates(t *testing.T) {
	x := scalar(3).RequireGrad()
	y := x.Mul(x)
	if err := y.Backward(lathe.RetainGraph()); err != nil {
		t.Fatal(err)
	}
	if err := y.Backward(); err != nil {
		t.Fatal(err)
	}
	if got := value(t, x.Grad()); got != 12 {
		t.Fatalf("accumulated grad = %v, want 12", got)
	}
	err := y.Backward()
	if !errors.Is(err, lathe.ErrGrad) || !strings.Contains(err.Error(), "RetainGraph") {
		t.Fatalf("third backward through a freed graph: %v", err)
	}
	x.ZeroGrad()
	if x.Grad() != nil {
		t.Fatal("ZeroGrad left a gradient")
	}
}

func TestBackwardErrors(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2}).RequireGrad()
	cases := []struct {
		name string
		err  error
		kind error
		text string
	}{
		{"non_scalar", x.Exp().Backward(), lathe.ErrGrad, "WithGradient"},
		{"no_grad_wanted", lathe.FromSlice(lathe.CPU, []float64{1}).Exp().Backward(), lathe.ErrGrad, "RequireGrad"},
		{"int_leaf", lathe.FromSlice(lathe.CPU, []int32{1}).RequireGrad().Err(), lathe.ErrGrad, "only float tensors"},
		{"seed_shape", x.Exp().Backward(lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float64, 3))), lathe.ErrShape, "gradient"},
		{"seed_dtype", x.Exp().Backward(lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float32, 2))), lathe.ErrDType, "gradient"},
		// A gradient that failed is its own error, not "none given" (a
		// non-scalar result) nor ones (a scalar one): issue 15, defect 13.
		{"seed_failed/scalar", x.Exp().Sum().Backward(lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float64, 3).Reshape(7))), lathe.ErrShape, "reshape"},
		{"seed_failed/non_scalar", x.Exp().Backward(lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float64, 3).Reshape(7))), lathe.ErrShape, "reshape"},
		{"seed_nil", x.Exp().Sum().Backward(lathe.WithGradient(nil)), lathe.ErrValue, `"gradient"`},
		{"seed_zero", x.Exp().Backward(lathe.WithGradient(&lathe.Tensor{})), lathe.ErrValue, `"gradient"`},
		{"grad/seed_failed", gradErr(lathe.Grad(x.Exp().Sum(), []*lathe.Tensor{x}, lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float64, 3).Reshape(7)))), lathe.ErrShape, "reshape"},
		{"grad/non_scalar", gradErr(lathe.Grad(x.Exp(), []*lathe.Tensor{x})), lathe.ErrGrad, "WithGradient"},
	}
	released := scalar(2).RequireGrad()
	y := released.Exp()
	released.Release()
	cases = append(cases, struct {
		name string
		err  error
		kind error
		text string
	}{"released_input", y.Backward(), lathe.ErrReleased, "was released"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !errors.Is(c.err, c.kind) || !strings.Contains(c.err.Error(), c.text) {
				t.Fatalf("error %v, want kind %v mentioning %q", c.err, c.kind, c.text)
			}
		})
	}
}

func gradErr(_ []*lathe.Tensor, err error) error { return err }

func TestGradSecondOrder(t *testing.T) {
	x := scalar(1.5).RequireGrad()
	y := x.Mul(x).Mul(x) // y = x³, y' = 3x², y'' = 6x
	g, err := lathe.Grad(y, []*lathe.Tensor{x}, lathe.CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, g[0]); math.Abs(got-3*1.5*1.5) > 1e-12 {
		t.Fatalf("y' = %v", got)
	}
	h, err := lathe.Grad(g[0], []*lathe.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, h[0]); math.Abs(got-9) > 1e-12 {
		t.Fatalf("y'' = %v, want 9", got)
	}
	if x.Grad() != nil {
		t.Error("lathe.Grad accumulated into the leaf")
	}
	z := scalar(2).RequireGrad()
	if _, err := lathe.Grad(y, []*lathe.Tensor{z}); !errors.Is(err, lathe.ErrGrad) {
		t.Errorf("unused input: %v", err)
	}
	if gs, err := lathe.Grad(x.Exp(), []*lathe.Tensor{z}, lathe.AllowUnused()); err != nil || gs[0] != nil {
		t.Errorf("AllowUnused: %v, %v", gs, err)
	}
}

func TestDetachAndNoGrad(t *testing.T) {
	x := scalar(2).RequireGrad()
	if d := x.Detach().Exp(); d.RequiresGrad() {
		t.Error("a detached tensor's result requires a gradient")
	}
	var inside *lathe.Tensor
	lathe.NoGrad(func() { inside = x.Exp() })
	if inside.RequiresGrad() {
		t.Error("an op under NoGrad was recorded")
	}
	if !x.Exp().RequiresGrad() {
		t.Error("recording did not resume after NoGrad")
	}
}

// NoGrad is per goroutine: one goroutine inside NoGrad must not stop
// another from recording, and two models train independently.
func TestGoroutinesTrainIndependently(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{})
	go lathe.NoGrad(func() { close(entered); <-hold })
	<-entered
	defer close(hold)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := scalar(float64(i + 1)).RequireGrad()
			for range 50 {
				if err := x.Mul(x).Backward(); err != nil {
					errs[i] = err
					return
				}
			}
			got, err := x.Grad().Item()
			if err != nil || got != 50*2*float64(i+1) {
				errs[i] = errors.New("wrong accumulated gradient")
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
}

func TestOnGradHook(t *testing.T) {
	x := scalar(1).RequireGrad()
	var seen float64
	x.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
		seen, _ = g.Item()
		return g.MulScalar(10)
	})
	if err := x.Mul(x).Backward(); err != nil {
		t.Fatal(err)
	}
	if seen != 2 || value(t, x.Grad()) != 20 {
		t.Fatalf("hook saw %v, grad %v; want 2 and 20", seen, value(t, x.Grad()))
	}
}

func TestAnomalyMode(t *testing.T) {
	lathe.DetectAnomaly(true)
	defer lathe.DetectAnomaly(false)
	x := scalar(0).RequireGrad()
	y := x.Log() // -inf in the forward
	var e *lathe.Error
	if err := y.Err(); !errors.As(err, &e) || e.Op != "log" || !strings.Contains(err.Error(), "tape_test.go:") {
		t.Fatalf("forward anomaly: %v", err)
	}
	z := x.Sqrt() // sqrt(0) = 0 is fine forward, its gradient 1/(2·0) is not
	err := z.Backward()
	if !errors.As(err, &e) || e.Op != "sqrt" || !strings.Contains(err.Error(), "backward") {
		t.Fatalf("backward anomaly: %v", err)
	}
}

// TestBackwardReleasesWhatItMade checks the ownership rules of an
// unrecorded backward pass: the accumulated gradient is autodiff's, so
// ZeroGrad releases it (a handle from Grad then says so, and a Clone
// survives), and the gradients asked of lathe.Grad stay the caller's.
func TestBackwardReleasesWhatItMade(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2}).RequireGrad()
	y := x.Mul(x).Add(x.Exp()).Sum() // x feeds two ops: its gradient is a sum of parts
	if err := y.Backward(); err != nil {
		t.Fatal(err)
	}
	g := x.Grad()
	kept := g.Clone()
	x.ZeroGrad()
	if _, err := g.Float64s(); !errors.Is(err, lathe.ErrReleased) {
		t.Fatalf("gradient after ZeroGrad: got %v, want ErrReleased", err)
	}
	want := []float64{2 + math.E, 4 + math.Exp(2)}
	got, err := kept.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12 {
			t.Fatalf("clone of the gradient = %v, want %v", got, want)
		}
	}
	z := x.Mul(x).Sum()
	gs, err := lathe.Grad(z, []*lathe.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := gs[0].Float64s(); err != nil || v[0] != 2 || v[1] != 4 {
		t.Fatalf("lathe.Grad gave %v, %v; want [2 4]", v, err)
	}
}

// TestMatMulGradientOfTransposedView: y = x·Wᵀ through a transposed view,
// as a Linear layer computes it. The rule makes W's gradient row-major;
// its values must be gᵀ·x, and the same as through a contiguous copy of Wᵀ.
func TestMatMulGradientOfTransposedView(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float64{1, 2, 3, 4, 5, 6}, 2, 3)
	w := lathe.FromSlice(lathe.CPU, []float64{1, -1, 2, 0.5, 3, -2, 1, 1, 0, 2, -1, 4}, 4, 3).RequireGrad()
	g := lathe.FromSlice(lathe.CPU, []float64{1, 0, 2, -1, 0.5, 3, -2, 1}, 2, 4)
	if err := x.MatMul(w.MT()).Mul(g).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	viaView, err := w.Grad().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.MT().MatMul(x).Float64s() // gᵀ·x, [4, 3]
	if err != nil {
		t.Fatal(err)
	}
	w2 := w.Detach().RequireGrad()
	if err := x.MatMul(w2.MT().Contiguous()).Mul(g).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	viaCopy, err := w2.Grad().Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(viaView[i]-want[i]) > 1e-12 || math.Abs(viaCopy[i]-want[i]) > 1e-12 {
			t.Fatalf("dW = %v through the view and %v through a copy, want %v", viaView, viaCopy, want)
		}
	}
}

// TestBackwardReleasesUnneededGradients: a rule that returns a gradient
// for an argument that needs none (a constant's, under maximum, pow or a
// broadcast add) has it released by the pass, not left to the garbage
// collector; products and quotients by a constant compute none. Each
// case's pass leaves nothing but x's own gradient held, and that gradient
// is right.
func TestBackwardReleasesUnneededGradients(t *testing.T) {
	const n = 256
	const big = n * n * 4
	stats := func() lathe.MemStats {
		s, err := lathe.MemoryStats(lathe.CPU)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	allocated := func() int64 { return stats().Allocated }
	lathe.Seed(13)
	x := lathe.RandN(lathe.CPU, lathe.Float32, n, n).AddScalar(4).RequireGrad() // positive: pow's base
	c := lathe.RandN(lathe.CPU, lathe.Float32, n, n)
	row := lathe.RandN(lathe.CPU, lathe.Float32, n)
	xs, _ := x.Float32s()
	cs, _ := c.Float32s()
	for _, k := range []struct {
		name string
		f    func(x *lathe.Tensor) *lathe.Tensor
		d    func(i int) float64 // d f / d x at element i
		// blocks is how many [n, n] blocks the pass may take: x's
		// gradient's formula alone where the constant's is skipped
		blocks int64
	}{
		{"maximum", func(x *lathe.Tensor) *lathe.Tensor { return x.Maximum(c) }, func(i int) float64 {
			if xs[i] > cs[i] {
				return 1
			}
			return 0
		}, 0},
		{"pow", func(x *lathe.Tensor) *lathe.Tensor { return x.Pow(c) }, func(i int) float64 {
			return float64(cs[i]) * math.Pow(float64(xs[i]), float64(cs[i])-1)
		}, 0},
		{"add broadcast", func(x *lathe.Tensor) *lathe.Tensor { return x.Add(row) }, func(int) float64 { return 1 }, 0},
		{"mul", func(x *lathe.Tensor) *lathe.Tensor { return x.Mul(c) }, func(i int) float64 { return float64(cs[i]) }, 1},
		{"div", func(x *lathe.Tensor) *lathe.Tensor { return x.Div(c) }, func(i int) float64 { return 1 / float64(cs[i]) }, 1},
	} {
		t.Run(k.name, func(t *testing.T) {
			before := allocated()
			y := k.f(x)
			loss := y.Sum()
			allocs := stats().Allocs
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			if took := stats().Allocs - allocs; k.blocks > 0 && took != k.blocks {
				t.Errorf("the pass took %d blocks, want %d: the constant's gradient was computed", took, k.blocks)
			}
			y.Release()
			loss.Release()
			if held := allocated() - before; held >= 2*big { // x's gradient, and no more
				t.Errorf("%d bytes held after the pass, want x's gradient's %d alone", held, big)
			}
			grad := x.Grad()
			g, err := grad.Float32s()
			grad.Release()
			x.ZeroGrad()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range g {
				if want := k.d(i); math.Abs(float64(v)-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("gradient [%d] = %v, want %v", i, v, want)
				}
			}
		})
	}
}
