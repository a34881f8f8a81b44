package conformance

import "github.com/lathe-ml/lathe"

// The table entry of scaled dot-product attention (cases from
// build/torchref/attention.py): inputs query, key, value and attn_mask
// (null for none); attributes causal and scale (absent for the default).

func init() {
	if _, dup := ops["sdpa"]; dup {
		panic("conformance: op key sdpa is in two tables")
	}
	ops["sdpa"] = func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		var opts []lathe.AttentionOption
		if in[3] != nil {
			opts = append(opts, lathe.AttentionMask(in[3]))
		}
		if a.Bool("causal") {
			opts = append(opts, lathe.IsCausal())
		}
		if a.Has("scale") {
			opts = append(opts, lathe.AttentionScale(a.Float("scale")))
		}
		return one(lathe.ScaledDotProductAttention(in[0], in[1], in[2], opts...))
	}
}
