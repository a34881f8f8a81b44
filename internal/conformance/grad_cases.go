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
	// Narrowed marks a float64 case run in float32 on a device without
	// float64 (Narrow), checked against the float64 reference with
	// NarrowedTolerance.
	Narrowed bool `json:"-"`
}

// Narrow returns c in float32 and int32 for a device without 64-bit types
// (wgpu): every float64 tensor becomes float32 (its values rounded once)
// and every int64 one int32, so that the gradient rules still run there.
// It returns nil for a case with no 64-bit tensor, which needs no narrowing.
func (c *GradCase) Narrow() *GradCase {
	n := *c
	wide := false
	narrow := func(t *Tensor) *Tensor {
		if t == nil {
			return nil
		}
		u := *t
		switch t.DType {
		case "float64":
			u.DType, wide = "float32", true
		case "int64":
			u.DType, wide = "int32", true
		}
		return &u
	}
	list := func(ts []*Tensor) []*Tensor {
		if ts == nil {
			return nil // no second-order data stays none
		}
		out := make([]*Tensor, len(ts))
		for i, t := range ts {
			out[i] = narrow(t)
		}
		return out
	}
	n.Inputs, n.Output, n.Upstream = list(c.Inputs), narrow(c.Output), narrow(c.Upstream)
	n.Grads, n.V, n.HVP = list(c.Grads), list(c.V), list(c.HVP)
	if !wide {
		return nil
	}
	// A case whose op makes a 64-bit tensor (a cast to float64) means
	// nothing narrowed: it stays as it is, and the device skips it.
	if dt, _ := c.Attrs.m["dtype"].(string); dt == "float64" || dt == "int64" {
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
