package nn

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
)

// Errors and shapes of LSTM's proj_size, Bilinear, Identity, Flatten's
// dims and Unflatten; their values and gradients against torch are in
// interop_extras_test.go.

// wantErr checks that err is a *lathe.Error of kind from op naming arg
// and, where text is not empty, saying it.
func wantErr(t *testing.T, what string, err, kind error, op, arg, text string) {
	t.Helper()
	var e *lathe.Error
	switch {
	case !errors.As(err, &e) || !errors.Is(err, kind):
		t.Errorf("%s: %v, want a *lathe.Error of kind %v", what, err, kind)
	case e.Op != op || e.Arg != arg:
		t.Errorf("%s: %q names op %q and argument %q, want %q and %q", what, err, e.Op, e.Arg, op, arg)
	case !strings.Contains(err.Error(), text):
		t.Errorf("%s: %q does not say %q", what, err, text)
	}
}

func TestLSTMProjSize(t *testing.T) {
	lathe.Seed(3)
	m := NewLSTM(4, 3, ProjSize(2), NumLayers(2), Bidirectional())
	if err := Err(m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range m.Parameters() {
		names = append(names, p.Name+shapeString(p.T.Shape()))
		v, _ := p.T.Float64s()
		for _, x := range v {
			if math.Abs(x) > 1/math.Sqrt(3) {
				t.Errorf("%s holds %v, outside torch's U(-1/√hidden, 1/√hidden)", p.Name, x)
			}
		}
	}
	// torch.nn.LSTM(4, 3, proj_size=2, num_layers=2, bidirectional=True).state_dict()
	want := []string{"weight_ih_l0[12, 4]", "weight_hh_l0[12, 2]", "bias_ih_l0[12]", "bias_hh_l0[12]", "weight_hr_l0[2, 3]",
		"weight_ih_l0_reverse[12, 4]", "weight_hh_l0_reverse[12, 2]", "bias_ih_l0_reverse[12]", "bias_hh_l0_reverse[12]", "weight_hr_l0_reverse[2, 3]",
		"weight_ih_l1[12, 4]", "weight_hh_l1[12, 2]", "bias_ih_l1[12]", "bias_hh_l1[12]", "weight_hr_l1[2, 3]",
		"weight_ih_l1_reverse[12, 4]", "weight_hh_l1_reverse[12, 2]", "bias_ih_l1_reverse[12]", "bias_hh_l1_reverse[12]", "weight_hr_l1_reverse[2, 3]"}
	if !slices.Equal(names, want) {
		t.Errorf("parameters %v,\ntorch's %v", names, want)
	}
	x := lathe.RandN(lathe.CPU, lathe.Float32, 5, 2, 4)
	out, hn, cn := m.ForwardState(x, nil, nil)
	if !slices.Equal(out.Shape(), []int{5, 2, 4}) || !slices.Equal(hn.Shape(), []int{4, 2, 2}) || !slices.Equal(cn.Shape(), []int{4, 2, 3}) {
		t.Errorf("shapes out %v hn %v cn %v, want [5 2 4] [4 2 2] [4 2 3]", out.Shape(), hn.Shape(), cn.Shape())
	}
	// The states' shapes: h0 has proj_size features, c0 hidden_size.
	_, hn, _ = m.ForwardState(x, lathe.Zeros(lathe.CPU, lathe.Float32, 4, 2, 3), nil)
	wantErr(t, "h0 of hidden size", hn.Err(), lathe.ErrShape, "lstm", "h0", "want [4, 2, 2]")
	_, hn, _ = m.ForwardState(x, nil, lathe.Zeros(lathe.CPU, lathe.Float32, 4, 2, 2))
	wantErr(t, "c0 of proj size", hn.Err(), lathe.ErrShape, "lstm", "c0", "want [4, 2, 3]")
	_, hn, _ = m.ForwardState(x.Narrow(1, 0, 1).Squeeze(1), lathe.Zeros(lathe.CPU, lathe.Float32, 4, 2), lathe.Zeros(lathe.CPU, lathe.Float32, 4, 3))
	if err := hn.Err(); err != nil || !slices.Equal(hn.Shape(), []int{4, 2}) {
		t.Errorf("unbatched: %v %v", hn.Shape(), err)
	}

	// torch: ValueError for proj_size < 0 or ≥ hidden_size, and for RNN
	// and GRU; LSTMCell has no proj_size.
	for _, c := range []struct {
		name     string
		m        Module
		op, text string
	}{
		{"lstm proj_size = hidden", NewLSTM(4, 3, ProjSize(3)), "lstm", "must be smaller"},
		{"lstm proj_size > hidden", NewLSTM(4, 3, ProjSize(7)), "lstm", "must be smaller"},
		{"lstm proj_size < 0", NewLSTM(4, 3, ProjSize(-1)), "lstm", "negative"},
		{"gru", NewGRU(4, 3, ProjSize(1)), "gru", "LSTM's"},
		{"rnn", NewRNN(4, 3, ProjSize(1)), "rnn", "LSTM's"},
		{"lstm cell", NewLSTMCell(4, 3, ProjSize(1)), "lstm_cell", "LSTM's"},
	} {
		wantErr(t, c.name+" Err", Err(c.m), lathe.ErrValue, c.op, "proj_size", c.text)
		x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 4)
		wantErr(t, c.name+" Forward", c.m.Forward(x).Err(), lathe.ErrValue, c.op, "proj_size", c.text)
	}

	// A projection set by hand on weights without one (or taken away).
	with, without := NewLSTM(4, 3, ProjSize(2)), NewLSTM(4, 3)
	with.ProjSize, without.ProjSize = 0, 2
	for _, l := range []*LSTM{with, without} {
		wantErr(t, "ProjSize set by hand", l.Forward(x).Err(), lathe.ErrValue, "lstm", "ProjSize", "weight_hr")
	}
}

func TestBilinear(t *testing.T) {
	lathe.Seed(4)
	b := NewBilinear(4, 3, 5)
	if !slices.Equal(b.Weight.Shape(), []int{5, 4, 3}) || !slices.Equal(b.Bias.Shape(), []int{5}) {
		t.Fatalf("weight %v bias %v", b.Weight.Shape(), b.Bias.Shape())
	}
	for _, p := range b.Parameters() {
		v, _ := p.T.Float64s()
		for _, x := range v {
			if math.Abs(x) > 0.5 { // torch: U(-1/√in1, 1/√in1)
				t.Errorf("%s holds %v, outside U(-1/2, 1/2)", p.Name, x)
			}
		}
	}
	x1, x2 := lathe.RandN(lathe.CPU, lathe.Float32, 2, 4), lathe.RandN(lathe.CPU, lathe.Float32, 2, 3)
	if y := b.ForwardPair(x1, x2); y.Err() != nil || !slices.Equal(y.Shape(), []int{2, 5}) {
		t.Fatalf("%v %v", y.Shape(), y.Err())
	}
	empty := b.ForwardPair(lathe.Zeros(lathe.CPU, lathe.Float32, 0, 4), lathe.Zeros(lathe.CPU, lathe.Float32, 0, 3))
	if empty.Err() != nil || !slices.Equal(empty.Shape(), []int{0, 5}) {
		t.Errorf("empty batch: %v %v, want [0 5]", empty.Shape(), empty.Err())
	}
	wantErr(t, "Forward", b.Forward(x1).Err(), lathe.ErrValue, "bilinear", "x2", "ForwardPair")
	wantErr(t, "x1 features", b.ForwardPair(x2, x2).Err(), lathe.ErrShape, "bilinear", "x1", "last dim of 4")
	wantErr(t, "x2 features", b.ForwardPair(x1, x1).Err(), lathe.ErrShape, "bilinear", "x2", "last dim of 3")
	wantErr(t, "batch dims", b.ForwardPair(x1, x2.Narrow(0, 0, 1)).Err(), lathe.ErrShape, "bilinear", "x2", "same batch dims")
	wantErr(t, "0-d", b.ForwardPair(lathe.Scalar(lathe.CPU, 1.0).Cast(lathe.Float32), x2).Err(), lathe.ErrShape, "bilinear", "x1", "")
	wantErr(t, "dtype", b.ForwardPair(x1.Cast(lathe.Float64), x2).Err(), lathe.ErrDType, "bilinear", "x1", "float32")
	wantErr(t, "in1 0", Err(NewBilinear(0, 3, 5)), lathe.ErrShape, "bilinear", "", "in1_features=0")
	wantErr(t, "option", Err(NewBilinear(2, 3, 5, ProjSize(1))), lathe.ErrValue, "bilinear", "proj_size", "")
	var nilB *Bilinear
	if nilB.ForwardPair(x1, x2).Err() == nil {
		t.Error("a nil Bilinear ran")
	}
}

func TestShapeModules(t *testing.T) {
	x := lathe.RandN(lathe.CPU, lathe.Float32, 2, 3, 4)
	y := Identity{}.Forward(x)
	if y == x || !slices.Equal(y.Shape(), x.Shape()) {
		t.Fatalf("Identity gave %p %v for %p", y, y.Shape(), x)
	}
	y.Release()
	if err := x.Sum().Err(); err != nil {
		t.Fatalf("releasing Identity's result released x: %v", err)
	}
	for _, c := range []struct {
		m     Module
		x     *lathe.Tensor
		shape []int
	}{
		{NewFlatten(0, -1), x, []int{24}},
		{NewFlatten(0, -1), lathe.Scalar(lathe.CPU, 1.0), []int{1}},
		{NewFlatten(-2, -1), x, []int{2, 12}},
		{NewFlatten(1, 1), x, []int{2, 3, 4}},
		{Flatten{}, x, []int{2, 12}},
		{NewUnflatten(1, 3, 1), x, []int{2, 3, 1, 4}},
		{NewUnflatten(-1, 2, -1), x, []int{2, 3, 2, 2}},
		{NewUnflatten(1, 2, -1), lathe.Zeros(lathe.CPU, lathe.Float32, 3, 0), []int{3, 2, 0}},
		{NewUnflatten(0, 2, 1), x, []int{2, 1, 3, 4}},
	} {
		if y := c.m.Forward(c.x); y.Err() != nil || !slices.Equal(y.Shape(), c.shape) {
			t.Errorf("%T%+v of %v: %v %v, want %v", c.m, c.m, c.x.Shape(), y.Shape(), y.Err(), c.shape)
		}
	}
	wantErr(t, "flatten start after end", NewFlatten(2, 0).Forward(x).Err(), lathe.ErrValue, "flatten", "start_dim", "")
	if err := NewFlatten(3, -1).Forward(x).Err(); err == nil || !strings.Contains(err.Error(), "start_dim") {
		t.Errorf("flatten out of range: %v", err)
	}
	for _, c := range []struct {
		u         *Unflatten
		kind      error
		arg, text string
	}{
		{NewUnflatten(3, 2), lathe.ErrShape, "Dim", "[-rank, rank)"},
		{NewUnflatten(-4, 2), lathe.ErrShape, "Dim", "[-rank, rank)"},
		{&Unflatten{Dim: 1}, lathe.ErrValue, "Sizes", "empty"},
		{NewUnflatten(1, -1, -1), lathe.ErrValue, "Sizes", "more than one -1"},
		{NewUnflatten(1, -2, 1), lathe.ErrValue, "Sizes", "negative"},
		{NewUnflatten(1, 2, 2), lathe.ErrShape, "Sizes", "product is 3"},
		{NewUnflatten(2, -1, 3), lathe.ErrShape, "Sizes", "product is 4"},
		{NewUnflatten(1, 0, -1), lathe.ErrValue, "Sizes", "any size"},
	} {
		wantErr(t, "unflatten "+shapeString(c.u.Sizes), c.u.Forward(x).Err(), c.kind, "unflatten", c.arg, c.text)
	}
	var nilU *Unflatten
	if nilU.Forward(x).Err() == nil {
		t.Error("a nil Unflatten ran")
	}
}

func TestEmbeddingBagErrors(t *testing.T) {
	lathe.Seed(5)
	m := NewEmbeddingBag(10, 3, Mode("sum"), PaddingIdx(-2))
	if m.PaddingIdx != 8 || m.Mode != "sum" {
		t.Fatalf("padding_idx %d mode %q, want 8 and sum", m.PaddingIdx, m.Mode)
	}
	row, _ := m.Weight.Narrow(0, 8, 1).Cast(lathe.Float64).Float64s()
	if !slices.Equal(row, []float64{0, 0, 0}) {
		t.Errorf("padding row %v, want zeros", row)
	}
	if NewEmbeddingBag(4, 2).Mode != "mean" {
		t.Error("the default mode is not mean")
	}
	ix := func(v ...int64) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v) }
	idx, off := ix(1, 2, 3, 4), ix(0, 2)
	if y := m.ForwardBags(idx, off, nil); y.Err() != nil || !slices.Equal(y.Shape(), []int{2, 3}) {
		t.Fatalf("%v %v", y.Shape(), y.Err())
	}
	const op = "embedding_bag"
	for _, c := range []struct {
		name      string
		y         *lathe.Tensor
		kind      error
		arg, text string
	}{
		{"bad mode", (&EmbeddingBag{Weight: m.Weight, Mode: "min"}).Forward(idx.Reshape(2, 2)), lathe.ErrValue, "mode", `"min"`},
		{"psw in mean", NewEmbeddingBag(10, 3).ForwardBags(idx, off, lathe.Ones(lathe.CPU, lathe.Float32, 4)), lathe.ErrValue, "per_sample_weights", "mean"},
		{"psw shape", m.ForwardBags(idx, off, lathe.Ones(lathe.CPU, lathe.Float32, 3)), lathe.ErrShape, "per_sample_weights", "[3]"},
		{"psw dtype", m.ForwardBags(idx, off, lathe.Ones(lathe.CPU, lathe.Float64, 4)), lathe.ErrDType, "per_sample_weights", "float64"},
		{"2-d with offsets", m.ForwardBags(idx.Reshape(2, 2), off, nil), lathe.ErrValue, "offsets", "2-D"},
		{"1-d without offsets", m.Forward(idx), lathe.ErrValue, "offsets", ""}, // torch: "offsets has to be a 1D Tensor but got None"
		{"offsets not from 0", m.ForwardBags(idx, ix(1, 2), nil), lathe.ErrValue, "offsets", "not 0"},
		{"offsets decrease", m.ForwardBags(idx, ix(0, 3, 2), nil), lathe.ErrValue, "offsets", "decreases"},
		{"offsets past the end", m.ForwardBags(idx, ix(0, 5), nil), lathe.ErrValue, "offsets", "past"},
		{"offsets 2-d", m.ForwardBags(idx, off.Reshape(1, 2), nil), lathe.ErrShape, "offsets", ""},
		{"offsets float", m.ForwardBags(idx, off.Cast(lathe.Float32), nil), lathe.ErrShape, "offsets", ""},
		{"index out of range", m.ForwardBags(ix(1, 10), off, nil), lathe.ErrIndex, "input", "10"},
		{"negative index", m.ForwardBags(ix(-1, 1), off, nil), lathe.ErrIndex, "input", "-1"},
		{"float input", m.ForwardBags(idx.Cast(lathe.Float32), off, nil), lathe.ErrDType, "input", ""},
		{"3-d input", m.Forward(idx.Reshape(1, 2, 2)), lathe.ErrShape, "input", "3-d"},
		{"padding_idx", NewEmbeddingBag(10, 3, PaddingIdx(10)).Forward(idx.Reshape(2, 2)), lathe.ErrValue, "padding_idx", ""},
		{"option", NewEmbeddingBag(10, 3, ProjSize(1)).Forward(idx.Reshape(2, 2)), lathe.ErrValue, "proj_size", ""},
	} {
		wantErr(t, c.name, c.y.Err(), c.kind, op, c.arg, c.text)
	}
	var nilBag *EmbeddingBag
	if nilBag.Forward(idx).Err() == nil {
		t.Error("a nil EmbeddingBag ran")
	}
}

// The second derivatives through LSTM's projection, Bilinear and
// EmbeddingBag's per-sample weights: d/dθ Σ (∂L/∂x)², with L = Σ out·r,
// against central finite differences of the first gradient, in float64.
func TestExtrasSecondDerivatives(t *testing.T) {
	lathe.Seed(11)
	f64 := WithDType(lathe.Float64)
	randn := func(shape ...int) *lathe.Tensor { return lathe.RandN(lathe.CPU, lathe.Float64, shape...) }
	lstm := NewLSTM(3, 4, ProjSize(2), Bidirectional(), f64)
	bil := NewBilinear(3, 2, 2, f64)
	bag := NewEmbeddingBag(6, 2, Mode("sum"), PaddingIdx(1), f64)
	bagIdx, bagOff := lathe.FromSlice(lathe.CPU, []int64{0, 1, 2, 5, 2}), lathe.FromSlice(lathe.CPU, []int64{0, 2})
	for _, c := range []struct {
		name string
		m    Module
		x    *lathe.Tensor
		f    func(x *lathe.Tensor) *lathe.Tensor
	}{
		{"lstm proj", lstm, randn(3, 2, 3), func(x *lathe.Tensor) *lathe.Tensor { return lstm.Forward(x) }},
		{"bilinear", bil, randn(2, 3), func(x *lathe.Tensor) *lathe.Tensor { return bil.ForwardPair(x, x.Narrow(1, 0, 2).Tanh()) }},
		{"embedding_bag psw", bag, randn(5), func(x *lathe.Tensor) *lathe.Tensor { return bag.ForwardBags(bagIdx, bagOff, x.Square()) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := c.x.RequireGrad()
			r := randn(c.f(x).Shape()...)
			// s is Σ (∂L/∂x)²; with grads, also its gradients of the parameters.
			s := func(grads bool) (float64, []*lathe.Tensor) {
				g, err := lathe.Grad(c.f(x).Mul(r).Sum(), []*lathe.Tensor{x}, lathe.CreateGraph())
				if err != nil {
					t.Fatal(err)
				}
				sq := g[0].Square().Sum()
				v, _ := sq.Item()
				if !grads {
					return v, nil
				}
				var ps []*lathe.Tensor
				for _, p := range c.m.Parameters() {
					ps = append(ps, p.T)
				}
				gp, err := lathe.Grad(sq, ps, lathe.AllowUnused()) // Bilinear's bias: none
				if err != nil {
					t.Fatal(err)
				}
				return v, gp
			}
			_, gp := s(true)
			for i, p := range c.m.Parameters() {
				vals, _ := p.T.Float64s()
				got := make([]float64, len(vals))
				if gp[i] != nil {
					got, _ = gp[i].Float64s()
				}
				for _, k := range []int{0, len(vals) / 2, len(vals) - 1} {
					at := func(d float64) float64 {
						v := slices.Clone(vals)
						v[k] += d
						*p.T = *lathe.FromSlice(lathe.CPU, v, p.T.Shape()...).RequireGrad()
						out, _ := s(false)
						return out
					}
					const h = 1e-6
					fd := (at(h) - at(-h)) / (2 * h)
					*p.T = *lathe.FromSlice(lathe.CPU, vals, p.T.Shape()...).RequireGrad()
					if math.Abs(fd-got[k]) > 1e-5*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s[%d]: second derivative %v, finite differences %v", p.Name, k, got[k], fd)
					}
				}
			}
		})
	}
}
