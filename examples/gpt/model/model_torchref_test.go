package model

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
	"github.com/lathe-ml/lathe/nn"
)

// torchRef is one variant's reference from build/torchref/gpt.py.
type torchRef struct {
	Config struct {
		Vocab, Context, Layers, Heads, Dim int
		Rotary                             bool
	}
	AdamW struct {
		LR          float64    `json:"lr"`
		Betas       [2]float64 `json:"betas"`
		Eps         float64    `json:"eps"`
		WeightDecay float64    `json:"weight_decay"`
	} `json:"adamw"`
	Tokens, Targets []int64
	Shape           []int
	Logits          []float64
	Loss            float64
	Names           []string
	Grads           map[string][]float64
	AdamWLosses     []float64 `json:"adamw_losses"`
}

func loadRef(t *testing.T, variant string) torchRef {
	t.Helper()
	b, err := os.ReadFile("testdata/gpt_" + variant + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var r torchRef
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// fromRef builds the reference's model in dt on dev with torch's weights,
// loaded from safetensors under torch's names.
func fromRef(t *testing.T, variant string, r torchRef, dt lathe.DType, dev lathe.Device) *GPT {
	t.Helper()
	c := r.Config
	g, err := New(Config{Vocab: c.Vocab, Context: c.Context, Layers: c.Layers, Heads: c.Heads, Dim: c.Dim, Rotary: c.Rotary, DType: dt})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range g.Parameters() {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, r.Names) {
		t.Fatalf("parameter names\n%v\nwant torch's\n%v", names, r.Names)
	}
	f, err := os.Open("testdata/gpt_" + variant + ".safetensors")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := nn.Load(f, g, nn.CastDType()); err != nil {
		t.Fatal(err)
	}
	if err := g.To(dev); err != nil {
		t.Fatal(err)
	}
	return g
}

// tolerances per dtype: float64 agrees with torch's float64 to rounding;
// float32 is judged against the float64 reference, relative to the largest
// reference value.
var tolerance = map[lathe.DType]struct{ logits, grads, losses float64 }{
	lathe.Float64: {1e-12, 1e-12, 1e-12},
	lathe.Float32: {1e-5, 1e-5, 1e-5},
}

// TestMatchesTorch checks logits, loss, every parameter's gradient and the
// losses of 20 AdamW steps against PyTorch, for learned and rotary
// positions, in float64 and float32 on the cpu, float32 on wgpu:0 and
// cuda:0 where they open.
func TestMatchesTorch(t *testing.T) {
	runs := []struct {
		dev lathe.Device
		dt  lathe.DType
	}{
		{lathe.CPU, lathe.Float64}, {lathe.CPU, lathe.Float32}, {lathe.WGPU(0), lathe.Float32}, {lathe.CUDA(0), lathe.Float32},
	}
	for _, variant := range []string{"learned", "rotary"} {
		r := loadRef(t, variant)
		for _, run := range runs {
			t.Run(variant+"/"+run.dev.String()+"/"+run.dt.String(), func(t *testing.T) {
				skipUnavailable(t, run.dev)
				checkAgainstTorch(t, variant, r, run.dt, run.dev)
			})
		}
	}
}

func skipUnavailable(t *testing.T, dev lathe.Device) {
	t.Helper()
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
}

func checkAgainstTorch(t *testing.T, variant string, r torchRef, dt lathe.DType, dev lathe.Device) {
	tol := tolerance[dt]
	g := fromRef(t, variant, r, dt, dev)
	x := lathe.FromSlice(dev, r.Tokens, r.Shape...)
	y := lathe.FromSlice(dev, r.Targets, r.Shape...)

	logits := g.Forward(x)
	loss := Loss(logits, y)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	worst := compare(t, "logits", logits, r.Logits, tol.logits)
	t.Logf("logits: max error %.3g (relative to max |logit|)", worst)
	l, err := loss.Item()
	if err != nil {
		t.Fatal(err)
	}
	if e := math.Abs(l-r.Loss) / math.Abs(r.Loss); !(e <= tol.logits) {
		t.Errorf("loss %.17g, torch %.17g: relative error %.3g > %g", l, r.Loss, e, tol.logits)
	}
	worstGrad := 0.0
	for _, p := range g.Parameters() {
		worstGrad = max(worstGrad, compare(t, "grad "+p.Name, p.T.Grad(), r.Grads[p.Name], tol.grads))
	}
	t.Logf("loss error %.3g, gradients of %d parameters: max error %.3g (relative to each max |grad|)",
		math.Abs(l-r.Loss), len(g.Parameters()), worstGrad)

	g = fromRef(t, variant, r, dt, dev)
	a := r.AdamW
	opt, err := nn.NewAdamW(g.Parameters(), a.LR, nn.Betas(a.Betas[0], a.Betas[1]), nn.Eps(a.Eps), nn.WeightDecay(a.WeightDecay))
	if err != nil {
		t.Fatal(err)
	}
	worstStep := 0.0
	for step, want := range r.AdamWLosses {
		loss := Loss(g.Forward(x), y)
		got, err := loss.Item()
		if err != nil {
			t.Fatal(err)
		}
		e := math.Abs(got-want) / math.Abs(want)
		worstStep = max(worstStep, e)
		if !(e <= tol.losses) {
			t.Errorf("AdamW step %d: loss %.10g, torch %.10g: relative error %.3g > %g", step, got, want, e, tol.losses)
		}
		if step == len(r.AdamWLosses)-1 {
			break // the last loss is after the last step
		}
		opt.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("AdamW: %d steps, loss %.4f → %.4f, max relative error %.3g",
		len(r.AdamWLosses)-1, r.AdamWLosses[0], r.AdamWLosses[len(r.AdamWLosses)-1], worstStep)
}

// compare checks got against want elementwise within tol·max(1, max|want|)
// and returns the largest error on that scale.
func compare(t *testing.T, what string, got *lathe.Tensor, want []float64, tol float64) float64 {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no tensor", what)
		return math.Inf(1)
	}
	v, err := got.To(lathe.CPU).Cast(lathe.Float64).Float64s()
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return math.Inf(1)
	}
	if len(v) != len(want) {
		t.Errorf("%s: %d values, torch has %d", what, len(v), len(want))
		return math.Inf(1)
	}
	scale := 1.0
	for _, w := range want {
		scale = max(scale, math.Abs(w))
	}
	worst := 0.0
	for i := range v {
		e := math.Abs(v[i]-want[i]) / scale
		if !(e <= worst) {
			worst = e
		}
	}
	if !(worst <= tol) {
		t.Errorf("%s: max error %.3g > %g (scale %.3g)", what, worst, tol, scale)
	}
	return worst
}
