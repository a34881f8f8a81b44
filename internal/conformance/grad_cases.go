package conformance

import (
	"path/filepath"
	"sort"
	"strings"
)

// isGradFile says whether f holds gradient cases: grad.json, and one
// grad_<family>.json per family added later (grad_conv.json, ...), so that
// families generated apart do not share a file. Load leaves them out;
// LoadGrad reads them.
func isGradFile(f string) bool {
	b := filepath.Base(f)
	return b == "grad.json" || strings.HasPrefix(b, "grad_") && strings.HasSuffix(b, ".json")
}

// GradCase is a forward case (its Output is set) with the gradients PyTorch
// computed for it. With L = sum(output * Upstream), Grads[i] is dL/d
// inputs[i] for each float input and nil for the others (indices, masks,
// absent inputs). A second-order case also has V, a direction per float
// input, and HVP, the Hessian-vector product of L along V:
// grad(sum_i (dL/d inputs[i] · V[i]).sum(), inputs).
type GradCase struct {
	Case
	Upstream *Tensor   `json:"upstream"`
	Grads    []*Tensor `json:"grads"`
	V        []*Tensor `json:"v"`
	HVP      []*Tensor `json:"hvp"`
	// NonSmooth says an input sits on a kink of the op (a tie of max or
	// maximum), where the gradient is a convention and a finite difference
	// means nothing.
	NonSmooth bool `json:"nonsmooth"`
	// NoGrad lists the inputs the op has no gradient for (igamma's a, as
	// torch's refuses it): zeros in torch's data, none from lathe, and no
	// finite difference to hold them to. The others' gradients may still
	// depend on them, so their Hessian-vector product is the mixed one.
	NoGrad []int `json:"nograd"`
}

// Narrow is Case.Narrow for a gradient case: its upstream gradient, the
// gradients, and the second-order data are narrowed too.
func (c *GradCase) Narrow() *GradCase {
	var nw narrowing
	n := *c
	n.Inputs, n.Output, n.Upstream = nw.list(c.Inputs), nw.tensor(c.Output), nw.tensor(c.Upstream)
	n.Grads, n.V, n.HVP = nw.list(c.Grads), nw.list(c.V), nw.list(c.HVP)
	if !nw.done(&c.Case) {
		return nil
	}
	n.Narrowed = true
	return &n
}

// LoadGrad reads the gradient cases of dir's gradient files, in name order.
func LoadGrad(dir string) ([]*GradCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "grad*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var all []*GradCase
	for _, f := range files {
		if !isGradFile(f) {
			continue
		}
		var doc struct{ Cases []*GradCase }
		if err := decodeFile(f, &doc); err != nil {
			return nil, err
		}
		for _, c := range doc.Cases {
			c.File = filepath.Base(f)
		}
		all = append(all, doc.Cases...)
	}
	return all, nil
}
