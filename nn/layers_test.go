package nn

import (
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// Linear's forward against torch.nn.functional.linear with the same weights
// (build/torchref/nnpkg_ref.py).
func TestLinearMatchesTorch(t *testing.T) {
	w := []float64{0.1, -0.2, 0.3, 0.4, 0.5, -0.6}
	x := []float64{1, 2, 3, -1, 0.5, 0.25, 0, 0, 0, 2, -3, 1.5}
	cases := []struct {
		name string
		bias bool
		want []float64
	}{
		{"bias", true, []float64{0.6099999999999999, -0.42000000000000004, -0.115, -0.32000000000000006, 0.01, -0.02, 1.26, -1.6199999999999999}},
		{"nobias", false, []float64{0.5999999999999999, -0.4, -0.125, -0.30000000000000004, 0.0, 0.0, 1.25, -1.5999999999999999}},
	}
	for _, c := range cases {
		for _, dt := range []lathe.DType{lathe.Float64, lathe.Float32} {
			t.Run("linear/"+c.name+"/"+dt.String(), func(t *testing.T) {
				var opts []Option
				if !c.bias {
					opts = append(opts, NoBias())
				}
				l := NewLinear(3, 2, append(opts, WithDType(dt))...)
				l.Weight = toDType(t, w, dt, 2, 3)
				if c.bias {
					l.Bias = toDType(t, []float64{0.01, -0.02}, dt, 2)
				}
				tol := 1e-15
				if dt == lathe.Float32 {
					tol = 1e-6
				}
				y := l.Forward(toDType(t, x, dt, 4, 3))
				if !slices.Equal(y.Shape(), []int{4, 2}) {
					t.Fatalf("shape %v", y.Shape())
				}
				assertClose(t, "y", values(t, y), c.want, tol)
			})
		}
	}
}

func TestLinearInit(t *testing.T) {
	lathe.Seed(7)
	l := NewLinear(16, 50)
	if l.Weight.DType() != lathe.Float32 || !slices.Equal(l.Weight.Shape(), []int{50, 16}) || !slices.Equal(l.Bias.Shape(), []int{50}) {
		t.Fatalf("weight %v %v, bias %v", l.Weight.DType(), l.Weight.Shape(), l.Bias.Shape())
	}
	if !l.Weight.RequiresGrad() || !l.Weight.IsLeaf() || !l.Bias.RequiresGrad() {
		t.Fatal("parameters must be leaves that require a gradient")
	}
	bound := 1 / math.Sqrt(16)
	for _, p := range l.Parameters() {
		v := values(t, p.T)
		lo, hi := slices.Min(v), slices.Max(v)
		if lo < -bound || hi > bound || hi-lo < bound { // 800 uniform draws span most of the range
			t.Fatalf("%s: values in [%g, %g], want within ±%g and spread", p.Name, lo, hi, bound)
		}
	}
	lathe.Seed(7)
	again := NewLinear(16, 50)
	if !slices.Equal(values(t, again.Weight), values(t, l.Weight)) {
		t.Fatal("the same seed gave different weights")
	}
	if d := NewLinear(2, 3, WithDType(lathe.Float64)); d.Weight.DType() != lathe.Float64 || d.Bias.DType() != lathe.Float64 {
		t.Fatal("WithDType(Float64) not applied")
	}
	if n := NewLinear(2, 3, NoBias()); n.Bias != nil || len(n.Parameters()) != 1 {
		t.Fatal("NoBias left a bias")
	}
}

func TestParameterNames(t *testing.T) {
	m := Sequential(NewLinear(2, 4), ReLU{}, NewLayerNorm([]int{4}), NewDropout(0.1), NewLinear(4, 3, NoBias()), Sequential(NewEmbedding(5, 3)))
	var names []string
	for _, p := range m.Parameters() {
		names = append(names, p.Name)
	}
	want := []string{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "5.0.weight"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
}

func TestLayerNormAndEmbedding(t *testing.T) {
	n := NewLayerNorm([]int{2}, WithDType(lathe.Float64))
	assertClose(t, "weight", values(t, n.Weight), []float64{1, 1}, 0)
	assertClose(t, "bias", values(t, n.Bias), []float64{0, 0}, 0)
	y := n.Forward(toDType(t, []float64{1, 3, -2, 2}, lathe.Float64, 2, 2))
	s := 1 / math.Sqrt(1+1e-5)
	assertClose(t, "layernorm", values(t, y), []float64{-s, s, -2 / math.Sqrt(4+1e-5), 2 / math.Sqrt(4+1e-5)}, 1e-12)

	lathe.Seed(3)
	e := NewEmbedding(10, 4)
	idx := lathe.FromSlice(lathe.CPU, []int64{3, 0, 3}, 3)
	out := e.Forward(idx)
	if !slices.Equal(out.Shape(), []int{3, 4}) {
		t.Fatalf("embedding shape %v", out.Shape())
	}
	v, w := values(t, out), values(t, e.Weight)
	assertClose(t, "row 3", v[:4], w[12:16], 0)
	assertClose(t, "row 3 again", v[8:], w[12:16], 0)
	if math.Abs(mean(w)) > 1 {
		t.Fatalf("N(0,1) init has mean %g", mean(w))
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func TestDropoutTrainFlag(t *testing.T) {
	d := NewDropout(0.5)
	m := Sequential(d)
	x := lathe.Ones(lathe.CPU, lathe.Float64, 1000)
	lathe.Seed(1)
	v := values(t, m.Forward(x))
	zeros := 0
	for _, e := range v {
		if e == 0 {
			zeros++
		} else if e != 2 {
			t.Fatalf("kept value %g, want 2 (scaled by 1/(1-p))", e)
		}
	}
	if zeros < 400 || zeros > 600 {
		t.Fatalf("%d of 1000 dropped at p=0.5", zeros)
	}
	m.Train(false)
	assertClose(t, "eval", values(t, m.Forward(x)), values(t, x), 0)
	m.Train(true)
	if !slices.Contains(values(t, m.Forward(x)), 0) {
		t.Fatal("Train(true) did not switch dropout back on")
	}
}

func TestActivations(t *testing.T) {
	x := toDType(t, []float64{-1, 0, 2}, lathe.Float64, 3)
	cases := []struct {
		name string
		m    Module
		want []float64
	}{
		{"relu", ReLU{}, []float64{0, 0, 2}},
		{"tanh", Tanh{}, []float64{math.Tanh(-1), 0, math.Tanh(2)}},
		{"sigmoid", Sigmoid{}, []float64{1 / (1 + math.E), 0.5, 1 / (1 + math.Exp(-2))}},
		{"silu", SiLU{}, []float64{-1 / (1 + math.E), 0, 2 / (1 + math.Exp(-2))}},
		{"gelu", GELU{}, torchGELU}, // F.gelu (build/torchref/literals.py)
		{"gelu/tanh", GELU{Tanh: true}, torchGELUTanh},
		{"leaky_relu", LeakyReLU{Slope: 0.2}, []float64{-0.2, 0, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertClose(t, c.name, values(t, c.m.Forward(x)), c.want, 1e-12)
			if c.m.Parameters() != nil || c.m.To(lathe.CPU) != nil {
				t.Fatal("an activation has no parameters")
			}
		})
	}
}

func TestFlatten(t *testing.T) {
	x := lathe.Arange(lathe.CPU, lathe.Float32, 0, 24, 1).Reshape(2, 3, 2, 2)
	y := Flatten{}.Forward(x)
	if got := y.Shape(); !slices.Equal(got, []int{2, 12}) {
		t.Fatalf("shape %v, want [2 12] (err %v)", got, y.Err())
	}
	if err := (Flatten{}).Forward(lathe.Scalar(lathe.CPU, float32(1))).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("0-d input: %v, want ErrShape", err)
	}
	// torch 1.13 (nn.Flatten(), start_dim=1):
	//	nn.Flatten()(torch.randn(5))        # IndexError: Dimension out of range (expected to be in range of [-1, 0], but got 1)
	//	nn.Flatten()(torch.randn(0, 2, 3)).shape  # torch.Size([0, 6])
	//	nn.Flatten()(torch.randn(2, 0, 3)).shape  # torch.Size([2, 0])
	// A 1-d input has no dim after the batch's to flatten: it was [5, 1].
	if y := (Flatten{}).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 5)); !errors.Is(y.Err(), lathe.ErrShape) {
		t.Errorf("1-d input: shape %v, err %v, want ErrShape", y.Shape(), y.Err())
	}
	// An empty batch keeps its feature size: Reshape(0, -1) could not say it.
	for _, c := range []struct{ in, want []int }{{[]int{0, 2, 3}, []int{0, 6}}, {[]int{2, 0, 3}, []int{2, 0}}, {[]int{3, 4}, []int{3, 4}}} {
		y := Flatten{}.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, c.in...))
		if got := y.Shape(); y.Err() != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v: shape %v, err %v, want %v", c.in, got, y.Err(), c.want)
		}
	}
}

func TestModuleTo(t *testing.T) {
	m := Sequential(NewLinear(2, 2), NewLayerNorm([]int{2}))
	w := m.Parameters()[0].T
	if err := w.Backward(lathe.WithGradient(lathe.Ones(lathe.CPU, lathe.Float32, 2, 2))); err != nil {
		t.Fatal(err)
	}
	if err := m.To(lathe.CPU); err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Parameters() {
		if !p.T.RequiresGrad() || !p.T.IsLeaf() || p.T.Device() != lathe.CPU {
			t.Fatalf("%s lost RequireGrad or its device", p.Name)
		}
	}
	if w.Grad() == nil {
		t.Fatal("To on the same device dropped the gradient")
	}
	// A device no machine has (65 GPUs) fails and leaves the model as it was.
	for _, dev := range []lathe.Device{lathe.CUDA(64), lathe.WGPU(64)} {
		if err := m.To(dev); err == nil {
			t.Skipf("%v opened; cannot test a failed move", dev)
		}
		for _, p := range m.Parameters() {
			if p.T.Device() != lathe.CPU || p.T.Err() != nil {
				t.Fatalf("failed move to %v changed %s", dev, p.Name)
			}
		}
	}
}

// TestModuleToHalfway: a move that fails at a later parameter (a float64
// layer to wgpu:0, which holds no float64) names that parameter, leaves
// every parameter where it was, and gives back the copies it had made.
func TestModuleToHalfway(t *testing.T) {
	dev := lathe.WGPU(0)
	if _, err := lathe.MemoryStats(dev); err != nil {
		t.Skipf("wgpu:0 does not open: %v", err)
	}
	m := Sequential(NewLinear(64, 64), NewLinear(64, 2, WithDType(lathe.Float64)))
	before := settledAllocated(t, dev)
	err := m.To(dev)
	var e *lathe.Error
	if !errors.As(err, &e) || e.Arg != "1.weight" {
		t.Fatalf("To: %v, want an error naming 1.weight", err)
	}
	for _, p := range m.Parameters() {
		if p.T.Device() != lathe.CPU {
			t.Errorf("the failed move left %s on %v", p.Name, p.T.Device())
		}
	}
	// Other tests' unreleased tensors may still go back as the collector
	// finds them, which lowers the count: more is what the move kept.
	if after, _ := lathe.MemoryStats(dev); after.Allocated > before {
		t.Errorf("wgpu:0 holds %d bytes after the failed move, %d before: the copies were kept", after.Allocated, before)
	}
}

// settledAllocated is dev's allocated bytes once the collector has given
// back what earlier tests left unreleased.
func settledAllocated(t *testing.T, dev lathe.Device) int64 {
	t.Helper()
	read := func() int64 {
		s, err := lathe.MemoryStats(dev)
		if err != nil {
			t.Fatal(err)
		}
		return s.Allocated
	}
	prev := read()
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond) // the cleanups run on a goroutine of their own
		now := read()
		if now == prev {
			break
		}
		prev = now
	}
	return prev
}

func TestBadLayerErrors(t *testing.T) {
	m := Sequential(NewLinear(-1, 3), ReLU{})
	if err := Err(m); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("Err: %v, want ErrShape", err)
	}
	if err := m.Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2, 3)).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("Forward: %v, want ErrShape", err)
	}
	if err := NewLinear(3, 2).Forward(lathe.Ones(lathe.CPU, lathe.Float32, 2, 4)).Err(); !errors.Is(err, lathe.ErrShape) {
		t.Fatalf("Forward with the wrong in size: %v, want ErrShape", err)
	}
	if err := Err(NewEmbedding(3, 2, WithDType(lathe.Int64))); !errors.Is(err, lathe.ErrDType) {
		t.Fatalf("integer parameters: %v, want ErrDType", err)
	}
}

// TestHugeLayers: a layer whose parameters cannot be counted, or whose
// bytes the machine cannot hold, fails with an error; it was Go's fatal
// out of memory.
func TestHugeLayers(t *testing.T) {
	for _, c := range []struct {
		name string
		m    Module
		kind error
	}{
		{"linear/2^40x2^40", NewLinear(1<<40, 1<<40), lathe.ErrShape},
		{"linear/2^40x1", NewLinear(1<<40, 1), lathe.ErrOutOfMemory},
		{"linear/1x2^40", NewLinear(1, 1<<40), lathe.ErrOutOfMemory},
	} {
		if err := Err(c.m); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want a %v", c.name, err, c.kind)
		}
	}
}

// lastState is a sequence model that keeps only its LSTM's final hidden
// state, as a classifier does, from the states h0 and c0.
type lastState struct {
	*LSTM
	h0, c0 *lathe.Tensor
}

func (m lastState) Forward(x *lathe.Tensor) *lathe.Tensor {
	out, hn, cn := m.ForwardState(x, m.h0, m.c0)
	out.Release()
	cn.Release()
	return hn
}

// TestTrainingStepsLeaveNothing: a training step (forward, loss,
// backward, Adam) of these layers on wgpu:0, with the collector off,
// holds no more device memory after it than before, once warm: every
// intermediate went back with the graph or at once, none to the
// collector. (Batch norm's running statistics held 2 KB a step; the
// recurrent layers' time steps, 18 KB a step for a small LSTM, until
// their three results shared one graph: composeResults.)
func TestTrainingStepsLeaveNothing(t *testing.T) {
	testenv.HostOnly(t)
	dev := lathe.WGPU(0)
	if _, err := lathe.MemoryStats(dev); err != nil {
		t.Skipf("wgpu:0 does not open: %v", err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, c := range []struct {
		name string
		m    Module
		x    *lathe.Tensor
	}{
		{"mlp", Sequential(NewLinear(8, 16), ReLU{}, NewLinear(16, 4), NewLayerNorm([]int{4})), lathe.RandN(dev, lathe.Float32, 4, 8)},
		{"conv-bn-pool", Sequential(NewConv2d(2, 4, 3, Padding(1)), NewBatchNorm2d(4), ReLU{}, NewMaxPool2d(2)), lathe.RandN(dev, lathe.Float32, 2, 2, 8, 8)},
		{"attention", NewMultiheadAttention(8, 2), lathe.RandN(dev, lathe.Float32, 5, 2, 8)},
		{"encoder", NewTransformerEncoderLayer(8, 2, DimFeedforward(16)), lathe.RandN(dev, lathe.Float32, 5, 2, 8)},
		{"lstm", NewLSTM(8, 6, NumLayers(2), Bidirectional(), InterLayerDropout(0.25)), lathe.RandN(dev, lathe.Float32, 5, 2, 8)},
		{"gru", NewGRU(8, 6, BatchFirst()), lathe.RandN(dev, lathe.Float32, 2, 5, 8)},
		{"rnn", NewRNN(8, 6), lathe.RandN(dev, lathe.Float32, 5, 8)},
		{"lstm hn", lastState{NewLSTM(8, 6), lathe.RandN(dev, lathe.Float32, 1, 2, 6), lathe.RandN(dev, lathe.Float32, 1, 2, 6)},
			lathe.RandN(dev, lathe.Float32, 5, 2, 8)},
		{"lstm cell", NewLSTMCell(8, 6), lathe.RandN(dev, lathe.Float32, 2, 8)},
		{"gru cell", NewGRUCell(8, 6), lathe.RandN(dev, lathe.Float32, 2, 8)},
	} {
		if err := c.m.To(dev); err != nil {
			t.Fatal(err)
		}
		opt, err := NewAdam(c.m.Parameters(), 0.01)
		mustOK(t, err)
		step := func() int64 {
			out := c.m.Forward(c.x)
			sq := out.Square()
			loss := sq.Mean()
			opt.ZeroGrad()
			mustOK(t, loss.Backward())
			mustOK(t, opt.Step())
			for _, r := range []*lathe.Tensor{out, sq, loss} {
				r.Release()
			}
			s, err := lathe.MemoryStats(dev)
			mustOK(t, err)
			return s.Allocated
		}
		step()
		warm := step()
		if after := step(); after > warm { // pending cleanups of earlier tests may only lower it
			t.Errorf("%s: a step left %d bytes on wgpu:0", c.name, after-warm)
		}
	}
}

// PReLU starts at torch's 0.25 (or Init's value), and refuses what
// torch.prelu refuses: a slope count other than x's channels (dim 1; an x
// of fewer than 2 dims has one channel), x of another dtype, as errors
// naming the argument; a bad num_parameters fails the layer.
func TestPReLUInitAndErrors(t *testing.T) {
	p := NewPReLU(3)
	if v := values(t, p.Weight); !slices.Equal(v, []float64{0.25, 0.25, 0.25}) || !p.Weight.RequiresGrad() {
		t.Errorf("weight %v (requires grad %v), want three 0.25", v, p.Weight.RequiresGrad())
	}
	if v := values(t, NewPReLU(1, Init(-0.1), WithDType(lathe.Float64)).Weight); !slices.Equal(v, []float64{-0.1}) {
		t.Errorf("Init(-0.1): weight %v", v)
	}
	for _, n := range []int{0, -2} {
		wantArgErr(t, Err(NewPReLU(n)), lathe.ErrValue, "num_parameters")
	}
	wantArgErr(t, Err(NewPReLU(2, Stride(1))), lathe.ErrValue, "stride")
	f32 := func(shape ...int) *lathe.Tensor { return lathe.Zeros(lathe.CPU, lathe.Float32, shape...) }
	for _, shape := range [][]int{{2, 4, 5}, {3}, {}, {3, 1}} {
		wantArgErr(t, p.Forward(f32(shape...)).Err(), lathe.ErrShape, "x")
	}
	wantArgErr(t, p.Forward(lathe.Zeros(lathe.CPU, lathe.Float64, 2, 3)).Err(), lathe.ErrDType, "x")
	wantArgErr(t, p.Forward(lathe.Zeros(lathe.CPU, lathe.Int64, 2, 3)).Err(), lathe.ErrDType, "x")
	if err := p.Forward(nil).Err(); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("nil x: %v", err)
	}
	// x on another device than the weight was mul's error naming "rhs".
	t.Run("device", func(t *testing.T) {
		wantArgErr(t, p.Forward(f32(2, 3).To(wgpuOrSkip(t))).Err(), lathe.ErrDevice, "x")
	})
	bad := &PReLU{Weight: lathe.Zeros(lathe.CPU, lathe.Float32, 3, 1)}
	wantArgErr(t, bad.Forward(f32(2, 3)).Err(), lathe.ErrShape, "weight")
	// One slope takes any rank, 0-d included.
	one := NewPReLU(1)
	for _, shape := range [][]int{{}, {4}, {2, 5}, {1, 2, 3, 4, 5}} {
		if y := one.Forward(f32(shape...)); y.Err() != nil || !slices.Equal(y.Shape(), shape) {
			t.Errorf("%v: %v (%v)", shape, y.Shape(), y.Err())
		}
	}
}

// Embedding's padding_idx, max_norm and norm_type are refused, never a
// panic, where out of range: errors naming the argument, from Err and
// Forward.
func TestEmbeddingOptionErrors(t *testing.T) {
	idx := lathe.FromSlice(lathe.CPU, []int64{0, 1}, 2)
	cases := []struct {
		name string
		m    *Embedding
		arg  string
	}{
		{"padding_idx/too_big", NewEmbedding(5, 3, PaddingIdx(5)), "padding_idx"},
		{"padding_idx/too_small", NewEmbedding(5, 3, PaddingIdx(-6)), "padding_idx"},
		{"padding_idx/no_rows", NewEmbedding(0, 3, PaddingIdx(0)), "padding_idx"},
		{"padding_idx/literal", &Embedding{Weight: lathe.Zeros(lathe.CPU, lathe.Float32, 5, 3), Padded: true, PaddingIdx: 7}, "padding_idx"},
		{"max_norm/zero", NewEmbedding(5, 3, MaxNorm(0)), "max_norm"},
		{"max_norm/nan", NewEmbedding(5, 3, MaxNorm(math.NaN())), "max_norm"},
		{"max_norm/literal", &Embedding{Weight: lathe.Zeros(lathe.CPU, lathe.Float32, 5, 3), MaxNorm: -1}, "max_norm"},
		{"norm_type/negative", NewEmbedding(5, 3, MaxNorm(1), NormType(-2)), "norm_type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, err := range []error{Err(c.m), c.m.Forward(idx).Err()} {
				if c.name == "padding_idx/literal" || c.name == "max_norm/literal" {
					if err == nil { // Err sees a live weight: only Forward checks the fields
						continue
					}
				}
				var le *lathe.Error
				if !errors.Is(err, lathe.ErrValue) || !errors.As(err, &le) || le.Arg != c.arg {
					t.Fatalf("error %v, want an ErrValue naming %q", err, c.arg)
				}
			}
		})
	}
}

// The padding row (negative padding_idx counting from the end) starts as
// zeros, is looked up as it is, and gets no gradient, wherever it is
// looked up; the other rows get theirs.
func TestEmbeddingPaddingIdx(t *testing.T) {
	e := NewEmbedding(5, 3, PaddingIdx(-2), WithDType(lathe.Float64))
	if e.PaddingIdx != 3 || !e.Padded {
		t.Fatalf("PaddingIdx %d (padded %v), want row 3", e.PaddingIdx, e.Padded)
	}
	assertClose(t, "padding row", values(t, e.Weight)[9:12], []float64{0, 0, 0}, 0)
	// A checkpoint's padding row need not be zeros.
	next := lathe.Arange(lathe.CPU, lathe.Float64, 1, 16, 1).Reshape(5, 3)
	if err := rebind(e.Weight, next, nil); err != nil {
		t.Fatal(err)
	}
	idx := lathe.FromSlice(lathe.CPU, []int64{3, 1, 3, 0}, 2, 2)
	out := e.Forward(idx)
	assertClose(t, "lookup", values(t, out), []float64{10, 11, 12, 4, 5, 6, 10, 11, 12, 1, 2, 3}, 0)
	if err := out.Mul(seq(1, 0.5, 2, 2, 3)).Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	g := values(t, e.Weight.Grad())
	u := values(t, seq(1, 0.5, 2, 2, 3))
	want := make([]float64, 15)
	for i, row := range []int{3, 1, 3, 0} {
		if row == 3 {
			continue
		}
		for j := range 3 {
			want[row*3+j] += u[i*3+j]
		}
	}
	assertClose(t, "weight gradient", g, want, 1e-15)
}

// max_norm renormalises the rows looked up, in the weight, keeping its
// gradient; indices the lookup refuses leave the weight as it was.
func TestEmbeddingMaxNorm(t *testing.T) {
	e := NewEmbedding(3, 2, MaxNorm(1), WithDType(lathe.Float64))
	if err := rebind(e.Weight, lathe.FromSlice(lathe.CPU, []float64{3, 4, 0.3, 0.4, 6, 8}, 3, 2), nil); err != nil {
		t.Fatal(err)
	}
	before := e.Weight
	if err := e.Forward(lathe.FromSlice(lathe.CPU, []int64{0, 3}, 2)).Err(); err == nil {
		t.Fatalf("out-of-range index: %v", err)
	}
	assertClose(t, "weight after a refused lookup", values(t, e.Weight), []float64{3, 4, 0.3, 0.4, 6, 8}, 0)
	out := e.Forward(lathe.FromSlice(lathe.CPU, []int64{0, 1, 0}, 3))
	s := 1 / (5 + 1e-7)
	assertClose(t, "lookup", values(t, out), []float64{3 * s, 4 * s, 0.3, 0.4, 3 * s, 4 * s}, 1e-15)
	assertClose(t, "weight", values(t, e.Weight), []float64{3 * s, 4 * s, 0.3, 0.4, 6, 8}, 1e-15)
	if e.Weight != before || !e.Weight.RequiresGrad() {
		t.Fatal("the weight's handle changed or lost RequireGrad")
	}
	if err := out.Sum().Backward(); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "gradient", values(t, e.Weight.Grad()), []float64{2, 2, 1, 1, 0, 0}, 0)
}
