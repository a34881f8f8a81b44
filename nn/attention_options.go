package nn

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// The options of torch.nn.MultiheadAttention beyond its sizes: separate
// sizes for the keys' and values' features, a learnt key and value or a
// zero one appended to every sequence, and the sequence-first layout.

// KDim sets the size of MultiheadAttention's key features (torch's kdim;
// the embedding size by default). A size other than the embedding size
// gives the layer three projection weights in place of InProjWeight.
func KDim(n int) Option { return Option{"kdim", func(o *options) { o.kdim = n }} }

// VDim sets the size of MultiheadAttention's value features (torch's
// vdim), as KDim does for the keys.
func VDim(n int) Option { return Option{"vdim", func(o *options) { o.vdim = n }} }

// AddBiasKV gives MultiheadAttention a learnt key and value, BiasK and
// BiasV, appended to every batch element's keys and values after the
// projection (torch's add_bias_kv=True).
func AddBiasKV() Option { return Option{"add_bias_kv", func(o *options) { o.addBiasKV = true }} }

// AddZeroAttn appends a key and a value of zeros to every head's keys and
// values, after BiasK and BiasV (torch's add_zero_attn=True).
func AddZeroAttn() Option { return Option{"add_zero_attn", func(o *options) { o.addZeroAttn = true }} }

// SeqFirst makes MultiheadAttention, the transformer layers and
// Transformer take and return [seq, batch, feature] (torch's
// batch_first=False, torch's default) rather than lathe's default
// [batch, seq, feature]. Masks and attention weights have the same shapes
// in both layouts.
func SeqFirst() Option {
	return Option{"batch_first", func(o *options) { o.seqFirst, o.batchFirst = true, false }}
}

// newProjections sets the layer's input projection weights as torch
// initialises them: xavier-uniform, packed into InProjWeight when keys and
// values have the embedding size, else one weight each.
func (m *MultiheadAttention) newProjections(o options) {
	e := m.EmbedDim
	xavier := func(out, in int) *lathe.Tensor {
		return newParam(uniform(o.dtype, math.Sqrt(6/float64(out+in)), out, in), o)
	}
	if m.KDim == e && m.VDim == e {
		m.InProjWeight = m.Register("in_proj_weight", xavier(3*e, e))
		return
	}
	m.QProjWeight = m.Register("q_proj_weight", xavier(e, e))
	m.KProjWeight = m.Register("k_proj_weight", xavier(e, m.KDim))
	m.VProjWeight = m.Register("v_proj_weight", xavier(e, m.VDim))
}

// newBiasKV sets BiasK and BiasV as torch initialises them: xavier-normal
// of a [1, 1, E] tensor, whose fans are both E, so of std sqrt(1/E).
func (m *MultiheadAttention) newBiasKV(o options) {
	std := math.Sqrt(1 / float64(m.EmbedDim))
	m.BiasK = m.Register("bias_k", newParam(normal(o.dtype, std, 1, 1, m.EmbedDim), o))
	m.BiasV = m.Register("bias_v", newParam(normal(o.dtype, std, 1, 1, m.EmbedDim), o))
}

// checkSizes checks that a layer's sizes fit its weights, which a layer
// built by hand (or changed after NewMultiheadAttention) may not.
func (m *MultiheadAttention) checkSizes(op string) error {
	e, h := m.EmbedDim, m.NumHeads
	kd, vd := m.kvDims()
	shaped := func(t *lathe.Tensor, shape ...int) bool {
		if t == nil || t.Rank() != len(shape) {
			return false
		}
		for i, s := range shape {
			if t.Dim(i) != s {
				return false
			}
		}
		return true
	}
	ok := e > 0 && h > 0 && e%h == 0 && m.OutProj != nil && (m.BiasK == nil) == (m.BiasV == nil)
	if m.InProjWeight != nil {
		ok = ok && shaped(m.InProjWeight, 3*e, e) && kd == e && vd == e
	} else {
		ok = ok && shaped(m.QProjWeight, e, e) && shaped(m.KProjWeight, e, kd) && shaped(m.VProjWeight, e, vd)
	}
	if m.BiasK != nil {
		ok = ok && shaped(m.BiasK, 1, 1, e) && shaped(m.BiasV, 1, 1, e)
	}
	if !ok {
		return nnError(op, lathe.ErrValue, "m", "has EmbedDim "+strconv.Itoa(e)+", NumHeads "+strconv.Itoa(h)+", KDim "+strconv.Itoa(kd)+
			" and VDim "+strconv.Itoa(vd)+" that do not fit its weights", "build the layer with NewMultiheadAttention")
	}
	return nil
}

// kvDims are the keys' and values' feature sizes; 0 means EmbedDim.
func (m *MultiheadAttention) kvDims() (kdim, vdim int) {
	kdim, vdim = m.KDim, m.VDim
	if kdim == 0 {
		kdim = m.EmbedDim
	}
	if vdim == 0 {
		vdim = m.EmbedDim
	}
	return kdim, vdim
}

// extraKeys is how many keys the layer appends to each sequence: BiasK's
// and the zero one.
func (m *MultiheadAttention) extraKeys() int {
	n := 0
	if m.BiasK != nil {
		n++
	}
	if m.AddZeroAttn {
		n++
	}
	return n
}

// appendKeys appends BiasK and BiasV, then a zero key and value, to the
// per-head keys and values k, v [B, H, T, D], as torch's
// F.multi_head_attention_forward does (bias_k before the head split, the
// zeros after it: the same values, since a bias of E splits into the
// heads' D).
func (m *MultiheadAttention) appendKeys(k, v *lathe.Tensor, made *madeTensors) (*lathe.Tensor, *lathe.Tensor) {
	b, h, d := k.Dim(0), k.Dim(1), k.Dim(3)
	ks, vs := []*lathe.Tensor{k}, []*lathe.Tensor{v}
	if m.BiasK != nil {
		perHead := func(t *lathe.Tensor) *lathe.Tensor {
			return made.add(made.add(t.Reshape(1, h, 1, d)).Expand(b, h, 1, d))
		}
		ks, vs = append(ks, perHead(m.BiasK)), append(vs, perHead(m.BiasV))
	}
	if m.AddZeroAttn {
		zero := made.add(lathe.Zeros(k.Device(), k.DType(), b, h, 1, d))
		ks, vs = append(ks, zero), append(vs, zero)
	}
	if len(ks) == 1 {
		return k, v
	}
	return lathe.Concat(ks, 2), lathe.Concat(vs, 2)
}

// padMask extends a score mask over the appended keys, which every query
// may attend to (torch pads its masks with zeros, F.pad(mask, (0, 1))).
func padMask(mask *lathe.Tensor, extra int, made *madeTensors) *lathe.Tensor {
	if mask == nil || extra == 0 {
		return mask
	}
	shape := mask.Shape()
	shape[len(shape)-1] = extra
	return made.add(lathe.Concat([]*lathe.Tensor{mask, made.add(lathe.Zeros(mask.Device(), mask.DType(), shape...))}, -1))
}

// batchDim is the batch's dim in the layer's inputs.
func (m *MultiheadAttention) batchDim() int {
	if m.SeqFirst {
		return 1
	}
	return 0
}
