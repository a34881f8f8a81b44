package nn

import (
	"bytes"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// rnnRefCase is one case's reference from build/torchref/rnn_ref.py: the
// state-dict names and the values by key ("out", "hn", "cn", "grad/x",
// "grad/<param>", "grad2/<param>").
type rnnRefCase struct {
	names []string
	v     map[string][]float64
}

// rnnCase is a configuration of rnn_ref.py's CASES, by the same name.
type rnnCase struct {
	kind                  rnnKind // kindRNNTanh for RNN and RNNCell; Nonlinearity in opts
	in, hidden            int
	steps, batch          int // batch 0: unbatched
	opts                  []Option
	layers, dirs          int
	batchFirst, withState bool
	cell                  bool // LSTMCell or GRUCell: steps 1, no seq dim
}

var rnnCases = map[string]rnnCase{
	"lstm/l1":                    {kindLSTM, 3, 4, 5, 2, nil, 1, 1, false, false, false},
	"lstm/l2/h0":                 {kindLSTM, 3, 4, 4, 2, []Option{NumLayers(2)}, 2, 1, false, true, false},
	"lstm/bidir/batch_first/h0":  {kindLSTM, 3, 4, 4, 3, []Option{Bidirectional(), BatchFirst()}, 1, 2, true, true, false},
	"lstm/l2/bidir/nobias":       {kindLSTM, 2, 3, 4, 2, []Option{NumLayers(2), Bidirectional(), NoBias()}, 2, 2, false, false, false},
	"lstm/l2/bidir/unbatched/h0": {kindLSTM, 3, 2, 3, 0, []Option{NumLayers(2), Bidirectional()}, 2, 2, false, true, false},
	"gru/l1":                     {kindGRU, 3, 4, 5, 2, nil, 1, 1, false, false, false},
	"gru/l2/h0":                  {kindGRU, 3, 4, 4, 2, []Option{NumLayers(2)}, 2, 1, false, true, false},
	"gru/bidir/batch_first/h0":   {kindGRU, 3, 4, 4, 3, []Option{Bidirectional(), BatchFirst()}, 1, 2, true, true, false},
	"gru/l2/bidir/nobias":        {kindGRU, 2, 3, 4, 2, []Option{NumLayers(2), Bidirectional(), NoBias()}, 2, 2, false, false, false},
	"gru/l2/bidir/unbatched/h0":  {kindGRU, 3, 2, 3, 0, []Option{NumLayers(2), Bidirectional()}, 2, 2, false, true, false},
	"lstm_cell/h0":               {kindLSTM, 3, 4, 1, 2, nil, 1, 1, false, true, true},
	"lstm_cell/nobias":           {kindLSTM, 3, 4, 1, 2, []Option{NoBias()}, 1, 1, false, false, true},
	"lstm_cell/unbatched/h0":     {kindLSTM, 3, 4, 1, 0, nil, 1, 1, false, true, true},
	"gru_cell/h0":                {kindGRU, 3, 4, 1, 2, nil, 1, 1, false, true, true},
	"gru_cell/nobias":            {kindGRU, 3, 4, 1, 2, []Option{NoBias()}, 1, 1, false, false, true},
	"gru_cell/unbatched/h0":      {kindGRU, 3, 4, 1, 0, nil, 1, 1, false, true, true},
	"rnn/l1":                     {kindRNNTanh, 3, 4, 5, 2, nil, 1, 1, false, false, false},
	"rnn/relu/l2/h0":             {kindRNNTanh, 3, 4, 4, 2, []Option{Nonlinearity("relu"), NumLayers(2)}, 2, 1, false, true, false},
	"rnn/bidir/batch_first/h0":   {kindRNNTanh, 3, 4, 4, 3, []Option{Bidirectional(), BatchFirst()}, 1, 2, true, true, false},
	"rnn/relu/l2/bidir/nobias":   {kindRNNTanh, 2, 3, 4, 2, []Option{Nonlinearity("relu"), NumLayers(2), Bidirectional(), NoBias()}, 2, 2, false, false, false},
	"rnn/l2/bidir/unbatched/h0":  {kindRNNTanh, 3, 2, 3, 0, []Option{NumLayers(2), Bidirectional()}, 2, 2, false, true, false},
	"rnn_cell/h0":                {kindRNNTanh, 3, 4, 1, 2, nil, 1, 1, false, true, true},
	"rnn_cell/relu/nobias":       {kindRNNTanh, 3, 4, 1, 2, []Option{Nonlinearity("relu"), NoBias()}, 1, 1, false, false, true},
	"rnn_cell/relu/unbatched/h0": {kindRNNTanh, 3, 4, 1, 0, []Option{Nonlinearity("relu")}, 1, 1, false, true, true},
}

// recurrent is RNN, LSTM or GRU behind one call that returns cn nil for a GRU.
type recurrent interface {
	Module
	run(x, h0, c0 *lathe.Tensor) (out, hn, cn *lathe.Tensor)
}

// setSeqWeights gives the k-th parameter (from offset) 0.5·sin(0.37·i +
// 0.2 + 0.1·k), as rnn_ref.py's set_weights does, in dtype dt on dev.
func setSeqWeights(t *testing.T, ps []Param, offset int, dt lathe.DType, dev lathe.Device) {
	t.Helper()
	for k, p := range ps {
		v := seq(0.37, 0.2+0.1*float64(k+offset), p.T.Shape()...).MulScalar(0.5).Cast(dt).To(dev)
		if err := rebind(p.T, v, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// rnnRun builds case c's module in dt on dev with the reference weights,
// runs it forward and back, and returns its values under rnnRefCase's keys.
func rnnRun(t *testing.T, c rnnCase, dt lathe.DType, dev lathe.Device) (map[string]*lathe.Tensor, []Param) {
	t.Helper()
	opts := append(slices.Clone(c.opts), WithDType(dt), OnDevice(dev))
	var m recurrent
	switch {
	case c.cell && c.kind == kindGRU:
		m = NewGRUCell(c.in, c.hidden, opts...)
	case c.cell && c.kind == kindLSTM:
		m = NewLSTMCell(c.in, c.hidden, opts...)
	case c.cell:
		m = NewRNNCell(c.in, c.hidden, opts...)
	case c.kind == kindGRU:
		m = NewGRU(c.in, c.hidden, opts...)
	case c.kind == kindLSTM:
		m = NewLSTM(c.in, c.hidden, opts...)
	default:
		m = NewRNN(c.in, c.hidden, opts...)
	}
	ps := m.Parameters()
	setSeqWeights(t, ps, 0, dt, dev)
	xshape := []int{c.steps, c.batch, c.in}
	sshape := []int{c.layers * c.dirs, c.batch, c.hidden}
	switch {
	case c.batch == 0:
		xshape, sshape = []int{c.steps, c.in}, []int{c.layers * c.dirs, c.hidden}
	case c.batchFirst:
		xshape = []int{c.batch, c.steps, c.in}
	}
	if c.cell {
		xshape, sshape = xshape[1:], sshape[1:]
	}
	mk := func(scale, shift float64, shape []int) *lathe.Tensor {
		return seq(scale, shift, shape...).MulScalar(0.5).Cast(dt).To(dev).RequireGrad()
	}
	x := seq(0.5, 0.3, xshape...).MulScalar(1.5).Cast(dt).To(dev).RequireGrad()
	inputs := []*lathe.Tensor{x}
	var h0, c0 *lathe.Tensor
	if c.withState {
		h0 = mk(0.41, 1, sshape)
		inputs = append(inputs, h0)
		if c.kind == kindLSTM {
			c0 = mk(0.29, 2, sshape)
			inputs = append(inputs, c0)
		}
	}
	out, hn, cn := m.run(x, h0, c0)
	w := func(y *lathe.Tensor, scale, shift float64) *lathe.Tensor {
		return y.Mul(seq(scale, shift, y.Shape()...).Cast(dt).To(dev)).Sum()
	}
	loss := w(hn, 0.31, 1.3)
	got := map[string]*lathe.Tensor{"hn": hn}
	if out != nil {
		loss = w(out, 0.23, 0.7).Add(loss)
		got["out"] = out
	}
	if cn != nil {
		loss = loss.Add(w(cn, 0.17, 0.4))
		got["cn"] = cn
	}
	names := []string{"x", "h0", "c0"}[:len(inputs)]
	params := make([]*lathe.Tensor, len(ps))
	for i, p := range ps {
		names, params[i] = append(names, p.Name), p.T
	}
	grads, err := lathe.Grad(loss, append(inputs, params...), lathe.CreateGraph())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads {
		got["grad/"+names[i]] = g
	}
	// ReLU's derivative is piecewise constant, so ∂L/∂x of a ReLU RNN may
	// not depend on a weight at all: torch records a zero, lathe nothing.
	grads2, err := lathe.Grad(grads[0].Square().Sum(), params, lathe.AllowUnused())
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range grads2 {
		if g == nil {
			g = lathe.Zeros(dev, dt, ps[i].T.Shape()...)
		}
		got["grad2/"+ps[i].Name] = g
	}
	return got, ps
}

// checkRef compares every reference value of ref with got's, within tol
// relative to max(1, |want|), and returns the largest difference.
func checkRef(t *testing.T, got map[string]*lathe.Tensor, ref map[string][]float64, tol float64) float64 {
	t.Helper()
	worst := 0.0
	for _, k := range slices.Sorted(maps.Keys(ref)) {
		want := ref[k]
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: the reference has it, lathe does not", k)
			continue
		}
		v := values(t, g.To(lathe.CPU))
		if len(v) != len(want) {
			t.Errorf("%s: %d values, want %d", k, len(v), len(want))
			continue
		}
		for i := range v {
			d := math.Abs(v[i] - want[i])
			worst = max(worst, d)
			if !(d <= tol*max(1, math.Abs(want[i]))) {
				t.Errorf("%s: [%d] is %.17g, want %.17g (diff %.3g)", k, i, v[i], want[i], d)
				break
			}
		}
	}
	for k := range got {
		if _, ok := ref[k]; !ok {
			t.Errorf("%s: lathe has it, the reference does not", k)
		}
	}
	return worst
}

// RNN, LSTM and GRU against torch.nn.RNN/LSTM/GRU on exchanged weights: outputs,
// final states, first- and second-order gradients, and state-dict names.
func TestRNNMatchesTorch(t *testing.T) {
	for _, name := range slices.Sorted(maps.Keys(rnnCases)) {
		t.Run(name, func(t *testing.T) {
			ref, ok := rnnRef[name]
			if !ok {
				t.Fatal("no reference: run build/torchref/rnn_ref.py")
			}
			got, ps := rnnRun(t, rnnCases[name], lathe.Float64, lathe.CPU)
			var names []string
			for _, p := range ps {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, ref.names) {
				t.Errorf("parameter names %v, torch's state_dict has %v", names, ref.names)
			}
			worst := checkRef(t, got, ref.v, 1e-10)
			t.Logf("max abs diff %.3g", worst)
		})
	}
	for name := range rnnRef {
		if _, ok := rnnCases[name]; !ok {
			t.Errorf("%s: a reference without its case", name)
		}
	}
}

// The same cases in float32 on wgpu:0 (Dawn; lavapipe where there is no
// GPU), within 1e-4.
func TestRNNMatchesTorchWGPU(t *testing.T) {
	testenv.HostOnly(t)
	dev := lathe.WGPU(0)
	for _, info := range lathe.DeviceStatus() {
		if info.Device == dev && !info.Available {
			testenv.SkipDevice(t, dev.String(), "%s is unavailable: %s", dev, info.Detail)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rnnCases)) {
		t.Run(name, func(t *testing.T) {
			got, _ := rnnRun(t, rnnCases[name], lathe.Float32, dev)
			worst := checkRef(t, got, rnnRef[name].v, 1e-4)
			t.Logf("max abs diff %.3g", worst)
		})
	}
}

// Embedding → LSTM → Linear → CrossEntropy, a small language model, against
// the same model in torch (rnn_ref.py's lm).
func TestLSTMLanguageModel(t *testing.T) {
	f64 := WithDType(lathe.Float64)
	m := Sequential(NewEmbedding(7, 4, f64), NewLSTM(4, 5, NumLayers(2), BatchFirst(), f64), NewLinear(5, 7, f64))
	setSeqWeights(t, m.Parameters(), 0, lathe.Float64, lathe.CPU)
	tok, tgt := make([]int64, 6), make([]int64, 6)
	for i := range tok {
		tok[i], tgt[i] = int64((3*i+1)%7), int64((5*i+2)%7)
	}
	logits := m.Forward(lathe.FromSlice(lathe.CPU, tok, 2, 3))
	loss := CrossEntropy(logits.Reshape(6, 7), lathe.FromSlice(lathe.CPU, tgt, 6))
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	got := map[string]*lathe.Tensor{"logits": logits, "loss": loss}
	for _, p := range m.Parameters() {
		got["grad/"+p.Name] = p.T.Grad()
	}
	t.Logf("max abs diff %.3g", checkRef(t, got, rnnLMRef, 1e-10))
}

// Save writes PyTorch's state-dict names; Load restores the weights into a
// fresh layer, which then computes the same output.
func TestRNNSaveLoad(t *testing.T) {
	for _, kind := range []rnnKind{kindLSTM, kindGRU, kindRNNTanh} {
		opts := []Option{NumLayers(2), Bidirectional(), WithDType(lathe.Float64)}
		mk := func() Module {
			switch kind {
			case kindGRU:
				return NewGRU(3, 4, opts...)
			case kindRNNTanh:
				return NewRNN(3, 4, opts...)
			}
			return NewLSTM(3, 4, opts...)
		}
		lathe.Seed(1)
		a := mk()
		var buf bytes.Buffer
		if err := Save(&buf, a); err != nil {
			t.Fatal(err)
		}
		lathe.Seed(2)
		b := mk()
		if err := Load(bytes.NewReader(buf.Bytes()), b); err != nil {
			t.Fatal(err)
		}
		x := seq(0.5, 0.3, 4, 2, 3)
		checkClose(t, "output after load", b.Forward(x), values(t, a.Forward(x)))
		names := []string{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
			"weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
			"weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
			"weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"}
		for _, n := range names {
			if !bytes.Contains(buf.Bytes(), []byte(`"`+n+`"`)) {
				t.Errorf("the file has no tensor %q", n)
			}
		}
	}
}

func TestRNNShapesAndInit(t *testing.T) {
	l := NewLSTM(3, 5, NumLayers(2), Bidirectional())
	if got := l.Weights[2].WeightIH.Shape(); !slices.Equal(got, []int{20, 10}) {
		t.Errorf("layer 1's weight_ih is %v, want [20 10]", got)
	}
	for _, p := range l.Parameters() {
		v := values(t, p.T)
		for _, x := range v {
			if math.Abs(x) > 1/math.Sqrt(5) {
				t.Fatalf("%s has %v outside ±1/√hidden", p.Name, x)
			}
		}
	}
	g := NewGRU(3, 5, BatchFirst())
	out, hn := g.ForwardState(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 7, 3), nil)
	if !slices.Equal(out.Shape(), []int{2, 7, 5}) || !slices.Equal(hn.Shape(), []int{1, 2, 5}) {
		t.Errorf("out %v hn %v, want [2 7 5] and [1 2 5]", out.Shape(), hn.Shape())
	}
}

// Dropout between layers acts in training mode only.
func TestRNNDropout(t *testing.T) {
	l := NewLSTM(3, 4, NumLayers(2), InterLayerDropout(0.5), WithDType(lathe.Float64))
	x := seq(0.5, 0.3, 4, 2, 3)
	l.Train(false)
	a, b := values(t, l.Forward(x)), values(t, l.Forward(x))
	if !slices.Equal(a, b) {
		t.Error("evaluation mode is not deterministic")
	}
	l.Train(true)
	lathe.Seed(3)
	if c := values(t, l.Forward(x)); slices.Equal(a, c) {
		t.Error("training mode with dropout 0.5 gave the evaluation output")
	}
}

func TestRNNErrors(t *testing.T) {
	l := NewLSTM(3, 4)
	cases := []struct {
		name string
		got  *lathe.Tensor
		kind error
	}{
		{"lstm/rank4", l.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 3, 3)), lathe.ErrShape},
		{"lstm/features", l.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 4)), lathe.ErrShape},
		{"lstm/empty_seq", l.Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 0, 2, 3)), lathe.ErrShape},
		{"lstm/h0_shape", func() *lathe.Tensor {
			_, hn, _ := l.ForwardState(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3), lathe.Zeros(lathe.CPU, lathe.Float32, 1, 3, 4), nil)
			return hn
		}(), lathe.ErrShape},
		{"lstm/hidden0", NewLSTM(3, 0).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"lstm/nil", (*LSTM)(nil).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"gru_cell/nil", (*GRUCell)(nil).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)), lathe.ErrValue},
		{"lstm_cell/rank3", NewLSTMCell(3, 4).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 1, 2, 3)), lathe.ErrShape},
		{"gru_cell/h_shape", NewGRUCell(3, 4).Step(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3), lathe.Zeros(lathe.CPU, lathe.Float32, 4)), lathe.ErrShape},
		{"gru/dropout", NewGRU(3, 4, InterLayerDropout(2)).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"rnn/nonlinearity", NewRNN(3, 4, Nonlinearity("sigmoid")).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"lstm/nonlinearity", NewLSTM(3, 4, Nonlinearity("relu")).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"rnn_cell/nonlinearity", NewRNNCell(3, 4, Nonlinearity("gelu")).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)), lathe.ErrValue},
		{"rnn/nil", (*RNN)(nil).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 2, 3)), lathe.ErrValue},
		{"rnn_cell/nil", (*RNNCell)(nil).Forward(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3)), lathe.ErrValue},
		{"rnn_cell/h_shape", NewRNNCell(3, 4).Step(lathe.Zeros(lathe.CPU, lathe.Float32, 2, 3), lathe.Zeros(lathe.CPU, lathe.Float32, 4)), lathe.ErrShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.got.Err(); !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want kind %v", err, c.kind)
			}
		})
	}
	if err := Err(NewGRU(0, 4)); err == nil {
		t.Error("Err of a GRU with input size 0 is nil")
	}
}

// TestRNNResultsShareOneGraph: an LSTM's out, hn and cn are views of one
// packed result (composeResults), whose graph the three share. Passes
// through each alone, retaining the graph, add up to one pass through
// their sum; after a pass through hn alone that frees the graph, a pass
// through out is the freed graph's ErrGrad, as torch's "Trying to
// backward through the graph a second time", not an ErrReleased naming
// tensors the caller never released.
func TestRNNResultsShareOneGraph(t *testing.T) {
	f64 := WithDType(lathe.Float64)
	m := NewLSTM(3, 4, NumLayers(2), Bidirectional(), f64)
	x := lathe.RandN(lathe.CPU, lathe.Float64, 5, 2, 3).RequireGrad()
	h0 := lathe.RandN(lathe.CPU, lathe.Float64, 4, 2, 4).RequireGrad()
	inputs := []*lathe.Tensor{x, h0, m.Weights[0].WeightHH, m.Weights[3].BiasIH}
	losses := func() []*lathe.Tensor {
		out, hn, cn := m.ForwardState(x, h0, nil)
		return []*lathe.Tensor{out.Square().Sum(), hn.Sin().Sum(), cn.MulScalar(3).Sum()}
	}
	ls := losses()
	want, err := lathe.Grad(ls[0].Add(ls[1]).Add(ls[2]), inputs)
	mustOK(t, err)
	ls = losses()
	sum := make([][]float64, len(inputs))
	for i, l := range ls {
		opts := []lathe.GradOption{lathe.AllowUnused()}
		if i < len(ls)-1 {
			opts = append(opts, lathe.RetainGraph())
		}
		grads, err := lathe.Grad(l, inputs, opts...)
		mustOK(t, err)
		for j, g := range grads {
			if g == nil {
				continue
			}
			v, err := g.Float64s()
			mustOK(t, err)
			if sum[j] == nil {
				sum[j] = make([]float64, len(v))
			}
			for k := range v {
				sum[j][k] += v[k]
			}
		}
	}
	for j, g := range want {
		v, err := g.Float64s()
		mustOK(t, err)
		assertClose(t, "grad of input "+strconv.Itoa(j), sum[j], v, 1e-12)
	}

	ls = losses()
	mustOK(t, ls[1].Backward())
	if err := ls[0].Backward(); !errors.Is(err, lathe.ErrGrad) || !strings.Contains(err.Error(), "earlier backward pass freed") {
		t.Errorf("a pass through out after one through hn freed the graph: %v, want the freed graph's ErrGrad", err)
	}
}
