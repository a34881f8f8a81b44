package dist

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// deep is a three-layer model with a parameter its forward never uses.
type deep struct {
	*nn.Seq
	unused *lathe.Tensor
}

func newDeep() *deep {
	lathe.Seed(5)
	return &deep{Seq: nn.Sequential(nn.NewLinear(2, 8), nn.ReLU{}, nn.NewLinear(8, 8), nn.ReLU{}, nn.NewLinear(8, 3)),
		unused: lathe.Zeros(lathe.CPU, lathe.Float32, 4).RequireGrad()}
}

func (m *deep) Parameters() []nn.Param {
	return append(m.Seq.Parameters(), nn.Param{Name: "unused", T: m.unused})
}

// grads reads every parameter's gradient (nil for none).
func grads(t *testing.T, m nn.Module) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range m.Parameters() {
		g := p.T.Grad()
		if g == nil {
			out = append(out, nil)
			continue
		}
		v, err := g.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		out = append(out, v)
	}
	return out
}

// DDP's Backward hands each bucket to its all-reduce while the pass still
// runs: with a bucket per parameter, the last layer's bucket goes before
// the first layer's gradient is final. In a group of one its gradients are
// a plain Backward's, accumulated where there were some; an unused
// parameter keeps none; and a pass that fails changes no gradient.
func TestDDPOverlap(t *testing.T) {
	ctx := context.Background()
	g := groupOfOne(t)
	model := newDeep()
	d, err := DDP(ctx, g, model)
	if err != nil {
		t.Fatal(err)
	}
	d.BucketBytes = 1 // a bucket each
	var events []string
	d.trace = func(event string, n int) { events = append(events, fmt.Sprintf("%s %d", event, n)) }
	xs, ys := points(16, 9)
	loss := func() *lathe.Tensor {
		return nn.CrossEntropy(d.Forward(lathe.FromSlice(lathe.CPU, xs, 16, 2)), lathe.FromSlice(lathe.CPU, ys))
	}
	if err := d.Backward(ctx, loss()); err != nil {
		t.Fatal(err)
	}
	// Parameters: 0, 1 the first layer's weight and bias, ..., 4, 5 the
	// last layer's, 6 the unused one; buckets go in reverse, so bucket 0
	// holds parameter 6, which the pass does not reach: it goes at the
	// start. Bucket 1 (the last layer's bias) goes before the first
	// layer's weight is final.
	if want := []string{"add 6", "send 0", "add 5", "send 1"}; !slices.Equal(events[:min(4, len(events))], want) {
		t.Errorf("events %v: want them to start %v", events, want)
	}
	if sent, firstLayer := slices.Index(events, "send 1"), slices.Index(events, "add 0"); firstLayer < sent {
		t.Errorf("events %v: want bucket 1 sent before the first layer's weight is added", events)
	}
	got := grads(t, model)
	if got[6] != nil {
		t.Errorf("the unused parameter has gradient %v", got[6])
	}
	// The plain pass, from the same parameters.
	for _, p := range model.Parameters() {
		p.T.ZeroGrad()
	}
	if err := loss().Backward(); err != nil {
		t.Fatal(err)
	}
	want := grads(t, model)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("parameter %d: DDP's gradient %v, Backward's %v", i, got[i], want[i])
		}
	}
	// Accumulated: a second pass adds to the first's, as after a plain
	// pass on a micro-batch (torch's no_sync).
	if err := d.Backward(ctx, loss()); err != nil {
		t.Fatal(err)
	}
	twice := grads(t, model)
	for i := range want[:6] {
		for k := range want[i] {
			if twice[i][k] != want[i][k]+want[i][k] {
				t.Fatalf("parameter %d after two passes: %v, want twice %v", i, twice[i], want[i])
			}
		}
	}
	// A pass that fails at the first layer's weight, after other buckets
	// went, leaves every gradient as it was.
	boom := errors.New("boom")
	fail := true
	model.Seq.Parameters()[0].T.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
		if fail {
			return lathe.Failed(boom)
		}
		return nil
	})
	events = nil
	if err := d.Backward(ctx, loss()); !errors.Is(err, boom) {
		t.Fatalf("backward with a failing hook: %v, want its error", err)
	}
	if !slices.Contains(events, "send 1") {
		t.Errorf("events %v: the failing pass sent no bucket before it failed", events)
	}
	after := grads(t, model)
	for i := range twice {
		if !slices.Equal(after[i], twice[i]) {
			t.Fatalf("parameter %d after a failed pass: %v, want %v as before", i, after[i], twice[i])
		}
	}
	fail = false
	if err := d.Backward(ctx, loss()); err != nil {
		t.Fatalf("the pass after a failed one: %v", err)
	}
}

// tied lists one weight twice, as a model whose output head shares its
// embedding's weight may.
type tied struct{ w *lathe.Tensor }

func (m *tied) Forward(x *lathe.Tensor) *lathe.Tensor { return x.MatMul(m.w).MatMul(m.w) }
func (m *tied) Parameters() []nn.Param {
	return []nn.Param{{Name: "embed", T: m.w}, {Name: "head", T: m.w}}
}
func (m *tied) To(lathe.Device) error { return nil }
func (m *tied) Train(bool)            {}

// A parameter listed twice gets one gradient, the plain pass's, and
// travels once.
func TestDDPTiedParameter(t *testing.T) {
	ctx := context.Background()
	g := groupOfOne(t)
	lathe.Seed(3)
	m := &tied{w: lathe.RandN(lathe.CPU, lathe.Float32, 3, 3).RequireGrad()}
	d, err := DDP(ctx, g, m)
	if err != nil {
		t.Fatal(err)
	}
	var adds []int
	d.trace = func(event string, n int) {
		if event == "add" {
			adds = append(adds, n)
		}
	}
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 3)
	for _, capBytes := range []int{1, 25 << 20} {
		d.BucketBytes = capBytes
		m.w.ZeroGrad()
		if err := d.Backward(ctx, d.Forward(x).Sum()); err != nil {
			t.Fatal(err)
		}
		got, _ := m.w.Grad().Float32s()
		m.w.ZeroGrad()
		if err := m.Forward(x).Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		want, _ := m.w.Grad().Float32s()
		if !slices.Equal(got, want) {
			t.Errorf("bucket cap %d: DDP's gradient %v, the plain pass's %v", capBytes, got, want)
		}
		m.w.ZeroGrad()
		if err := d.Forward(x).Sum().Backward(); err != nil {
			t.Fatal(err)
		}
		if err := d.SyncGradients(ctx); err != nil {
			t.Fatal(err)
		}
		if got, _ := m.w.Grad().Float32s(); !slices.Equal(got, want) {
			t.Errorf("bucket cap %d: SyncGradients' gradient %v, the plain pass's %v", capBytes, got, want)
		}
		if slices.Contains(adds, 1) {
			t.Errorf("bucket cap %d: the second listing of the weight travelled too (adds %v)", capBytes, adds)
		}
		// Accumulated over a second pass.
		if err := d.Backward(ctx, d.Forward(x).Sum()); err != nil {
			t.Fatal(err)
		}
		got, _ = m.w.Grad().Float32s()
		for k := range want {
			if got[k] != want[k]+want[k] {
				t.Fatalf("bucket cap %d: after two passes %v, want twice %v", capBytes, got, want)
			}
		}
	}
}
