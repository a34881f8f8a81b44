package nn

import (
	"strconv"

	"github.com/lathe-ml/lathe"
)

// KVCache holds the keys and values a MultiheadAttention has computed for
// the tokens generated so far, per head: K and V are [B, NumHeads, T, D]
// (after rotary embedding, where the layer has it), nil while empty. Each
// Step appends the new tokens' keys and values, so a token's projection
// is computed once. A cache belongs to one layer and one sequence batch;
// the zero value is an empty cache. Appending copies the cache (lathe's
// tensors never change in place), so n steps move O(n²) elements; and a
// cache filled outside lathe.NoGrad keeps every step's graph alive, so
// generate under NoGrad.
type KVCache struct {
	K, V *lathe.Tensor
}

// Len is the number of positions cached.
func (c *KVCache) Len() int {
	if c == nil || c.K == nil {
		return 0
	}
	return c.K.Dim(2)
}

// Reset empties the cache, releasing what it held.
func (c *KVCache) Reset() {
	if c == nil {
		return
	}
	c.K.Release()
	c.V.Release()
	c.K, c.V = nil, nil
}

var stepArgs = attnArgs{mhaOp, "x", "x", "x", "attn_mask", "key_padding_mask"}

// Step is causal self-attention of x, [B, n, E] ([n, B, E] where the layer
// is SeqFirst), the next n tokens of the
// sequences whose earlier tokens cache holds: their keys and values are
// appended to the cache, and each new token attends to every cached token
// and to the new ones up to itself. Rotary embeddings take the cached
// length as the position offset. Steps of one token at a time give the
// same outputs, position by position, as Attend with Causal over the
// whole sequence. BiasK and the zero key, where the layer has them, are
// appended after the cached keys at every step and are not cached. On an
// error the cache is left as it was; else the cache's earlier K and V are
// released, at once under lathe.NoGrad, else with the result's graph
// (Clone them to keep them).
func (m *MultiheadAttention) Step(x *lathe.Tensor, cache *KVCache) *lathe.Tensor {
	const arg = "cache"
	if cache == nil {
		return lathe.Failed(nnError(mhaOp, lathe.ErrValue, arg, "is nil", "pass a *KVCache (its zero value is empty)"))
	}
	if err := x.CheckArg(mhaOp, "x"); err != nil {
		return lathe.Failed(err)
	}
	if m != nil && cache.K != nil {
		for _, t := range []*lathe.Tensor{cache.K, cache.V} {
			if err := t.CheckArg(mhaOp, arg); err != nil {
				return lathe.Failed(err)
			}
		}
		batch := x.Dim(m.batchDim())
		want := []int{batch, m.NumHeads, cache.Len(), m.EmbedDim / max(m.NumHeads, 1)}
		for _, t := range []*lathe.Tensor{cache.K, cache.V} {
			if s := t.Shape(); len(s) != 4 || s[0] != want[0] || s[1] != want[1] || s[2] != want[2] || s[3] != want[3] ||
				t.Device() != x.Device() || t.DType() != x.DType() {
				return lathe.Failed(nnError(mhaOp, lathe.ErrShape, arg, "holds "+t.DType().String()+" "+shapeString(s)+" on "+t.Device().String()+", which does not fit "+
					shapeString(want)+" for x, "+x.DType().String()+" of batch "+strconv.Itoa(batch)+" on "+x.Device().String(),
					"use one cache per layer and batch of sequences (Reset it for new ones)"))
			}
		}
	}
	// The query's projection and the attention go with the graph
	// (lathe.Compose); the keys and values pass in as x's own handle, so
	// that the cache made from them is not among the Compose's
	// intermediates, and attend hands over what it makes on their way.
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		out, _ := m.attend(stepArgs, a[0], x, x, AttentionMasks{Causal: true}, noWeights, cache)
		return out
	}, x)
}
