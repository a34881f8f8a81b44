package lathe

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
)

// The empty-tensor table: every public op on tensors with a zero-sized
// dim ([0], [3, 0], [0, 4], [2, 0, 5]; 0-d scalars beside them), forward
// and, where the op has a gradient, backward on the Sum of its result, on
// every device that opens. The wants are PyTorch 1.13's on the same shapes
// (the sum of nothing is 0, its mean NaN, its max an error; a matmul over
// k = 0 is zeros; an empty batch's mean loss is NaN), except where a row
// says lathe departs. Nothing may panic, hang, dispatch an empty kernel
// that wgpu refuses, or compute garbage.

// emptyCase is one row. run makes the op's inputs on dev, calls it, and
// returns its result and the leaves whose gradients are checked.
type emptyCase struct {
	name string
	run  func(dev Device) (*Tensor, []*Tensor)
	// kind is the error the call must fail with; nil: it succeeds with
	// shape and, where vals is not nil, those values (NaN equals NaN).
	kind  error
	shape []int
	vals  []float64
	// grads are the leaves' wanted gradients in order; nil: every leaf's
	// gradient has its shape and is all zeros.
	grads [][]float64
}

// emV is a float32 leaf of the given shape requiring a gradient (0-d when
// no shape is given), of values i%7/4 + 0.25 as biF's.
func emV(dev Device, shape ...int) *Tensor {
	if len(shape) == 0 {
		return Scalar(dev, float32(0.25)).RequireGrad()
	}
	return biF(dev, shape...).RequireGrad()
}

// emI is an int64 index tensor on dev.
func emI(dev Device, v []int64, shape ...int) *Tensor {
	return FromSlice(CPU, append([]int64{}, v...), shape...).To(dev)
}

// em1 is a row for an op of one leaf x of the given shape.
func em1(name string, shape []int, f func(x *Tensor) *Tensor, want []int, vals ...float64) emptyCase {
	c := emptyCase{name: name, shape: want, run: func(dev Device) (*Tensor, []*Tensor) {
		x := emV(dev, shape...)
		return f(x), []*Tensor{x}
	}}
	if vals != nil {
		c.vals = vals
	}
	return c
}

// em1Err is a row for an op of one leaf that must fail with kind.
func em1Err(name string, shape []int, f func(x *Tensor) *Tensor, kind error) emptyCase {
	return emptyCase{name: name, kind: kind, run: func(dev Device) (*Tensor, []*Tensor) { return f(emV(dev, shape...)), nil }}
}

// ones is n ones: the gradient of a Sum through an op that passes x on.
func ones(n int) [][]float64 { return [][]float64{slices.Repeat([]float64{1}, n)} }

// em2 is a row for an op of two leaves.
func em2(name string, a, b []int, f func(x, y *Tensor) *Tensor, want []int, vals ...float64) emptyCase {
	c := emptyCase{name: name, shape: want, run: func(dev Device) (*Tensor, []*Tensor) {
		x, y := emV(dev, a...), emV(dev, b...)
		return f(x, y), []*Tensor{x, y}
	}}
	if vals != nil {
		c.vals = vals
	}
	return c
}

func emptyCases() []emptyCase {
	nan := math.NaN()
	s30, s04, s205 := []int{3, 0}, []int{0, 4}, []int{2, 0, 5}
	var cs []emptyCase
	// Every unary op keeps the empty shape, forward and back.
	unary := map[string]func(*Tensor) *Tensor{
		"neg": (*Tensor).Neg, "abs": (*Tensor).Abs, "sign": (*Tensor).Sign, "square": (*Tensor).Square, "relu": (*Tensor).ReLU,
		"floor": (*Tensor).Floor, "ceil": (*Tensor).Ceil, "round": (*Tensor).Round, "exp": (*Tensor).Exp, "log": (*Tensor).Log,
		"log1p": (*Tensor).Log1p, "expm1": (*Tensor).Expm1, "sqrt": (*Tensor).Sqrt, "rsqrt": (*Tensor).Rsqrt,
		"reciprocal": (*Tensor).Reciprocal, "sin": (*Tensor).Sin, "cos": (*Tensor).Cos, "tanh": (*Tensor).Tanh,
		"sigmoid": (*Tensor).Sigmoid, "silu": (*Tensor).SiLU, "erf": (*Tensor).Erf, "tan": (*Tensor).Tan, "asin": (*Tensor).Asin,
		"acos": (*Tensor).Acos, "atan": (*Tensor).Atan, "sinh": (*Tensor).Sinh, "cosh": (*Tensor).Cosh, "asinh": (*Tensor).Asinh,
		"acosh": (*Tensor).Acosh, "atanh": (*Tensor).Atanh, "gelu": (*Tensor).GELU, "gelu_tanh": (*Tensor).GELUTanh,
		"softplus": (*Tensor).Softplus, "logical_not": (*Tensor).LogicalNot, "clone": (*Tensor).Clone, "contiguous_t": func(x *Tensor) *Tensor { return x.MT().Contiguous() },
		"softplus_with": func(x *Tensor) *Tensor { return x.SoftplusWith(2, 10) },
		"leaky_relu":    func(x *Tensor) *Tensor { return x.LeakyReLU(0.1) },
		"clamp":         func(x *Tensor) *Tensor { return x.Clamp(0.3, 1) },
		"add_scalar":    func(x *Tensor) *Tensor { return x.AddScalar(2) },
		"pow_scalar":    func(x *Tensor) *Tensor { return x.PowScalar(2) },
		"fmod_scalar":   func(x *Tensor) *Tensor { return x.FModScalar(0.5) },
		"gt_scalar":     func(x *Tensor) *Tensor { return x.GtScalar(0.5) },
		"cast_int32":    func(x *Tensor) *Tensor { return x.Cast(Int32) },
		"dropout":       func(x *Tensor) *Tensor { return x.Dropout(0.5, true) },
		"flip":          func(x *Tensor) *Tensor { return x.Flip(0, 1) },
		"tril":          func(x *Tensor) *Tensor { return x.Tril(0) },
		"softmax0":      func(x *Tensor) *Tensor { return x.Softmax(0) },
		"log_softmax1":  func(x *Tensor) *Tensor { return x.LogSoftmax(1) },
		"cumsum1":       func(x *Tensor) *Tensor { return x.CumSum(1) },
		"sort1":         func(x *Tensor) *Tensor { v, _ := x.Sort(1, true); return v },
		"argsort0":      func(x *Tensor) *Tensor { return x.ArgSort(0, false) },
		"masked_fill":   func(x *Tensor) *Tensor { return x.MaskedFill(x.GtScalar(1), 5) },
		"layer_norm":    func(x *Tensor) *Tensor { return x.LayerNorm(x.Shape()[1:], nil, nil, 1e-5) },
		"bcast_2":       func(x *Tensor) *Tensor { return x.BroadcastTo(append([]int{2}, x.Shape()...)...).Contiguous() },
	}
	for _, shape := range [][]int{s30, s04} {
		for _, name := range sortedKeys(unary) {
			want := shape
			if name == "contiguous_t" {
				want = []int{shape[1], shape[0]}
			}
			if name == "bcast_2" {
				want = append([]int{2}, shape...)
			}
			cs = append(cs, em1(fmt.Sprintf("unary/%s/%v", name, shape), shape, unary[name], want))
		}
	}
	// Binary ops broadcast an empty dim against 1 and against scalars.
	binary := map[string]func(x, y *Tensor) *Tensor{
		"add": (*Tensor).Add, "sub": (*Tensor).Sub, "mul": (*Tensor).Mul, "div": (*Tensor).Div, "pow": (*Tensor).Pow,
		"maximum": (*Tensor).Maximum, "atan2": (*Tensor).Atan2, "remainder": (*Tensor).Remainder, "eq": (*Tensor).Eq,
		"logical_or": (*Tensor).LogicalOr,
		"add_scaled": func(x, y *Tensor) *Tensor { return x.AddScaled(y, 2) },
		"where":      func(x, y *Tensor) *Tensor { return Where(x.GtScalar(1), x, y) },
	}
	for _, p := range []struct{ a, b, want []int }{
		{s30, s30, s30}, {s30, []int{0}, s30}, {s30, []int{3, 1}, s30}, {s30, nil, s30}, {[]int{0}, []int{1}, []int{0}},
		{s205, []int{5}, s205}, {[]int{1, 4}, []int{0, 1}, s04},
	} {
		for _, name := range sortedKeys(binary) {
			cs = append(cs, em2(fmt.Sprintf("binary/%s/%vx%v", name, p.a, p.b), p.a, p.b, binary[name], p.want))
		}
	}
	cs = append(cs,
		// Reductions over nothing: torch's identities, NaN for the mean and
		// the variance, and an error for max, min and argmax.
		em1("sum/all", s30, func(x *Tensor) *Tensor { return x.Sum() }, nil, 0),
		em1("sum/dim0", s04, func(x *Tensor) *Tensor { return x.Sum(0) }, []int{4}, 0, 0, 0, 0),
		em1("sum/keepdim", s30, func(x *Tensor) *Tensor { return x.SumKeepDim(1) }, []int{3, 1}, 0, 0, 0),
		em1("sum/3d", s205, func(x *Tensor) *Tensor { return x.Sum(0, 2) }, []int{0}),
		em1("prod/all", s30, func(x *Tensor) *Tensor { return x.Prod() }, nil, 1),
		em1("prod/dim1", s30, func(x *Tensor) *Tensor { return x.Prod(1) }, []int{3}, 1, 1, 1),
		em1("mean/all", s04, func(x *Tensor) *Tensor { return x.Mean() }, nil, nan),
		em1("mean/dim1", s205, func(x *Tensor) *Tensor { return x.Mean(1) }, []int{2, 5}, slices.Repeat([]float64{nan}, 10)...),
		em1("var/all", s30, func(x *Tensor) *Tensor { return x.Var(true) }, nil, nan),
		em1("std/dim0", s04, func(x *Tensor) *Tensor { return x.Std(false, 0) }, []int{4}, nan, nan, nan, nan),
		em1("logsumexp/all", s30, func(x *Tensor) *Tensor { return x.LogSumExp() }, nil, math.Inf(-1)),
		em1("logsumexp/dim1", s30, func(x *Tensor) *Tensor { return x.LogSumExp(1) }, []int{3}, math.Inf(-1), math.Inf(-1), math.Inf(-1)),
		em1("norm/2", s30, func(x *Tensor) *Tensor { return x.Norm(2) }, nil, 0),
		em1("norm/inf_dim1", s04, func(x *Tensor) *Tensor { return x.Norm(math.Inf(1), 1) }, []int{0}),
		em1("norm/1_keepdim", s30, func(x *Tensor) *Tensor { return x.NormKeepDim(1, 1) }, []int{3, 1}, 0, 0, 0),
		em1("max/other_dim", s04, func(x *Tensor) *Tensor { return x.Max(1) }, []int{0}),
		em1("argmax/other_dim", s04, func(x *Tensor) *Tensor { return x.ArgMax(1) }, []int{0}),
		em1("max_dim/other_dim", s205, func(x *Tensor) *Tensor { v, _ := x.MaxDim(2, false); return v }, []int{2, 0}),
		em1Err("max/all", s30, func(x *Tensor) *Tensor { return x.Max() }, ErrShape),
		em1Err("max/dim", s30, func(x *Tensor) *Tensor { return x.Max(1) }, ErrShape),
		em1Err("min/dim", s04, func(x *Tensor) *Tensor { return x.Min(0) }, ErrShape),
		em1Err("argmax/all", s30, func(x *Tensor) *Tensor { return x.ArgMax() }, ErrShape),
		em1Err("argmin/dim", s04, func(x *Tensor) *Tensor { return x.ArgMin(0) }, ErrShape),
		em1Err("max_dim/dim", s30, func(x *Tensor) *Tensor { v, _ := x.MaxDim(1, false); return v }, ErrShape),
		em1Err("item", s30, func(x *Tensor) *Tensor { v, err := x.Item(); return emptyScalar(v, err) }, ErrShape),
		em1("item/of_sum", s30, func(x *Tensor) *Tensor { v, err := x.Sum().Item(); return emptyScalar(v, err) }, nil, 0),
		// Sort and top-k along an empty dim, and k = 0.
		em1("topk/k0", []int{3, 4}, func(x *Tensor) *Tensor { v, _ := x.TopK(0, 1, true); return v }, s30),
		em1("topk/empty_other_dim", s205, func(x *Tensor) *Tensor { v, _ := x.TopK(2, 2, true); return v }, []int{2, 0, 2}),
		em1Err("topk/k_past_empty", s30, func(x *Tensor) *Tensor { v, _ := x.TopK(1, 1, true); return v }, ErrValue),
		em1("unique", s30, func(x *Tensor) *Tensor { v, _, _ := x.Unique(true, true, true); return v }, []int{0}),
		em1("nonzero", s205, func(x *Tensor) *Tensor { return x.Nonzero() }, []int{0, 3}),
		em1("masked_select", s30, func(x *Tensor) *Tensor { return x.MaskedSelect(x.GtScalar(1)) }, []int{0}),
		// Views and copies.
		em1("reshape/-1", s30, func(x *Tensor) *Tensor { return x.Reshape(-1) }, []int{0}),
		em1Err("reshape/0,-1", s04, func(x *Tensor) *Tensor { return x.Reshape(0, -1) }, ErrShape), // torch: the same
		em1Err("reshape/-1,0", s04, func(x *Tensor) *Tensor { return x.Reshape(-1, 0) }, ErrShape), // torch: -1 is ambiguous
		em1("flatten", s205, func(x *Tensor) *Tensor { return x.Flatten(1, -1) }, []int{2, 0}),
		em1("permute", s205, func(x *Tensor) *Tensor { return x.Permute(2, 0, 1).Contiguous() }, []int{5, 2, 0}),
		em1("expand", s30, func(x *Tensor) *Tensor { return x.Expand(2, -1, -1) }, []int{2, 3, 0}),
		em1("expand/to0_then_sum", []int{1, 4}, func(x *Tensor) *Tensor { return x.Expand(0, 4).Sum(0) }, []int{4}, 0, 0, 0, 0),
		em1("narrow/at_end", []int{3, 4}, func(x *Tensor) *Tensor { return x.Narrow(0, 3, 0) }, s04),
		em1("slice/past_end", []int{3, 4}, func(x *Tensor) *Tensor { return x.Slice(0, 5, 7, 1) }, s04),
		em1("pad/constant", s205, func(x *Tensor) *Tensor { return x.Pad([]int{1, 1, 1, 1}, 3) }, []int{2, 2, 7}, slices.Repeat([]float64{3}, 28)...),
		em1("pad/crop_to_empty", []int{3, 4}, func(x *Tensor) *Tensor { return x.Pad([]int{-2, -2}, 0) }, s30),
		em1("pad/circular", s205, func(x *Tensor) *Tensor { return x.Pad([]int{1, 1}, 0, PadMode("circular")) }, []int{2, 0, 7}),
		em1Err("pad/reflect_empty_dim", s30, func(x *Tensor) *Tensor { return x.Pad([]int{1, 1}, 0, PadMode("reflect")) }, ErrShape),
		em1Err("pad/replicate_empty_dim", s30, func(x *Tensor) *Tensor { return x.Pad([]int{1, 1}, 0, PadMode("replicate")) }, ErrShape),
		em1("repeat", s30, func(x *Tensor) *Tensor { return x.Repeat(2, 3) }, []int{6, 0}),
		em1("repeat/zero", []int{3, 4}, func(x *Tensor) *Tensor { return x.Repeat(0, 3) }, []int{0, 12}),
		em1("repeat_interleave", s04, func(x *Tensor) *Tensor { return x.RepeatInterleave(2, 0) }, s04),
		em1("repeat_interleave/counts", s04, func(x *Tensor) *Tensor { return x.RepeatInterleaveCounts(emI(x.Device(), nil, 0), 0) }, s04),
		withGrads(ones(6), em1("cat/empty_piece", []int{2, 3}, func(x *Tensor) *Tensor { return Concat([]*Tensor{x, Zeros(x.Device(), Float32, 0, 3)}, 0) },
			[]int{2, 3}, 0.25, 0.5, 0.75, 1, 1.25, 1.5)),
		em1("cat/all_empty", s30, func(x *Tensor) *Tensor { return Concat([]*Tensor{x, x}, -1) }, s30),
		em1("stack/empty", s30, func(x *Tensor) *Tensor { return Stack([]*Tensor{x, x}, 2) }, []int{3, 0, 2}),
		em1Err("cat/scalars", nil, func(x *Tensor) *Tensor { return Concat([]*Tensor{x, x}, 0) }, ErrShape),
		// Indexing with no indices, and into empty dims.
		em1("index_select/no_indices", []int{3, 4}, func(x *Tensor) *Tensor { return x.IndexSelect(0, emI(x.Device(), nil, 0)) }, s04),
		em1("index_select/of_empty", s30, func(x *Tensor) *Tensor { return x.IndexSelect(0, emI(x.Device(), []int64{2, 0}, 2)) }, []int{2, 0}),
		em1("gather/no_indices", []int{3, 4}, func(x *Tensor) *Tensor { return x.Gather(1, emI(x.Device(), nil, 3, 0)) }, s30),
		withGrads(ones(12), em1("scatter_add/no_indices", []int{3, 4}, func(x *Tensor) *Tensor {
			return x.ScatterAdd(1, emI(x.Device(), nil, 3, 0), Ones(x.Device(), Float32, 3, 2))
		}, []int{3, 4})),
		em1("index/no_indices", []int{3, 4}, func(x *Tensor) *Tensor { return x.Index(emI(x.Device(), nil, 0)) }, s04),
		withGrads(ones(12), em1("index_put/no_indices", []int{3, 4}, func(x *Tensor) *Tensor {
			return x.IndexPut([]*Tensor{emI(x.Device(), nil, 0)}, Zeros(x.Device(), Float32, 0, 4), true)
		}, []int{3, 4})),
		em1("embedding/no_indices", []int{5, 3}, func(w *Tensor) *Tensor { return Embedding(emI(w.Device(), nil, 2, 0), w) }, []int{2, 0, 3}),
		// Matrix products over k = 0 are zeros; their gradients are empty.
		em2("matmul/k0", []int{2, 0}, []int{0, 3}, (*Tensor).MatMul, []int{2, 3}, 0, 0, 0, 0, 0, 0),
		em2("matmul/m0", []int{0, 3}, []int{3, 2}, (*Tensor).MatMul, []int{0, 2}),
		em2("matmul/dot0", []int{0}, []int{0}, (*Tensor).MatMul, nil, 0),
		em2("matmul/batch0", []int{0, 2, 3}, []int{0, 3, 4}, (*Tensor).MatMul, []int{0, 2, 4}),
		em2("matmul/bcast_k0", []int{5, 2, 0}, []int{0, 4}, (*Tensor).MatMul, []int{5, 2, 4}, slices.Repeat([]float64{0}, 40)...),
		em2("einsum/k0", []int{2, 0}, []int{0, 3}, func(x, y *Tensor) *Tensor { return Einsum("ij,jk->ik", x, y) }, []int{2, 3}, 0, 0, 0, 0, 0, 0),
		emptyCase{name: "linear/in0", shape: []int{2, 3}, vals: []float64{0.25, 0.5, 0.75, 0.25, 0.5, 0.75}, grads: [][]float64{{}, {}, {2, 2, 2}},
			run: func(dev Device) (*Tensor, []*Tensor) {
				x, w, b := emV(dev, 2, 0), emV(dev, 3, 0), emV(dev, 3)
				return x.Linear(w, b), []*Tensor{x, w, b}
			}},
		// Losses of an empty batch: NaN means, zero sums, empty per-sample.
		em1("cross_entropy/mean", []int{0, 5}, func(x *Tensor) *Tensor { return x.CrossEntropy(emI(x.Device(), nil, 0)) }, nil, nan),
		em1("cross_entropy/sum", []int{0, 5}, func(x *Tensor) *Tensor {
			return x.CrossEntropy(emI(x.Device(), nil, 0), WithReduction(ReduceSum))
		}, nil, 0),
		em1("cross_entropy/none", []int{0, 5}, func(x *Tensor) *Tensor {
			return x.CrossEntropy(emI(x.Device(), nil, 0), WithReduction(ReduceNone))
		}, []int{0}),
		em1("cross_entropy/spatial", []int{2, 5, 0}, func(x *Tensor) *Tensor { return x.CrossEntropy(emI(x.Device(), nil, 2, 0)) }, nil, nan),
		em1("nll_loss/mean", []int{0, 5}, func(x *Tensor) *Tensor { return x.NLLLoss(emI(x.Device(), nil, 0)) }, nil, nan),
		em1("mse_loss/mean", s30, func(x *Tensor) *Tensor { return x.MSELoss(ZerosLike(x)) }, nil, nan),
		em1("mse_loss/sum", s30, func(x *Tensor) *Tensor { return x.MSELoss(ZerosLike(x), WithReduction(ReduceSum)) }, nil, 0),
		// Convolution, pooling, normalisation and resampling of an empty batch.
		em1("conv2d/batch0", []int{0, 3, 5, 5}, func(x *Tensor) *Tensor { return x.Conv2d(biF(x.Device(), 2, 3, 3, 3), nil) }, []int{0, 2, 3, 3}),
		em1("conv1d/batch0", []int{0, 3, 5}, func(x *Tensor) *Tensor { return x.Conv1d(biF(x.Device(), 2, 3, 3), nil, Padding(1)) }, []int{0, 2, 5}),
		em1("conv_transpose2d/batch0", []int{0, 3, 4, 4}, func(x *Tensor) *Tensor {
			return x.ConvTranspose2d(biF(x.Device(), 3, 2, 3, 3), nil, Stride(2))
		}, []int{0, 2, 9, 9}),
		emptyCase{name: "conv2d/batch0_weight_grad", shape: []int{0, 2, 3, 3}, grads: [][]float64{{}, slices.Repeat([]float64{0}, 54), {0, 0}},
			run: func(dev Device) (*Tensor, []*Tensor) {
				x, w, b := emV(dev, 0, 3, 5, 5), emV(dev, 2, 3, 3, 3), emV(dev, 2)
				return x.Conv2d(w, b), []*Tensor{x, w, b}
			}},
		em1("unfold/batch0", []int{0, 2, 4, 4}, func(x *Tensor) *Tensor { return x.Unfold([]int{2, 2}) }, []int{0, 8, 9}),
		em1("fold/batch0", []int{0, 8, 9}, func(x *Tensor) *Tensor { return x.Fold([]int{4, 4}, []int{2, 2}) }, []int{0, 2, 4, 4}),
		em1("max_pool2d/batch0", []int{0, 3, 4, 4}, func(x *Tensor) *Tensor { return x.MaxPool2d(2) }, []int{0, 3, 2, 2}),
		em1("avg_pool1d/batch0", []int{0, 3, 4}, func(x *Tensor) *Tensor { return x.AvgPool1d(2) }, []int{0, 3, 2}),
		em1("adaptive_avg_pool2d/batch0", []int{0, 3, 4, 4}, func(x *Tensor) *Tensor { return x.AdaptiveAvgPool2d(2) }, []int{0, 3, 2, 2}),
		em1("adaptive_max_pool2d/batch0", []int{0, 3, 4, 4}, func(x *Tensor) *Tensor { return x.AdaptiveMaxPool2d(2) }, []int{0, 3, 2, 2}),
		em1("max_unpool2d/batch0", []int{0, 3, 2, 2}, func(x *Tensor) *Tensor {
			_, i := biF(x.Device(), 0, 3, 4, 4).MaxPool2dWithIndices(2)
			return x.MaxUnpool2d(i, 2)
		}, []int{0, 3, 4, 4}),
		em1("pixel_shuffle/batch0", []int{0, 4, 2, 2}, func(x *Tensor) *Tensor { return x.PixelShuffle(2) }, []int{0, 1, 4, 4}),
		em1("group_norm/batch0", []int{0, 4, 3, 3}, func(x *Tensor) *Tensor { return x.GroupNorm(2, nil, nil, 1e-5) }, []int{0, 4, 3, 3}),
		em1("batch_norm/eval_batch0", []int{0, 3, 2, 2}, func(x *Tensor) *Tensor {
			return x.BatchNorm(Zeros(x.Device(), Float32, 3), Ones(x.Device(), Float32, 3), nil, nil, false, 0.1, 1e-5)
		}, []int{0, 3, 2, 2}),
		emptyCase{name: "batch_norm/train_batch0", shape: []int{0, 3, 2, 2}, grads: [][]float64{{}, {0, 0, 0}, {0, 0, 0}},
			run: func(dev Device) (*Tensor, []*Tensor) {
				x, w, b := emV(dev, 0, 3, 2, 2), emV(dev, 3), emV(dev, 3)
				return x.BatchNorm(Zeros(dev, Float32, 3), Ones(dev, Float32, 3), w, b, true, 0.1, 1e-5), []*Tensor{x, w, b}
			}},
		em1("interpolate/bilinear_batch0", []int{0, 2, 2, 2}, func(x *Tensor) *Tensor { return x.Interpolate(Size(4, 4), Mode("bilinear")) }, []int{0, 2, 4, 4}),
		em1("interpolate/nearest_batch0", []int{0, 2, 2, 2}, func(x *Tensor) *Tensor { return x.Interpolate(ScaleFactor(2)) }, []int{0, 2, 4, 4}),
		em1Err("interpolate/empty_spatial", []int{1, 1, 0, 2}, func(x *Tensor) *Tensor { return x.Interpolate(Size(4, 4)) }, ErrShape),
		em1("grid_sample/batch0", []int{0, 2, 4, 4}, func(x *Tensor) *Tensor { return GridSample(x, Zeros(x.Device(), Float32, 0, 3, 3, 2)) }, []int{0, 2, 3, 3}),
		em1("grid_sample/no_points", []int{1, 2, 4, 4}, func(x *Tensor) *Tensor { return GridSample(x, Zeros(x.Device(), Float32, 1, 0, 3, 2)) }, []int{1, 2, 0, 3}),
		// Attention over zero keys is zeros (a softmax over nothing, times
		// nothing); over zero queries, batches or heads it is empty.
		emptyCase{name: "attention/keys0", shape: []int{1, 2, 3, 4}, vals: slices.Repeat([]float64{0}, 24),
			run: func(dev Device) (*Tensor, []*Tensor) {
				q, k := emV(dev, 1, 2, 3, 4), emV(dev, 1, 2, 0, 4)
				return ScaledDotProductAttention(q, k, k), []*Tensor{q, k}
			}},
		emptyCase{name: "attention/keys0_causal", shape: []int{1, 2, 3, 4}, vals: slices.Repeat([]float64{0}, 24),
			run: func(dev Device) (*Tensor, []*Tensor) {
				q, k := emV(dev, 1, 2, 3, 4), emV(dev, 1, 2, 0, 4)
				return ScaledDotProductAttention(q, k, k, IsCausal()), []*Tensor{q, k}
			}},
		em1("attention/queries0", []int{1, 2, 0, 4}, func(q *Tensor) *Tensor {
			k := biF(q.Device(), 1, 2, 3, 4)
			return ScaledDotProductAttention(q, k, k)
		}, []int{1, 2, 0, 4}),
		em1("attention/batch0", []int{0, 2, 3, 4}, func(q *Tensor) *Tensor { return ScaledDotProductAttention(q, q, q) }, []int{0, 2, 3, 4}),
		// Creation and sampling.
		emptyCase{name: "create/arange_empty", shape: []int{0}, run: func(dev Device) (*Tensor, []*Tensor) { return Arange(dev, Float32, 3, 3, -1), nil }},
		emptyCase{name: "create/eye0", shape: []int{0, 0}, run: func(dev Device) (*Tensor, []*Tensor) { return Eye(dev, Float32, 0), nil }},
		emptyCase{name: "create/linspace0", shape: []int{0}, run: func(dev Device) (*Tensor, []*Tensor) { return Linspace(dev, Float32, 0, 1, 0), nil }},
		emptyCase{name: "create/randperm0", shape: []int{0}, run: func(dev Device) (*Tensor, []*Tensor) { return RandPerm(dev, Int64, 0), nil }},
		emptyCase{name: "create/randn", shape: s205, run: func(dev Device) (*Tensor, []*Tensor) { return RandN(dev, Float32, s205...), nil }},
		emptyCase{name: "create/full", shape: s205, run: func(dev Device) (*Tensor, []*Tensor) { return Full(dev, Float32, 3, s205...), nil }},
		emptyCase{name: "create/one_hot", shape: []int{0, 3}, run: func(dev Device) (*Tensor, []*Tensor) { return emI(dev, nil, 0).OneHot(3), nil }},
		emptyCase{name: "create/one_hot_infer", kind: ErrValue, run: func(dev Device) (*Tensor, []*Tensor) { return emI(dev, nil, 0).OneHot(-1), nil }},
		emptyCase{name: "multinomial/batch0", shape: []int{0, 2}, run: func(dev Device) (*Tensor, []*Tensor) { return Multinomial(Ones(dev, Float32, 0, 3), 2, false), nil }},
		emptyCase{name: "multinomial/zero_samples", kind: ErrValue, run: func(dev Device) (*Tensor, []*Tensor) { return Multinomial(Ones(dev, Float32, 3), 0, false), nil }},
		emptyCase{name: "int32/sum", shape: []int{2}, vals: []float64{0, 0}, run: func(dev Device) (*Tensor, []*Tensor) { return Zeros(dev, Int32, 2, 0).Sum(1), nil }},
		emptyCase{name: "int32/prod", shape: []int{2}, vals: []float64{1, 1}, run: func(dev Device) (*Tensor, []*Tensor) { return Zeros(dev, Int32, 2, 0).Prod(1), nil }},
		emptyCase{name: "int32/cumsum", shape: []int{2, 0}, run: func(dev Device) (*Tensor, []*Tensor) { return Zeros(dev, Int32, 2, 0).CumSum(1), nil }},
		emptyCase{name: "float16/matmul_k0", shape: []int{2, 3}, vals: slices.Repeat([]float64{0}, 6),
			run: func(dev Device) (*Tensor, []*Tensor) {
				return Zeros(dev, Float16, 2, 0).MatMul(Zeros(dev, Float16, 0, 3)), nil
			}},
		emptyCase{name: "float16/mean", shape: []int{2}, vals: []float64{nan, nan}, run: func(dev Device) (*Tensor, []*Tensor) { return Zeros(dev, Float16, 2, 0).Mean(1), nil }},
		// 0-d scalars beside the empties.
		emptyCase{name: "scalar/plus_empty", shape: []int{0}, grads: [][]float64{{0}, {}}, run: func(dev Device) (*Tensor, []*Tensor) {
			x, y := emV(dev), emV(dev, 0)
			return x.Add(y), []*Tensor{x, y}
		}},
		emptyCase{name: "scalar/softmax", grads: [][]float64{{0}}, vals: []float64{1}, run: func(dev Device) (*Tensor, []*Tensor) {
			x := emV(dev)
			return x.Softmax(0), []*Tensor{x}
		}},
		emptyCase{name: "scalar/topk0", grads: [][]float64{{1}}, vals: []float64{0.25}, run: func(dev Device) (*Tensor, []*Tensor) {
			x := emV(dev)
			v, _ := x.TopK(0, 0, true) // torch gives a 0-d x back for any k in [0, 1]
			return v, []*Tensor{x}
		}},
		emptyCase{name: "scalar/repeat0", shape: []int{0}, grads: [][]float64{{0}}, run: func(dev Device) (*Tensor, []*Tensor) {
			x := emV(dev)
			return x.Repeat(0), []*Tensor{x}
		}},
		emptyCase{name: "scalar/nonzero", shape: []int{1, 0}, run: func(dev Device) (*Tensor, []*Tensor) { return Scalar(dev, float32(2)).Nonzero(), nil }},
	)
	return cs
}

// withGrads is c with wanted gradients g.
func withGrads(g [][]float64, c emptyCase) emptyCase {
	c.grads = g
	return c
}

// emptyScalar is v as a 0-d cpu tensor, or err as a failed one.
func emptyScalar(v float64, err error) *Tensor {
	if err != nil {
		return Failed(err)
	}
	return Scalar(CPU, v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// emptyValues is t's elements as float64s, read on the cpu.
func emptyValues(t *Tensor) ([]float64, error) {
	return t.To(CPU).Cast(Float64).Float64s()
}

func sameValues(got, want []float64) bool {
	return slices.EqualFunc(got, want, func(a, b float64) bool {
		return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
	})
}

func TestEmptyTensors(t *testing.T) {
	cases := emptyCases()
	for _, dev := range biDevices(t) {
		for _, c := range cases {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				var leaves []*Tensor
				out, err := biRun(func() *Tensor {
					var y *Tensor
					y, leaves = c.run(dev)
					return y
				})
				if err != nil { // a panic or a hang
					t.Fatal(err)
				}
				if c.kind != nil {
					if err := out.Err(); !errors.Is(err, c.kind) {
						t.Fatalf("error %v, want one of kind %v", err, c.kind)
					}
					return
				}
				if err := out.Err(); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(out.Shape(), c.shape) {
					t.Fatalf("shape %v, want %v", out.Shape(), c.shape)
				}
				got, err := emptyValues(out)
				if err != nil {
					t.Fatal(err)
				}
				if c.vals != nil && !sameValues(got, c.vals) {
					t.Errorf("values %v, want %v", got, c.vals)
				}
				if !out.RequiresGrad() || len(leaves) == 0 {
					return
				}
				if _, err := biRun(func() *Tensor { return Failed(out.Sum().Backward()) }); err != nil {
					t.Fatal(err)
				}
				if err := out.Sum().Err(); err != nil {
					t.Fatal(err)
				}
				for i, l := range leaves {
					g := l.Grad()
					if g == nil {
						t.Errorf("leaf %d has no gradient", i)
						continue
					}
					if !slices.Equal(g.Shape(), l.Shape()) {
						t.Errorf("leaf %d's gradient has shape %v, want %v", i, g.Shape(), l.Shape())
					}
					v, err := emptyValues(g)
					want := make([]float64, l.Numel())
					if c.grads != nil {
						want = c.grads[i]
					}
					if err != nil || !sameValues(v, want) {
						t.Errorf("leaf %d's gradient is %v (%v), want %v", i, v, err, want)
					}
				}
			})
		}
	}
}
