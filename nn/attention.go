package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// MultiheadAttention is torch.nn.MultiheadAttention with batch_first=True:
// inputs and outputs are [B, L, E]. The query, key and value projections
// are the three row blocks of InProjWeight ([3E, E]) and InProjBias ([3E]),
// the output projection is OutProj, as torch names them in a state dict
// (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias), so a
// torch checkpoint loads with Load. Keys and values have the query's
// embedding size (torch's kdim = vdim = embed_dim); torch's bias_k, bias_v
// and add_zero_attn are not offered.
type MultiheadAttention struct {
	Base
	EmbedDim, NumHeads int
	// Dropout is the probability of dropping an attention weight in
	// training mode (torch's dropout).
	Dropout float64
	// RotaryBase, when not 0, rotates queries and keys by rotary position
	// embeddings of that base (above 1; 10000 is the usual) after the
	// projection, at positions from 0, or from the cached length in Step
	// (see ApplyRotary); 0, the default, is torch's module, without them.
	RotaryBase float64

	InProjWeight, InProjBias *lathe.Tensor
	OutProj                  *Linear
}

// AttentionMasks says which keys each query may attend to, with torch's
// arguments and conventions. The zero value masks nothing.
type AttentionMasks struct {
	// Attn is torch's attn_mask: [L, S], or [B·NumHeads, L, S] for a mask
	// per batch element and head. A Bool mask is true where a query may
	// NOT attend (torch's MultiheadAttention convention, the opposite of
	// lathe.AttentionMask's); a float mask is added to the scores (-Inf
	// where it may not attend) after rounding to the query's dtype.
	Attn *lathe.Tensor
	// KeyPadding is torch's key_padding_mask: Bool [B, S], true for a key
	// to ignore (padding).
	KeyPadding *lathe.Tensor
	// Causal lets query i attend only to keys j ≤ i + S - L: the queries
	// are the last L positions of the keys' sequence, which for
	// self-attention (L = S) is torch's causal mask, and with a KVCache
	// the new tokens after the cached ones.
	Causal bool
}

const mhaOp = "multihead_attention"

// NewMultiheadAttention makes a MultiheadAttention of embedDim split over
// numHeads heads, which must divide it, initialised as torch does:
// InProjWeight xavier-uniform, OutProj's weight as Linear's, both biases
// zero. It takes NoBias, DropoutProb, WithDType and OnDevice.
func NewMultiheadAttention(embedDim, numHeads int, opts ...Option) *MultiheadAttention {
	o, err := layerOptions("MultiheadAttention", opts)
	if err == nil {
		err = checkHeads(mhaOp, "embed_dim", "num_heads", embedDim, numHeads, o)
	}
	m := &MultiheadAttention{EmbedDim: embedDim, NumHeads: numHeads, Dropout: o.dropout}
	if err != nil {
		f := lathe.Failed(err)
		m.InProjWeight = m.Register("in_proj_weight", f)
		m.OutProj = &Linear{Weight: f}
		m.RegisterModule("out_proj", m.OutProj)
		return m
	}
	e := embedDim
	bound := math.Sqrt(6 / float64(e+3*e)) // xavier_uniform_ of a [3E, E] weight
	m.InProjWeight = m.Register("in_proj_weight", newParam(uniform(o.dtype, bound, 3*e, e), o))
	if !o.noBias {
		m.InProjBias = m.Register("in_proj_bias", newParam(lathe.Zeros(lathe.CPU, o.dtype, 3*e), o))
	}
	m.OutProj = &Linear{Weight: newParam(uniform(o.dtype, 1/math.Sqrt(float64(e)), e, e), o)}
	if !o.noBias {
		m.OutProj.Bias = newParam(lathe.Zeros(lathe.CPU, o.dtype, e), o)
	}
	m.RegisterModule("out_proj", m.OutProj)
	return m
}

// checkHeads checks the sizes and dropout of an attention layer; dimArg
// and headsArg are torch's names of the sizes in the layer's signature.
func checkHeads(op, dimArg, headsArg string, embedDim, numHeads int, o options) *lathe.Error {
	switch {
	case embedDim <= 0 || embedDim > math.MaxInt/embedDim/4:
		return nnError(op, lathe.ErrShape, dimArg, "is "+strconv.Itoa(embedDim), "give an embedding size > 0 whose weights fit in memory")
	case numHeads <= 0 || embedDim%numHeads != 0:
		return nnError(op, lathe.ErrShape, headsArg, "is "+strconv.Itoa(numHeads)+", which does not divide "+dimArg+" "+strconv.Itoa(embedDim),
			"give a head count > 0 that divides the embedding size")
	case !(o.dropout >= 0 && o.dropout < 1):
		return nnError(op, lathe.ErrValue, "dropout", "is "+strconv.FormatFloat(o.dropout, 'g', -1, 64), "give a probability in [0, 1)")
	}
	return nil
}

// DropoutProb sets the dropout probability of MultiheadAttention's
// weights, and of the transformer layers (torch's dropout; 0 for
// MultiheadAttention and 0.1 for the layers by default, as in torch).
func DropoutProb(p float64) Option {
	return Option{"dropout", func(o *options) { o.dropout, o.dropoutSet = p, true }}
}

// Forward is self-attention of x, [B, L, E], without masks.
func (m *MultiheadAttention) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.Attend(x, x, x, AttentionMasks{})
}

// Attend is attention of query [B, L, E] over key and value [B, S, E]
// with the given masks; the result is [B, L, E]. Passing the same tensor
// as query, key and value projects it with one matmul. Without a mask but
// Causal, or with none, it runs lathe.ScaledDotProductAttention's fused
// kernel where the device has one.
func (m *MultiheadAttention) Attend(query, key, value *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	out, _ := m.attend(mhaArgs, query, key, value, masks, noWeights, nil)
	return out
}

// AttendWeights is Attend that also returns the attention weights (after
// dropout, as torch's need_weights=True): [B, L, S] averaged over the
// heads when averageHeads (torch's average_attn_weights=True), else
// [B, NumHeads, L, S].
func (m *MultiheadAttention) AttendWeights(query, key, value *lathe.Tensor, masks AttentionMasks, averageHeads bool) (out, weights *lathe.Tensor) {
	want := perHeadWeights
	if averageHeads {
		want = averagedWeights
	}
	return m.attend(mhaArgs, query, key, value, masks, want, nil)
}

type weightsWanted int

const (
	noWeights weightsWanted = iota
	averagedWeights
	perHeadWeights
)

// attnArgs names the op and arguments of an attention call in errors, so
// that the layers built on MultiheadAttention report their own names
// ("transformer_encoder_layer: argument \"src_key_padding_mask\" ...").
type attnArgs struct {
	op, query, key, value, attn, keyPadding string
}

var mhaArgs = attnArgs{mhaOp, "query", "key", "value", "attn_mask", "key_padding_mask"}

// attend is every form of the layer's attention; with a cache, query is
// the new tokens and key and value are appended to the cache's (the cache
// changes only when the result is good).
func (m *MultiheadAttention) attend(n attnArgs, query, key, value *lathe.Tensor, masks AttentionMasks, want weightsWanted, cache *KVCache) (out, weights *lathe.Tensor) {
	fail := func(err error) (out, weights *lathe.Tensor) {
		f := lathe.Failed(wrapErr(n.op, err))
		return f, f
	}
	if m == nil {
		return fail(nilModule(n.op, "m"))
	}
	if err := Err(m); err != nil {
		return fail(err)
	}
	for _, p := range m.Parameters() {
		if err := tensorArg(n.op, p.Name, p.T); err != nil { // a released one
			return fail(err)
		}
	}
	e, h := m.EmbedDim, m.NumHeads
	if e <= 0 || h <= 0 || e%h != 0 || m.InProjWeight.Rank() != 2 || m.InProjWeight.Dim(0) != 3*e || m.OutProj == nil {
		return fail(nnError(n.op, lathe.ErrValue, "m", "has EmbedDim "+strconv.Itoa(e)+" and NumHeads "+strconv.Itoa(h)+" that do not fit its weights",
			"build the layer with NewMultiheadAttention"))
	}
	if err := m.checkInputs(n, query, key, value); err != nil {
		return fail(err)
	}
	b, l, s := query.Dim(0), query.Dim(1), key.Dim(1)
	offset := 0
	if cache != nil {
		offset = cache.Len()
	}
	mask, causal, err := m.scoreMask(n, masks, b, l, s, offset, query, want != noWeights)
	if err != nil {
		return fail(err)
	}
	q, k, v := m.project(query, key, value)
	d := e / h
	heads := func(x *lathe.Tensor, n int) *lathe.Tensor { return x.Reshape(b, n, h, d).Transpose(1, 2) }
	q, k, v = heads(q, l), heads(k, s), heads(v, s)
	if m.RotaryBase != 0 { // ApplyRotary refuses a base that is not above 1
		q, k = ApplyRotary(q, offset, m.RotaryBase), ApplyRotary(k, offset, m.RotaryBase)
	}
	if cache != nil && cache.K != nil {
		k = lathe.Concat([]*lathe.Tensor{cache.K, k}, 2)
		v = lathe.Concat([]*lathe.Tensor{cache.V, v}, 2)
	}
	dropout := 0.0
	if m.Training() {
		dropout = m.Dropout
	}
	var o *lathe.Tensor
	if want == noWeights {
		var opts []lathe.AttentionOption
		switch {
		case causal:
			opts = append(opts, lathe.IsCausal())
		case mask != nil && mask.DType() == lathe.Bool:
			opts = append(opts, lathe.AttentionMask(mask.LogicalNot())) // lathe's Bool mask says where one may attend
		case mask != nil:
			opts = append(opts, lathe.AttentionMask(mask))
		}
		if dropout > 0 {
			opts = append(opts, lathe.AttentionDropout(dropout))
		}
		o = lathe.ScaledDotProductAttention(q, k, v, opts...)
	} else {
		// The weights are wanted, so the scores are formed here, as
		// torch's need_weights path does (F.multi_head_attention_forward).
		scores := q.MatMul(k.Transpose(-2, -1)).MulScalar(1 / math.Sqrt(float64(d)))
		switch {
		case mask != nil && mask.DType() == lathe.Bool:
			scores = scores.MaskedFill(mask, math.Inf(-1))
		case mask != nil:
			scores = scores.Add(mask)
		}
		weights = scores.Softmax(-1)
		if dropout > 0 {
			weights = weights.Dropout(dropout, true)
		}
		o = weights.MatMul(v)
		if want == averagedWeights {
			weights = weights.Mean(1)
		}
	}
	out = m.OutProj.Forward(o.Transpose(1, 2).Reshape(b, l, e))
	if err := out.Err(); err != nil {
		return fail(err)
	}
	if cache != nil {
		cache.K, cache.V = k, v
	}
	return out, weights
}

// checkInputs checks query [B, L, E] and key, value [B, S, E]: live float
// tensors of the weights' dtype and device.
func (m *MultiheadAttention) checkInputs(n attnArgs, query, key, value *lathe.Tensor) error {
	e, dt, dev := m.EmbedDim, m.InProjWeight.DType(), m.InProjWeight.Device()
	for i, t := range []*lathe.Tensor{query, key, value} {
		arg := [...]string{n.query, n.key, n.value}[i]
		if err := tensorArg(n.op, arg, t); err != nil {
			return err
		}
		switch {
		case t.Rank() != 3 || t.Dim(2) != e:
			return nnError(n.op, lathe.ErrShape, arg, "has shape "+shapeString(t.Shape())+" but the layer takes [batch, seq, "+strconv.Itoa(e)+"]",
				"give "+arg+" the layer's embedding size "+strconv.Itoa(e)+" as its last dim (batch first)")
		case t.DType() != dt:
			return nnError(n.op, lathe.ErrDType, arg, "is "+t.DType().String()+" but the layer's weights are "+dt.String(),
				"cast "+arg+" to "+dt.String())
		case t.Device() != dev:
			return nnError(n.op, lathe.ErrDevice, arg, "is on "+t.Device().String()+" but the layer's weights are on "+dev.String(),
				"move "+arg+" with To("+dev.String()+")")
		case t.Dim(0) != query.Dim(0):
			return nnError(n.op, lathe.ErrShape, arg, "has batch "+strconv.Itoa(t.Dim(0))+" but "+n.query+" has "+strconv.Itoa(query.Dim(0)),
				"give query, key and value one batch size")
		}
	}
	if key.Dim(1) != value.Dim(1) {
		return nnError(n.op, lathe.ErrShape, n.value, "has "+strconv.Itoa(value.Dim(1))+" positions but "+n.key+" has "+strconv.Itoa(key.Dim(1)),
			"give key and value one sequence length")
	}
	return nil
}

// project applies the in-projection: one matmul when query, key and value
// are one tensor (self-attention), two when key and value are.
func (m *MultiheadAttention) project(query, key, value *lathe.Tensor) (q, k, v *lathe.Tensor) {
	e := m.EmbedDim
	rows := func(from, n int) (w, b *lathe.Tensor) {
		w = m.InProjWeight.Narrow(0, from*e, n*e)
		if m.InProjBias != nil {
			b = m.InProjBias.Narrow(0, from*e, n*e)
		}
		return w, b
	}
	if query == key && key == value {
		qkv := query.Linear(m.InProjWeight, m.InProjBias)
		return qkv.Narrow(-1, 0, e), qkv.Narrow(-1, e, e), qkv.Narrow(-1, 2*e, e)
	}
	q = query.Linear(rows(0, 1))
	if key == value {
		kv := key.Linear(rows(1, 2))
		return q, kv.Narrow(-1, 0, e), kv.Narrow(-1, e, e)
	}
	return q, key.Linear(rows(1, 1)), value.Linear(rows(2, 1))
}
