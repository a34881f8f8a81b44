package lathe

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Scaled dot-product attention (torch.nn.functional.scaled_dot_product_attention).
//
// attentionComposite is the op built from matmul, softmax, where and
// dropout, so that every backend runs it with kernels it already has and
// autodiff differentiates it, to any order, with the rules of those ops. It
// is the reference that the fused op is tested against.

// AttentionOption sets an option of ScaledDotProductAttention.
type AttentionOption func(*attentionOptions)

type attentionOptions struct {
	mask     *Tensor
	causal   bool
	dropout  float64
	scale    float64
	hasScale bool
}

// AttentionMask gives ScaledDotProductAttention a mask, torch's attn_mask:
// a Bool tensor (true where a query may attend to a key) or a float tensor
// of the inputs' dtype added to the scores before the softmax (-Inf where
// it may not attend). It broadcasts to [..., Hq, Lq, Lk], the scores' shape,
// and must not enlarge it. A nil mask is none, the default.
func AttentionMask(m *Tensor) AttentionOption {
	return func(o *attentionOptions) { o.mask = m }
}

// IsCausal makes ScaledDotProductAttention causal, torch's is_causal: query
// i attends to keys j ≤ i, the lower triangle of ones(Lq, Lk) aligned at
// the top left, as torch 2.x. It cannot be given with AttentionMask.
func IsCausal() AttentionOption { return func(o *attentionOptions) { o.causal = true } }

// AttentionDropout zeroes each attention weight with probability p and
// scales the rest by 1/(1-p), torch's dropout_p, drawing one key from the
// stream Seed sets: the weights dropped are those that Dropout drops of the
// [..., Hq, Lq, Lk] weights under that key, which the fused kernels make
// block by block (so dropout costs no memory of size Lq×Lk) and a backward
// makes again. p must be in [0, 1); 0, the default, is no dropout.
func AttentionDropout(p float64) AttentionOption {
	return func(o *attentionOptions) { o.dropout = p }
}

// AttentionScale sets the factor of the scores q·kᵀ, torch's scale; it
// must be finite and positive. The default is 1/√E, E the size of q's and
// k's last dim.
func AttentionScale(s float64) AttentionOption {
	return func(o *attentionOptions) { o.scale, o.hasScale = s, true }
}

// attentionAttrs are the attributes of the attention composites, resolved
// and checked.
type attentionAttrs struct {
	scale   float64
	causal  bool
	dropout float64
}

const sdpaName = "scaled_dot_product_attention"

var (
	opAttention = composite(sdpaName, []string{"query", "key", "value"}, func(in []*Tensor, a attentionAttrs) *Tensor {
		return attentionComposite(in[0], in[1], in[2], nil, a)
	})
	opAttentionMasked = compositeVariant(sdpaName, "masked", []string{"query", "key", "value", "attn_mask"},
		func(in []*Tensor, a attentionAttrs) *Tensor {
			return attentionComposite(in[0], in[1], in[2], in[3], a)
		})
)

// ScaledDotProductAttention is softmax(q·kᵀ·scale + mask)·v, as
// torch.nn.functional.scaled_dot_product_attention (torch 2.x): q is
// [..., Hq, Lq, E], k [..., Hk, Lk, E] and v [..., Hk, Lk, Ev], and the
// result is [..., Hq, Lq, Ev]. The dims before the heads broadcast (a
// missing leading dim counts as 1); inputs of rank 2 have no head dim.
// When Hk < Hq, Hk must divide Hq and query head h attends with key and
// value head h/(Hq/Hk): grouped-query attention, torch's enable_gqa.
// Options give a mask (AttentionMask), causal masking (IsCausal), dropout
// of the weights (AttentionDropout) and the scale (AttentionScale).
//
// A query row that may attend to no key (a Bool mask row all false, or an
// additive row all -Inf) gives NaN, as torch's math kernel; an empty key
// sequence (Lk = 0) gives zeros.
//
// q, k and v must be float tensors of one dtype (ErrDType), on one device
// (ErrDevice), of shapes that fit (ErrShape, naming the argument and its
// dims); a mask with IsCausal, a dropout outside [0, 1) or a scale that is
// not finite and positive is ErrValue.
func ScaledDotProductAttention(q, k, v *Tensor, opts ...AttentionOption) *Tensor {
	var o attentionOptions
	for _, f := range opts {
		if f != nil { // a nil option sets nothing, as elsewhere
			f(&o)
		}
	}
	for i, t := range []*Tensor{q, k, v, o.mask} {
		if i == 3 && t == nil {
			continue // no mask
		}
		if err := t.CheckArg(sdpaName, [...]string{"query", "key", "value", "attn_mask"}[i]); err != nil {
			return failed(err)
		}
	}
	a, err := checkAttention(q, k, v, o)
	if err != nil {
		return failed(err)
	}
	if fusedAttention(q.t.Device, q.t.DType, o.mask != nil) {
		if a.dropout == 0 {
			return relabel(attentionFused(q, k, v, o.mask, a, 0), sdpaName)
		}
		// One key, drawn as Dropout draws its own, so that under one Seed
		// the fused op drops the weights that the composite drops.
		return keyed(func(key uint64) *Tensor { return relabel(attentionFused(q, k, v, o.mask, a, key), sdpaName) })
	}
	if o.mask != nil {
		return relabel(apply(opAttentionMasked, a, q, k, v, o.mask), sdpaName)
	}
	return relabel(apply(opAttention, a, q, k, v), sdpaName)
}

// fusedAttention reports whether dev has the fused attention kernels for
// dt, with a mask where masked.
func fusedAttention(dev Device, dt DType, masked bool) bool {
	fwd, bwd := ops.Attention, ops.AttentionBackward
	if masked {
		fwd, bwd = ops.AttentionMasked, ops.AttentionMaskedBackward
	}
	return fwd.KernelDTypes(dev.Kind).Has(dt) && bwd.KernelDTypes(dev.Kind).Has(dt)
}

// attentionFused runs attention as the fused op: q, k and v brought to
// [N, H, L, E] (the batch dims broadcast and flattened), the result's
// logsumexp column dropped, and the batch dims restored. A mask is made
// additive (a Bool one becomes 0 where one may attend, -Inf elsewhere) and
// brought to the scores' [N, Hq, Lq, Lk] as a view that repeats it, so
// that a mask of [Lq, Lk] or [N, 1, 1, Lk] costs no more memory than it
// has. The weights are dropped (with a.dropout > 0) by the dropout key's
// mask. The gradient is the op's own rule; the views' rules sum it over
// broadcast dims.
func attentionFused(q, k, v, mask *Tensor, a attentionAttrs, key uint64) *Tensor {
	var maskShape []int
	if mask != nil {
		maskShape = mask.t.Shape
	}
	g, err := attentionShapes(q.t.Shape, k.t.Shape, v.t.Shape, maskShape)
	if err != nil {
		return failed(err)
	}
	r := g.rank
	batch := []int{}
	if r > 3 {
		batch = g.scores[:r-3]
	}
	n := 1
	for _, b := range batch {
		n *= b
	}
	// temps are the views (or copies) this function makes on the way to
	// the kernel's arguments and from its output: its own, to release with
	// the result's graph.
	var temps []*Tensor
	canon := func(x *Tensor, h, l, e int) *Tensor {
		x = x.Reshape(padShape(x.t.Shape, r)...)
		temps = append(temps, x)
		if r > 3 {
			x = x.Expand(append(slices.Clone(batch), h, l, e)...)
			temps = append(temps, x)
		}
		x = x.Reshape(n, h, l, e)
		temps = append(temps, x)
		return x
	}
	scale := a.scale
	if math.IsInf(scale, 1) { // E = 0: the scores are 0 whatever the scale
		scale = 1
	}
	params := ops.AttentionParams{Scale: scale, Causal: a.causal, Dropout: ops.Mask{P: a.dropout, Key: key}}
	qc, kc, vc := canon(q, g.hq, g.lq, g.e), canon(k, g.hk, g.lk, g.e), canon(v, g.hk, g.lk, g.ev)
	var out *Tensor
	if mask == nil {
		out = apply(ops.Attention, params, qc, kc, vc)
	} else {
		add := additiveMask(mask, q)
		if add != mask {
			temps = append(temps, add)
		}
		m, heads := padShape(add.Shape(), r), 1
		if r > 2 {
			heads = m[r-3]
		}
		full := canon(add, heads, m[r-2], m[r-1]).Expand(n, g.hq, g.lq, g.lk)
		temps = append(temps, full)
		out = apply(ops.AttentionMasked, params, qc, kc, vc, full)
	}
	if out.err != nil {
		ReleaseWithGraph(nil, temps...)
		return out
	}
	shape := append(slices.Clone(g.scores[:len(g.scores)-1]), g.ev)
	narrow := out.Narrow(-1, 0, g.ev)
	res := narrow.Reshape(shape...)
	if res.t != nil && res.t.DType != q.t.DType {
		// A 16-bit query's result is float32 (ops.AttentionOutDType),
		// rounded here once.
		wide := res
		res = wide.Cast(q.t.DType)
		temps = append(temps, wide)
	}
	ReleaseWithGraph(res, append(temps, out, narrow)...) // res keeps out's storage, or a rounded copy
	return res
}

// additiveMask is mask as a term of the scores, in like's dtype: a Bool
// mask becomes 0 where one may attend and -Inf elsewhere, as torch's math
// kernel turns it, so that the gradients of a row with no key to attend
// to are NaN whether its mask was Bool or additive; an additive mask is
// itself.
func additiveMask(mask, like *Tensor) *Tensor {
	if mask.t.DType != Bool {
		return mask
	}
	return Where(mask, like.scalarLike(sdpaName, 0), like.scalarLike(sdpaName, math.Inf(-1)))
}

// attentionGeometry is what checkAttention finds of the shapes: the rank
// every input is read at (leading 1s added), the head counts (1 for rank
// 2), the sequence lengths and the scores' shape [..., Hq, Lq, Lk].
type attentionGeometry struct {
	rank           int
	hq, hk, lq, lk int
	e, ev          int
	scores         []int
}

// padShape is shape with leading 1s up to rank r.
func padShape(shape []int, r int) []int {
	out := make([]int, 0, r)
	for range r - len(shape) {
		out = append(out, 1)
	}
	return append(out, shape...)
}

func attentionShapes(q, k, v, mask []int) (attentionGeometry, error) {
	shapeErr := func(arg, detail, fix string) error {
		return errorf(sdpaName, ErrShape, arg, detail, fix)
	}
	for i, s := range [][]int{q, k, v} {
		if len(s) < 2 {
			name := [...]string{"query", "key", "value"}[i]
			return attentionGeometry{}, shapeErr(name, "has shape "+dispatch.FormatShape(s)+", rank "+strconv.Itoa(len(s))+
				", but attention takes [..., L, E] (rank 2 or more)", "give "+name+" a sequence dim and an embedding dim")
		}
	}
	r := max(len(q), len(k), len(v))
	pq, pk, pv := padShape(q, r), padShape(k, r), padShape(v, r)
	g := attentionGeometry{rank: r, hq: 1, hk: 1, lq: pq[r-2], lk: pk[r-2], e: pq[r-1], ev: pv[r-1]}
	if pk[r-1] != g.e {
		return g, shapeErr("key", "has shape "+dispatch.FormatShape(k)+" and query "+dispatch.FormatShape(q)+
			": key's last dim ("+strconv.Itoa(pk[r-1])+") must equal query's ("+strconv.Itoa(g.e)+"), the embedding size E",
			"give query and key the same last dim")
	}
	if pv[r-2] != g.lk {
		return g, shapeErr("value", "has shape "+dispatch.FormatShape(v)+" and key "+dispatch.FormatShape(k)+
			": value's dim -2 ("+strconv.Itoa(pv[r-2])+") must equal key's ("+strconv.Itoa(g.lk)+"), the key sequence length Lk",
			"give key and value one sequence length")
	}
	batchEnd := r - 2
	if r >= 3 {
		batchEnd = r - 3
		g.hq, g.hk = pq[r-3], pk[r-3]
		if pv[r-3] != g.hk {
			return g, shapeErr("value", "has shape "+dispatch.FormatShape(v)+" and key "+dispatch.FormatShape(k)+
				": value's head dim -3 ("+strconv.Itoa(pv[r-3])+") must equal key's ("+strconv.Itoa(g.hk)+")",
				"give key and value the same number of heads")
		}
		if g.hk == 0 && g.hq != 0 || g.hk != 0 && g.hq%g.hk != 0 {
			return g, shapeErr("key", "has shape "+dispatch.FormatShape(k)+" and query "+dispatch.FormatShape(q)+
				": key's "+strconv.Itoa(g.hk)+" heads (dim -3) must divide query's "+strconv.Itoa(g.hq)+" (grouped-query attention)",
				"give key and value a number of heads that divides query's")
		}
	}
	batch, ok := ops.BroadcastShapes(pq[:batchEnd], pk[:batchEnd])
	if ok {
		batch, ok = ops.BroadcastShapes(batch, pv[:batchEnd])
	}
	if !ok {
		return g, shapeErr("key", "has shape "+dispatch.FormatShape(k)+", query "+dispatch.FormatShape(q)+" and value "+
			dispatch.FormatShape(v)+": their batch dims (before the last "+strconv.Itoa(r-batchEnd)+") do not broadcast",
			"make each batch dim equal or 1")
	}
	g.scores = append(slices.Clone(batch), g.hq, g.lq, g.lk)
	if r == 2 {
		g.scores = []int{g.lq, g.lk}
	}
	if mask != nil {
		if b, ok := ops.BroadcastShapes(mask, g.scores); !ok || !slices.Equal(b, g.scores) {
			return g, shapeErr("attn_mask", "has shape "+dispatch.FormatShape(mask)+", which does not broadcast to the scores' shape "+
				dispatch.FormatShape(g.scores)+" ([..., Hq, Lq, Lk])", "give a mask of shape [Lq, Lk], or one that broadcasts to [..., Hq, Lq, Lk]")
		}
	}
	return g, nil
}

// checkAttention checks the dtypes, shapes and options of an attention call
// whose tensors are live, and resolves the attributes.
func checkAttention(q, k, v *Tensor, o attentionOptions) (attentionAttrs, error) {
	var a attentionAttrs
	for i, t := range []*Tensor{q, k, v} {
		name := [...]string{"query", "key", "value"}[i]
		if !t.t.DType.IsFloat() {
			return a, errorf(sdpaName, ErrDType, name, "is "+t.t.DType.String()+" but attention takes float dtypes",
				"cast it with .Cast(lathe.Float32)")
		}
		if t.t.DType != q.t.DType {
			return a, &Error{Op: sdpaName, Kind: ErrDType, Arg: name, Expected: q.t.DType.String(), Found: t.t.DType.String(),
				Detail: "is " + t.t.DType.String() + " but query is " + q.t.DType.String() + " (attention does not promote, as torch's)",
				Fix:    "cast it with .Cast(" + q.t.DType.GoString() + ")", Site: dispatch.CallSite()}
		}
	}
	for i, t := range []*Tensor{k, v, o.mask} {
		if t != nil && t.t.Device != q.t.Device {
			name := [...]string{"key", "value", "attn_mask"}[i]
			return a, &Error{Op: sdpaName, Kind: ErrDevice, Arg: name, Expected: q.t.Device.String(), Found: t.t.Device.String(),
				Detail: "is on " + t.t.Device.String() + " but the op runs on " + q.t.Device.String(),
				Fix:    "move it with " + name + ".To(" + q.t.Device.GoString() + ")", Site: dispatch.CallSite()}
		}
	}
	var maskShape []int
	if o.mask != nil {
		if dt := o.mask.t.DType; dt != Bool && dt != q.t.DType {
			return a, &Error{Op: sdpaName, Kind: ErrDType, Arg: "attn_mask", Expected: "bool or " + q.t.DType.String(), Found: dt.String(),
				Detail: "is " + dt.String() + " but a mask is bool (true = may attend) or additive of query's dtype " + q.t.DType.String(),
				Fix:    "cast it with .Cast(lathe.Bool) or .Cast(" + q.t.DType.GoString() + ")", Site: dispatch.CallSite()}
		}
		if o.causal {
			return a, errorf(sdpaName, ErrValue, "attn_mask", "is given with IsCausal, which torch refuses too",
				"give either a mask or IsCausal; for a causal mask with more, put the causal triangle in the mask")
		}
		maskShape = o.mask.t.Shape
	}
	if !(o.dropout >= 0 && o.dropout < 1) {
		return a, errorf(sdpaName, ErrValue, "dropout_p", "is "+strconv.FormatFloat(o.dropout, 'g', -1, 64)+", outside [0, 1)",
			"use a probability in [0, 1), or no AttentionDropout")
	}
	g, err := attentionShapes(q.t.Shape, k.t.Shape, v.t.Shape, maskShape)
	if err != nil {
		return a, err
	}
	a.causal, a.dropout = o.causal, o.dropout
	if dispatch.Numel(g.scores) == 0 {
		a.dropout = 0 // no weights to drop: no key drawn, as Dropout of no elements draws none
	}
	a.scale = 1 / math.Sqrt(float64(q.t.Shape[len(q.t.Shape)-1]))
	if o.hasScale {
		if !(o.scale > 0) || math.IsInf(o.scale, 1) {
			return a, errorf(sdpaName, ErrValue, "scale", "is "+strconv.FormatFloat(o.scale, 'g', -1, 64)+", not finite and positive",
				"give a finite scale > 0, or none for 1/√E")
		}
		a.scale = o.scale
	}
	return a, nil
}

// attentionComposite is attention from matmul, softmax, where and dropout:
// the reference that the fused op is tested against, and the path of the
// devices and options without it. The inputs have been checked
// (checkAttention). The scale multiplies q, before the product, so that an
// empty E (a scale of +Inf) gives scores of 0, as torch's math kernel.
func attentionComposite(q, k, v, mask *Tensor, a attentionAttrs) *Tensor {
	var maskShape []int
	if mask != nil {
		maskShape = mask.t.Shape
	}
	g, err := attentionShapes(q.t.Shape, k.t.Shape, v.t.Shape, maskShape)
	if err != nil {
		return failed(err)
	}
	r := g.rank
	q = q.Reshape(padShape(q.t.Shape, r)...)
	k = k.Reshape(padShape(k.t.Shape, r)...)
	v = v.Reshape(padShape(v.t.Shape, r)...)
	if math.IsInf(a.scale, 1) { // E = 0: q is empty and the scores 0
		a.scale = 1
	}
	qs := q.MulScalar(a.scale)
	group := 1
	if g.hk > 0 {
		group = g.hq / g.hk
	}
	var scores *Tensor
	if group == 1 {
		scores = qs.MatMul(k.MT())
	} else {
		// Query head h = j·group + i uses key head j: q as [..., Hk,
		// group, Lq, E] against k as [..., Hk, 1, Lk, E].
		qShape := append(slices.Clone(q.t.Shape[:r-3]), g.hk, group, g.lq, g.e)
		scores = qs.Reshape(qShape...).MatMul(k.Unsqueeze(r - 2).MT()).Reshape(g.scores...)
	}
	neg := func() *Tensor { return scores.scalarLike(sdpaName, math.Inf(-1)) }
	switch {
	case a.causal:
		dev := q.t.Device
		rows := Arange(dev, Float32, 0, float64(g.lq), 1).Unsqueeze(1)
		cols := Arange(dev, Float32, 0, float64(g.lk), 1)
		scores = Where(cols.Le(rows), scores, neg())
	case mask != nil:
		scores = scores.Add(additiveMask(mask, scores))
	}
	attn := scores.Softmax(-1)
	if a.dropout > 0 {
		attn = attn.Dropout(a.dropout, true)
	}
	if group == 1 {
		return attn.MatMul(v)
	}
	aShape := append(slices.Clone(g.scores[:r-3]), g.hk, group, g.lq, g.lk)
	out := attn.Reshape(aShape...).MatMul(v.Unsqueeze(r - 2))
	return out.Reshape(append(slices.Clone(g.scores[:r-1]), g.ev)...)
}
