package autodiff

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// T is the tensor type rules work on.
type T = dispatch.Tensor

// A Rule is an op's vector-Jacobian product: given the node and the gradient
// g of its output, it returns the gradient of each input (nil for an input
// that takes none, such as an index). Rules compute with the builder's ops,
// which are dispatch calls, so the first error sticks and is returned for
// the whole rule.
type Rule func(b *builder, n *Node, g *T) []*T

var rules = map[*dispatch.Schema]Rule{}

// rule registers the gradient rule of op (from init; twice is a bug).
func rule[A any](op *dispatch.Op[A], r Rule) {
	if rules[&op.Schema] != nil {
		panic("autodiff: second rule for " + op.Name)
	}
	rules[&op.Schema] = r
}

// ruleWith registers a rule that reads the op's attributes: r gets them as
// the A that the forward call passed, which the node holds (dispatch.Call
// records the caller's A, so the assertion cannot fail).
func ruleWith[A any](op *dispatch.Op[A], r func(b *builder, n *Node, a A, g *T) []*T) {
	rule(op, func(b *builder, n *Node, g *T) []*T { return r(b, n, n.Attrs.(A), g) })
}

// HasRule reports whether op has a gradient rule (for coverage tests).
func HasRule(op *dispatch.Schema) bool { return rules[op] != nil }

// builder runs dispatch ops with a sticky error, so that a rule reads as
// the formula it implements.
type builder struct {
	err  error
	made []*T // every tensor the rule's calls made, for gradSet.releaseMade
	// record says that the rule's ops are recorded (a CreateGraph pass):
	// a rule whose backward is a kernel must then use differentiable ops.
	record bool
}

// call runs op with attributes a on in; after an error it does nothing and
// returns nil.
func call[A any](b *builder, op *dispatch.Op[A], a A, in ...*T) *T {
	if b.err != nil {
		return nil
	}
	for _, t := range in {
		if t == nil {
			b.err = gradError(op.Name, "got a nil tensor inside a gradient rule", "this is a bug in lathe; please report it")
			return nil
		}
	}
	out, err := dispatch.Call(op, a, in...)
	if err != nil {
		b.err = err
		return nil
	}
	b.made = append(b.made, out)
	return out
}

// op runs an op that takes no attributes.
func (b *builder) op(op *dispatch.Op[dispatch.None], in ...*T) *T {
	return call(b, op, dispatch.None{}, in...)
}

// unary runs a unary op with its default parameters.
func (b *builder) unary(op *dispatch.Op[ops.Params], x *T) *T { return call(b, op, ops.Params{}, x) }

func (b *builder) add(x, y *T) *T { return b.op(ops.Add, x, y) }
func (b *builder) sub(x, y *T) *T { return b.op(ops.Sub, x, y) }
func (b *builder) mul(x, y *T) *T { return b.op(ops.Mul, x, y) }
func (b *builder) div(x, y *T) *T { return b.op(ops.Div, x, y) }
func (b *builder) neg(x *T) *T    { return b.unary(ops.Neg, x) }

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
		g = call(b, ops.Sum, ops.Reduce{Dims: dims, KeepDim: true}, g)
	}
	return call(b, ops.Reshape, ops.ViewShape{Shape: append([]int{}, shape...)}, g)
}

// fullLike makes a tensor of t's shape, dtype and device filled with v.
func fullLike(t *T, v float64) (*T, error) { return fullLikeShape(t, v, append([]int{}, t.Shape...)) }

func fullLikeShape(t *T, v float64, shape []int) (*T, error) {
	if !t.DType.IsFloat() {
		return nil, gradError("backward", "cannot make a "+t.DType.String()+" gradient", "")
	}
	return ops.Filled(t.Device, t.DType, v, shape)
}
