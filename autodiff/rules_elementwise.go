package autodiff

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Gradient rules of the elementwise ops. Formulas follow PyTorch's
// tools/autograd/derivatives.yaml; x is the input, y the output, g the
// output's gradient.

func (b *builder) zerosLike(x *T) *T {
	if b.err != nil {
		return nil
	}
	z, err := fullLike(x, 0)
	if b.err = err; err == nil {
		b.made = append(b.made, z)
	}
	return z
}

func (b *builder) where(c, x, y *T) *T { return b.op(ops.Where, c, x, y) }

// flatIn is g, the gradient of a piecewise-linear op of x, which does not
// change with x where it exists: in a recorded pass, where x requires a
// gradient, it is tied to x by relu_backward of zeros (0 wherever x is,
// NaN included), whose rule gives x a zero gradient. So a second
// derivative reaches x and is zero, as torch's hardtanh_backward,
// threshold_backward and leaky_relu_backward give, instead of failing
// with "does not require a gradient". An unrecorded pass pays nothing.
func (b *builder) flatIn(g, x *T) *T {
	if !b.record || b.err != nil || !x.RequiresGrad.Load() || !x.DType.IsFloat() {
		return g
	}
	return b.sub(g, b.op(ops.ReLUBackward, b.zerosLike(g), x)) // g - 0 keeps -0
}

// cmpScalar compares x with the scalar v by op (gt, ge, eq, ...).
func (b *builder) cmpScalar(op *dispatch.Op[dispatch.None], x *T, v float64) *T {
	return b.op(op, x, b.scalar(x, v))
}

func one(t *T) []*T { return []*T{t} }

func init() {
	// Piecewise constant: the gradient is zero (PyTorch's derivatives.yaml
	// gives zeros_like for sign, floor, ceil and round).
	for _, op := range []*dispatch.Op[ops.Params]{ops.Sign, ops.Floor, ops.Ceil, ops.Round} {
		rule(op, func(b *builder, n *Node, g *T) []*T { return one(b.zerosLike(n.Inputs[0])) })
	}
	rule(ops.Neg, func(b *builder, n *Node, g *T) []*T { return one(b.neg(g)) })
	rule(ops.Abs, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.Sign, n.Inputs[0]))) })
	rule(ops.Square, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.mulScalar(n.Inputs[0], 2))) })
	rule(ops.ReLU, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		if !x.DType.IsFloat() {
			return one(b.where(b.cmpScalar(ops.Gt, x, 0), g, b.scalar(g, 0)))
		}
		return one(b.op(ops.ReLUBackward, g, x)) // derivatives.yaml's threshold_backward(grad, self, 0)
	})
	// relu_backward(g, x) is linear in g and flat in x (relu'' = 0 where
	// it exists): its gradient is relu_backward(gg, x) for g and 0 for x.
	rule(ops.ReLUBackward, func(b *builder, n *Node, gg *T) []*T {
		g, x := n.Inputs[0], n.Inputs[1]
		return []*T{b.sumTo(b.op(ops.ReLUBackward, gg, x), g.Shape), b.zerosLike(x)}
	})
	// add_scaled is x + α·y: g for x, α·g for y, each summed back over
	// what it was broadcast along (derivatives.yaml's add with alpha).
	ruleWith(ops.AddScaled, func(b *builder, n *Node, s ops.Scale, g *T) []*T {
		x, y := n.Inputs[0], n.Inputs[1]
		return []*T{b.sumTo(g, x.Shape), b.sumTo(b.mulScalar(g, s.Alpha), y.Shape)}
	})
	// dropout is x·m, m made from the op's key: linear in x, so its
	// gradient is g·m (derivatives.yaml's native_dropout_backward, grad ·
	// mask · scale), the same op on g, which makes m again rather than
	// keep it.
	ruleWith(ops.Dropout, func(b *builder, n *Node, m ops.Mask, g *T) []*T { return one(call(b, ops.Dropout, m, g)) })
	ruleWith(ops.LeakyReLU, func(b *builder, n *Node, p ops.Params, g *T) []*T {
		x, slope := n.Inputs[0], p.A
		return one(b.flatIn(b.where(b.cmpScalar(ops.Gt, x, 0), g, b.mulScalar(g, slope)), x))
	})
	ruleWith(ops.Clamp, func(b *builder, n *Node, p ops.Params, g *T) []*T {
		x := n.Inputs[0]
		inside := b.op(ops.LogicalAnd, b.cmpScalar(ops.Ge, x, p.A), b.cmpScalar(ops.Le, x, p.B))
		return one(b.where(inside, g, b.scalar(g, 0)))
	})
	rule(ops.Exp, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, n.Out)) })
	rule(ops.Expm1, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.add(n.Out, b.scalar(g, 1)))) })
	rule(ops.Log, func(b *builder, n *Node, g *T) []*T { return one(b.div(g, n.Inputs[0])) })
	rule(ops.Log1p, func(b *builder, n *Node, g *T) []*T {
		return one(b.div(g, b.add(n.Inputs[0], b.scalar(g, 1))))
	})
	rule(ops.Sqrt, func(b *builder, n *Node, g *T) []*T { return one(b.div(g, b.mulScalar(n.Out, 2))) })
	rule(ops.Rsqrt, func(b *builder, n *Node, g *T) []*T { // d x^-1/2 = -1/2 y³
		y := n.Out
		return one(b.mul(g, b.mulScalar(b.mul(y, b.mul(y, y)), -0.5)))
	})
	rule(ops.Reciprocal, func(b *builder, n *Node, g *T) []*T { // -y²
		return one(b.neg(b.mul(g, b.mul(n.Out, n.Out))))
	})
	rule(ops.Sin, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.Cos, n.Inputs[0]))) })
	rule(ops.Cos, func(b *builder, n *Node, g *T) []*T { return one(b.neg(b.mul(g, b.unary(ops.Sin, n.Inputs[0])))) })
	rule(ops.Tanh, func(b *builder, n *Node, g *T) []*T { // 1 - y²
		return one(b.mul(g, b.sub(b.scalar(g, 1), b.mul(n.Out, n.Out))))
	})
	rule(ops.Sigmoid, func(b *builder, n *Node, g *T) []*T { // y(1 - y)
		return one(b.mul(g, b.mul(n.Out, b.sub(b.scalar(g, 1), n.Out))))
	})
	ruleWith(ops.Softplus, func(b *builder, n *Node, p ops.Params, g *T) []*T {
		// sigmoid(beta·x), and 1 where softplus is linear (beta·x > threshold),
		// as derivatives.yaml's softplus_backward.
		bx := b.mulScalar(n.Inputs[0], p.A)
		return one(b.where(b.cmpScalar(ops.Gt, bx, p.B), g, b.mul(g, b.unary(ops.Sigmoid, bx))))
	})
	rule(ops.Erf, func(b *builder, n *Node, g *T) []*T { // 2/√π exp(-x²)
		x := n.Inputs[0]
		return one(b.mul(g, b.mulScalar(b.unary(ops.Exp, b.neg(b.mul(x, x))), 2/math.Sqrt(math.Pi))))
	})
	rule(ops.Erfc, func(b *builder, n *Node, g *T) []*T { // -2/√π exp(-x²)
		x := n.Inputs[0]
		return one(b.mul(g, b.mulScalar(b.unary(ops.Exp, b.neg(b.mul(x, x))), -2/math.Sqrt(math.Pi))))
	})
	// The gamma family, each the derivative of the one before: lgamma's is
	// digamma, digamma's polygamma(1, x), polygamma(n, x)'s polygamma(n + 1,
	// x), so that their kernels differentiate to any order.
	rule(ops.Lgamma, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.Digamma, n.Inputs[0]))) })
	rule(ops.Digamma, func(b *builder, n *Node, g *T) []*T {
		return one(b.mul(g, call(b, ops.Polygamma, ops.PolygammaOf(1), n.Inputs[0])))
	})
	ruleWith(ops.Polygamma, func(b *builder, n *Node, p ops.Params, g *T) []*T {
		return one(b.mul(g, call(b, ops.Polygamma, ops.PolygammaOf(int(p.A)+1), n.Inputs[0])))
	})
	// Ai's derivative is Ai', whose own is x·Ai (Airy's equation y'' = x·y).
	rule(ops.AiryAi, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.AiryAiPrime, n.Inputs[0]))) })
	rule(ops.AiryAiPrime, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.mul(g, b.mul(x, b.unary(ops.AiryAi, x))))
	})
	// An orthogonal polynomial's derivative of order m is its op of order
	// m + 1, the recurrence differentiated once more (ops.PolyOf), to
	// ops.MaxPolyDerivative and, as the derivatives take the recurrence,
	// for degrees up to ops.MaxPolyRecurrence.
	for _, op := range ops.Polys {
		ruleWith(op, func(b *builder, n *Node, p ops.Params, g *T) []*T {
			deg, order := int(p.A), int(p.B)+1
			if order > ops.MaxPolyDerivative || deg > ops.MaxPolyRecurrence {
				b.err = gradError(op.Name, "has derivatives to order "+strconv.Itoa(ops.MaxPolyDerivative)+" and for degrees to "+
					strconv.Itoa(ops.MaxPolyRecurrence)+" (by recurrence), not of order "+strconv.Itoa(order)+" at degree "+strconv.Itoa(deg),
					"differentiate fewer times, or a lower degree")
				return nil
			}
			return one(b.mul(g, call(b, op, ops.PolyOf(deg, order), n.Inputs[0])))
		})
	}
	// zeta(x, q)'s gradient in q is -x·zeta(x + 1, q), the sum
	// differentiated; x gets none, as torch's (derivatives.yaml: "not
	// implemented").
	rule(ops.Zeta, func(b *builder, n *Node, g *T) []*T {
		x, q := n.Inputs[0], n.Inputs[1]
		dq := b.neg(b.mul(g, b.mul(x, b.op(ops.Zeta, b.add(x, b.scalar(x, 1)), q))))
		return []*T{nil, b.sumTo(dq, q.Shape)}
	})
	// The incomplete gamma functions' gradient in x is the gamma density
	// ±x^(a-1)·e^-x/Γ(a), as exp((a - 1)·ln x - x - lgamma(a)) (torch's
	// formula); a gets none, as torch's (derivatives.yaml: "not
	// implemented"), though the density's own gradient reaches a.
	incompleteGamma := func(sign float64) func(b *builder, n *Node, g *T) []*T {
		return func(b *builder, n *Node, g *T) []*T {
			a, x := n.Inputs[0], n.Inputs[1]
			ln := b.sub(b.mul(b.sub(a, b.scalar(a, 1)), b.unary(ops.Log, x)), b.add(x, b.unary(ops.Lgamma, a)))
			dx := b.mul(g, b.mulScalar(b.unary(ops.Exp, ln), sign))
			return []*T{nil, b.sumTo(dx, x.Shape)}
		}
	}
	rule(ops.Igamma, incompleteGamma(1))
	rule(ops.Igammac, incompleteGamma(-1))
	// The inverse and hyperbolic trigonometric functions, as derivatives.yaml
	// writes them (asin: (1 - x²)^-½, acos: its negative, tan: 1 + y²,
	// asinh: (x² + 1)^-½, acosh: (x² - 1)^-½, atanh: 1/(1 - x²)).
	rule(ops.Tan, func(b *builder, n *Node, g *T) []*T {
		return one(b.mul(g, b.add(b.scalar(g, 1), b.mul(n.Out, n.Out))))
	})
	rule(ops.Asin, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.mul(g, b.unary(ops.Rsqrt, b.sub(b.scalar(x, 1), b.mul(x, x)))))
	})
	rule(ops.Acos, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.neg(b.mul(g, b.unary(ops.Rsqrt, b.sub(b.scalar(x, 1), b.mul(x, x))))))
	})
	rule(ops.Atan, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.div(g, b.add(b.mul(x, x), b.scalar(x, 1))))
	})
	rule(ops.Sinh, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.Cosh, n.Inputs[0]))) })
	rule(ops.Cosh, func(b *builder, n *Node, g *T) []*T { return one(b.mul(g, b.unary(ops.Sinh, n.Inputs[0]))) })
	rule(ops.Asinh, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.mul(g, b.unary(ops.Rsqrt, b.add(b.mul(x, x), b.scalar(x, 1)))))
	})
	rule(ops.Acosh, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.mul(g, b.unary(ops.Rsqrt, b.sub(b.mul(x, x), b.scalar(x, 1)))))
	})
	rule(ops.Atanh, func(b *builder, n *Node, g *T) []*T {
		x := n.Inputs[0]
		return one(b.div(g, b.sub(b.scalar(x, 1), b.mul(x, x))))
	})
	// The activations' gradients are their backward ops, one kernel each
	// (derivatives.yaml's gelu: gelu_backward, silu: silu_backward), and
	// those have rules of their own, so that the gradient is differentiable
	// again.
	rule(ops.GELU, func(b *builder, n *Node, g *T) []*T { return one(b.op(ops.GELUBackward, g, n.Inputs[0])) })
	rule(ops.GELUTanh, func(b *builder, n *Node, g *T) []*T { return one(b.op(ops.GELUTanhBackward, g, n.Inputs[0])) })
	rule(ops.SiLU, func(b *builder, n *Node, g *T) []*T { return one(b.op(ops.SiLUBackward, g, n.Inputs[0])) })
	// f_backward(g, x) = g·f'(x): its gradient is f_backward(gg, x) for g
	// and gg·g·f''(x) for x (derivatives.yaml's gelu_backward entry, whose
	// x gradient is gelu_double_backward).
	activationBackward := func(op *dispatch.Op[dispatch.None], second func(b *builder, x *T) *T) {
		rule(op, func(b *builder, n *Node, gg *T) []*T {
			g, x := n.Inputs[0], n.Inputs[1]
			return []*T{b.sumTo(b.op(op, gg, x), g.Shape), b.sumTo(b.mul(b.mul(gg, g), second(b, x)), x.Shape)}
		})
	}
	activationBackward(ops.GELUBackward, func(b *builder, x *T) *T { // φ(x)·(2 - x²), φ the normal density
		pdf := b.mulScalar(b.unary(ops.Exp, b.mulScalar(b.mul(x, x), -0.5)), 1/math.Sqrt(2*math.Pi))
		return b.mul(pdf, b.sub(b.scalar(x, 2), b.mul(x, x)))
	})
	activationBackward(ops.GELUTanhBackward, func(b *builder, x *T) *T {
		// gelu_tanh(x) = ½x(1 + t), t = tanh(u), u = k(x + c·x³), so
		// gelu_tanh' = ½(1 + t) + ½x(1 - t²)u' and
		// gelu_tanh'' = (1 - t²)(u' - x·t·u'² + ½x·u''), u' = k(1 + 3c·x²), u'' = 6kc·x.
		const k, c = 0.7978845608028654, 0.044715
		x2 := b.mul(x, x)
		t := b.unary(ops.Tanh, b.mulScalar(b.add(x, b.mulScalar(b.mul(x2, x), c)), k))
		du := b.mulScalar(b.add(b.scalar(x, 1), b.mulScalar(x2, 3*c)), k)
		inner := b.add(b.sub(du, b.mul(b.mul(x, t), b.mul(du, du))), b.mulScalar(x2, 3*k*c))
		return b.mul(b.sub(b.scalar(x, 1), b.mul(t, t)), inner)
	})
	activationBackward(ops.SiLUBackward, func(b *builder, x *T) *T { // s(1 - s)(2 + x(1 - 2s)), s = sigmoid(x)
		s := b.unary(ops.Sigmoid, x)
		return b.mul(b.mul(s, b.sub(b.scalar(x, 1), s)), b.add(b.scalar(x, 2), b.mul(x, b.sub(b.scalar(x, 1), b.mulScalar(s, 2)))))
	})

	rule(ops.Add, func(b *builder, n *Node, g *T) []*T {
		return []*T{b.sumTo(g, n.Inputs[0].Shape), b.sumTo(g, n.Inputs[1].Shape)}
	})
	rule(ops.Sub, func(b *builder, n *Node, g *T) []*T {
		return []*T{b.sumTo(g, n.Inputs[0].Shape), b.sumTo(b.neg(g), n.Inputs[1].Shape)}
	})
	// A product or quotient by a constant (dropout's mask, a scale)
	// computes no gradient for the constant, as matmul's rule does not
	// (PyTorch's needs_input_grad).
	rule(ops.Mul, func(b *builder, n *Node, g *T) []*T {
		x, y := n.Inputs[0], n.Inputs[1]
		var gx, gy *T
		if x.RequiresGrad.Load() {
			gx = b.sumTo(b.mul(g, y), x.Shape)
		}
		if y.RequiresGrad.Load() {
			gy = b.sumTo(b.mul(g, x), y.Shape)
		}
		return []*T{gx, gy}
	})
	rule(ops.Div, func(b *builder, n *Node, g *T) []*T { // 1/y and -x/y²
		x, y := n.Inputs[0], n.Inputs[1]
		gx := b.div(g, y)
		var gy *T
		if y.RequiresGrad.Load() {
			gy = b.sumTo(b.neg(b.div(b.mul(gx, x), y)), y.Shape)
		}
		return []*T{b.sumTo(gx, x.Shape), gy}
	})
	rule(ops.Pow, func(b *builder, n *Node, g *T) []*T {
		// d/dx = e·x^(e-1), zero where e = 0; d/de = x^e·log x, zero where
		// x = 0 and e ≥ 0 (PyTorch's pow_backward and pow_backward_exponent).
		x, e := n.Inputs[0], n.Inputs[1]
		gx := b.mul(g, b.mul(e, b.op(ops.Pow, x, b.sub(e, b.scalar(e, 1)))))
		gx = b.where(b.cmpScalar(ops.Eq, e, 0), b.scalar(gx, 0), gx)
		ge := b.mul(g, b.mul(n.Out, b.unary(ops.Log, x)))
		mask := b.op(ops.LogicalAnd, b.cmpScalar(ops.Eq, x, 0), b.cmpScalar(ops.Ge, e, 0))
		ge = b.where(mask, b.scalar(ge, 0), ge)
		return []*T{b.sumTo(gx, x.Shape), b.sumTo(ge, e.Shape)}
	})
	// maximum and minimum send the gradient to the chosen argument and split
	// it evenly on ties, and take it from an argument only where it lost
	// (derivatives.yaml's at::where(self == other, grad / 2,
	// grad).masked_fill_(self < other, 0)): where either is NaN, neither
	// lost, and both get the gradient, so that the NaN stays in the pass.
	for op, lose := range map[*dispatch.Op[dispatch.None]]*dispatch.Op[dispatch.None]{ops.Maximum: ops.Lt, ops.Minimum: ops.Gt} {
		rule(op, func(b *builder, n *Node, g *T) []*T {
			x, y := n.Inputs[0], n.Inputs[1]
			half := b.mulScalar(g, 0.5)
			tie := b.op(ops.Eq, x, y)
			zero := b.scalar(g, 0) // where broadcasts it
			gx := b.where(tie, half, b.where(b.op(lose, x, y), zero, g))
			gy := b.where(tie, half, b.where(b.op(lose, y, x), zero, g))
			return []*T{b.sumTo(gx, x.Shape), b.sumTo(gy, y.Shape)}
		})
	}
	rule(ops.Atan2, func(b *builder, n *Node, g *T) []*T { // (y·g, -x·g) / (x² + y²) for atan2(x, y)
		x, y := n.Inputs[0], n.Inputs[1]
		d := b.div(g, b.add(b.mul(x, x), b.mul(y, y)))
		return []*T{b.sumTo(b.mul(d, y), x.Shape), b.sumTo(b.neg(b.mul(d, x)), y.Shape)}
	})
	// remainder and fmod are x - q·y for q = floor(x/y) and trunc(x/y), flat
	// between its jumps: the gradients are g and -q·g (derivatives.yaml's
	// remainder and fmod entries, with rounding_mode floor and trunc).
	for op, trunc := range map[*dispatch.Op[dispatch.None]]bool{ops.Remainder: false, ops.FMod: true} {
		rule(op, func(b *builder, n *Node, g *T) []*T {
			x, y := n.Inputs[0], n.Inputs[1]
			q := b.div(x, y)
			if trunc {
				q = b.where(b.cmpScalar(ops.Lt, q, 0), b.unary(ops.Ceil, q), b.unary(ops.Floor, q))
			} else {
				q = b.unary(ops.Floor, q)
			}
			return []*T{b.sumTo(g, x.Shape), b.sumTo(b.neg(b.mul(g, q)), y.Shape)}
		})
	}
	rule(ops.Where, func(b *builder, n *Node, g *T) []*T {
		c, x, y := n.Inputs[0], n.Inputs[1], n.Inputs[2]
		zero := b.scalar(g, 0) // where broadcasts it
		return []*T{nil, b.sumTo(b.where(c, g, zero), x.Shape), b.sumTo(b.where(c, zero, g), y.Shape)}
	})
	rule(ops.Cast, func(b *builder, n *Node, g *T) []*T {
		return one(call(b, ops.Cast, ops.CastTo{DType: n.Inputs[0].DType}, g))
	})
	rule(ops.Contiguous, func(b *builder, n *Node, g *T) []*T { return one(g) })
}
