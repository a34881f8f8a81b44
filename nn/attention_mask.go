package nn

import (
	"math"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// scoreMask checks masks against the scores' shape [B, H, L, T], T =
// offset + s keys (offset of them cached), and merges them into one mask
// for the scores as torch's F.multi_head_attention_forward does: a Bool
// result is true where a query may not attend, a float one is added to
// the scores (the float masks summed, the Bool masks folded in as -Inf, as
// torch 2's; torch 1.13 takes a float key padding mask alone, or beside a
// Bool attn mask, where it ORs the two as flags). causal reports that the
// only mask is the causal one of a square self-attention, which the fused
// kernel applies itself (lathe.IsCausal) when no weights are wanted. The
// masks cover the sequence's keys; the extra keys the layer appends
// (BiasK, the zero key) are open to every query, as torch pads its masks.
// What it makes on the way, and the mask, go to made (never the caller's
// own mask tensors).
func (m *MultiheadAttention) scoreMask(n attnArgs, masks AttentionMasks, b, l, s, offset, extra int, query *lathe.Tensor, needWeights bool, made *madeTensors) (
	mask *lathe.Tensor, causal bool, err error) {
	h, t := m.NumHeads, offset+s
	dev, dt := query.Device(), query.DType()
	var blocked, added *lathe.Tensor
	if a := masks.Attn; a != nil {
		if err := maskArg(n, n.attn, a, dev); err != nil {
			return nil, false, err
		}
		if !slices.Equal(a.Shape(), []int{l, t}) && !slices.Equal(a.Shape(), []int{b * h, l, t}) {
			return nil, false, nnError(n.op, lathe.ErrShape, n.attn, "has shape "+shapeString(a.Shape())+" but the scores are "+
				shapeString([]int{b, h, l, t}), "give a mask of [L, S] = "+shapeString([]int{l, t})+", or [B·heads, L, S] = "+shapeString([]int{b * h, l, t}))
		}
		if a.Rank() == 3 {
			a = made.add(a.Reshape(b, h, l, t))
		}
		if a.DType() == lathe.Bool {
			blocked = a
		} else {
			added = made.add(a.Cast(dt))
		}
	}
	if p := masks.KeyPadding; p != nil {
		if err := maskArg(n, n.keyPadding, p, dev); err != nil {
			return nil, false, err
		}
		if !slices.Equal(p.Shape(), []int{b, t}) {
			return nil, false, nnError(n.op, lathe.ErrShape, n.keyPadding, "has shape "+shapeString(p.Shape())+" but must be [B, S] = "+
				shapeString([]int{b, t}), "give one flag per batch element and key")
		}
		if p.DType() == lathe.Bool {
			blocked = orMask(blocked, made.add(p.Reshape(b, 1, 1, t)), made)
		} else {
			added = addMask(added, made.add(made.add(p.Cast(dt)).Reshape(b, 1, 1, t)), made)
		}
	}
	if masks.Causal {
		if blocked == nil && added == nil && !needWeights && l == t && extra == 0 {
			return nil, true, nil
		}
		if l > 1 { // one query, the last position, sees every key
			blocked = orMask(blocked, made.add(causalBlocked(dev, l, t)), made)
		}
	}
	switch {
	case added != nil && blocked != nil:
		mask = made.add(added.MaskedFill(blocked, math.Inf(-1)))
	case added != nil:
		mask = added
	default:
		mask = blocked
	}
	return padMask(mask, extra, made), false, nil
}

// maskArg checks that a mask is a live Bool or float tensor on dev.
func maskArg(n attnArgs, arg string, t *lathe.Tensor, dev lathe.Device) error {
	op := n.op
	if err := t.CheckArg(op, arg); err != nil {
		return err
	}
	if dt := t.DType(); dt != lathe.Bool && !dt.IsFloat() {
		return nnError(op, lathe.ErrDType, arg, "is "+dt.String(), "give a Bool mask (true: may not attend) or a float one added to the scores")
	}
	if t.Device() != dev {
		return nnError(op, lathe.ErrDevice, arg, "is on "+t.Device().String()+" but "+n.query+" is on "+dev.String(), "move "+arg+" with To("+dev.String()+")")
	}
	return nil
}

// addMask is the sum of two float masks (b where a is nil); what it makes
// goes to made.
func addMask(a, b *lathe.Tensor, made *madeTensors) *lathe.Tensor {
	if a == nil {
		return b
	}
	return made.add(a.Add(b))
}

// orMask is a or b (b where a is nil); what it makes goes to made.
func orMask(a, b *lathe.Tensor, made *madeTensors) *lathe.Tensor {
	if a == nil {
		return b
	}
	return made.add(a.LogicalOr(b))
}

// madeTensors are tensors a layer makes on the way to its result from
// tensors other than the arguments of its lathe.Compose (masks, constants,
// views of its weights), which Compose leaves to the garbage collector:
// give hands them to the result's graph, as Compose does its
// intermediates, so that a training step takes them back from the pool.
type madeTensors []*lathe.Tensor

// add records t and returns it.
func (m *madeTensors) add(t *lathe.Tensor) *lathe.Tensor {
	*m = append(*m, t)
	return t
}

// give releases the tensors with out's graph, or at once where out was not
// recorded (or failed).
func (m *madeTensors) give(out *lathe.Tensor) {
	lathe.ReleaseWithGraph(out, *m...)
	*m = nil
}

// causalBlocked is the Bool [l, t] mask, true where query i may not attend
// to key j: j > i + t - l (the queries are the last l of t positions).
func causalBlocked(dev lathe.Device, l, t int) *lathe.Tensor {
	if l > math.MaxInt/max(t, 1) {
		return lathe.Failed(nnError("causal_mask", lathe.ErrShape, "", "has "+strconv.Itoa(l)+"×"+strconv.Itoa(t)+" elements", "use shorter sequences"))
	}
	data := make([]bool, l*t)
	for i := range l {
		for j := max(i+t-l+1, 0); j < t; j++ {
			data[i*t+j] = true
		}
	}
	return lathe.FromSlice(dev, data, l, t)
}
