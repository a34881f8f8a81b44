package autodiff

import "slices"

// leafPass is what a Backward pass knows of its leaves: the gradient each
// will receive, made final as soon as no rule left to run adds to it.
// Then the leaf's hooks run and Options.Ready hears of it, so that work on
// a gradient (a hook's clipping, DDP's all-reduce) starts while the pass
// goes on, as PyTorch's AccumulateGrad runs as soon as its input is ready.
type leafPass struct {
	ready func(leaf, g *T) error
	watch []*T // Options.Watch
	// last maps a leaf to the index of the last node that adds to its
	// gradient (lastUses), and to finished once the leaf is.
	last  map[*T]int
	final []leafGrad // in the order the gradients became final
}

const finished = -1

func newLeafPass(o Options) *leafPass { return &leafPass{ready: o.Ready, watch: o.Watch} }

// unreached finishes, without a gradient, each watched leaf that no node
// has as an input and that the pass has no gradient for (a root that is a
// leaf has one).
func (p *leafPass) unreached(grads *gradSet) error {
	for _, t := range p.watch {
		if _, ok := p.last[t]; !ok && grads.of[t] == nil {
			if err := p.finish(t, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastUses maps each leaf that wants a gradient from nodes (in the order
// the pass runs them) to the index of the last node that has it as an
// input: once that node's rule has run, the leaf's gradient is final.
func (p *leafPass) lastUses(nodes []*Node) {
	p.last = make(map[*T]int, len(p.watch))
	for i, n := range nodes {
		for _, in := range n.Inputs {
			if IsLeaf(in) && in.RequiresGrad.Load() {
				p.last[in] = i
			}
		}
	}
	p.final = make([]leafGrad, 0, len(p.last)+1) // +1: a root that is a leaf
}

// finish makes g the pass's final gradient of t, when t is a leaf that
// wants one and g is not nil: it runs t's hooks on it (outside any lock,
// since a hook may read a gradient), then the pass's Ready. A nil g (no
// gradient from this pass) goes to Ready for a watched leaf. Finishing a
// leaf twice does nothing.
func (p *leafPass) finish(t, g *T) error {
	if p.last[t] == finished || !IsLeaf(t) || !t.RequiresGrad.Load() {
		return nil
	}
	if g == nil {
		if p.ready != nil && slices.Contains(p.watch, t) {
			p.last[t] = finished
			return p.ready(t, nil)
		}
		return nil
	}
	m := leafMeta(t)
	g, err := runHooks(m.hooksOf(), t, g)
	if err != nil {
		return err
	}
	p.last[t] = finished
	p.final = append(p.final, leafGrad{m: m, g: g})
	if p.ready != nil {
		return p.ready(t, g)
	}
	return nil
}

// runHooks runs hooks, in order, on g, the gradient of t, and returns the
// gradient they leave: each may replace it (not move or reshape it).
func runHooks(hooks []Hook, t, g *T) (*T, error) {
	for _, h := range hooks {
		ng, err := h(g)
		if err != nil {
			return nil, err
		}
		if ng != nil {
			if err := matches("backward", "hook result", "the tensor it is the gradient of", ng, t); err != nil {
				return nil, err
			}
			g = ng
		}
	}
	return g, nil
}
