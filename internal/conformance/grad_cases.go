package conformance

import "path/filepath"

// GradFile is the file of gradient cases in the cases' folder. Load leaves
// it out; LoadGrad reads it.
const GradFile = "grad.json"

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
}

// LoadGrad reads the gradient cases of dir.
func LoadGrad(dir string) ([]*GradCase, error) {
	f := filepath.Join(dir, GradFile)
	var doc struct{ Cases []*GradCase }
	if err := decodeFile(f, &doc); err != nil {
		return nil, err
	}
	for _, c := range doc.Cases {
		c.File = GradFile
	}
	return doc.Cases, nil
}
