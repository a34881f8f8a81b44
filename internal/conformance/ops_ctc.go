package conformance

import "github.com/lathe-ml/lathe"

// The table entries of the CTC loss (ctc.json and grad_ctc.json, made by
// build/torchref/ctc.py). "ctc_loss" takes log_probs, targets,
// input_lengths and target_lengths; "ctc_loss_logits" takes logits and
// applies LogSoftmax over the classes (the last dim) first, as the
// gradient cases do (torch's backward is the gradient through it).
// Attributes: blank, reduction ("mean", "sum", "none") and zero_infinity.

func init() {
	for k, f := range ctcOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops_ctc.go and another table")
		}
		ops[k] = f
		accumulatingOps[k] = true
	}
}

// ctcOf is CTCLoss with the case's attributes; logits says that in[0]
// goes through LogSoftmax first.
func ctcOf(logits bool) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		r := reduction(a, func(r lathe.Reduction) lathe.Reduction { return r }, lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone)
		lp := in[0]
		if logits {
			lp = lp.LogSoftmax(-1)
		}
		return one(lathe.CTCLoss(lp, in[1], in[2], in[3], a.Int("blank"), r, a.Bool("zero_infinity")))
	}
}

var ctcOps = map[string]opFunc{
	"ctc_loss":        ctcOf(false),
	"ctc_loss_logits": ctcOf(true),
}
