package lathe

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
)

// acVals reads t's values as float32s, failing the test on an error.
func acVals(t *testing.T, x *Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// acClose fails unless got and want agree within rel·max(1, |want|).
func acClose(t *testing.T, name string, got, want []float32, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > rel*math.Max(1, math.Abs(float64(want[i]))) {
			t.Errorf("%s[%d] = %v, torch %v", name, i, got[i], want[i])
		}
	}
}

func acInputs() (x, w, b, target *Tensor) {
	r := torchAutocast
	return FromSlice(CPU, r.X, 3, 4), FromSlice(CPU, r.W, 5, 4), FromSlice(CPU, r.B, 5), FromSlice(CPU, r.Target, 3, 5)
}

// TestAutocastTorch compares linear, matmul, mse_loss and the float32
// gradients under Autocast(BFloat16) with torch.autocast's.
func TestAutocastTorch(t *testing.T) {
	x, w, b, target := acInputs()
	x, w, b = x.RequireGrad(), w.RequireGrad(), b.RequireGrad()
	var y, mm, soft, loss *Tensor
	if err := Autocast(BFloat16, func() {
		y = x.Linear(w, b)
		mm = x.MatMul(w.MT())
		soft = x.Cast(BFloat16).Softmax(-1)
		loss = y.MSELoss(target)
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  *Tensor
		dt   DType
		want []float32
	}{
		{"linear", y, BFloat16, torchAutocast.Linear},
		{"matmul", mm, BFloat16, torchAutocast.MatMul},
		{"softmax", soft, Float32, torchAutocast.Softmax},
		{"mse_loss", loss, Float32, torchAutocast.Loss},
	} {
		if c.got.DType() != c.dt {
			t.Fatalf("%s: dtype %v, want %v (err %v)", c.name, c.got.DType(), c.dt, c.got.Err())
		}
		// The bfloat16 results are rounded once from float32 sums, as the
		// reference's: equal. float32 ones agree to float32 accuracy.
		tol := 0.0
		if c.dt == Float32 {
			tol = 1e-6
		}
		acClose(t, c.name, acVals(t, c.got), c.want, tol)
	}
	// torch 1.13's cpu bfloat16 addmm rounds more than once: within an ulp.
	acClose(t, "linear vs torch's cpu addmm", acVals(t, y), torchAutocast.TorchLinear, 1.0/128)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		p    *Tensor
		want []float32
	}{{"grad x", x, torchAutocast.GradX}, {"grad w", w, torchAutocast.GradW}, {"grad b", b, torchAutocast.GradB}} {
		g := c.p.Grad()
		if g.DType() != Float32 {
			t.Fatalf("%s: dtype %v, want float32", c.name, g.DType())
		}
		// The gradients pass through bfloat16 matmuls: bfloat16 tolerance.
		acClose(t, c.name, acVals(t, g), c.want, 1.0/128)
	}
}

// TestAutocastPolicies checks the three policies and the ops outside the table.
func TestAutocastPolicies(t *testing.T) {
	x, w, b, _ := acInputs()
	h := x.Cast(Float16)
	d := x.Cast(Float64)
	cases := []struct {
		name string
		f    func() *Tensor
		dt   DType
	}{
		{"matmul/f32", func() *Tensor { return x.MatMul(w.MT()) }, Float16},
		{"matmul/f64 untouched", func() *Tensor { return d.MatMul(w.Cast(Float64).MT()) }, Float64},
		{"linear/bias", func() *Tensor { return x.Linear(w, b) }, Float16},
		{"conv1d/bias", func() *Tensor { return x.Unsqueeze(0).Conv1d(w.Narrow(0, 0, 3).Reshape(2, 3, 2), b.Narrow(0, 0, 2)) }, Float16},
		{"conv_transpose1d/bias", func() *Tensor {
			return x.Unsqueeze(0).ConvTranspose1d(w.Narrow(0, 0, 3).Reshape(3, 2, 2), b.Narrow(0, 0, 2))
		}, Float16},
		{"softmax/f16", func() *Tensor { return h.Softmax(-1) }, Float32},
		{"log_softmax/f16", func() *Tensor { return h.LogSoftmax(-1) }, Float32},
		{"sum/f16", func() *Tensor { return h.Sum() }, Float32},
		{"exp/f16", func() *Tensor { return h.Exp() }, Float32},
		{"layer_norm/f16", func() *Tensor { return h.LayerNorm([]int{4}, nil, nil, 1e-5) }, Float32},
		{"add/f16+f16 as is", func() *Tensor { return h.Add(h) }, Float16},
		{"add/f16+f32 promotes", func() *Tensor { return h.Add(x) }, Float32},
		{"relu/f16 as is", func() *Tensor { return h.ReLU() }, Float16},
		{"concat/widest", func() *Tensor { return Concat([]*Tensor{h, x}, 0) }, Float32},
		{"linear then relu", func() *Tensor { return x.Linear(w, b).ReLU() }, Float16},
		{"einsum/f32", func() *Tensor { return Einsum("ij,kj->ik", x, w) }, Float16},
		{"asin/f16", func() *Tensor { return h.MulScalar(0.1).Asin() }, Float32},
		{"acos/f16", func() *Tensor { return h.MulScalar(0.1).Acos() }, Float32},
		{"tan/f16", func() *Tensor { return h.Tan() }, Float32},
		{"sinh/f16", func() *Tensor { return h.Sinh() }, Float32},
		{"cosh/f16", func() *Tensor { return h.Cosh() }, Float32},
		{"vector_norm/f16", func() *Tensor { return h.Norm(2, 1) }, Float32},
		{"cross_entropy weighted/f16", func() *Tensor {
			return h.CrossEntropy(FromSlice(CPU, []int64{0, 3, 1}, 3), ClassWeights(FromSlice(CPU, []float32{1, 2, 3, 4}, 4)))
		}, Float32},
		{"nll_loss weighted/f16", func() *Tensor {
			return h.NLLLoss(FromSlice(CPU, []int64{0, 3, 1}, 3), ClassWeights(FromSlice(CPU, []float32{1, 2, 3, 4}, 4)))
		}, Float32},
		{"atan2/widest", func() *Tensor { return h.Atan2(x) }, Float32},
		{"scatter_add/widest", func() *Tensor {
			return x.ScatterAdd(1, FromSlice(CPU, []int64{0, 1, 2, 3, 3, 2, 1, 0, 1, 1, 1, 1}, 3, 4), h)
		}, Float32},
		{"index_put/widest", func() *Tensor {
			return h.IndexPut([]*Tensor{FromSlice(CPU, []int64{2, 0}, 2)}, x.Narrow(0, 0, 2), false)
		}, Float32},
		{"grid_sample/widest", func() *Tensor {
			return GridSample(x.Reshape(1, 1, 3, 4), h.Narrow(1, 0, 2).Reshape(1, 1, 3, 2))
		}, Float32},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *Tensor
			if err := Autocast(Float16, func() { got = c.f() }); err != nil {
				t.Fatal(err)
			}
			if err := got.Err(); err != nil {
				t.Fatal(err)
			}
			if got.DType() != c.dt {
				t.Errorf("dtype %v, want %v", got.DType(), c.dt)
			}
		})
	}
	if got := x.MatMul(w.MT()).DType(); got != Float32 {
		t.Errorf("matmul after Autocast: %v, want float32", got)
	}
}

func TestAutocastDType(t *testing.T) {
	called := false
	err := Autocast(Float32, func() { called = true })
	if !errors.Is(err, ErrDType) || called {
		t.Fatalf("Autocast(Float32): err %v, called %v; want ErrDType, not called", err, called)
	}
	if AutocastDType() != 0 {
		t.Fatal("autocast left on after a refused call")
	}
}

func TestAutocastNestingAndPanic(t *testing.T) {
	x, w, _, _ := acInputs()
	dt := func() DType { return x.MatMul(w.MT()).DType() }
	Autocast(BFloat16, func() {
		Autocast(Float16, func() {
			if got := dt(); got != Float16 {
				t.Errorf("inner: %v, want float16", got)
			}
		})
		if got := dt(); got != BFloat16 {
			t.Errorf("after inner: %v, want bfloat16", got)
		}
		func() {
			defer func() { recover() }()
			Autocast(Float16, func() { panic("boom") })
		}()
		if got := dt(); got != BFloat16 {
			t.Errorf("after a panic inside: %v, want bfloat16", got)
		}
	})
	func() {
		defer func() { recover() }()
		Autocast(BFloat16, func() { panic("boom") })
	}()
	if got, ac := dt(), AutocastDType(); got != Float32 || ac != 0 {
		t.Errorf("after a panic: matmul %v, AutocastDType %v; want float32, none", got, ac)
	}
}

// TestAutocastGoroutines: another goroutine's ops are not cast while one
// goroutine is inside Autocast (run with -race).
func TestAutocastGoroutines(t *testing.T) {
	x, w, _, _ := acInputs()
	inside, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Autocast(BFloat16, func() {
			close(inside)
			for i := 0; i < 20; i++ {
				if got := x.MatMul(w.MT()).DType(); got != BFloat16 {
					t.Errorf("inside: %v, want bfloat16", got)
				}
			}
			<-done
		})
	}()
	<-inside
	var others sync.WaitGroup
	for g := 0; g < 4; g++ {
		others.Add(1)
		go func() {
			defer others.Done()
			for i := 0; i < 20; i++ {
				if got := x.MatMul(w.MT()).DType(); got != Float32 {
					t.Errorf("outside: %v, want float32", got)
				}
			}
		}()
	}
	others.Wait()
	close(done)
	wg.Wait()
}

// TestAutocastFloat32Whole checks that an op on the fp32 list runs whole
// in float32, as torch's does, and not only its last step: vector_norm's
// squares and cross-entropy's weighted terms of a float16 input equal the
// same op's on the input widened first.
func TestAutocastFloat32Whole(t *testing.T) {
	lathe16 := FromSlice(CPU, []float32{1.001, 2.003, 3.007, 250.1, -7.77, 0.333, 11.11, 9.99}, 2, 4).Cast(Float16)
	wide := lathe16.Cast(Float32)
	target := FromSlice(CPU, []int64{3, 0}, 2)
	weights := ClassWeights(FromSlice(CPU, []float32{0.3, 1, 2, 0.7}, 4))
	for _, c := range []struct {
		name string
		f    func(x *Tensor) *Tensor
	}{
		{"vector_norm", func(x *Tensor) *Tensor { return x.Norm(2, 1) }},
		{"cross_entropy weighted", func(x *Tensor) *Tensor { return x.CrossEntropy(target, weights) }},
		{"pdist", func(x *Tensor) *Tensor { return x.Reshape(4, 2).Pdist(3) }},
	} {
		var got *Tensor
		if err := Autocast(Float16, func() { got = c.f(lathe16) }); err != nil {
			t.Fatal(err)
		}
		want := c.f(wide)
		g, err := got.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w, err := want.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(g, w) {
			t.Errorf("%s under autocast: %v, want float32's %v", c.name, g, w)
		}
	}
}
