package lathe

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestAttentionDropout checks AttentionDropout's weights: with q = 0 every
// weight is 1/Lk, and with v the identity the output is the weight matrix,
// so each element is 0 (dropped, with probability p) or 1/(Lk·(1-p)). The
// fraction dropped must be p within five standard deviations, and the draw
// must repeat under the same Seed and change under another.
func TestAttentionDropout(t *testing.T) {
	const l, p = 128, 0.3
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			q := Zeros(dev, Float32, 2, l, 8)
			k := RandN(dev, Float32, 2, l, 8)
			v := Eye(dev, Float32, l).Unsqueeze(0).Expand(2, l, l)
			run := func(seed uint64) []float32 {
				Seed(seed)
				out := ScaledDotProductAttention(q, k, v, AttentionDropout(p))
				got, err := out.Float32s()
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			a := run(7)
			kept := float32(1 / (l * (1 - p)))
			dropped := 0
			for i, x := range a {
				switch {
				case x == 0:
					dropped++
				case math.Abs(float64(x-kept)) > 1e-6:
					t.Fatalf("weight %d is %g, want 0 or %g", i, x, kept)
				}
			}
			n := float64(len(a))
			frac := float64(dropped) / n
			if sd := math.Sqrt(p * (1 - p) / n); math.Abs(frac-p) > 5*sd {
				t.Errorf("dropped %.4f of the weights, want %.2f ± %.4f", frac, p, 5*sd)
			}
			b, c := run(7), run(8)
			same, diff := true, false
			for i := range a {
				same = same && a[i] == b[i]
				diff = diff || a[i] != c[i]
			}
			if !same {
				t.Error("the same Seed gave another draw")
			}
			if !diff {
				t.Error("another Seed gave the same draw")
			}
			// p = 0 is no dropout: the exact mean of v's rows.
			out, err := ScaledDotProductAttention(q, k, v, AttentionDropout(0)).Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range out {
				if math.Abs(float64(x)-1.0/l) > 1e-6 {
					t.Fatalf("p = 0: weight %d is %g, want %g", i, x, 1.0/l)
				}
			}
		})
	}
}

// TestAttentionErrors checks the refusals that the conformance cases do
// not reach: options out of range, foreign devices, nil and failed inputs.
func TestAttentionErrors(t *testing.T) {
	q, k, v := RandN(CPU, Float32, 2, 3, 4), RandN(CPU, Float32, 2, 5, 4), RandN(CPU, Float32, 2, 5, 4)
	bad := Zeros(CPU, Float32, 2).Reshape(3)
	for _, c := range []struct {
		name string
		out  *Tensor
		kind error
		arg  string
	}{
		{"dropout-0.1", ScaledDotProductAttention(q, k, v, AttentionDropout(-0.1)), ErrValue, "dropout_p"},
		{"dropout1", ScaledDotProductAttention(q, k, v, AttentionDropout(1)), ErrValue, "dropout_p"},
		{"dropoutNaN", ScaledDotProductAttention(q, k, v, AttentionDropout(math.NaN())), ErrValue, "dropout_p"},
		{"scaleInf", ScaledDotProductAttention(q, k, v, AttentionScale(math.Inf(1))), ErrValue, "scale"},
		{"scaleNaN", ScaledDotProductAttention(q, k, v, AttentionScale(math.NaN())), ErrValue, "scale"},
		{"nil query", ScaledDotProductAttention(nil, k, v), ErrValue, "query"},
		{"nil key", ScaledDotProductAttention(q, nil, v), ErrValue, "key"},
		{"failed value", ScaledDotProductAttention(q, k, bad), ErrShape, ""},
		{"failed mask", ScaledDotProductAttention(q, k, v, AttentionMask(bad)), ErrShape, ""},
		{"float64 key", ScaledDotProductAttention(q, k.Cast(Float64), v), ErrDType, "key"},
		{"mask dtype", ScaledDotProductAttention(q, k, v, AttentionMask(Zeros(CPU, Float64, 3, 5))), ErrDType, "attn_mask"},
	} {
		err := c.out.Err()
		var e *Error
		switch {
		case !errors.Is(err, c.kind):
			t.Errorf("%s: error %v, want kind %v", c.name, err, c.kind)
		case !errors.As(err, &e):
			t.Errorf("%s: %T is not a *lathe.Error", c.name, err)
		case c.arg != "" && e.Arg != c.arg:
			t.Errorf("%s: error %v names argument %q, want %q", c.name, err, e.Arg, c.arg)
		}
	}
	released := RandN(CPU, Float32, 2, 5, 4)
	released.Release()
	if err := ScaledDotProductAttention(q, k, released).Err(); !errors.Is(err, ErrReleased) {
		t.Errorf("released value: %v, want ErrReleased", err)
	}
	for _, s := range DeviceStatus() {
		if !s.Available || s.Device == CPU {
			continue
		}
		err := ScaledDotProductAttention(q, k, v.To(s.Device)).Err()
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrDevice) || e.Arg != "value" {
			t.Errorf("value on %s: %v, want ErrDevice naming value", s.Device, err)
		}
		mask := Ones(s.Device, Bool, q.Dim(-2), k.Dim(-2))
		err = ScaledDotProductAttention(q, k, v, AttentionMask(mask)).Err()
		if !errors.As(err, &e) || !errors.Is(err, ErrDevice) || e.Arg != "attn_mask" {
			t.Errorf("mask on %s: %v, want ErrDevice naming attn_mask", s.Device, err)
		}
	}
}

// attnCase is a shape for the fused-against-composite tests: sizes past
// one block of the cpu kernel (64 queries, 128 keys) in each direction,
// and within one.
type attnCase struct {
	name    string
	q, k, v []int
	opts    []AttentionOption
	// mask makes the case's attn_mask on dev for inputs of dt; nil: none.
	mask func(dev Device, dt DType) *Tensor
}

func attnCases() []attnCase {
	return []attnCase{
		{"plain", []int{2, 2, 150, 16}, []int{2, 2, 300, 16}, []int{2, 2, 300, 8}, nil, nil},
		{"causal/lq<lk", []int{1, 2, 70, 8}, []int{1, 2, 260, 8}, []int{1, 2, 260, 8}, []AttentionOption{IsCausal()}, nil},
		{"causal/lq>lk", []int{1, 1, 200, 8}, []int{1, 1, 130, 8}, []int{1, 1, 130, 4}, []AttentionOption{IsCausal()}, nil},
		{"gqa/bcast", []int{2, 4, 65, 8}, []int{1, 2, 129, 8}, []int{1, 2, 129, 8}, []AttentionOption{AttentionScale(0.7)}, nil},
		{"rank3", []int{3, 9, 5}, []int{3, 11, 5}, []int{3, 11, 2}, []AttentionOption{IsCausal()}, nil},
		// One key block (the cpu's backward then adds dQ in its key pass)
		// under three query blocks of two query heads each.
		{"gqa/one-key-block", []int{1, 4, 150, 8}, []int{1, 2, 100, 8}, []int{1, 2, 100, 4}, []AttentionOption{IsCausal()}, nil},
		// Heads enough for the cpu's backward to give each task all the
		// key blocks of a head (it then adds dQ in its key pass too) with
		// up to 8 workers; "causal/lq<lk" and "causal/lq>lk" take the two passes
		// with 2 or more.
		{"heads/key-blocks", []int{2, 8, 70, 8}, []int{2, 8, 200, 8}, []int{2, 8, 200, 4}, []AttentionOption{IsCausal()}, nil},
		{"lk0", []int{1, 2, 3, 4}, []int{1, 2, 0, 4}, []int{1, 2, 0, 3}, nil, nil},
	}
}

// sdpaComposite is ScaledDotProductAttention on the composite path.
func sdpaComposite(q, k, v *Tensor, opts ...AttentionOption) *Tensor {
	var o attentionOptions
	for _, f := range opts {
		f(&o)
	}
	a, err := checkAttention(q, k, v, o)
	if err != nil {
		return failed(err)
	}
	if o.mask != nil {
		return apply(opAttentionMasked, a, q, k, v, o.mask)
	}
	return apply(opAttention, a, q, k, v)
}

// attnClose fails t where got and want differ by more than tol relative
// to 1 + |want|, or where one is NaN and the other not (a query row with
// no key to attend to is NaN on every path), and returns got's values.
func attnClose(t *testing.T, what string, got, want *Tensor, tol float64) []float64 {
	t.Helper()
	g, err := got.To(CPU).Cast(Float64).Float64s()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	w, err := want.To(CPU).Cast(Float64).Float64s()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(g) != len(w) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
	}
	for i := range g {
		if math.IsNaN(w[i]) != math.IsNaN(g[i]) || !math.IsNaN(w[i]) && !(math.Abs(g[i]-w[i]) <= tol*(1+math.Abs(w[i]))) {
			t.Fatalf("%s: [%d] = %g, want %g (tolerance %g)", what, i, g[i], w[i], tol)
		}
	}
	return g
}

// TestAttentionFused holds the fused cpu kernels (forward and backward) to
// the composite: values, gradients of q, k and v, and the Hessian-vector
// products of the recorded backward; and, in float64, that Hessian-vector
// product to central finite differences of the fused backward.
func TestAttentionFused(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float64, Float32} {
			if dev != CPU && dt == Float64 {
				continue // float64 is the cpu's (and cuda's)
			}
			for _, masked := range []bool{false, true} {
				if !fusedAttention(dev, dt, masked) {
					t.Errorf("%s has no fused attention for %s (masked: %v)", dev, dt, masked)
				}
			}
			testAttentionFused(t, dev, dt)
		}
	}
}

func testAttentionFused(t *testing.T, dev Device, dt DType) {
	tol := 1e-10
	if dt == Float32 {
		tol = 2e-5
	}
	cases := append(attnCases(), attnMaskCases()...)
	if dev != CPU {
		// Its shape is for the cpu's scheduling; elsewhere it is "plain"
		// again, and on the cuda emulation the slowest case.
		cases = slices.DeleteFunc(cases, func(c attnCase) bool { return c.name == "heads/key-blocks" })
	}
	// With dropout: each attention call below starts from one Seed, so
	// the fused op's key is the composite's Dropout's and the two drop
	// the same weights.
	for _, c := range cases[:len(cases):len(cases)] {
		if c.name != "lk0" {
			c.name += "/dropout"
			c.opts = append(slices.Clone(c.opts), AttentionDropout(0.3))
			cases = append(cases, c)
		}
	}
	sdpa := func(attend func(q, k, v *Tensor, opts ...AttentionOption) *Tensor, q, k, v *Tensor, opts ...AttentionOption) *Tensor {
		Seed(11)
		return attend(q, k, v, opts...)
	}
	{
		for _, c := range cases {
			t.Run(dev.String()+"/"+dt.String()+"/"+c.name, func(t *testing.T) {
				Seed(3)
				q, k, v := RandN(dev, dt, c.q...), RandN(dev, dt, c.k...), RandN(dev, dt, c.v...)
				opts := c.opts
				if c.mask != nil {
					opts = append(slices.Clone(opts), AttentionMask(c.mask(dev, dt)))
				}
				xs := []*Tensor{q.RequireGrad(), k.RequireGrad(), v.RequireGrad()}
				fused := sdpa(ScaledDotProductAttention, q, k, v, opts...)
				comp := sdpa(sdpaComposite, q, k, v, opts...)
				attnClose(t, "forward", fused, comp, tol)
				w := RandNLike(fused)
				gf, err := Grad(fused.Mul(w).Sum(), xs, CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				gc, err := Grad(comp.Mul(w).Sum(), xs, CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				plain, err := Grad(sdpa(ScaledDotProductAttention, q, k, v, opts...).Mul(w).Sum(), xs)
				if err != nil {
					t.Fatal(err)
				}
				us := []*Tensor{RandNLike(q), RandNLike(k), RandNLike(v)}
				dot := func(gs []*Tensor) *Tensor {
					s := gs[0].Mul(us[0]).Sum()
					for i := 1; i < 3; i++ {
						s = s.Add(gs[i].Mul(us[i]).Sum())
					}
					return s
				}
				hf, err := Grad(dot(gf), xs)
				if err != nil {
					t.Fatal(err)
				}
				hc, err := Grad(dot(gc), xs)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range []string{"q", "k", "v"} {
					attnClose(t, "grad "+name+" (kernel)", plain[i], gc[i], 10*tol)
					attnClose(t, "grad "+name+" (recorded)", gf[i], gc[i], 10*tol)
					attnClose(t, "hvp "+name, hf[i], hc[i], 10*tol)
				}
				if dt != Float64 {
					return
				}
				// (∇f(x+εu) - ∇f(x-εu)) / 2ε with the kernel's gradient.
				const eps = 1e-5
				shifted := func(sign float64) []*Tensor {
					var ys []*Tensor
					for i, x := range xs {
						ys = append(ys, x.Detach().Add(us[i].MulScalar(sign*eps)).RequireGrad())
					}
					g, err := Grad(sdpa(ScaledDotProductAttention, ys[0], ys[1], ys[2], opts...).Mul(w).Sum(), ys)
					if err != nil {
						t.Fatal(err)
					}
					return g
				}
				plus, minus := shifted(1), shifted(-1)
				for i, name := range []string{"q", "k", "v"} {
					fd := plus[i].Sub(minus[i]).MulScalar(1 / (2 * eps))
					attnClose(t, "hvp "+name+" vs finite differences", hf[i], fd, 1e-6)
				}
			})
		}
	}
}

// TestFailedAttentionDropoutDrawsNothing: a fused attention with dropout
// that fails after its key was drawn (an output of 2^40 rows) puts the
// stream back, as a failed Dropout does.
func TestFailedAttentionDropoutDrawsNothing(t *testing.T) {
	Seed(5)
	key := nextKey()
	q := Ones(CPU, Float32, 1, 1, 1, 4).Expand(1<<20, 1<<20, 1, 4)
	kv := Ones(CPU, Float32, 1, 1, 1, 4)
	if err := ScaledDotProductAttention(q, kv, kv, AttentionDropout(0.5)).Err(); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("attention of 2^40 query rows: %v, want ErrOutOfMemory", err)
	}
	if got := nextKey(); got != key {
		t.Errorf("after the failed attention the stream's next key is %x, want %x (drawn nothing)", got, key)
	}
}

// TestEmptyAttentionDropoutDrawsNothing: attention whose weights have no
// elements (no queries, no keys, an empty batch) draws no dropout key,
// fused or composite, as Dropout of no elements draws none.
func TestEmptyAttentionDropoutDrawsNothing(t *testing.T) {
	for _, dev := range biDevices(t) {
		for _, dt := range []DType{Float32, Float64} {
			if Zeros(dev, dt, 1).Err() != nil {
				continue // a dtype the device lacks
			}
			for _, c := range []struct {
				name string
				q, k []int
			}{{"lq=0", []int{2, 0, 4}, []int{2, 3, 4}}, {"lk=0", []int{2, 3, 4}, []int{2, 0, 4}}, {"batch=0", []int{0, 3, 4}, []int{0, 3, 4}}} {
				Seed(5)
				key := nextKey()
				kv := Ones(dev, dt, c.k...)
				if err := ScaledDotProductAttention(Ones(dev, dt, c.q...), kv, kv, AttentionDropout(0.5)).Err(); err != nil {
					t.Fatalf("%s/%s/%s: %v", dev, dt, c.name, err)
				}
				if got := nextKey(); got != key {
					t.Errorf("%s/%s/%s: after the attention the stream's next key is %x, want %x (drawn nothing)", dev, dt, c.name, got, key)
				}
			}
		}
	}
}

// TestAttentionScaleBelowFloat32 gives float32 attention a scale that
// rounds to 0 in float32 (1e-300), with a NaN in the keys: as torch's
// q·scale (0·NaN is NaN), every score it reaches is NaN, and so the rows,
// and every gradient, on every device. The cpu's products took the scale as
// BLAS's alpha, and a BLAS reads neither operand when alpha is 0, so the
// NaN vanished: uniform weights, the mean of v, gradients of 0.
func TestAttentionScaleBelowFloat32(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			kv := []float32{2, 2, 2, 2, 2, 2, 2, 2}
			kv[0] = float32(math.NaN())
			q := Full(dev, Float32, 2, 1, 2, 4).RequireGrad()
			k := FromSlice(CPU, kv).Reshape(1, 2, 4).To(dev).RequireGrad()
			v := Full(dev, Float32, 2, 1, 2, 3).RequireGrad()
			out := ScaledDotProductAttention(q, k, v, AttentionScale(1e-300))
			got, err := out.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range got {
				if !math.IsNaN(float64(x)) {
					t.Fatalf("element %d is %v, want NaN (0·NaN in the first key's scores)", i, x)
				}
			}
			gs, err := Grad(out.Sum(), []*Tensor{q, k, v})
			if err != nil {
				t.Fatal(err)
			}
			for i, name := range []string{"q", "k", "v"} {
				g, err := gs[i].Float32s()
				if err != nil {
					t.Fatal(err)
				}
				for j, x := range g {
					if !math.IsNaN(float64(x)) {
						t.Fatalf("gradient of %s: element %d is %v, want NaN", name, j, x)
					}
				}
			}
		})
	}
}

// TestAttentionHalfGradientsKeepTheLogsumexp: the fused attention's
// backward recomputes the weights from the forward's logsumexp, which a
// 16-bit result rounded to 8 bits (bfloat16): with scores of a few tens,
// the gradients were off by up to 8% of their largest. The logsumexp is
// float32 now (ops.AttentionOutDType), and bfloat16 gradients are within a
// bfloat16 rounding or two of float64's.
func TestAttentionHalfGradientsKeepTheLogsumexp(t *testing.T) {
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			Seed(3)
			q0 := RandN(dev, Float32, 1, 2, 16, 64).MulScalar(4).Cast(BFloat16)
			k0 := RandN(dev, Float32, 1, 2, 16, 64).MulScalar(4).Cast(BFloat16)
			v0 := RandN(dev, Float32, 1, 2, 16, 64).Cast(BFloat16)
			w := RandN(dev, Float32, 1, 2, 16, 64)
			grads := func(dt DType) [][]float64 {
				if dev.Kind != CPU.Kind && dt == Float64 {
					dt = Float32 // wgpu has no float64; float32 is far finer than bfloat16's 2^-8
				}
				q, k, v := q0.Cast(dt).RequireGrad(), k0.Cast(dt).RequireGrad(), v0.Cast(dt).RequireGrad()
				if err := ScaledDotProductAttention(q, k, v).Cast(Float32).Mul(w).Sum().Backward(); err != nil {
					t.Fatal(err)
				}
				var out [][]float64
				for _, x := range []*Tensor{q, k, v} {
					g, err := x.Grad().To(CPU).Cast(Float64).Float64s()
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, g)
				}
				return out
			}
			ref, got := grads(Float64), grads(BFloat16)
			for i, name := range []string{"query", "key", "value"} {
				largest, worst := 0.0, 0.0
				for j := range ref[i] {
					largest = math.Max(largest, math.Abs(ref[i][j]))
					worst = math.Max(worst, math.Abs(ref[i][j]-got[i][j]))
				}
				if worst > 0.01*largest {
					t.Errorf("%s's gradient off by %.3g, %.2g%% of its largest %.3g; want at most 1%%", name, worst, 100*worst/largest, largest)
				}
			}
		})
	}
}
