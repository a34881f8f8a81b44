package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// RNNWeights are one layer's weights in one direction, with PyTorch's
// shapes: WeightIH [G·hidden, in], WeightHH [G·hidden, hidden], BiasIH and
// BiasHH [G·hidden] (nil without a bias), where G is the number of gates
// (4 for LSTM, in the order i, f, g, o; 3 for GRU, in the order r, z, n;
// 1 for RNN). An LSTM with a projection (ProjSize) has WeightHR
// [proj, hidden], which maps each step's hidden state to the proj-sized h,
// and then WeightHH is [4·hidden, proj]; WeightHR is nil otherwise.
type RNNWeights struct {
	WeightIH, WeightHH, BiasIH, BiasHH *lathe.Tensor
	WeightHR                           *lathe.Tensor
}

// RNNBase is what RNN, LSTM and GRU share (torch.nn.RNNBase): the sizes, the
// options and the weights, Weights[layer·D + d] for direction d (0 forward,
// 1 backward) of D.
type RNNBase struct {
	InputSize, HiddenSize, NumLayers int
	// ProjSize is an LSTM's projection size (torch's proj_size), 0 for
	// none: h, the output and the next layer's input have ProjSize
	// features in place of HiddenSize (c keeps HiddenSize).
	ProjSize                  int
	BatchFirst, Bidirectional bool
	// Dropout is the probability of dropping each element of a layer's
	// output before the next layer (not after the last), in training mode.
	Dropout float64
	Eval    bool // true after Train(false)
	Weights []RNNWeights

	kind rnnKind
}

// RNN is a multi-layer Elman network (torch.nn.RNN). Per time step, with
// act tanh or, with Nonlinearity("relu"), ReLU:
//
//	h' = act(W_ih x + b_ih + W_hh h + b_hh)
type RNN struct{ RNNBase }

// LSTM is a multi-layer long short-term memory network (torch.nn.LSTM).
// Per time step, with σ the sigmoid and ⊙ the elementwise product:
//
//	i = σ(W_ii x + b_ii + W_hi h + b_hi)    f = σ(W_if x + b_if + W_hf h + b_hf)
//	g = tanh(W_ig x + b_ig + W_hg h + b_hg) o = σ(W_io x + b_io + W_ho h + b_ho)
//	c' = f ⊙ c + i ⊙ g                      h' = o ⊙ tanh(c')
type LSTM struct{ RNNBase }

// GRU is a multi-layer gated recurrent unit network (torch.nn.GRU). Per
// time step:
//
//	r = σ(W_ir x + b_ir + W_hr h + b_hr)    z = σ(W_iz x + b_iz + W_hz h + b_hz)
//	n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//	h' = (1 - z) ⊙ n + z ⊙ h
type GRU struct{ RNNBase }

// NumLayers stacks n recurrent layers, each fed the previous one's output
// (torch's num_layers; 1 by default).
func NumLayers(n int) Option { return Option{"num_layers", func(o *options) { o.numLayers = n }} }

// BatchFirst makes a recurrent layer take and return (batch, seq, feature)
// rather than (seq, batch, feature); the states keep the batch second.
// MultiheadAttention and the transformer layers are batch-first by
// default; there it undoes an earlier SeqFirst.
func BatchFirst() Option {
	return Option{"batch_first", func(o *options) { o.batchFirst, o.seqFirst = true, false }}
}

// Bidirectional adds a second direction that reads the sequence backwards;
// the output concatenates both directions' hidden states.
func Bidirectional() Option {
	return Option{"bidirectional", func(o *options) { o.bidirectional = true }}
}

// InterLayerDropout drops each element of every layer's output but the last
// with probability p in training mode (torch's dropout argument).
func InterLayerDropout(p float64) Option {
	return Option{"dropout", func(o *options) { o.dropout, o.dropoutSet = p, true }}
}

// ProjSize gives an LSTM a projection of size p (torch's proj_size): each
// step's hidden state o ⊙ tanh(c') is multiplied by weight_hr_l<k>
// [p, hidden], so that h, the output and the next layer's input have p
// features (c keeps hidden_size) and weight_hh_l<k> is [4·hidden, p]. p
// is 0 (no projection, the default) or in [1, hidden_size); only LSTM
// takes it, as torch's RNN and GRU refuse proj_size.
func ProjSize(p int) Option {
	return Option{"proj_size", func(o *options) { o.projSize = p }}
}

// Nonlinearity picks an RNN's or RNNCell's activation, "tanh" (the
// default) or "relu" (torch's nonlinearity argument).
func Nonlinearity(name string) Option {
	return Option{"nonlinearity", func(o *options) { o.nonlinearity = name }}
}

// NewRNN makes an RNN from in features to hidden, initialised as PyTorch
// does: every weight and bias U(-1/√hidden, 1/√hidden). Options:
// Nonlinearity, NumLayers, BatchFirst, Bidirectional, InterLayerDropout,
// NoBias, WithDType, OnDevice.
func NewRNN(in, hidden int, opts ...Option) *RNN {
	o, err := layerOptions("RNN", opts)
	return &RNN{newRNNBase(kindRNNTanh, in, hidden, o, err)}
}

// NewLSTM makes an LSTM from in features to hidden, initialised as PyTorch
// does: every weight and bias U(-1/√hidden, 1/√hidden), weight_hr_l<k>
// too. Options: NumLayers, BatchFirst, Bidirectional, InterLayerDropout,
// ProjSize, NoBias, WithDType, OnDevice.
func NewLSTM(in, hidden int, opts ...Option) *LSTM {
	o, err := layerOptions("LSTM", opts)
	return &LSTM{newRNNBase(kindLSTM, in, hidden, o, err)}
}

// NewGRU makes a GRU as NewLSTM makes an LSTM.
func NewGRU(in, hidden int, opts ...Option) *GRU {
	o, err := layerOptions("GRU", opts)
	return &GRU{newRNNBase(kindGRU, in, hidden, o, err)}
}

// newRNNBase builds the weights from the options layerOptions gave, or
// fails them with optErr, its refusal of an option.
func newRNNBase(kind rnnKind, in, hidden int, o options, optErr *lathe.Error) RNNBase {
	badAct := false
	if kind == kindRNNTanh {
		switch o.nonlinearity {
		case "", "tanh":
		case "relu":
			kind = kindRNNReLU
		default:
			badAct = true
		}
	}
	layers := o.numLayers
	if layers == 0 {
		layers = 1
	}
	r := RNNBase{InputSize: in, HiddenSize: hidden, NumLayers: layers, ProjSize: o.projSize, BatchFirst: o.batchFirst,
		Bidirectional: o.bidirectional, Dropout: o.dropout, kind: kind}
	dirs := r.dirs()
	var detail, fix, arg string
	switch {
	case o.projSize < 0:
		arg, detail, fix = "proj_size", "has proj_size "+strconv.Itoa(o.projSize)+", which must not be negative", "give proj_size 0 (no projection) or a size below hidden_size"
	case o.projSize > 0 && o.projSize >= hidden:
		arg, detail = "proj_size", "has proj_size "+strconv.Itoa(o.projSize)+" but hidden_size "+strconv.Itoa(hidden)+"; proj_size must be smaller"
		fix = "give proj_size below hidden_size, or 0 for no projection"
	case in < 1 || hidden < 1 || layers < 1:
		detail = "has input_size " + strconv.Itoa(in) + ", hidden_size " + strconv.Itoa(hidden) +
			", num_layers " + strconv.Itoa(layers) + "; each must be at least 1"
	case layers > maxLayers:
		detail = "has num_layers " + strconv.Itoa(layers) + ", more than lathe builds (" + strconv.Itoa(maxLayers) + ")"
	case !(o.dropout >= 0 && o.dropout <= 1):
		detail = "has dropout " + strconv.FormatFloat(o.dropout, 'g', -1, 64) + ", which must be in [0, 1]"
	case badAct:
		detail = "has nonlinearity " + strconv.Quote(o.nonlinearity) + "; it is \"tanh\" or \"relu\""
	case hidden > math.MaxInt32/kind.gates() || in > math.MaxInt32:
		detail = "has sizes too large for a weight"
	}
	if detail != "" && optErr == nil {
		if fix == "" {
			fix = "give positive sizes, a dropout probability and a known nonlinearity"
		}
		optErr = nnError(kind.String(), lathe.ErrValue, arg, detail, fix)
	}
	if optErr != nil {
		// A failed module lists its layers' weights failed, or one layer's
		// where the count is not one that could be built.
		if layers < 1 || layers > maxLayers {
			layers = 1
		}
		r.Weights = make([]RNNWeights, layers*dirs)
		err := lathe.Failed(optErr)
		for i := range r.Weights {
			r.Weights[i] = RNNWeights{WeightIH: err, WeightHH: err}
			if !o.noBias {
				r.Weights[i].BiasIH, r.Weights[i].BiasHH = err, err
			}
			if o.projSize > 0 {
				r.Weights[i].WeightHR = err
			}
		}
		return r
	}
	r.Weights = make([]RNNWeights, layers*dirs)
	bound := 1 / math.Sqrt(float64(hidden))
	g, hOut := kind.gates()*hidden, r.outSize()
	for l := range layers {
		lin := in
		if l > 0 {
			lin = hOut * dirs
		}
		for d := range dirs {
			w := &r.Weights[l*dirs+d]
			// torch's reset_parameters draws the tensors in state-dict order.
			w.WeightIH = newParam(uniform(o.dtype, bound, g, lin), o)
			w.WeightHH = newParam(uniform(o.dtype, bound, g, hOut), o)
			if !o.noBias {
				w.BiasIH = newParam(uniform(o.dtype, bound, g), o)
				w.BiasHH = newParam(uniform(o.dtype, bound, g), o)
			}
			if o.projSize > 0 {
				w.WeightHR = newParam(uniform(o.dtype, bound, o.projSize, hidden), o)
			}
		}
	}
	return r
}

// outSize is the size of h and of each direction's output: ProjSize, or
// HiddenSize without a projection.
func (r *RNNBase) outSize() int {
	if r.ProjSize > 0 {
		return r.ProjSize
	}
	return r.HiddenSize
}

func (r *RNNBase) dirs() int {
	if r.Bidirectional {
		return 2
	}
	return 1
}

// Parameters lists, for each layer k and direction (the backward one with
// the suffix "_reverse"), "weight_ih_l<k>", "weight_hh_l<k>", "bias_ih_l<k>",
// "bias_hh_l<k>" and, with a projection, "weight_hr_l<k>", PyTorch's
// state-dict names and order.
func (r *RNNBase) Parameters() []Param {
	var ps []Param
	dirs := r.dirs()
	for i, w := range r.Weights {
		sfx := "_l" + strconv.Itoa(i/dirs)
		if i%dirs == 1 {
			sfx += "_reverse"
		}
		ps = append(ps, Param{"weight_ih" + sfx, w.WeightIH}, Param{"weight_hh" + sfx, w.WeightHH})
		if w.BiasIH != nil {
			ps = append(ps, Param{"bias_ih" + sfx, w.BiasIH}, Param{"bias_hh" + sfx, w.BiasHH})
		}
		if w.WeightHR != nil {
			ps = append(ps, Param{"weight_hr" + sfx, w.WeightHR})
		}
	}
	return ps
}

// To moves the weights to dev.
func (r *RNNBase) To(dev lathe.Device) error { return moveParams(r.Parameters(), dev) }

// Train switches the dropout between layers on (true) or off (false).
func (r *RNNBase) Train(on bool) { r.Eval = !on }

// Forward returns the output of the last layer for every time step:
// (seq, batch, D·hidden), (batch, seq, D·hidden) with BatchFirst, or
// (seq, D·hidden) for an unbatched (seq, in) x, with ProjSize in place of
// hidden where it is set; the states start at zero.
func (l *LSTM) Forward(x *lathe.Tensor) *lathe.Tensor {
	out, hn, cn := l.ForwardState(x, nil, nil)
	hn.Release() // views of out's storage
	cn.Release()
	return out
}

// ForwardState runs the LSTM from the states h0 and c0, each
// (NumLayers·D, batch, hidden), or (NumLayers·D, hidden) for an unbatched
// x (h0's last dim is ProjSize where it is set); nil means zeros. It returns the output, as Forward does, and the
// final states hn and cn in h0's shape. The three are views of one buffer,
// which goes back to the device when all three are released.
func (l *LSTM) ForwardState(x, h0, c0 *lathe.Tensor) (out, hn, cn *lathe.Tensor) {
	if l == nil {
		f := lathe.Failed(nilModule("lstm", "l"))
		return f, f, f
	}
	return l.run(x, h0, c0)
}

// Forward returns the output of the last layer for every time step, as
// LSTM's Forward does.
func (r *RNN) Forward(x *lathe.Tensor) *lathe.Tensor {
	out, hn := r.ForwardState(x, nil)
	hn.Release() // a view of out's storage
	return out
}

// ForwardState runs the RNN from the state h0 ((NumLayers·D, batch,
// hidden), or (NumLayers·D, hidden) for an unbatched x; nil means zeros) and
// returns the output and the final state hn in h0's shape, views of one
// buffer, which goes back to the device when both are released.
func (r *RNN) ForwardState(x, h0 *lathe.Tensor) (out, hn *lathe.Tensor) {
	if r == nil {
		f := lathe.Failed(nilModule("rnn", "r"))
		return f, f
	}
	out, hn, _ = r.run(x, h0, nil)
	return out, hn
}

// Forward returns the output of the last layer for every time step, as
// LSTM's Forward does.
func (g *GRU) Forward(x *lathe.Tensor) *lathe.Tensor {
	out, hn := g.ForwardState(x, nil)
	hn.Release() // a view of out's storage
	return out
}

// ForwardState runs the GRU from the state h0 ((NumLayers·D, batch,
// hidden), or (NumLayers·D, hidden) for an unbatched x; nil means zeros) and
// returns the output and the final state hn in h0's shape, views of one
// buffer, which goes back to the device when both are released.
func (g *GRU) ForwardState(x, h0 *lathe.Tensor) (out, hn *lathe.Tensor) {
	if g == nil {
		f := lathe.Failed(nilModule("gru", "g"))
		return f, f
	}
	out, hn, _ = g.run(x, h0, nil)
	return out, hn
}

// run checks the arguments and runs layers, the forward pass, composed of
// lathe ops so that it runs on any device and autodiff differentiates it
// (to any order). cn is nil but for LSTM.
func (r *RNNBase) run(x, h0, c0 *lathe.Tensor) (out, hn, cn *lathe.Tensor) {
	op := r.kind.String()
	fail := func(err error) (out, hn, cn *lathe.Tensor) {
		f := lathe.Failed(wrapErr(op, err))
		return f, f, f
	}
	if err := x.CheckArg(op, "x"); err != nil {
		return fail(err)
	}
	for _, p := range r.Parameters() {
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return fail(err)
		}
	}
	dirs := r.dirs()
	if r.NumLayers < 1 || len(r.Weights) != r.NumLayers*dirs {
		return fail(nnError(op, lathe.ErrValue, "Weights", "has "+strconv.Itoa(len(r.Weights))+" entries for "+
			strconv.Itoa(r.NumLayers)+" layers of "+strconv.Itoa(dirs)+" directions", "build the layer with NewRNN, NewLSTM or NewGRU"))
	}
	for _, w := range r.Weights {
		if (w.WeightHR != nil) != (r.ProjSize > 0) || (r.ProjSize > 0 && (r.kind != kindLSTM || r.ProjSize >= r.HiddenSize)) {
			return fail(nnError(op, lathe.ErrValue, "ProjSize", "is "+strconv.Itoa(r.ProjSize)+" where the weights "+
				map[bool]string{true: "have", false: "lack"}[w.WeightHR != nil]+" weight_hr (an LSTM's projection, below hidden_size)",
				"build the layer with NewLSTM and ProjSize rather than setting the field"))
		}
	}
	batched := x.Rank() == 3
	if !batched && x.Rank() != 2 {
		return fail(nnError(op, lathe.ErrShape, "x", "is "+strconv.Itoa(x.Rank())+"-d", "give (seq, batch, in), (batch, seq, in) with BatchFirst, or (seq, in)"))
	}
	if x.Dim(-1) != r.InputSize {
		return fail(nnError(op, lathe.ErrShape, "x", "has "+strconv.Itoa(x.Dim(-1))+" features but input_size is "+strconv.Itoa(r.InputSize),
			"give x's last dim the layer's input size"))
	}
	steps, batch, H := x.Dim(0), 1, r.HiddenSize
	switch {
	case batched && r.BatchFirst:
		steps, batch = x.Dim(1), x.Dim(0)
	case batched:
		batch = x.Dim(1)
	}
	if steps < 1 {
		return fail(nnError(op, lathe.ErrShape, "x", "has an empty sequence", "give at least one time step"))
	}
	// h has hOut features (ProjSize with a projection), c has H.
	hOut := r.outSize()
	stateShape := func(n int) []int {
		if !batched {
			return []int{r.NumLayers * dirs, n}
		}
		return []int{r.NumLayers * dirs, batch, n}
	}
	hShape, cShape := stateShape(hOut), stateShape(H)
	for i, s := range []*lathe.Tensor{h0, c0} {
		if s == nil {
			continue
		}
		name, want, size := "h0", hShape, "hidden"
		if r.ProjSize > 0 {
			size = "proj_size"
		}
		if i == 1 {
			name, want, size = "c0", cShape, "hidden"
		}
		if err := s.CheckArg(op, name); err != nil {
			return fail(err)
		}
		if !slices.Equal(s.Shape(), want) {
			return fail(nnError(op, lathe.ErrShape, name, "has shape "+shapeString(s.Shape())+", want "+shapeString(want),
				"give (num_layers·directions, batch, "+size+"), or (num_layers·directions, "+size+") for an unbatched x"))
		}
	}
	outShape := []int{steps, batch, dirs * hOut}
	switch {
	case !batched:
		outShape = []int{steps, dirs * hOut}
	case r.BatchFirst:
		outShape = []int{batch, steps, dirs * hOut}
	}
	shapes := [][]int{outShape, hShape, cShape}
	states := []*lathe.Tensor{h0, c0}
	if r.kind != kindLSTM {
		shapes, states = shapes[:2], states[:1]
	}
	zeros := zeroStates(x, states[:1], hShape)
	if len(states) > 1 {
		zeros = append(zeros, zeroStates(x, states[1:], cShape)...)
	}
	results := composeResults(op, func(a []*lathe.Tensor) []*lathe.Tensor { return r.layers(a[0], a[1:], batched) },
		shapes, 0, append([]*lathe.Tensor{x}, states...), zeros...)
	out, hn = results[0], results[1]
	if r.kind == kindLSTM {
		cn = results[2]
	}
	return out, hn, cn
}

// layers is the forward pass of every layer and direction from x and the
// states h0 and, for LSTM, c0, as run checked them. It returns the output,
// hn and, for LSTM, cn in the shapes that run gives them. Each direction
// computes its input projection for all time steps in one matmul, then
// steps through time.
func (r *RNNBase) layers(x *lathe.Tensor, states []*lathe.Tensor, batched bool) []*lathe.Tensor {
	switch {
	case !batched:
		x = x.Unsqueeze(1)
	case r.BatchFirst:
		x = x.Transpose(0, 1)
	}
	if !batched {
		states = slices.Clone(states)
		for i, s := range states {
			states[i] = s.Unsqueeze(1)
		}
	}
	steps := x.Dim(0)
	x, hs, cs := r.layerStack(x, states, 2, func(w RNNWeights, gi, h, c *lathe.Tensor, reverse bool) (y, hn, cn *lathe.Tensor) {
		ys := make([]*lathe.Tensor, steps)
		for i := range steps {
			t := i
			if reverse {
				t = steps - 1 - i
			}
			h, c = r.kind.step(w, gi.Narrow(0, t, 1).Squeeze(0), h, c, r.HiddenSize)
			ys[t] = h
		}
		return lathe.Stack(ys, 0), h, c
	})
	if !batched {
		x = x.Squeeze(1)
	} else if r.BatchFirst {
		x = x.Transpose(0, 1)
	}
	results := []*lathe.Tensor{x, lathe.Stack(hs, 0)}
	if r.kind == kindLSTM {
		results = append(results, lathe.Stack(cs, 0))
	}
	return results
}

// layerStack runs every layer and direction over x, the padded
// sequence's [time, batch, features] or the packed rows: dropout between
// layers in training, each direction's initial h (and c) from states, its
// input projection for every step in one matmul (gi), and run, which steps
// through time, forward or in reverse, and returns the direction's output
// and its last h and c. The directions' outputs are joined along catDim.
// It returns the last layer's output and each layer and direction's h and
// c, in torch's order.
func (r *RNNBase) layerStack(x *lathe.Tensor, states []*lathe.Tensor, catDim int,
	run func(w RNNWeights, gi, h, c *lathe.Tensor, reverse bool) (y, h2, c2 *lathe.Tensor)) (out *lathe.Tensor, hs, cs []*lathe.Tensor) {
	dirs := r.dirs()
	for l := range r.NumLayers {
		if l > 0 && !r.Eval && r.Dropout > 0 {
			x = x.Dropout(r.Dropout, true)
		}
		outs := make([]*lathe.Tensor, dirs)
		for d := range dirs {
			k := l*dirs + d
			h, c := states[0].Narrow(0, k, 1).Squeeze(0), (*lathe.Tensor)(nil)
			if r.kind == kindLSTM {
				c = states[1].Narrow(0, k, 1).Squeeze(0)
			}
			w := r.Weights[k]
			outs[d], h, c = run(w, x.Linear(w.WeightIH, w.BiasIH), h, c, d == 1)
			hs, cs = append(hs, h), append(cs, c)
		}
		x = outs[0]
		if dirs == 2 {
			x = lathe.Concat(outs, catDim)
		}
	}
	return x, hs, cs
}

// rnnKind is the cell of a recurrent layer.
type rnnKind int

const (
	kindLSTM rnnKind = iota
	kindGRU
	kindRNNTanh
	kindRNNReLU
)

func (k rnnKind) String() string { return [...]string{"lstm", "gru", "rnn", "rnn"}[k] }

// gates is the number of hidden-sized blocks in the weights' first dim.
func (k rnnKind) gates() int { return [...]int{4, 3, 1, 1}[k] }

// step advances one time step from the states h and c (c is unused by
// GRU), given gi = x·W_ihᵀ + b_ih for this step ([batch, G·H]). The gate
// order and the GRU's reset of W_hn h + b_hn (not of h) are PyTorch's
// (torch.nn.LSTM and torch.nn.GRU docs; aten/src/ATen/native/RNN.cpp).
func (k rnnKind) step(w RNNWeights, gi, h, c *lathe.Tensor, H int) (h2, c2 *lathe.Tensor) {
	gh := h.Linear(w.WeightHH, w.BiasHH)
	switch k {
	case kindRNNTanh:
		return gi.Add(gh).Tanh(), c
	case kindRNNReLU:
		return gi.Add(gh).ReLU(), c
	}
	gate := func(g *lathe.Tensor, j int) *lathe.Tensor { return g.Narrow(-1, j*H, H) }
	if k == kindLSTM {
		g := gi.Add(gh)
		i, f, cand, o := gate(g, 0).Sigmoid(), gate(g, 1).Sigmoid(), gate(g, 2).Tanh(), gate(g, 3).Sigmoid()
		c2 = f.Mul(c).Add(i.Mul(cand))
		h2 = o.Mul(c2.Tanh())
		if w.WeightHR != nil {
			// torch's proj_size: h = (o ⊙ tanh(c'))·W_hrᵀ.
			h2 = h2.Linear(w.WeightHR, nil)
		}
		return h2, c2
	}
	r := gate(gi, 0).Add(gate(gh, 0)).Sigmoid()
	z := gate(gi, 1).Add(gate(gh, 1)).Sigmoid()
	n := gate(gi, 2).Add(r.Mul(gate(gh, 2))).Tanh()
	// (1 - z)·n + z·h, written as n + z·(h - n).
	return n.Add(z.Mul(h.Sub(n))), c
}

// RNNCellBase is what RNNCell, LSTMCell and GRUCell share (torch.nn.RNNCellBase):
// one time step of one layer, with the weights of RNNWeights under the
// state-dict names "weight_ih", "weight_hh", "bias_ih" and "bias_hh".
type RNNCellBase struct {
	InputSize, HiddenSize int
	RNNWeights

	kind rnnKind
}

// RNNCell is one step of an RNN layer (torch.nn.RNNCell).
type RNNCell struct{ RNNCellBase }

// LSTMCell is one step of an LSTM layer (torch.nn.LSTMCell).
type LSTMCell struct{ RNNCellBase }

// GRUCell is one step of a GRU layer (torch.nn.GRUCell).
type GRUCell struct{ RNNCellBase }

// NewRNNCell makes an RNNCell from in features to hidden, initialised as
// NewRNN does. Options: Nonlinearity, NoBias, WithDType, OnDevice.
func NewRNNCell(in, hidden int, opts ...Option) *RNNCell {
	return &RNNCell{newRNNCellBase("RNNCell", kindRNNTanh, in, hidden, opts)}
}

// NewLSTMCell makes an LSTMCell from in features to hidden, initialised as
// NewLSTM does. Options: NoBias, WithDType, OnDevice.
func NewLSTMCell(in, hidden int, opts ...Option) *LSTMCell {
	return &LSTMCell{newRNNCellBase("LSTMCell", kindLSTM, in, hidden, opts)}
}

// NewGRUCell makes a GRUCell as NewLSTMCell makes an LSTMCell.
func NewGRUCell(in, hidden int, opts ...Option) *GRUCell {
	return &GRUCell{newRNNCellBase("GRUCell", kindGRU, in, hidden, opts)}
}

// newRNNCellBase is newRNNBase's one layer, one direction: a cell takes
// none of the options that would give it more.
func newRNNCellBase(layer string, kind rnnKind, in, hidden int, opts []Option) RNNCellBase {
	o, err := layerOptions(layer, opts)
	r := newRNNBase(kind, in, hidden, o, err)
	return RNNCellBase{InputSize: in, HiddenSize: hidden, RNNWeights: r.Weights[0], kind: r.kind}
}

// Parameters lists "weight_ih", "weight_hh" and, with a bias, "bias_ih"
// and "bias_hh".
func (c *RNNCellBase) Parameters() []Param {
	ps := []Param{{"weight_ih", c.WeightIH}, {"weight_hh", c.WeightHH}}
	if c.BiasIH != nil {
		ps = append(ps, Param{"bias_ih", c.BiasIH}, Param{"bias_hh", c.BiasHH})
	}
	return ps
}

// To moves the weights to dev.
func (c *RNNCellBase) To(dev lathe.Device) error { return moveParams(c.Parameters(), dev) }

// Train does nothing: a cell acts the same in both modes.
func (c *RNNCellBase) Train(bool) {}

// Forward returns the hidden state after one step from zero states.
func (c *LSTMCell) Forward(x *lathe.Tensor) *lathe.Tensor {
	h, cc := c.Step(x, nil, nil)
	cc.Release() // a view of h's storage
	return h
}

// Step advances x ([batch, in], or [in] unbatched) one step from the states
// h and c ([batch, hidden], or [hidden]; nil means zeros) and returns the
// new ones, views of one buffer, which goes back to the device when both
// are released.
func (c *LSTMCell) Step(x, h, cc *lathe.Tensor) (h2, c2 *lathe.Tensor) {
	if c == nil {
		f := lathe.Failed(nilModule("lstm_cell", "c"))
		return f, f
	}
	_, h2, c2 = c.run(x, h, cc)
	return h2, c2
}

// Forward returns the hidden state after one step from a zero state.
func (c *RNNCell) Forward(x *lathe.Tensor) *lathe.Tensor { return c.Step(x, nil) }

// Step advances x ([batch, in], or [in] unbatched) one step from the state
// h ([batch, hidden], or [hidden]; nil means zeros) and returns the new one.
func (c *RNNCell) Step(x, h *lathe.Tensor) *lathe.Tensor {
	if c == nil {
		return lathe.Failed(nilModule("rnn_cell", "c"))
	}
	_, h2, _ := c.run(x, h, nil)
	return h2
}

// Forward returns the hidden state after one step from a zero state.
func (c *GRUCell) Forward(x *lathe.Tensor) *lathe.Tensor { return c.Step(x, nil) }

// Step advances x ([batch, in], or [in] unbatched) one step from the state
// h ([batch, hidden], or [hidden]; nil means zeros) and returns the new one.
func (c *GRUCell) Step(x, h *lathe.Tensor) *lathe.Tensor {
	if c == nil {
		return lathe.Failed(nilModule("gru_cell", "c"))
	}
	_, h2, _ := c.run(x, h, nil)
	return h2
}

// run checks the arguments and takes one step; out is always nil (it has
// run's signature of the sequence layers, for the tests).
func (c *RNNCellBase) run(x, h, cc *lathe.Tensor) (out, h2, c2 *lathe.Tensor) {
	op := c.kind.String() + "_cell"
	fail := func(err error) (out, hn, cn *lathe.Tensor) {
		f := lathe.Failed(wrapErr(op, err))
		return nil, f, f
	}
	if err := x.CheckArg(op, "x"); err != nil {
		return fail(err)
	}
	for _, p := range c.Parameters() {
		if err := p.T.CheckArg(op, p.Name); err != nil {
			return fail(err)
		}
	}
	batched := x.Rank() == 2
	if !batched && x.Rank() != 1 {
		return fail(nnError(op, lathe.ErrShape, "x", "is "+strconv.Itoa(x.Rank())+"-d", "give (batch, in) or (in)"))
	}
	if x.Dim(-1) != c.InputSize {
		return fail(nnError(op, lathe.ErrShape, "x", "has "+strconv.Itoa(x.Dim(-1))+" features but input_size is "+strconv.Itoa(c.InputSize),
			"give x's last dim the cell's input size"))
	}
	H := c.HiddenSize
	want := []int{H}
	if batched {
		want = []int{x.Dim(0), H}
	}
	for i, s := range []*lathe.Tensor{h, cc} {
		if s == nil {
			continue
		}
		name := [2]string{"h", "c"}[i]
		if err := s.CheckArg(op, name); err != nil {
			return fail(err)
		}
		if !slices.Equal(s.Shape(), want) {
			return fail(nnError(op, lathe.ErrShape, name, "has shape "+shapeString(s.Shape())+", want "+shapeString(want),
				"give (batch, hidden), or (hidden) for an unbatched x"))
		}
	}
	shapes, states := [][]int{want, want}, []*lathe.Tensor{h, cc}
	if c.kind != kindLSTM {
		shapes, states = shapes[:1], states[:1]
	}
	zeros := zeroStates(x, states, want)
	results := composeResults(op, func(a []*lathe.Tensor) []*lathe.Tensor {
		if !batched {
			for i := range a {
				a[i] = a[i].Unsqueeze(0)
			}
		}
		if c.kind != kindLSTM {
			h2, _ := c.kind.step(c.RNNWeights, a[0].Linear(c.WeightIH, c.BiasIH), a[1], nil, H)
			return []*lathe.Tensor{h2}
		}
		h2, c2 := c.kind.step(c.RNNWeights, a[0].Linear(c.WeightIH, c.BiasIH), a[1], a[2], H)
		return []*lathe.Tensor{h2, c2}
	}, shapes, 0, append([]*lathe.Tensor{x}, states...), zeros...)
	h2 = results[0]
	if c.kind == kindLSTM {
		c2 = results[1]
	}
	return nil, h2, c2
}

// zeroStates puts zeros of shape in place of the nil states and returns
// them: the states a forward pass starts from where the caller gives none.
func zeroStates(x *lathe.Tensor, states []*lathe.Tensor, shape []int) (zeros []*lathe.Tensor) {
	for i, s := range states {
		if s == nil {
			states[i] = lathe.Zeros(x.Device(), x.DType(), shape...)
			zeros = append(zeros, states[i])
		}
	}
	return zeros
}

// composeResults runs f, the forward pass of a layer with several results
// (an LSTM's output, hn and cn), on args under lathe.Compose, so that the
// intermediates of every time step are released with the results' graph
// rather than left to the garbage collector; so are temps, tensors the
// caller made for f (zero states). Compose takes one result, and each of
// several would own only its part of the graph, so f's results are packed
// into one flat tensor, whose graph they all share, and come back as views
// of it in shapes, one per result, whose sizes f's results must have
// (nil: n results in the shapes f gives them, each back in its own dtype,
// where autocast's concatenation of several dtypes widened it). A single
// result is returned as it is.
func composeResults(op string, f func(args []*lathe.Tensor) []*lathe.Tensor, shapes [][]int, n int, args []*lathe.Tensor, temps ...*lathe.Tensor) []*lathe.Tensor {
	given := shapes != nil
	if given {
		n = len(shapes)
	} else {
		shapes = make([][]int, n)
	}
	sizes := make([]int, n)
	dtypes := make([]lathe.DType, n)
	for i, s := range shapes {
		sizes[i] = 1
		for _, d := range s {
			sizes[i] *= d
		}
	}
	// owner is a recorded result of f, whose node every backward pass
	// through the packed tensor reaches and frees: what goes with the
	// graph is handed to it, as the packed tensor cannot be handed to
	// itself.
	var owner *lathe.Tensor
	packed := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		rs := f(a)
		if len(rs) == 1 {
			return rs[0]
		}
		flat := make([]*lathe.Tensor, len(rs))
		for i, r := range rs {
			if !given && r.Err() == nil {
				shapes[i], sizes[i], dtypes[i] = r.Shape(), r.Numel(), r.DType()
			}
			if r.Err() == nil && r.Numel() != sizes[i] {
				return lathe.Failed(nnError(op, lathe.ErrShape, "", "result "+strconv.Itoa(i)+" has "+strconv.Itoa(r.Numel())+
					" elements where its shape "+shapeString(shapes[i])+" needs "+strconv.Itoa(sizes[i]), "report this as a bug in lathe/nn"))
			}
			if owner == nil && r.RequiresGrad() {
				owner = r
			}
			flat[i] = r.Reshape(sizes[i])
		}
		return lathe.Concat(flat, 0)
	}, args...)
	if n == 1 {
		lathe.ReleaseWithGraph(packed, temps...)
		return []*lathe.Tensor{packed}
	}
	results := make([]*lathe.Tensor, n)
	start := 0
	for i, s := range shapes {
		part := packed.Narrow(0, start, sizes[i])
		results[i] = part.Reshape(s...)
		temps = append(temps, part)
		if !given && packed.Err() == nil && dtypes[i] != packed.DType() {
			temps = append(temps, results[i])
			results[i] = results[i].Cast(dtypes[i])
		}
		start += sizes[i]
	}
	// Without an owner nothing was recorded, and all go at once; the views
	// keep the packed storage.
	lathe.ReleaseWithGraph(owner, append(temps, packed)...)
	return results
}
