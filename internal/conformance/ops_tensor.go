package conformance

import (
	"fmt"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// The table entries of the reductions, matmul, views, copies, indexing and
// nn ops (ops.go has the elementwise ones), and the layouts of inputs.

func init() {
	for k, f := range moreOps {
		if _, dup := ops[k]; dup {
			panic("conformance: op key " + k + " is in ops.go and ops_tensor.go")
		}
		ops[k] = f
	}
}

// applyLayout turns a tensor made from a case's stored data into the
// non-contiguous view the case asks for.
func applyLayout(t *lathe.Tensor, layout string) (*lathe.Tensor, error) {
	switch layout {
	case "transposed":
		return t.MT(), nil
	case "strided":
		return t.Slice(-1, 0, t.Dim(-1), 2), nil
	}
	return nil, fmt.Errorf("conformance: unknown layout %q", layout)
}

var moreOps = map[string]opFunc{
	"sum":       reduce((*lathe.Tensor).Sum, (*lathe.Tensor).SumKeepDim),
	"mean":      reduce((*lathe.Tensor).Mean, (*lathe.Tensor).MeanKeepDim),
	"prod":      reduce((*lathe.Tensor).Prod, (*lathe.Tensor).ProdKeepDim),
	"max":       reduce((*lathe.Tensor).Max, (*lathe.Tensor).MaxKeepDim),
	"min":       reduce((*lathe.Tensor).Min, (*lathe.Tensor).MinKeepDim),
	"logsumexp": reduce((*lathe.Tensor).LogSumExp, (*lathe.Tensor).LogSumExpKeepDim),
	"var":       moment((*lathe.Tensor).Var, (*lathe.Tensor).VarKeepDim),
	"std":       moment((*lathe.Tensor).Std, (*lathe.Tensor).StdKeepDim),
	"argmax":    arg((*lathe.Tensor).ArgMax, (*lathe.Tensor).ArgMaxKeepDim),
	"argmin":    arg((*lathe.Tensor).ArgMin, (*lathe.Tensor).ArgMinKeepDim),
	"cumsum": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].CumSum(a.Int("dim")))
	},

	"matmul": binary((*lathe.Tensor).MatMul),

	"reshape": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Reshape(a.Ints("shape")...))
	},
	"permute": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Permute(a.Ints("dims")...))
	},
	"transpose": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Transpose(a.Int("d0"), a.Int("d1")))
	},
	"mt": unary((*lathe.Tensor).MT),
	"squeeze": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Squeeze(a.Ints("dims")...))
	},
	"unsqueeze": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Unsqueeze(a.Int("dim")))
	},
	"expand": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Expand(a.Ints("shape")...))
	},
	"broadcast_to": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].BroadcastTo(a.Ints("shape")...))
	},
	"narrow": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Narrow(a.Int("dim"), a.Int("start"), a.Int("length")))
	},
	"slice": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Slice(a.Int("dim"), a.Int("start"), a.Int("stop"), a.Int("step")))
	},
	"flatten": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("start") {
			return one(in[0].Flatten(a.Int("start"), a.Int("end")))
		}
		return one(in[0].Flatten())
	},
	"flip": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Flip(a.Ints("dims")...))
	},
	"concat": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(lathe.Concat(in, a.Int("dim")))
	},
	"stack": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(lathe.Stack(in, a.Int("dim"))) },
	"split": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return in[0].Split(a.Int("size"), a.Int("dim"))
	},
	"chunk": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return in[0].Chunk(a.Int("n"), a.Int("dim"))
	},
	"pad": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		var opts []lathe.PadOption
		if a.Has("mode") {
			opts = append(opts, lathe.PadMode(a.Str("mode")))
		}
		return one(squared(a, in[0].Pad(a.Ints("pads"), a.Float("value"), opts...)))
	},

	"index_select": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].IndexSelect(a.Int("dim"), in[1]))
	},
	"gather": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Gather(a.Int("dim"), in[1]))
	},
	"scatter": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Scatter(a.Int("dim"), in[1], in[2]))
	},
	"scatter_add": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].ScatterAdd(a.Int("dim"), in[1], in[2]))
	},
	"masked_fill": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].MaskedFill(in[1], a.Float("value")))
	},
	"one_hot": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].OneHot(a.Int("num_classes")))
	},
	"embedding": func(_ *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) { return one(lathe.Embedding(in[0], in[1])) },

	"softmax": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].Softmax(a.Int("dim")))
	},
	"log_softmax": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LogSoftmax(a.Int("dim")))
	},
	"cross_entropy": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Has("label_smoothing") { // nn's: the root package has no smoothing
			opts := []nn.LossOption{reduction(a, nn.Reduction, lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone),
				nn.LabelSmoothing(a.Float("label_smoothing"))}
			if a.Has("ignore_index") {
				opts = append(opts, nn.IgnoreIndex(a.Int("ignore_index")))
			}
			if a.Has("weight") {
				opts = append(opts, nn.Weight(classWeight(a, in[0])))
			}
			return one(nn.CrossEntropy(in[0], in[1], opts...))
		}
		return one(in[0].CrossEntropy(in[1], classLossOpts(a, in)...))
	},
	"nll_loss": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].NLLLoss(in[1], classLossOpts(a, in)...))
	},
	"mse_loss": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].MSELoss(in[1], reduction(a, lathe.WithReduction, lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone)))
	},
	"layer_norm": func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		return one(in[0].LayerNorm(a.Ints("normalized_shape"), in[1], in[2], a.Float("eps")))
	},
}

// classLossOpts are a class loss's options: its reduction, and the ignored
// target where the case names one (torch's default, -100, where not).
// classLossOpts are the options of cross_entropy and nll_loss: reduction,
// ignore_index and weight.
func classLossOpts(a *Attrs, in []*lathe.Tensor) []lathe.LossOption {
	opts := []lathe.LossOption{reduction(a, lathe.WithReduction, lathe.ReduceMean, lathe.ReduceSum, lathe.ReduceNone)}
	if a.Has("ignore_index") {
		opts = append(opts, lathe.IgnoreIndex(a.Int("ignore_index")))
	}
	if a.Has("weight") {
		opts = append(opts, lathe.ClassWeights(classWeight(a, in[0])))
	}
	return opts
}

// classWeight is the attribute weight (torch's class weights, a list, since
// torch takes no gradient for them) as a tensor of x's dtype and device.
func classWeight(a *Attrs, x *lathe.Tensor) *lathe.Tensor {
	return lathe.FromSlice(lathe.CPU, a.Floats("weight")).Cast(x.DType()).To(x.Device())
}

// reduce calls f(dims...) or, with keepdim, keep(dims...); no dims is all.
func reduce(f, keep func(*lathe.Tensor, ...int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Bool("keepdim") {
			return one(keep(in[0], a.Ints("dims")...))
		}
		return one(f(in[0], a.Ints("dims")...))
	}
}

func moment(f, keep func(*lathe.Tensor, bool, ...int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		if a.Bool("keepdim") {
			return one(keep(in[0], a.Bool("unbiased"), a.Ints("dims")...))
		}
		return one(f(in[0], a.Bool("unbiased"), a.Ints("dims")...))
	}
}

// arg calls f() over all elements, f(dim), or keep(dim) with keepdim.
func arg(f func(*lathe.Tensor, ...int) *lathe.Tensor, keep func(*lathe.Tensor, int) *lathe.Tensor) opFunc {
	return func(a *Attrs, in []*lathe.Tensor) ([]*lathe.Tensor, error) {
		switch {
		case !a.Has("dim"):
			return one(f(in[0]))
		case a.Bool("keepdim"):
			return one(keep(in[0], a.Int("dim")))
		}
		return one(f(in[0], a.Int("dim")))
	}
}

// reduction gives the loss option that the case's "reduction" names. It is
// generic so that it need not name the option's and the enum's types.
func reduction[R, O any](a *Attrs, with func(R) O, mean, sum, none R) O {
	switch r := a.Str("reduction"); r {
	case "sum":
		return with(sum)
	case "none":
		return with(none)
	case "mean":
	default:
		a.fail("reduction", `"mean", "sum" or "none"`)
	}
	return with(mean)
}
