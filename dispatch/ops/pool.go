package ops

import (
	"slices"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// Pooling over the spatial dims of an (N, C, d1, ..., dk) tensor, for any k
// (the root package offers k = 1, 2, 3), as PyTorch defines it.
//
// Each backward pass is an op of its own with its own gradient rule, as in
// PyTorch's derivatives.yaml, so that gradients of gradients flow:
//
//	avg_pool               -> avg_pool_backward           (whose rule is avg_pool again)
//	adaptive_avg_pool      -> adaptive_avg_pool_backward  (whose rule is adaptive_avg_pool)
//	max_pool               =  max_pool_indices, then pool_gather
//	adaptive_max_pool      =  adaptive_max_pool_indices, then pool_gather
//	pool_gather            -> max_pool_backward           (whose rule is pool_gather)
//	max_unpool             -> pool_gather
//
// lathe's ops return one tensor, so max pooling is two: max_pool_indices
// finds the flat index of each window's maximum within its (n, c) plane
// (PyTorch's indices, Int64), and pool_gather reads the values there.
// max_pool and adaptive_max_pool are composites of the two, so their
// gradient is pool_gather's: a scatter-add of the incoming gradient at the
// indices (max_pool_backward, PyTorch's max_pool2d_with_indices_backward),
// whose own gradient is a gather at the same indices.

// AvgPoolParams is the attribute of avg_pool: the window (its Dilation all 1),
// whether padded places are left out of each window's count (PyTorch's
// count_include_pad=False), and a divisor that replaces the count when not
// zero (divisor_override).
type AvgPoolParams struct {
	layout.Window
	ExcludePadding bool
	Divisor        int
}

// AvgPoolBackwardParams is the attribute of avg_pool_backward: the forward
// op's attribute and the spatial size of its input.
type AvgPoolBackwardParams struct {
	AvgPoolParams
	InSize []int
}

// AdaptivePool is the attribute of adaptive_avg_pool and
// adaptive_max_pool_indices: the spatial output size.
type AdaptivePool struct{ Size []int }

// AdaptivePoolBackward is the attribute of adaptive_avg_pool_backward: the
// spatial size of the forward op's input.
type AdaptivePoolBackward struct{ InSize []int }

// PoolScatter is the attribute of max_pool_backward and max_unpool: the
// spatial size of the result, whose (n, c) planes the indices address.
type PoolScatter struct{ Size []int }

// The pooling ops.
var (
	AvgPool                 = dispatch.Register(&dispatch.Op[AvgPoolParams]{Schema: schema("avg_pool", "x"), Infer: avgPoolInfer})
	AvgPoolBackward         = dispatch.Register(&dispatch.Op[AvgPoolBackwardParams]{Schema: schema("avg_pool_backward", "grad"), Infer: avgPoolBackwardInfer})
	AdaptiveAvgPool         = dispatch.Register(&dispatch.Op[AdaptivePool]{Schema: schema("adaptive_avg_pool", "x"), Infer: adaptivePoolInfer(false)})
	AdaptiveAvgPoolBackward = dispatch.Register(&dispatch.Op[AdaptivePoolBackward]{Schema: schema("adaptive_avg_pool_backward", "grad"), Infer: adaptivePoolBackwardInfer})
	MaxPoolIndices          = dispatch.Register(&dispatch.Op[layout.Window]{Schema: schema("max_pool_indices", "x"), Infer: maxPoolIndicesInfer})
	AdaptiveMaxPoolIndices  = dispatch.Register(&dispatch.Op[AdaptivePool]{Schema: schema("adaptive_max_pool_indices", "x"), Infer: adaptivePoolInfer(true)})
	PoolGather              = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("pool_gather", "x", "indices"), Infer: poolGatherInfer, Checks: poolGatherChecks})
	MaxPoolBackward         = dispatch.Register(&dispatch.Op[PoolScatter]{Schema: schema("max_pool_backward", "grad", "indices"), Infer: poolScatterInfer("grad"), Checks: poolScatterChecks})
	MaxUnpool               = dispatch.Register(&dispatch.Op[PoolScatter]{Schema: schema("max_unpool", "x", "indices"), Infer: poolScatterInfer("x"), Checks: poolScatterChecks})
	MaxPool                 = dispatch.Register(&dispatch.Op[layout.Window]{Schema: schema("max_pool", "x"), Compose: maxPoolCompose(MaxPoolIndices)})
	AdaptiveMaxPool         = dispatch.Register(&dispatch.Op[AdaptivePool]{Schema: schema("adaptive_max_pool", "x"), Compose: maxPoolCompose(AdaptiveMaxPoolIndices)})
)

// poolInput checks that t is a float (N, C, d1, ..., dk) tensor with k
// spatial dims and returns its spatial sizes.
func poolInput(t *dispatch.Tensor, arg string, k int) ([]int, error) {
	if err := checkDType(t, arg, Floats); err != nil {
		return nil, err
	}
	if k < 1 || t.Rank() != k+2 {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Expected: "rank " + itoa(k+2), Found: dispatch.FormatShape(t.Shape),
			Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but pooling over " + itoa(k) + " spatial dims needs (N, C" + dimsTail(k) + ")",
			Fix:    "add the batch dim with Unsqueeze(0), or use the pooling op of matching dims"}
	}
	return t.Shape[2:], nil
}

// dimsTail is ", d1, ..., dk" for error messages.
func dimsTail(k int) string {
	s := ""
	for i := 1; i <= k; i++ {
		s += ", d" + itoa(i)
	}
	return s
}

// poolShape is (N, C) of x followed by the spatial sizes.
func poolShape(x *dispatch.Tensor, spatial []int) []int {
	return append([]int{x.Shape[0], x.Shape[1]}, spatial...)
}

func avgPoolInfer(in []*dispatch.Tensor, a AvgPoolParams) (dispatch.DType, []int, error) {
	x := in[0]
	sp, err := poolInput(x, "x", a.Dims())
	if err != nil {
		return 0, nil, err
	}
	if err := checkAvgPool("x", sp, a); err != nil {
		return 0, nil, err
	}
	return x.DType, poolShape(x, a.OutShape(sp)), nil
}

// checkAvgPool validates an avg_pool of an input of spatial sizes in.
func checkAvgPool(arg string, in []int, a AvgPoolParams) error {
	if err := a.Check(arg, in, true); err != nil {
		return err
	}
	for _, d := range a.Dilation {
		if d != 1 {
			return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dilation", Found: dispatch.FormatShape(a.Dilation),
				Detail: "is " + dispatch.FormatShape(a.Dilation) + " but average pooling has no dilation", Fix: "leave dilation at 1"}
		}
	}
	return nil
}

func avgPoolBackwardInfer(in []*dispatch.Tensor, a AvgPoolBackwardParams) (dispatch.DType, []int, error) {
	g := in[0]
	if _, err := poolInput(g, "grad", a.Dims()); err != nil {
		return 0, nil, err
	}
	if err := checkAvgPool("grad", a.InSize, a.AvgPoolParams); err != nil {
		return 0, nil, err
	}
	if err := poolGradShape(g, poolShape(g, a.OutShape(a.InSize))); err != nil {
		return 0, nil, err
	}
	return g.DType, poolShape(g, a.InSize), nil
}

// poolGradShape checks that an incoming gradient has its forward output's
// shape.
func poolGradShape(g *dispatch.Tensor, want []int) error {
	if !slices.Equal(g.Shape, want) {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "grad", Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(g.Shape),
			Detail: "has shape " + dispatch.FormatShape(g.Shape) + " but the pooling it is the gradient of gave " + dispatch.FormatShape(want),
			Fix:    "pass a gradient of the pooled output's shape"}
	}
	return nil
}

// checkAdaptiveSize validates an adaptive pooling's output size against
// the input's spatial sizes in.
func checkAdaptiveSize(arg string, in, size []int) error {
	if len(size) != len(in) {
		return layout.CountError("output_size", len(size), len(in))
	}
	for _, s := range size {
		if s < 1 {
			return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "output_size", Found: dispatch.FormatShape(size),
				Detail: "is " + dispatch.FormatShape(size) + ", below 1", Fix: "use output sizes of at least 1"}
		}
	}
	for _, n := range in {
		if n < 1 {
			return &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Found: dispatch.FormatShape(in),
				Detail: "has spatial size " + dispatch.FormatShape(in) + " but adaptive pooling needs every spatial dim non-empty",
				Fix:    "pass an input with at least one element in each spatial dim"}
		}
	}
	return nil
}

// adaptivePoolInfer is the Infer of adaptive_avg_pool (float result) and
// adaptive_max_pool_indices (Int64 result).
func adaptivePoolInfer(indices bool) func([]*dispatch.Tensor, AdaptivePool) (dispatch.DType, []int, error) {
	return func(in []*dispatch.Tensor, a AdaptivePool) (dispatch.DType, []int, error) {
		x := in[0]
		sp, err := poolInput(x, "x", len(a.Size))
		if err != nil {
			return 0, nil, err
		}
		if err := checkAdaptiveSize("x", sp, a.Size); err != nil {
			return 0, nil, err
		}
		dt := x.DType
		if indices {
			dt = dispatch.Int64
		}
		return dt, poolShape(x, a.Size), nil
	}
}

func adaptivePoolBackwardInfer(in []*dispatch.Tensor, a AdaptivePoolBackward) (dispatch.DType, []int, error) {
	g := in[0]
	sp, err := poolInput(g, "grad", len(a.InSize))
	if err != nil {
		return 0, nil, err
	}
	if err := checkAdaptiveSize("grad", a.InSize, sp); err != nil {
		return 0, nil, err
	}
	return g.DType, poolShape(g, a.InSize), nil
}

func maxPoolIndicesInfer(in []*dispatch.Tensor, w layout.Window) (dispatch.DType, []int, error) {
	x := in[0]
	sp, err := poolInput(x, "x", w.Dims())
	if err != nil {
		return 0, nil, err
	}
	if err := w.Check("x", sp, true); err != nil {
		return 0, nil, err
	}
	// With dilation a window can fall wholly in the padding (kernel 2,
	// dilation 3, padding 1 over 2 elements reads places -1 and 2); it has
	// no maximum, and PyTorch returns an index outside the input there.
	// Only a window that starts in the left padding can: every window
	// starts before the input's end (OutSize drops one that would not), so
	// any other has its first tap inside. Looking at those alone keeps a
	// huge (expanded) input from costing a loop over every window here.
	for d, n := range sp {
		inPad := 0 // windows 0..inPad-1 start in the left padding
		if p := w.Padding[d]; p > 0 {
			inPad = (p-1)/w.Stride[d] + 1
		}
		for o := range min(inPad, w.OutSize(d, n)) {
			lo, hi := layout.PoolTaps(w, d, o, n)
			if lo >= hi {
				return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dilation", Found: dispatch.FormatShape(w.Dilation),
					Detail: "is " + dispatch.FormatShape(w.Dilation) + ": window " + itoa(o) + " of spatial dim " + itoa(d) + " reads only padding",
					Fix:    "use less padding or dilation, or a larger input"}
			}
		}
	}
	return dispatch.Int64, poolShape(x, w.OutShape(sp)), nil
}

// poolIndices checks an index tensor of pool_gather, max_pool_backward or
// max_unpool against the pooled tensor t (of the same N and C): int64, as
// max pooling gives on every device, and the same rank.
func poolIndices(idx, t *dispatch.Tensor, tname string) error {
	if want := dispatch.Int64; idx.DType != want {
		return &dispatch.Error{Kind: dispatch.ErrDType, Arg: "indices", Expected: want.String(), Found: idx.DType.String(),
			Detail: "is " + idx.DType.String() + " but pooling indices are " + want.String(),
			Fix:    "pass the indices that max pooling returned, or cast with .Cast(" + want.GoString() + ")"}
	}
	if idx.Rank() != t.Rank() || idx.Shape[0] != t.Shape[0] || idx.Shape[1] != t.Shape[1] {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "indices", Found: dispatch.FormatShape(idx.Shape),
			Detail: "has shape " + dispatch.FormatShape(idx.Shape) + " but " + tname + " has shape " + dispatch.FormatShape(t.Shape) +
				": both are (N, C, spatial...) with the same N, C and number of spatial dims",
			Fix: "pass the indices that max pooling gave for this tensor"}
	}
	return nil
}

func poolGatherInfer(in []*dispatch.Tensor, _ dispatch.None) (dispatch.DType, []int, error) {
	x, idx := in[0], in[1]
	if x.Rank() < 3 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "x", Found: dispatch.FormatShape(x.Shape),
			Detail: "has shape " + dispatch.FormatShape(x.Shape) + " but needs (N, C, spatial...)", Fix: "add the batch dim with Unsqueeze(0)"}
	}
	if err := checkDType(x, "x", Floats); err != nil {
		return 0, nil, err
	}
	if err := poolIndices(idx, x, "x"); err != nil {
		return 0, nil, err
	}
	return x.DType, clone(idx.Shape), nil
}

// poolScatterInfer is the Infer of max_pool_backward and max_unpool: their
// first argument has the indices' shape, the result the attribute's
// spatial size.
func poolScatterInfer(name string) func([]*dispatch.Tensor, PoolScatter) (dispatch.DType, []int, error) {
	return func(in []*dispatch.Tensor, a PoolScatter) (dispatch.DType, []int, error) {
		src, idx := in[0], in[1]
		if len(a.Size) < 1 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "output_size", Detail: "is empty", Fix: "give one size per spatial dim"}
		}
		if _, err := poolInput(src, name, len(a.Size)); err != nil {
			return 0, nil, err
		}
		if err := poolIndices(idx, src, name); err != nil {
			return 0, nil, err
		}
		if !slices.Equal(idx.Shape, src.Shape) {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "indices", Expected: dispatch.FormatShape(src.Shape), Found: dispatch.FormatShape(idx.Shape),
				Detail: "has shape " + dispatch.FormatShape(idx.Shape) + " but " + name + " has shape " + dispatch.FormatShape(src.Shape),
				Fix:    "pass the indices that max pooling gave along with these values"}
		}
		for _, s := range a.Size {
			if s < 1 {
				return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "output_size", Found: dispatch.FormatShape(a.Size),
					Detail: "is " + dispatch.FormatShape(a.Size) + ", below 1", Fix: "use sizes of at least 1"}
			}
		}
		return src.DType, poolShape(src, a.Size), nil
	}
}

// maxPoolCompose is max_pool or adaptive_max_pool: the indices of each
// window's maximum, then the values there, gathered so that the gradient
// flows through pool_gather's rule.
func maxPoolCompose[A any](indices *dispatch.Op[A]) func([]*dispatch.Tensor, A) (*dispatch.Tensor, error) {
	return func(in []*dispatch.Tensor, a A) (*dispatch.Tensor, error) {
		idx, err := dispatch.Call(indices, a, in[0])
		if err != nil {
			return nil, err
		}
		out, err := dispatch.Call(PoolGather, dispatch.None{}, in[0], idx)
		dispatch.ReleaseWithGraph(out, idx) // the gather's backward reads it: with the graph
		return out, err
	}
}

// planeCheck checks pooling indices: each a flat place in an (n, c) plane
// of the given spatial sizes.
func planeCheck(spatial []int) []dispatch.ValueCheck {
	return []dispatch.ValueCheck{{Arg: 1, Max: int64(dispatch.Numel(spatial)) - 1, Fail: func(v int64) *dispatch.Error { return PlaneError(v, spatial) }}}
}

func poolGatherChecks(in []*dispatch.Tensor, _ dispatch.None) []dispatch.ValueCheck {
	return planeCheck(in[0].Shape[2:])
}

func poolScatterChecks(_ []*dispatch.Tensor, a PoolScatter) []dispatch.ValueCheck {
	return planeCheck(a.Size)
}
