package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

func loadGradCases(t *testing.T) []*GradCase {
	t.Helper()
	cases, err := LoadGrad(dataDir)
	if err != nil {
		t.Fatalf("loading the gradient cases: %v", err)
	}
	return cases
}

// differentiable are the op keys that must have gradient cases.
var differentiable = strings.Fields(`
	neg abs sign exp log log1p expm1 sqrt rsqrt square reciprocal sin cos tanh sigmoid relu silu softplus erf
	floor ceil round gelu gelu_tanh leaky_relu clamp
	tan asin acos atan sinh cosh asinh acosh atanh softplus_with
	add sub mul div pow maximum minimum atan2 where cast contiguous
	add_scalar sub_scalar mul_scalar div_scalar pow_scalar maximum_scalar minimum_scalar
	remainder fmod remainder_scalar fmod_scalar
	sum mean prod max min var std logsumexp cumsum matmul
	reshape permute transpose mt squeeze unsqueeze expand broadcast_to narrow slice flatten flip concat stack pad
	index_select gather scatter scatter_add masked_fill embedding
	softmax log_softmax cross_entropy nll_loss mse_loss layer_norm
	avg_pool1d avg_pool2d avg_pool3d max_pool1d max_pool2d max_pool3d adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d
	adaptive_max_pool2d max_unpool2d
	masked_select index index_put`)

// piecewiseConstant are the ops whose gradient is zero wherever it exists;
// a finite difference across one of their jumps means nothing, so their
// gradient is checked to be exactly zero instead.
var piecewiseConstant = map[string]bool{"floor": true, "ceil": true, "round": true, "sign": true}

// TestGradCases checks the gradient data: well formed, and a case for every
// differentiable op key.
func TestGradCases(t *testing.T) {
	cases := loadGradCases(t)
	if len(cases) < 300 {
		t.Fatalf("loaded %d gradient cases, want at least 300 (run build/torchref/gen.py)", len(cases))
	}
	seen, used := map[string]bool{}, map[string]int{}
	hvp := 0
	for _, c := range cases {
		used[c.Op]++
		switch {
		case seen[c.Name]:
			t.Errorf("case %q appears twice", c.Name)
		case ops[c.Op] == nil:
			t.Errorf("case %q: op %s has no entry in the table", c.Name, c.Op)
		case c.Output == nil || c.Upstream == nil || len(c.Grads) != len(c.Inputs):
			t.Errorf("case %q needs an output, an upstream gradient and one gradient entry per input", c.Name)
		case c.HVP != nil && (len(c.HVP) != len(c.Inputs) || len(c.V) != len(c.Inputs)):
			t.Errorf("case %q needs one v and one hvp entry per input", c.Name)
		}
		for i, in := range c.Inputs {
			if (in != nil && isFloat(in.DType)) != (c.Grads[i] != nil) {
				t.Errorf("case %q: input %d: a gradient must be given exactly for the float inputs", c.Name, i)
			}
		}
		seen[c.Name] = true
		if c.HVP != nil {
			hvp++
		}
	}
	var missing []string
	for _, k := range differentiable {
		if used[k] == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("differentiable op keys without gradient cases: %s", strings.Join(missing, ", "))
	}
	t.Logf("%d gradient cases (%d with a Hessian-vector product) over %d op keys", len(cases), hvp, len(used))
}

func isFloat(dt string) bool {
	return dt == "float32" || dt == "float64" || dt == "float16" || dt == "bfloat16"
}

// TestGrad runs every gradient case on every device: lathe.Grad of the op's
// output, with the case's upstream gradient, against torch's input
// gradients; and for second-order cases the Hessian-vector product through
// lathe.CreateGraph.
func TestGrad(t *testing.T) {
	cases := loadGradCases(t)
	for _, info := range lathe.DeviceStatus() {
		t.Run(info.Device.String(), func(t *testing.T) {
			if !info.Available {
				testenv.SkipDevice(t, info.Device.String(), "%s is unavailable: %s", info.Device, info.Detail)
			}
			narrow := !hasWideTypes(info.Device)
			var n testenv.Count
			defer func() { testenv.Record("gradients", info.Device.String(), n.Run, n.Skipped, n.Failed) }()
			for _, c := range cases {
				// A device without float64 runs the float64 cases in
				// float32, so that every rule runs on it too.
				if nc := c.Narrow(); narrow && nc != nil {
					c = nc
				}
				n.Case(t, c.Name, func(t *testing.T) { runGrad(t, info.Device, c, false) })
				if c.HVP != nil {
					n.Case(t, c.Name+"/hvp", func(t *testing.T) { runGrad(t, info.Device, c, true) })
				}
			}
		})
	}
}

// hasWideTypes reports whether dev has float64 and int64 tensors.
func hasWideTypes(dev lathe.Device) bool {
	return !errors.Is(lathe.Zeros(dev, lathe.Float64, 1).Err(), lathe.ErrUnsupported)
}

// skipNoRule skips the test when err says an op of the graph has no
// gradient rule in this build; any other error fails it.
func skipNoRule(t *testing.T, what string, err error) {
	t.Helper()
	var le *lathe.Error
	if errors.Is(err, lathe.ErrGrad) && strings.Contains(err.Error(), "has no gradient rule") && errors.As(err, &le) {
		t.Skipf("op %s has no gradient rule in this build", le.Op)
	}
	t.Fatalf("%s: %v", what, err)
}

// gradInputs builds a case's inputs on dev and marks the float ones as
// requiring a gradient; it returns all inputs, the marked ones, and their
// positions among the inputs.
func gradInputs(t *testing.T, dev lathe.Device, c *GradCase) (in, xs []*lathe.Tensor, pos []int) {
	t.Helper()
	in = make([]*lathe.Tensor, len(c.Inputs))
	for i, spec := range c.Inputs {
		x := mustInput(t, dev, spec, fmt.Sprintf("input %d", i))
		if x != nil && isFloat(spec.DType) {
			if x = x.RequireGrad(); x.Err() != nil {
				t.Fatalf("input %d: %v", i, x.Err())
			}
			xs, pos = append(xs, x), append(pos, i)
		}
		in[i] = x
	}
	return in, xs, pos
}

// mustInput is makeInput, skipping a dtype the device lacks.
func mustInput(t *testing.T, dev lathe.Device, spec *Tensor, what string) *lathe.Tensor {
	t.Helper()
	x, err := makeInput(dev, spec)
	switch {
	case errors.Is(err, lathe.ErrUnsupported) && lacksDType(dev, spec.DType):
		t.Skipf("%s: %s has no %s: %v", what, dev, spec.DType, err)
	case err != nil:
		t.Fatalf("%s: %v", what, err)
	}
	return x
}

// forward runs the case's op on in and checks its output against torch's.
func forward(t *testing.T, dev lathe.Device, c *GradCase, in []*lathe.Tensor) *lathe.Tensor {
	t.Helper()
	attrs := c.Attrs
	got, err := ops[c.Op](&attrs, in)
	if aerr := attrs.Err(); aerr != nil {
		t.Fatalf("bad case data: %v", aerr)
	}
	if dt := missingDType(dev, &c.Case, err); dt != "" {
		t.Skipf("%s has no %s, which this case uses: %v", dev, dt, err)
	}
	if err != nil {
		t.Fatalf("forward: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("forward gave %d results, want 1", len(got))
	}
	tol := Tolerance(c.Op, c.Output.DType)
	if c.Narrowed {
		tol = NarrowedTolerance(c.Op, false)
	}
	if err := compareTol(got[0], c.Output, tol); err != nil {
		t.Errorf("forward: %v", err)
	}
	return got[0]
}

// firstGrad is lathe.Grad of the case's output with its upstream gradient.
func firstGrad(t *testing.T, dev lathe.Device, c *GradCase, out *lathe.Tensor, xs []*lathe.Tensor, opts ...lathe.GradOption) []*lathe.Tensor {
	t.Helper()
	w := mustInput(t, dev, c.Upstream, "upstream")
	gs, err := lathe.Grad(out, xs, append([]lathe.GradOption{lathe.WithGradient(w), lathe.AllowUnused()}, opts...)...)
	if err != nil {
		skipNoRule(t, "grad", err)
	}
	return gs
}

func runGrad(t *testing.T, dev lathe.Device, c *GradCase, second bool) {
	in, xs, pos := gradInputs(t, dev, c)
	out := forward(t, dev, c, in)
	if !second {
		gs := firstGrad(t, dev, c, out, xs)
		for k, i := range pos {
			tol := GradTolerance(c.Op, c.Grads[i].DType)
			if c.Narrowed {
				tol = NarrowedTolerance(c.Op, false)
			}
			if err := compareGrad(gs[k], c.Grads[i], tol); err != nil {
				t.Errorf("gradient of input %d: %v", i, err)
			}
		}
		return
	}
	gs := firstGrad(t, dev, c, out, xs, lathe.CreateGraph())
	// Σ_k grad(g_k, xs, v_k) is grad(Σ_k (g_k·v_k).sum(), xs), without the
	// sum's own backward; a g_k that needs no gradient (the op is linear in
	// its inputs) adds nothing.
	acc := make([]*lathe.Tensor, len(xs))
	for k, i := range pos {
		if gs[k] == nil || !gs[k].RequiresGrad() {
			continue
		}
		v := mustInput(t, dev, c.V[i], fmt.Sprintf("v %d", i))
		hs, err := lathe.Grad(gs[k], xs, lathe.WithGradient(v), lathe.AllowUnused(), lathe.RetainGraph())
		if err != nil {
			skipNoRule(t, "second-order grad", err)
		}
		for j, h := range hs {
			switch {
			case h == nil:
			case acc[j] == nil:
				acc[j] = h.Detach()
			default:
				acc[j] = acc[j].Add(h.Detach())
			}
		}
	}
	for k, i := range pos {
		tol := HVPTolerance(c.Op, c.HVP[i].DType)
		if c.Narrowed {
			tol = NarrowedTolerance(c.Op, true)
		}
		if err := compareGrad(acc[k], c.HVP[i], tol); err != nil {
			t.Errorf("Hessian-vector product for input %d: %v", i, err)
		}
	}
}

// compareGrad compares a gradient with torch's; nil (lathe found the input
// unused) stands for zeros.
func compareGrad(got *lathe.Tensor, want *Tensor, tol Tol) error {
	if got != nil {
		return compareTol(got, want, tol)
	}
	wv, err := want.Values()
	if err != nil {
		return err
	}
	f := toFloat64s(wv)
	for i, v := range f {
		if !tol.Close(0, v) {
			return fmt.Errorf("no gradient (zero), but torch's [%d] is %v", i, v)
		}
	}
	return nil
}

func toFloat64s(v any) []float64 {
	switch d := v.(type) {
	case []float64:
		return d
	case []float32:
		out := make([]float64, len(d))
		for i, x := range d {
			out[i] = float64(x)
		}
		return out
	}
	return nil
}

// TestGradFiniteDiff checks every float64 gradient case, on the CPU, against
// a central difference of L = Σ out·upstream: first torch's gradients (which
// checks the reference data with lathe's forward ops alone), then lathe's.
// Finite differences in float32 would measure rounding, not the gradient.
func TestGradFiniteDiff(t *testing.T) {
	dev := lathe.CPU
	var n testenv.Count
	defer func() { testenv.Record("finite differences", dev.String(), n.Run, n.Skipped, n.Failed) }()
	for _, c := range loadGradCases(t) {
		if c.NonSmooth || !allFloat64(c) {
			continue
		}
		n.Case(t, c.Name, func(t *testing.T) {
			if piecewiseConstant[c.Op] {
				checkZeroGrad(t, dev, c)
				return
			}
			fd := finiteDiff(t, dev, c)
			tol := FiniteDiffTolerance(c.Op)
			for i, want := range fd {
				if want == nil || slices.Contains(c.NoGrad, i) {
					continue
				}
				if err := closeSlices(mustFloat64s(t, c.Grads[i]), want, tol); err != nil {
					t.Errorf("torch's gradient of input %d against the finite difference: %v", i, err)
				}
			}
			in, xs, pos := gradInputs(t, dev, c)
			gs := firstGrad(t, dev, c, forward(t, dev, c, in), xs)
			for k, i := range pos {
				if slices.Contains(c.NoGrad, i) {
					continue
				}
				got := make([]float64, len(fd[i]))
				if gs[k] != nil {
					var err error
					if got, err = gs[k].Float64s(); err != nil {
						t.Fatalf("gradient of input %d: %v", i, err)
					}
				}
				if err := closeSlices(got, fd[i], tol); err != nil {
					t.Errorf("lathe's gradient of input %d against the finite difference: %v", i, err)
				}
			}
		})
	}
}

// allFloat64 reports whether the output and every float input are float64.
func allFloat64(c *GradCase) bool {
	if c.Output.DType != "float64" {
		return false
	}
	for _, in := range c.Inputs {
		if in != nil && isFloat(in.DType) && in.DType != "float64" {
			return false
		}
	}
	return true
}

// checkZeroGrad checks that a piecewise-constant op's gradient is exactly
// zero, in torch's data and in lathe.
func checkZeroGrad(t *testing.T, dev lathe.Device, c *GradCase) {
	in, xs, pos := gradInputs(t, dev, c)
	gs := firstGrad(t, dev, c, forward(t, dev, c, in), xs)
	for k, i := range pos {
		got := []float64{}
		if gs[k] != nil {
			var err error
			if got, err = gs[k].Float64s(); err != nil {
				t.Fatalf("gradient of input %d: %v", i, err)
			}
		}
		for j, v := range append(got, mustFloat64s(t, c.Grads[i])...) {
			if v != 0 {
				t.Errorf("gradient of input %d: value %d is %v, want exactly 0 (lathe's, then torch's)", i, j, v)
			}
		}
	}
}

func mustFloat64s(t *testing.T, spec *Tensor) []float64 {
	t.Helper()
	v, err := spec.Values()
	if err != nil {
		t.Fatalf("bad case data: %v", err)
	}
	return toFloat64s(v)
}

// finiteDiff gives, for each float input, the central difference of
// L = Σ out·upstream with respect to each of its elements (row-major);
// nil for the other inputs. The op runs on inputs that require no gradient,
// so nothing is recorded.
func finiteDiff(t *testing.T, dev lathe.Device, c *GradCase) [][]float64 {
	t.Helper()
	w := mustFloat64s(t, c.Upstream)
	base := make([]*lathe.Tensor, len(c.Inputs))
	for i, spec := range c.Inputs {
		base[i] = mustInput(t, dev, spec, fmt.Sprintf("input %d", i))
	}
	eval := func(in []*lathe.Tensor) []float64 {
		attrs := c.Attrs
		got, err := ops[c.Op](&attrs, in)
		if err != nil {
			t.Fatalf("forward at a shifted point: %v", err)
		}
		v, err := got[0].Float64s()
		if err != nil {
			t.Fatalf("forward at a shifted point: %v", err)
		}
		return v
	}
	h := FiniteDiffStep
	fd := make([][]float64, len(c.Inputs))
	for i, spec := range c.Inputs {
		if spec == nil || !isFloat(spec.DType) {
			continue
		}
		store := mustFloat64s(t, spec)
		where := storageIndex(t, dev, spec)
		fd[i] = make([]float64, len(where))
		in := slices.Clone(base)
		for j, s := range where {
			orig := store[s]
			store[s] = orig + h
			in[i] = buildFloat64(t, dev, spec, store)
			plus := eval(in)
			store[s] = orig - h
			in[i] = buildFloat64(t, dev, spec, store)
			minus := eval(in)
			store[s] = orig
			d := 0.0
			for k := range w {
				d += (plus[k] - minus[k]) * w[k]
			}
			fd[i][j] = d / (2 * h)
		}
	}
	return fd
}

// storageIndex maps each element of a case's input, in row-major order, to
// its place in the stored data: the layout applied to the numbers 0, 1, ...
func storageIndex(t *testing.T, dev lathe.Device, spec *Tensor) []int {
	shape, err := spec.StorageShape()
	if err != nil {
		t.Fatalf("bad case data: %v", err)
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	seq := make([]float64, n)
	for i := range seq {
		seq[i] = float64(i)
	}
	v, err := buildFloat64(t, dev, spec, seq).Float64s()
	if err != nil {
		t.Fatalf("storage index: %v", err)
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// buildFloat64 makes a float64 input of spec's shape and layout from the
// given stored data.
func buildFloat64(t *testing.T, dev lathe.Device, spec *Tensor, store []float64) *lathe.Tensor {
	t.Helper()
	shape, err := spec.StorageShape()
	if err != nil {
		t.Fatalf("bad case data: %v", err)
	}
	x := fromSlice(dev, slices.Clone(store), shape)
	if spec.Layout != "" && spec.Layout != "contiguous" {
		if x, err = applyLayout(x, spec.Layout); err != nil {
			t.Fatalf("layout: %v", err)
		}
	}
	if err := x.Err(); err != nil {
		t.Fatalf("building an input: %v", err)
	}
	return x
}

// closeSlices compares got with want element by element.
func closeSlices(got, want []float64, tol Tol) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	var bad []string
	n := 0
	for i := range want {
		if !tol.Close(got[i], want[i]) {
			if n++; len(bad) < 6 {
				bad = append(bad, fmt.Sprintf("[%d] got %v want %v", i, got[i], want[i]))
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d of %d values differ (rtol %g atol %g): %s", n, len(want), tol.RTol, tol.ATol, strings.Join(bad, "; "))
	}
	return nil
}
