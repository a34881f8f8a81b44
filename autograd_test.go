package lathe_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// TestSetGradErrorKinds: a gradient that does not fit the tensor is the
// error of what is wrong with it, naming the argument g (issue 15, defect
// 14: one on another device was ErrShape).
func TestSetGradErrorKinds(t *testing.T) {
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3).RequireGrad()
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)
	released.Release()
	cases := []struct {
		name string
		g    func(t *testing.T) *lathe.Tensor
		kind error
		text string
	}{
		{"shape", func(*testing.T) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float32, 3, 2) }, lathe.ErrShape, "[3, 2]"},
		{"dtype", func(*testing.T) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float64, 2, 3) }, lathe.ErrDType, "float64"},
		{"released", func(*testing.T) *lathe.Tensor { return released }, lathe.ErrReleased, "released"},
		{"device", func(t *testing.T) *lathe.Tensor { return lathe.Zeros(openWGPU(t), lathe.Float32, 2, 3) }, lathe.ErrDevice, "wgpu:0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := x.SetGrad(c.g(t))
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), `"g"`) {
				t.Fatalf("SetGrad: %v, want %v naming \"g\" and %q", err, c.kind, c.text)
			}
			if x.Grad() != nil {
				t.Fatal("a refused SetGrad set the gradient")
			}
		})
	}
}

// TestOnGradZeroTensor: a hook that returns a zero Tensor (not nil, which
// keeps the gradient) returns no gradient at all: that is an error, not
// "keep" (issue 15, defect 14).
func TestOnGradZeroTensor(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook func(g *lathe.Tensor) *lathe.Tensor
	}{
		{"new", func(*lathe.Tensor) *lathe.Tensor { return new(lathe.Tensor) }},
		{"value", func(*lathe.Tensor) *lathe.Tensor { var v lathe.Tensor; return &v }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
			x.OnGrad(tc.hook)
			err := x.Mul(x).Sum().Backward()
			if !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), "hook result") {
				t.Fatalf("Backward: %v, want ErrValue naming the hook result", err)
			}
			if x.Grad() != nil {
				t.Fatal("the leaf got a gradient from a failed pass")
			}
		})
	}
}

// TestOnGradNil: a nil hook is not registered (Backward called it, and
// the process died), and OnGrad says so.
func TestOnGradNil(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	if err := x.OnGrad(nil); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("OnGrad(nil): %v, want an ErrValue", err)
	}
	if err := x.Mul(x).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	if g, err := x.Grad().Float32s(); err != nil || g[0] != 2 || g[1] != 4 {
		t.Fatalf("grad %v %v, want [2 4]", g, err)
	}
}

// TestWhenReady: during Backward, each watched leaf's gradient is handed
// over as soon as no op left to run adds to it, after its hooks; a leaf
// the pass does not reach is handed over as nil at the start; an error
// from the callback fails the pass, which changes no Grad.
func TestWhenReady(t *testing.T) {
	a := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	b := lathe.FromSlice(lathe.CPU, []float32{3, 4}, 2).RequireGrad()
	unused := lathe.Zeros(lathe.CPU, lathe.Float32, 2).RequireGrad()
	b.OnGrad(func(g *lathe.Tensor) *lathe.Tensor { return g.MulScalar(10) })
	// b is used once, last; a twice, first and last but one: b's gradient
	// is final before a's.
	forward := func() *lathe.Tensor { return a.Mul(a).Sum().Add(a.Mul(b).Sum()) }
	var order []string
	var got [3][]float32
	ready := func(i int, g *lathe.Tensor) error {
		order = append(order, [...]string{"a", "b", "unused"}[i])
		if g != nil {
			got[i], _ = g.Float32s()
		}
		return nil
	}
	leaves := []*lathe.Tensor{a, b, unused}
	// Twenty passes: leaves finished in the pass's map order, not as their
	// gradients become final, would give this order about once in two.
	for range 20 {
		order = order[:0]
		a.ZeroGrad()
		b.ZeroGrad()
		if err := forward().Backward(lathe.WhenReady(leaves, ready)); err != nil {
			t.Fatal(err)
		}
		if want := []string{"unused", "b", "a"}; strings.Join(order, " ") != strings.Join(want, " ") {
			t.Fatalf("ready order %v, want %v", order, want)
		}
	}
	// d/da = 2a + b = [5, 8]; d/db = a = [1, 2], times 10 by its hook.
	ga, _ := a.Grad().Float32s()
	gb, _ := b.Grad().Float32s()
	if !slices.Equal(got[0], []float32{5, 8}) || !slices.Equal(got[1], []float32{10, 20}) || got[2] != nil {
		t.Errorf("ready saw a %v, b %v, unused %v; want [5 8], [10 20], none", got[0], got[1], got[2])
	}
	if !slices.Equal(ga, got[0]) || !slices.Equal(gb, got[1]) || unused.Grad() != nil {
		t.Errorf("the leaves' Grad: a %v, b %v, unused %v; want what ready saw", ga, gb, unused.Grad())
	}
	// An error from ready fails the pass, which stores nothing.
	boom := errors.New("boom")
	err := forward().Backward(lathe.WhenReady(leaves, func(i int, g *lathe.Tensor) error {
		if i == 1 {
			return boom
		}
		return nil
	}))
	if !errors.Is(err, boom) {
		t.Fatalf("Backward: %v, want the callback's error", err)
	}
	if ga2, _ := a.Grad().Float32s(); !slices.Equal(ga2, ga) {
		t.Errorf("a's Grad after a failed pass: %v, want %v as before", ga2, ga)
	}
	// A leaf listed twice is reported once, at its first place.
	var seen []int
	err = forward().Backward(lathe.WhenReady([]*lathe.Tensor{a, a, b}, func(i int, g *lathe.Tensor) error {
		seen = append(seen, i)
		return nil
	}))
	if err != nil || len(seen) != 2 || !slices.Contains(seen, 0) || !slices.Contains(seen, 2) {
		t.Errorf("leaves [a a b]: ready for %v (%v), want 0 and 2 once each", seen, err)
	}
	// A failed leaf is the pass's error.
	if err := forward().Backward(lathe.WhenReady([]*lathe.Tensor{a, nil}, ready)); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("WhenReady with a nil leaf: %v, want ErrValue", err)
	}
}

// TestPanicInBackwardLeavesTheGraph: a hook, a WhenReady callback or a
// checkpointed function that panics during Backward panics to the caller,
// but leaves the graph as a failed pass does: the pass can run again and
// gives the right gradient. The panic had left the graph's nodes claimed,
// so every later pass was refused with ErrGrad as one racing "another
// backward pass, running now".
func TestPanicInBackwardLeavesTheGraph(t *testing.T) {
	panicOnce := func() func() {
		done := false
		return func() {
			if !done {
				done = true
				panic("boom")
			}
		}
	}
	cases := []struct {
		name string
		// pass builds a graph over x (which it may hook) and returns its
		// loss and the options of its Backward; the first pass panics.
		pass func(x *lathe.Tensor) (*lathe.Tensor, []lathe.GradOption)
	}{
		{"hook", func(x *lathe.Tensor) (*lathe.Tensor, []lathe.GradOption) {
			p := panicOnce()
			x.OnGrad(func(*lathe.Tensor) *lathe.Tensor { p(); return nil })
			return x.Mul(x).Sum(), nil
		}},
		{"when ready", func(x *lathe.Tensor) (*lathe.Tensor, []lathe.GradOption) {
			p := panicOnce()
			return x.Mul(x).Sum(), []lathe.GradOption{lathe.WhenReady([]*lathe.Tensor{x}, func(int, *lathe.Tensor) error { p(); return nil })}
		}},
		{"checkpoint", func(x *lathe.Tensor) (*lathe.Tensor, []lathe.GradOption) {
			calls := 0
			return lathe.Checkpoint(func(xs ...*lathe.Tensor) *lathe.Tensor {
				if calls++; calls == 2 { // the recomputation in the first backward pass
					panic("boom")
				}
				return xs[0].Mul(xs[0])
			}, x).Sum(), nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
			loss, opts := c.pass(x)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("the first pass did not panic")
					}
				}()
				_ = loss.Backward(opts...)
			}()
			if x.Grad() != nil {
				t.Fatal("the panicking pass left a gradient")
			}
			if err := loss.Backward(opts...); err != nil {
				t.Fatalf("Backward after a panicking pass: %v", err)
			}
			if g, err := x.Grad().Float32s(); err != nil || !slices.Equal(g, []float32{2, 4}) {
				t.Fatalf("gradient %v, %v; want [2 4]", g, err)
			}
		})
	}
}

// TestBackwardOntoReleasedGrad: a pass whose leaf's accumulated gradient
// the caller released is an ErrReleased of backward naming the
// accumulated gradient (it was add's, naming its "lhs"), changes no
// gradient, and ZeroGrad starts the leaf anew.
func TestBackwardOntoReleasedGrad(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	y := lathe.FromSlice(lathe.CPU, []float32{3, 4}, 2).RequireGrad()
	loss := x.Mul(y).Sum()
	if err := loss.Backward(lathe.RetainGraph()); err != nil {
		t.Fatal(err)
	}
	x.Grad().Release()
	err := loss.Backward(lathe.RetainGraph())
	if !errors.Is(err, lathe.ErrReleased) || !strings.Contains(err.Error(), "lathe: backward:") ||
		!strings.Contains(err.Error(), "accumulated gradient") {
		t.Fatalf("Backward onto a released gradient: %v, want an ErrReleased of backward naming the accumulated gradient", err)
	}
	if g, err := y.Grad().Float32s(); err != nil || !slices.Equal(g, []float32{1, 2}) {
		t.Fatalf("the failed pass changed the other leaf's gradient: %v, %v", g, err)
	}
	x.ZeroGrad()
	if err := loss.Backward(); err != nil {
		t.Fatalf("Backward after ZeroGrad: %v", err)
	}
	if g, err := x.Grad().Float32s(); err != nil || !slices.Equal(g, []float32{3, 4}) {
		t.Fatalf("gradient %v, %v; want [3 4]", g, err)
	}
}

// TestGradOfNothing: Grad with no inputs is an ErrValue naming xs, as
// torch's "grad requires non-empty inputs", and leaves the graph for
// Backward (it ran the whole pass for nothing and freed the graph).
func TestGradOfNothing(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	loss := x.Mul(x).Sum()
	for _, xs := range [][]*lathe.Tensor{nil, {}} {
		if gs, err := lathe.Grad(loss, xs); gs != nil || !errors.Is(err, lathe.ErrValue) || !strings.Contains(err.Error(), `"xs"`) {
			t.Fatalf("Grad(loss, %v) = %v, %v; want an ErrValue naming \"xs\"", xs, gs, err)
		}
	}
	if err := loss.Backward(); err != nil {
		t.Fatalf("Backward after a refused Grad: %v", err)
	}
}

// TestOnGradRefused: a hook on a tensor that no backward pass reaches
// (one that requires no gradient) is an ErrGrad, as torch refuses it,
// where it was dropped without a word; on a failed or released tensor,
// that tensor's error.
func TestOnGradRefused(t *testing.T) {
	hook := func(g *lathe.Tensor) *lathe.Tensor { return nil }
	plain := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2)
	if err := plain.OnGrad(hook); !errors.Is(err, lathe.ErrGrad) || !strings.Contains(err.Error(), "on_grad: ") {
		t.Errorf("OnGrad on a tensor without a gradient: %v, want an ErrGrad of on_grad", err)
	}
	released := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	released.Release()
	if err := released.OnGrad(hook); !errors.Is(err, lathe.ErrReleased) {
		t.Errorf("OnGrad on a released tensor: %v, want an ErrReleased", err)
	}
	if err := lathe.Failed(errors.New("boom")).OnGrad(hook); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("OnGrad on a failed tensor: %v, want its error", err)
	}
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	if err := x.MulScalar(2).OnGrad(hook); err != nil {
		t.Errorf("OnGrad on an op's result: %v", err)
	}
}

// TestGradRepeatedInput: x twice in xs gives its gradient twice, as two
// handles, so that releasing one leaves the other (both wrapped one),
// and with CreateGraph both are differentiable.
func TestGradRepeatedInput(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	loss := x.Mul(x).Sum()
	gs, err := lathe.Grad(loss, []*lathe.Tensor{x, x}, lathe.CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	second, err := lathe.Grad(gs[1].Sum(), []*lathe.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	gs[0].Release()
	got, err := gs[1].Float32s()
	if err != nil || !slices.Equal(got, []float32{2, 4}) {
		t.Errorf("the second gradient after the first's release: %v, %v; want [2 4]", got, err)
	}
	if got, err := second[0].Float32s(); err != nil || !slices.Equal(got, []float32{2, 2}) {
		t.Errorf("the second gradient's own gradient: %v, %v; want [2 2]", got, err)
	}
}

// TestOnGradNonLeaf: a hook on a tensor that an op made sees its gradient
// and its replacement flows on to the leaves, as torch's register_hook on
// a non-leaf (it was registered and never called, so a clipping hook
// silently clipped nothing); in Grad too, and a failing one fails the pass.
func TestOnGradNonLeaf(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2}, 2).RequireGrad()
	h := x.MulScalar(3)
	var seen []float32
	h.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
		seen, _ = g.Float32s()
		return g.MulScalar(0.5)
	})
	loss := h.Square().Sum() // d loss/dh = 2h = [6 12]; dh/dx = 3
	if err := loss.Backward(lathe.RetainGraph()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []float32{6, 12}) {
		t.Fatalf("the hook saw %v, want [6 12]", seen)
	}
	if g, err := x.Grad().Float32s(); err != nil || !slices.Equal(g, []float32{9, 18}) {
		t.Fatalf("x's gradient %v, %v; want the halved [9 18]", g, err)
	}
	gs, err := lathe.Grad(loss, []*lathe.Tensor{x}, lathe.RetainGraph())
	if err != nil {
		t.Fatal(err)
	}
	if g, err := gs[0].Float32s(); err != nil || !slices.Equal(g, []float32{9, 18}) {
		t.Fatalf("Grad: %v, %v; want [9 18]", g, err)
	}
	h.OnGrad(func(*lathe.Tensor) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float32, 3) })
	if err := loss.Backward(); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("a hook result of another shape: %v, want ErrShape", err)
	}
	if g, _ := x.Grad().Float32s(); !slices.Equal(g, []float32{9, 18}) {
		t.Fatalf("the failed pass changed x's gradient to %v", g)
	}
}
