package autodiff

import (
	"slices"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
)

// T is the tensor type rules work on.
type T = dispatch.Tensor

// A Rule is an op's vector-Jacobian product: given the node and the gradient
// g of its output, it returns the gradient of each input (nil for an input
// that takes none, such as an index). Rules compute with the builder's ops,
// which are dispatch calls, so the first error sticks and is returned for
// the whole rule.
type Rule func(b *builder, n *Node, g *T) []*T

var rules = map[string]Rule{}

// rule registers an op's gradient rule (from init; twice is a bug).
func rule(name string, r Rule) {
	if dispatch.Lookup(name) == nil {
		panic("autodiff: rule for unknown op " + name)
	}
	if rules[name] != nil {
		panic("autodiff: second rule for " + name)
	}
	rules[name] = r
}

// HasRule reports whether op has a gradient rule (for coverage tests).
func HasRule(op string) bool { return rules[op] != nil }

// builder runs dispatch ops with a sticky error, so that a rule reads as
// the formula it implements.
type builder struct {
	err  error
	made []*T // every tensor the rule's calls made, for gradSet.releaseMade
}

var (
	opsMu    sync.RWMutex
	opsCache = map[string]*dispatch.Op{}
)

func lookup(name string) *dispatch.Op {
	opsMu.RLock()
	op := opsCache[name]
	opsMu.RUnlock()
	if op == nil {
		op = dispatch.Lookup(name)
		opsMu.Lock()
		opsCache[name] = op
		opsMu.Unlock()
	}
	return op
}

// call runs op name on in; after an error it does nothing and returns nil.
func (b *builder) call(name string, attrs any, in ...*T) *T {
	if b.err != nil {
		return nil
	}
	for _, t := range in {
		if t == nil {
			b.err = gradError(name, "got a nil tensor inside a gradient rule", "this is a bug in lathe; please report it")
			return nil
		}
	}
	op := lookup(name)
	if op == nil {
		b.err = gradError(name, "is not a registered op", "this is a bug in lathe; please report it")
		return nil
	}
	out, err := dispatch.Call(op, attrs, in...)
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, out)
	return out
}

func (b *builder) add(x, y *T) *T { return b.call("add", nil, x, y) }
func (b *builder) sub(x, y *T) *T { return b.call("sub", nil, x, y) }
func (b *builder) mul(x, y *T) *T { return b.call("mul", nil, x, y) }
func (b *builder) div(x, y *T) *T { return b.call("div", nil, x, y) }
func (b *builder) neg(x *T) *T    { return b.call("neg", nil, x) }

// scalar is a 0-d tensor of x's dtype and device holding v.
func (b *builder) scalar(x *T, v float64) *T {
	if b.err != nil {
		return nil
	}
	t, err := fullLikeShape(x, v, []int{})
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, t)
	return t
}

// mulScalar is x·v.
func (b *builder) mulScalar(x *T, v float64) *T { return b.mul(x, b.scalar(x, v)) }

// sumTo undoes broadcasting: it sums g over the dims that broadcasting
// added or stretched from 1, giving a gradient of the input's shape.
func (b *builder) sumTo(g *T, shape []int) *T {
	if b.err != nil || slices.Equal(g.Shape, shape) {
		return g
	}
	lead := len(g.Shape) - len(shape)
	var dims []int
	for i := range g.Shape {
		if i < lead || (shape[i-lead] == 1 && g.Shape[i] != 1) {
			dims = append(dims, i)
		}
	}
	if len(dims) > 0 {
		g = b.call("sum", dispatch.Reduce{Dims: dims, KeepDim: true}, g)
	}
	return b.call("reshape", dispatch.ViewShape{Shape: append([]int{}, shape...)}, g)
}

// fullLike makes a tensor of t's shape, dtype and device filled with v.
func fullLike(t *T, v float64) (*T, error) { return fullLikeShape(t, v, append([]int{}, t.Shape...)) }

func fullLikeShape(t *T, v float64, shape []int) (*T, error) {
	n := dispatch.Numel(shape)
	var data any
	switch t.DType {
	case dispatch.Float32:
		d := make([]float32, n)
		for i := range d {
			d[i] = float32(v)
		}
		data = d
	case dispatch.Float64:
		d := make([]float64, n)
		for i := range d {
			d[i] = v
		}
		data = d
	default:
		return nil, gradError("backward", "cannot make a "+t.DType.String()+" gradient", "")
	}
	return dispatch.Upload(t.Device, data, t.DType, shape)
}
