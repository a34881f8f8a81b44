package lathe

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// torch's BLAS-style fused ops as composites of MatMul, Mul and Add, so
// that each runs on every device and is differentiable to any order:
// addmm, addmv, addr, baddbmm and addbmm (β·input + α·product) and
// addcmul and addcdiv (input + value·t1·t2, input + value·t1/t2).
//
// As torch's: where β is 0 input is not read, so a NaN or Inf in it does
// not reach the result (nor does input get a gradient); an integer result
// takes β and α (value) truncated toward zero, as torch's kernels cast the
// Scalar, except addr, which refuses a fractional one for integers, as
// torch's. float16 and bfloat16 are scaled and added in float32 and
// rounded once.

// blasAttrs are β and α (addcmul's and addcdiv's value is α).
type blasAttrs struct{ beta, alpha float64 }

// scaleBy is x·s, s truncated for an integer x; 1 is x itself.
func scaleBy(x *Tensor, s float64) *Tensor {
	if x.err != nil {
		return x
	}
	if !x.t.DType.IsFloat() {
		s = math.Trunc(s)
	}
	if s == 1 {
		return x
	}
	return x.MulScalar(s)
}

// betaAlpha is β·c + α·p in p's shape, c ignored where β is 0 (torch's
// addmm does not read self then).
func betaAlpha(op string, c, p *Tensor, a blasAttrs) *Tensor {
	return inFloat32([]*Tensor{c, p}, func(in []*Tensor) *Tensor {
		c, p := in[0], in[1]
		if p.err != nil {
			return p
		}
		if p.t.DType == Bool { // addr of bools: logical, as torch's
			if a.alpha == 0 {
				p = p.LogicalAnd(p.scalarLike(op, 0))
			}
			if a.beta == 0 {
				return p
			}
			return c.LogicalOr(p)
		}
		p = scaleBy(p, a.alpha)
		beta := a.beta
		if !c.t.DType.IsFloat() {
			beta = math.Trunc(beta)
		}
		if beta == 0 {
			return p
		}
		return scaleBy(c, beta).Add(p)
	})
}

var (
	opAddmm = composite("addmm", []string{"input", "mat1", "mat2"}, func(in []*Tensor, a blasAttrs) *Tensor {
		return betaAlpha("addmm", in[0], in[1].MatMul(in[2]), a)
	})
	opAddmv = composite("addmv", []string{"input", "mat", "vec"}, func(in []*Tensor, a blasAttrs) *Tensor {
		return betaAlpha("addmv", in[0], in[1].MatMul(in[2]), a)
	})
	opAddr = composite("addr", []string{"input", "vec1", "vec2"}, func(in []*Tensor, a blasAttrs) *Tensor {
		dt := dispatch.ResultType(dispatch.OperandOf(in[0].t), dispatch.OperandOf(in[1].t), dispatch.OperandOf(in[2].t))
		v1, v2 := in[1].Cast(dt), in[2].Cast(dt)
		var p *Tensor
		if dt == Bool {
			p = v1.Unsqueeze(1).LogicalAnd(v2.Unsqueeze(0))
		} else {
			p = v1.Unsqueeze(1).Mul(v2.Unsqueeze(0))
		}
		return betaAlpha("addr", in[0].Cast(dt), p, a)
	})
	opBaddbmm = composite("baddbmm", []string{"input", "batch1", "batch2"}, func(in []*Tensor, a blasAttrs) *Tensor {
		return betaAlpha("baddbmm", in[0], in[1].MatMul(in[2]), a)
	})
	// addbmm is one product of batch1 as [n, b·m] and batch2 as [b·m, p],
	// the sum over the batch taken by the product's accumulation.
	opAddbmm = composite("addbmm", []string{"input", "batch1", "batch2"}, func(in []*Tensor, a blasAttrs) *Tensor {
		b1, b2 := in[1], in[2]
		b, n, m, p := b1.t.Shape[0], b1.t.Shape[1], b1.t.Shape[2], b2.t.Shape[2]
		prod := b1.Permute(1, 0, 2).Reshape(n, b*m).MatMul(b2.Reshape(b*m, p))
		return betaAlpha("addbmm", in[0], prod, a)
	})
)

// productArgs checks the arguments of an addmm-like op: live, one dtype
// (as torch's, which does not promote them), not bool, the ranks given,
// and the product's shape (from shape) one that input broadcasts to.
func productArgs(op *dispatch.Op[blasAttrs], ranks [3]int, args [3]*Tensor, shape func(a, b []int) ([]int, string)) error {
	name := op.Name
	for i, t := range args {
		if err := t.CheckArg(name, op.ArgName(i)); err != nil {
			return err
		}
	}
	for i, t := range args[1:] {
		arg := op.ArgName(i + 1)
		if t.t.DType != args[0].t.DType {
			return errorf(name, ErrDType, arg, "is "+t.t.DType.String()+" but input is "+args[0].t.DType.String()+" ("+name+" does not promote, as torch's)",
				"cast it with .Cast("+args[0].t.DType.GoString()+")")
		}
		if r := t.t.Rank(); r != ranks[i+1] {
			return errorf(name, ErrShape, arg, "has shape "+dispatch.FormatShape(t.t.Shape)+" (rank "+strconv.Itoa(r)+") but "+name+" takes rank "+
				strconv.Itoa(ranks[i+1]), "reshape it to rank "+strconv.Itoa(ranks[i+1]))
		}
	}
	if args[0].t.DType == Bool {
		return errorf(name, ErrDType, "input", "is bool, which "+name+" does not take (as torch's)", "cast the tensors with .Cast(lathe.Int32) first")
	}
	out, why := shape(args[1].t.Shape, args[2].t.Shape)
	if why != "" {
		return errorf(name, ErrShape, op.ArgName(2), "has shape "+dispatch.FormatShape(args[2].t.Shape)+" but "+op.ArgName(1)+" has "+
			dispatch.FormatShape(args[1].t.Shape)+": "+why, "give operands whose product is defined")
	}
	if !broadcastsTo(args[0].t.Shape, out) {
		e := errorf(name, ErrShape, "input", "has shape "+dispatch.FormatShape(args[0].t.Shape)+", which does not broadcast to the product's "+
			dispatch.FormatShape(out), "give input the product's shape, or one that broadcasts to it")
		e.Expected, e.Found = dispatch.FormatShape(out), dispatch.FormatShape(args[0].t.Shape)
		return e
	}
	return nil
}

// mmShape is the shape of the product of a [n, k] and b [k, p].
func mmShape(a, b []int) ([]int, string) {
	if a[1] != b[0] {
		return nil, "the inner sizes " + strconv.Itoa(a[1]) + " and " + strconv.Itoa(b[0]) + " differ"
	}
	return []int{a[0], b[1]}, ""
}

// bmmShape is the shape of the batched product of a [b, n, k] and b [b, k, p]
// (the batch sizes equal, as torch's: no broadcasting).
func bmmShape(a, b []int) ([]int, string) {
	if a[0] != b[0] {
		return nil, "the batch sizes " + strconv.Itoa(a[0]) + " and " + strconv.Itoa(b[0]) + " differ"
	}
	if a[2] != b[1] {
		return nil, "the inner sizes " + strconv.Itoa(a[2]) + " and " + strconv.Itoa(b[1]) + " differ"
	}
	return []int{a[0], a[1], b[2]}, ""
}

// Addmm is β·input + α·(mat1 @ mat2), as torch.addmm(input, mat1, mat2,
// beta=beta, alpha=alpha) (torch's defaults are 1 and 1): mat1 [n, k],
// mat2 [k, p], input broadcasting to [n, p]; the three share a dtype, as
// torch's. Where beta is 0 input is ignored (NaN in it included). An
// integer result truncates beta and alpha, as torch's; bool is ErrDType.
func Addmm(input, mat1, mat2 *Tensor, beta, alpha float64) *Tensor {
	if err := productArgs(opAddmm, [3]int{-1, 2, 2}, [3]*Tensor{input, mat1, mat2}, mmShape); err != nil {
		return failed(err)
	}
	return apply(opAddmm, blasAttrs{beta, alpha}, input, mat1, mat2)
}

// Addmv is β·input + α·(mat @ vec), as torch.addmv: mat [n, m], vec [m],
// input broadcasting to [n]; otherwise as Addmm.
func Addmv(input, mat, vec *Tensor, beta, alpha float64) *Tensor {
	shape := func(a, b []int) ([]int, string) {
		if a[1] != b[0] {
			return nil, "mat has " + strconv.Itoa(a[1]) + " columns and vec " + strconv.Itoa(b[0]) + " elements"
		}
		return []int{a[0]}, ""
	}
	if err := productArgs(opAddmv, [3]int{-1, 2, 1}, [3]*Tensor{input, mat, vec}, shape); err != nil {
		return failed(err)
	}
	return apply(opAddmv, blasAttrs{beta, alpha}, input, mat, vec)
}

// Baddbmm is β·input + α·(batch1 @ batch2), batch by batch, as
// torch.baddbmm: batch1 [b, n, m], batch2 [b, m, p] (one batch size, as
// torch's), input broadcasting to [b, n, p]; otherwise as Addmm.
func Baddbmm(input, batch1, batch2 *Tensor, beta, alpha float64) *Tensor {
	if err := productArgs(opBaddbmm, [3]int{-1, 3, 3}, [3]*Tensor{input, batch1, batch2}, bmmShape); err != nil {
		return failed(err)
	}
	return apply(opBaddbmm, blasAttrs{beta, alpha}, input, batch1, batch2)
}

// Addbmm is β·input + α·Σ_b batch1[b] @ batch2[b], as torch.addbmm:
// batch1 [b, n, m], batch2 [b, m, p], input broadcasting to [n, p];
// otherwise as Addmm.
func Addbmm(input, batch1, batch2 *Tensor, beta, alpha float64) *Tensor {
	shape := func(a, b []int) ([]int, string) {
		s, why := bmmShape(a, b)
		if why != "" {
			return nil, why
		}
		return s[1:], ""
	}
	if err := productArgs(opAddbmm, [3]int{-1, 3, 3}, [3]*Tensor{input, batch1, batch2}, shape); err != nil {
		return failed(err)
	}
	return apply(opAddbmm, blasAttrs{beta, alpha}, input, batch1, batch2)
}

// Addr is β·input + α·(vec1 ⊗ vec2), the outer product, as torch.addr:
// vec1 [n], vec2 [m], input broadcasting to [n, m]. Unlike the others the
// dtypes promote (torch's addr is a composite too); bool is logical
// (and, or). An integer or bool result with a fractional β or α is
// ErrValue, as torch's.
func Addr(input, vec1, vec2 *Tensor, beta, alpha float64) *Tensor {
	const op = "addr"
	args := [3]*Tensor{input, vec1, vec2}
	for i, t := range args {
		if err := t.CheckArg(op, opAddr.ArgName(i)); err != nil {
			return failed(err)
		}
		if i > 0 && t.t.Rank() != 1 {
			return failed(errorf(op, ErrShape, opAddr.ArgName(i), "has shape "+dispatch.FormatShape(t.t.Shape)+" but addr takes vectors",
				"give a tensor of rank 1, e.g. with Flatten"))
		}
	}
	out := []int{vec1.t.Shape[0], vec2.t.Shape[0]}
	if !broadcastsTo(input.t.Shape, out) {
		return failed(errorf(op, ErrShape, "input", "has shape "+dispatch.FormatShape(input.t.Shape)+", which does not broadcast to the outer product's "+
			dispatch.FormatShape(out), "give input the shape [len(vec1), len(vec2)], or one that broadcasts to it"))
	}
	dt := dispatch.ResultType(dispatch.OperandOf(input.t), dispatch.OperandOf(vec1.t), dispatch.OperandOf(vec2.t))
	if !dt.IsFloat() {
		for _, s := range []struct {
			name string
			v    float64
		}{{"beta", beta}, {"alpha", alpha}} {
			if s.v != math.Trunc(s.v) || (dt == Bool && s.v != 0 && s.v != 1) {
				return failed(errorf(op, ErrValue, s.name, "is "+ftoa(s.v)+" but the result is "+dt.String()+", which takes "+
					map[bool]string{true: "0 or 1", false: "an integer"}[dt == Bool]+" (as torch's)", "pass a whole number, or cast the tensors to a float dtype"))
			}
		}
	}
	return apply(opAddr, blasAttrs{beta, alpha}, input, vec1, vec2)
}

// pointwiseAttrs are addcmul's and addcdiv's value and the dtype their
// arguments promote to.
type pointwiseAttrs struct {
	value float64
	dt    DType
}

var (
	opAddcmul = composite("addcmul", []string{"input", "tensor1", "tensor2"}, func(in []*Tensor, a pointwiseAttrs) *Tensor {
		return addcPointwise(in, a, false)
	})
	opAddcdiv = composite("addcdiv", []string{"input", "tensor1", "tensor2"}, func(in []*Tensor, a pointwiseAttrs) *Tensor {
		return addcPointwise(in, a, true)
	})
)

// addcPointwise is torch's kernel, input + ((value·t1) ∘ t2) with ∘
// times or divided by, in float32 for the 16-bit dtypes.
func addcPointwise(in []*Tensor, a pointwiseAttrs, div bool) *Tensor {
	x, t1, t2 := in[0].Cast(a.dt), in[1].Cast(a.dt), in[2].Cast(a.dt)
	return inFloat32([]*Tensor{x, t1, t2}, func(in []*Tensor) *Tensor {
		p := scaleBy(in[1], a.value)
		if div {
			p = p.Div(in[2])
		} else {
			p = p.Mul(in[2])
		}
		return in[0].Add(p)
	})
}

// pointwiseArgs checks addcmul's and addcdiv's arguments and gives the
// dtype they promote to.
func pointwiseArgs(op *dispatch.Op[pointwiseAttrs], args [3]*Tensor) (DType, error) {
	name := op.Name
	var shape []int
	for i, t := range args {
		if err := t.CheckArg(name, op.ArgName(i)); err != nil {
			return 0, err
		}
		s, ok := ops.BroadcastShapes(shape, t.t.Shape)
		if !ok {
			return 0, errorf(name, ErrShape, op.ArgName(i), "has shape "+dispatch.FormatShape(t.t.Shape)+", which does not broadcast with "+
				dispatch.FormatShape(shape), "make each dimension equal or 1, e.g. with Reshape or Unsqueeze")
		}
		shape = s
	}
	dt := dispatch.ResultType(dispatch.OperandOf(args[0].t), dispatch.OperandOf(args[1].t), dispatch.OperandOf(args[2].t))
	if name == "addcdiv" && !args[1].t.DType.IsFloat() && !args[2].t.DType.IsFloat() {
		return 0, errorf(name, ErrDType, "tensor2", "is "+args[2].t.DType.String()+" and tensor1 "+args[1].t.DType.String()+
			": integer division with addcdiv is not supported (as torch's)", "cast tensor1 or tensor2 to a float dtype for true division")
	}
	if dt == Bool {
		return 0, errorf(name, ErrDType, "input", "and the tensors are bool, which "+name+" does not take (as torch's)", "cast them with .Cast(lathe.Int32) first")
	}
	return dt, nil
}

// Addcmul is input + value·tensor1·tensor2, broadcast, as
// torch.addcmul(input, tensor1, tensor2, value=value) (torch's default
// value is 1). The dtypes promote as a binary op's; an integer result
// truncates value, as torch's; bool is ErrDType.
func Addcmul(input, tensor1, tensor2 *Tensor, value float64) *Tensor {
	dt, err := pointwiseArgs(opAddcmul, [3]*Tensor{input, tensor1, tensor2})
	if err != nil {
		return failed(err)
	}
	return apply(opAddcmul, pointwiseAttrs{value, dt}, input, tensor1, tensor2)
}

// Addcdiv is input + value·tensor1/tensor2, broadcast, as
// torch.addcdiv(input, tensor1, tensor2, value=value). tensor1 and tensor2
// both integers is ErrDType, as torch's (which no longer divides
// integers); otherwise as Addcmul.
func Addcdiv(input, tensor1, tensor2 *Tensor, value float64) *Tensor {
	dt, err := pointwiseArgs(opAddcdiv, [3]*Tensor{input, tensor1, tensor2})
	if err != nil {
		return failed(err)
	}
	return apply(opAddcdiv, pointwiseAttrs{value, dt}, input, tensor1, tensor2)
}
