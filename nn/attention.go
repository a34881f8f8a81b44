package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// MultiheadAttention is torch.nn.MultiheadAttention. Inputs and outputs
// are batch-first, [B, L, E] (torch's batch_first=True), unless SeqFirst
// ([L, B, E], torch's default). The query, key and value projections are
// the three row blocks of InProjWeight ([3E, E]) and InProjBias ([3E]),
// the output projection is OutProj, as torch names them in a state dict
// (in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias), so a
// torch checkpoint loads with Load. Keys and values of other feature
// sizes than E (the KDim and VDim options) are projected by QProjWeight,
// KProjWeight and VProjWeight instead (q_proj_weight, ...), and AddBiasKV
// and AddZeroAttn append keys to every sequence, as torch's options do.
type MultiheadAttention struct {
	Base
	EmbedDim, NumHeads int
	// KDim and VDim are the keys' and values' feature sizes (torch's kdim
	// and vdim; EmbedDim by default, and 0 means EmbedDim).
	KDim, VDim int
	// Dropout is the probability of dropping an attention weight in
	// training mode (torch's dropout).
	Dropout float64
	// RotaryBase, when not 0, rotates queries and keys by rotary position
	// embeddings of that base (above 1; 10000 is the usual) after the
	// projection, at positions from 0, or from the cached length in Step
	// (see ApplyRotary); 0, the default, is torch's module, without them.
	RotaryBase float64
	// AddZeroAttn appends a zero key and value to each head's (torch's
	// add_zero_attn), after BiasK and BiasV where the layer has them.
	AddZeroAttn bool
	// SeqFirst says inputs and outputs are [L, B, E] (torch's
	// batch_first=False); attention weights are [B, ...] either way.
	SeqFirst bool

	// InProjWeight is nil where KDim or VDim is not EmbedDim; then the
	// projections are QProjWeight [E, E], KProjWeight [E, KDim] and
	// VProjWeight [E, VDim], and InProjBias still holds the three biases.
	InProjWeight, InProjBias              *lathe.Tensor
	QProjWeight, KProjWeight, VProjWeight *lathe.Tensor
	// BiasK and BiasV, [1, 1, E], are the key and value AddBiasKV appends
	// to every sequence (torch's bias_k, bias_v); nil without it.
	BiasK, BiasV *lathe.Tensor
	OutProj      *Linear
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
	// KeyPadding is torch's key_padding_mask, [B, S]: Bool, true for a key
	// to ignore (padding), or float, added to the scores of each query
	// for that key (-Inf to ignore it), after rounding to the query's
	// dtype.
	KeyPadding *lathe.Tensor
	// Causal lets query i attend only to keys j ≤ i + S - L: the queries
	// are the last L positions of the keys' sequence, which for
	// self-attention (L = S) is torch's causal mask, and with a KVCache
	// the new tokens after the cached ones.
	Causal bool
}

const mhaOp = "multihead_attention"

// NewMultiheadAttention makes a MultiheadAttention of embedDim split over
// numHeads heads, which must divide it, initialised as torch does: the
// input projections xavier-uniform, OutProj's weight as Linear's, both
// biases zero, BiasK and BiasV xavier-normal. It takes NoBias,
// DropoutProb, KDim, VDim, AddBiasKV, AddZeroAttn, SeqFirst, WithDType and
// OnDevice. Parameters are listed in torch's order.
func NewMultiheadAttention(embedDim, numHeads int, opts ...Option) *MultiheadAttention {
	o, err := layerOptions("MultiheadAttention", opts)
	if err == nil {
		err = checkHeads(mhaOp, "embed_dim", "num_heads", embedDim, numHeads, o)
	}
	kdim, vdim := embedDim, embedDim
	for i, n := range []int{o.kdim, o.vdim} {
		switch {
		case err != nil:
		case n < 0 || n > math.MaxInt/max(embedDim, 1)/4:
			err = nnError(mhaOp, lathe.ErrShape, [...]string{"kdim", "vdim"}[i], "is "+strconv.Itoa(n), "give a feature size > 0 whose weights fit in memory")
		case n > 0 && i == 0:
			kdim = n
		case n > 0:
			vdim = n
		}
	}
	m := &MultiheadAttention{EmbedDim: embedDim, NumHeads: numHeads, KDim: kdim, VDim: vdim, Dropout: o.dropout,
		AddZeroAttn: o.addZeroAttn, SeqFirst: o.seqFirst}
	if err != nil {
		f := lathe.Failed(err)
		m.InProjWeight = m.Register("in_proj_weight", f)
		m.OutProj = &Linear{Weight: f}
		m.RegisterModule("out_proj", m.OutProj)
		return m
	}
	e := embedDim
	m.newProjections(o)
	if !o.noBias {
		m.InProjBias = m.Register("in_proj_bias", newParam(lathe.Zeros(lathe.CPU, o.dtype, 3*e), o))
	}
	if o.addBiasKV {
		m.newBiasKV(o)
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

// Forward is self-attention of x, [B, L, E] ([L, B, E] where SeqFirst),
// without masks. A layer with KDim or VDim other than EmbedDim takes keys
// and values apart from queries: use Attend.
func (m *MultiheadAttention) Forward(x *lathe.Tensor) *lathe.Tensor {
	return m.Attend(x, x, x, AttentionMasks{})
}

// Attend is attention of query [B, L, E] over key [B, S, KDim] and value
// [B, S, VDim] with the given masks; the result is [B, L, E]. Where the
// layer is SeqFirst every tensor has its sequence dim first ([L, B, E]),
// and the masks are as in batch-first. One sequence may come without the
// batch dim, as torch takes it: query [L, E], key [S, KDim], value [S,
// VDim], a KeyPadding of [S] and an Attn of [L, S] or [NumHeads, L, S],
// for a result of [L, E] (and AttendWeights' weights without the batch
// dim). Passing the same tensor as query,
// key and value projects it with one matmul. Without dropout it runs
// lathe.ScaledDotProductAttention's fused kernel where the device has one,
// masks included.
func (m *MultiheadAttention) Attend(query, key, value *lathe.Tensor, masks AttentionMasks) *lathe.Tensor {
	// The projections and heads go with the graph (lathe.Compose).
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		out, _ := m.attend(mhaArgs, a[0], a[1], a[2], masks, noWeights, nil)
		return out
	}, query, key, value)
}

// AttendWeights is Attend that also returns the attention weights (after
// dropout, as torch's need_weights=True): [B, L, S] averaged over the
// heads when averageHeads (torch's average_attn_weights=True), else
// [B, NumHeads, L, S]; S counts the keys AddBiasKV and AddZeroAttn append,
// as torch's weights do. The weights are batch-first in either layout.
func (m *MultiheadAttention) AttendWeights(query, key, value *lathe.Tensor, masks AttentionMasks, averageHeads bool) (out, weights *lathe.Tensor) {
	want := perHeadWeights
	if averageHeads {
		want = averagedWeights
	}
	// The projections, heads and scores go with the graph that the two
	// results share (composeResults), as Attend's go with its result's.
	rs := composeResults(mhaOp, func(a []*lathe.Tensor) []*lathe.Tensor {
		out, weights := m.attend(mhaArgs, a[0], a[1], a[2], masks, want, nil)
		return []*lathe.Tensor{out, weights}
	}, nil, 2, []*lathe.Tensor{query, key, value})
	return rs[0], rs[1]
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
		if err := p.T.CheckArg(n.op, p.Name); err != nil { // a released one
			return fail(err)
		}
	}
	e, h := m.EmbedDim, m.NumHeads
	if err := m.checkInputs(n, query, key, value); err != nil {
		return fail(err)
	}
	if query.Rank() == 2 {
		return m.attendUnbatched(n, query, key, value, masks, want, cache)
	}
	// The masks, constants and weight views made on the way go with the
	// result's graph (or at once on a failure). With a cache, so do the
	// new tokens' keys and values on their way to it (kv): Step passes
	// them in as its own handle of x, which its Compose does not see, so
	// that the cache it keeps is not among the Compose's intermediates.
	var made madeTensors
	defer func() { made.give(out) }()
	var kv *madeTensors
	if cache != nil {
		kv = &made
	}
	if m.SeqFirst { // to [B, L, E], keeping self-attention's one tensor one
		query, key, value = batchFirst(query, key, value)
		if kv != nil {
			kv.add(key)
			kv.add(value)
		}
	}
	b, l, s := query.Dim(0), query.Dim(1), key.Dim(1)
	offset := 0
	if cache != nil {
		offset = cache.Len()
	}
	mask, causal, err := m.scoreMask(n, masks, b, l, s, offset, m.extraKeys(), query, want != noWeights, &made)
	if err != nil {
		return fail(err)
	}
	q, k, v := m.project(query, key, value, &made)
	d := e / h
	heads := func(x *lathe.Tensor, n int, track *madeTensors) *lathe.Tensor {
		r := x.Reshape(b, n, h, d)
		if track != nil {
			track.add(x)
			track.add(r)
		}
		return r.Transpose(1, 2)
	}
	q, k, v = heads(q, l, nil), heads(k, s, kv), heads(v, s, kv)
	if m.RotaryBase != 0 { // ApplyRotary refuses a base that is not above 1
		if kv != nil {
			kv.add(k)
		}
		q, k = ApplyRotary(q, offset, m.RotaryBase), ApplyRotary(k, offset, m.RotaryBase)
	}
	if cache != nil && cache.K != nil {
		kv.add(k)
		kv.add(v)
		k = lathe.Concat([]*lathe.Tensor{cache.K, k}, 2)
		v = lathe.Concat([]*lathe.Tensor{cache.V, v}, 2)
	}
	cachedK, cachedV := k, v // the appended keys are the layer's, not the sequence's
	k, v = m.appendKeys(k, v, &made)
	if kv != nil && k != cachedK {
		kv.add(k)
		kv.add(v)
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
			opts = append(opts, lathe.AttentionMask(made.add(mask.LogicalNot()))) // lathe's Bool mask says where one may attend
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
	if m.SeqFirst {
		out = out.Transpose(0, 1)
	}
	if err := out.Err(); err != nil {
		return fail(err)
	}
	if cache != nil {
		// The cache's earlier keys and values are copied into the new
		// ones: they go now, or with the graph where they are recorded.
		lathe.ReleaseWithGraph(cachedK, cache.K)
		lathe.ReleaseWithGraph(cachedV, cache.V)
		cache.K, cache.V = cachedK, cachedV
	}
	return out, weights
}

// attendUnbatched is attend of one sequence without a batch dim, as torch
// 1.13 takes it: query [L, E], key [S, KDim], value [S, VDim] (checked),
// KeyPadding [S], Attn [L, S] or [NumHeads, L, S]. It is attend of a
// batch of one, whose result is [L, E] and weights [L, S] (averaged) or
// [NumHeads, L, S].
func (m *MultiheadAttention) attendUnbatched(n attnArgs, query, key, value *lathe.Tensor, masks AttentionMasks, want weightsWanted, cache *KVCache) (out, weights *lathe.Tensor) {
	fail := func(err error) (out, weights *lathe.Tensor) {
		f := lathe.Failed(err)
		return f, f
	}
	if cache != nil {
		return fail(nnError(n.op, lathe.ErrShape, n.query, "has shape "+shapeString(query.Shape())+", one sequence without a batch dim, which a KVCache does not take",
			"give it a batch dim of one"))
	}
	if p := masks.KeyPadding; p != nil {
		if err := p.CheckArg(n.op, n.keyPadding); err != nil {
			return fail(err)
		}
		if p.Rank() != 1 {
			return fail(nnError(n.op, lathe.ErrShape, n.keyPadding, "has shape "+shapeString(p.Shape())+" but "+n.query+" has no batch dim, so it must be [S]",
				"give one flag per key"))
		}
		masks.KeyPadding = p.Unsqueeze(0)
	}
	bd := m.batchDim()
	q := query.Unsqueeze(bd)
	k, v := q, q // self-attention's one tensor stays one (project)
	if key != query {
		k = key.Unsqueeze(bd)
	}
	switch value {
	case key:
		v = k
	case query:
	default:
		v = value.Unsqueeze(bd)
	}
	out, weights = m.attend(n, q, k, v, masks, want, nil)
	if out.Err() != nil {
		return out, weights
	}
	out = out.Squeeze(bd)
	if weights != nil {
		weights = weights.Squeeze(0)
	}
	return out, weights
}

// batchFirst transposes [L, B, E] inputs to [B, L, E]; a tensor passed as
// two of them stays one, so that project sees self-attention.
func batchFirst(query, key, value *lathe.Tensor) (q, k, v *lathe.Tensor) {
	q = query.Transpose(0, 1)
	k, v = q, q
	if key != query {
		k = key.Transpose(0, 1)
	}
	switch value {
	case key:
		v = k
	case query:
		v = q
	default:
		v = value.Transpose(0, 1)
	}
	return q, k, v
}

// checkInputs checks query [B, L, E], key [B, S, KDim] and value [B, S,
// VDim] ([L, B, E] and so on where SeqFirst): live float tensors of the
// weights' dtype and device.
func (m *MultiheadAttention) checkInputs(n attnArgs, query, key, value *lathe.Tensor) error {
	if err := m.checkSizes(n.op); err != nil {
		return err
	}
	kd, vd := m.kvDims()
	w := m.InProjWeight
	if w == nil {
		w = m.QProjWeight
	}
	dt, dev := w.DType(), w.Device()
	bd, sd := m.batchDim(), 1-m.batchDim()
	layout := "[batch, seq, "
	if m.SeqFirst {
		layout = "[seq, batch, "
	}
	if err := query.CheckArg(n.op, n.query); err != nil {
		return err
	}
	rank := 3
	if query.Rank() == 2 { // one sequence, without a batch dim
		rank, bd, sd, layout = 2, -1, 0, "[seq, "
	}
	for i, t := range []*lathe.Tensor{query, key, value} {
		arg := [...]string{n.query, n.key, n.value}[i]
		size := [...]int{m.EmbedDim, kd, vd}[i]
		if err := t.CheckArg(n.op, arg); err != nil {
			return err
		}
		switch {
		case t.Rank() != rank || t.Dim(rank-1) != size:
			return nnError(n.op, lathe.ErrShape, arg, "has shape "+shapeString(t.Shape())+" but the layer takes "+layout+strconv.Itoa(size)+"]",
				"give "+arg+" the shape "+layout+strconv.Itoa(size)+"]")
		case t.DType() != dt:
			return nnError(n.op, lathe.ErrDType, arg, "is "+t.DType().String()+" but the layer's weights are "+dt.String(),
				"cast "+arg+" to "+dt.String())
		case t.Device() != dev:
			return nnError(n.op, lathe.ErrDevice, arg, "is on "+t.Device().String()+" but the layer's weights are on "+dev.String(),
				"move "+arg+" with To("+dev.String()+")")
		case bd >= 0 && t.Dim(bd) != query.Dim(bd):
			return nnError(n.op, lathe.ErrShape, arg, "has batch "+strconv.Itoa(t.Dim(bd))+" but "+n.query+" has "+strconv.Itoa(query.Dim(bd)),
				"give query, key and value one batch size")
		}
	}
	if key.Dim(sd) != value.Dim(sd) {
		return nnError(n.op, lathe.ErrShape, n.value, "has "+strconv.Itoa(value.Dim(sd))+" positions but "+n.key+" has "+strconv.Itoa(key.Dim(sd)),
			"give key and value one sequence length")
	}
	return nil
}

// project applies the in-projection: one matmul when query, key and value
// are one tensor (self-attention), two when key and value are.
//
// The views of the packed weight and bias go to made: a view left to the
// garbage collector keeps its parameter's storage, so the one an optimizer
// step replaces would not go back to the pool.
func (m *MultiheadAttention) project(query, key, value *lathe.Tensor, made *madeTensors) (q, k, v *lathe.Tensor) {
	e := m.EmbedDim
	rows := func(from, n int) (w, b *lathe.Tensor) {
		if m.InProjWeight != nil {
			w = made.add(m.InProjWeight.Narrow(0, from*e, n*e))
		}
		if m.InProjBias != nil {
			b = made.add(m.InProjBias.Narrow(0, from*e, n*e))
		}
		return w, b
	}
	if m.InProjWeight == nil { // torch's _in_projection: a weight each, the bias in thirds
		_, bq := rows(0, 1)
		_, bk := rows(1, 1)
		_, bv := rows(2, 1)
		return query.Linear(m.QProjWeight, bq), key.Linear(m.KProjWeight, bk), value.Linear(m.VProjWeight, bv)
	}
	if query == key && key == value {
		qkv := query.Linear(m.InProjWeight, m.InProjBias)
		return qkv.Narrow(-1, 0, e), qkv.Narrow(-1, e, e), qkv.Narrow(-1, 2*e, e)
	}
	q = query.Linear(rows(0, 1))
	if key == value {
		kv := made.add(key.Linear(rows(1, 2))) // a Step's keys are not its Compose's (see attend)
		return q, kv.Narrow(-1, 0, e), kv.Narrow(-1, e, e)
	}
	return q, key.Linear(rows(1, 1)), value.Linear(rows(2, 1))
}
