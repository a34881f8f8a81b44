package ops

import (
	"math"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Fused scaled dot-product attention (FlashAttention: Dao et al. 2022,
// "FlashAttention: Fast and Memory-Efficient Exact Attention with
// IO-Awareness", and Dao 2023, "FlashAttention-2"). A kernel walks the keys
// in blocks with an online softmax (a running max and sum per query row),
// so it never holds the Lq×Lk scores, and returns with each output row the
// row's logsumexp, from which the backward recomputes the probabilities
// block by block.
//
// The inputs are canonical: q [N, Hq, Lq, E], k [N, Hk, Lk, E] and
// v [N, Hk, Lk, Ev], Hk dividing Hq (query head h uses key and value head
// h/(Hq/Hk)); the root package brings torch's shapes (broadcast batch
// dims, rank 2 or 3) to these.
var (
	// Attention gives [N, Hq, Lq, Ev+1]: each row's output in its first
	// Ev columns and its logsumexp (natural log of Σ exp(scale·q·k), over
	// the keys the row may attend to; -Inf where there are none) in the
	// last.
	Attention = dispatch.Register(&dispatch.Op[AttentionParams]{Schema: schema("attention", "query", "key", "value"),
		Infer: attentionInfer})
	// AttentionBackward takes q, k, v, the forward's result (output and
	// logsumexp, [N, Hq, Lq, Ev+1]) and the gradient of that result (of
	// the output and of the logsumexp), and gives the gradients of q, k
	// and v one after the other in one flat tensor of
	// N·Hq·Lq·E + N·Hk·Lk·E + N·Hk·Lk·Ev elements.
	AttentionBackward = dispatch.Register(&dispatch.Op[AttentionParams]{
		Schema: schema("attention_backward", "query", "key", "value", "out", "grad"), Infer: attentionBackwardInfer})

	// AttentionMasked is Attention with an additive mask, attn_mask
	// [N, Hq, Lq, Lk] of the inputs' dtype, added to each score after the
	// scale: s = scale·q·k + mask. The mask is read through its strides,
	// so a broadcast one (a view with stride 0 over the dims it repeats
	// along, as Expand makes) costs no memory of size N·Hq·Lq·Lk. A row
	// whose scores are all -Inf has the output NaN (0/0, as the softmax
	// gives) and the logsumexp -Inf. Causal must be false.
	AttentionMasked = dispatch.Register(&dispatch.Op[AttentionParams]{
		Schema: schema("attention_masked", "query", "key", "value", "attn_mask"), Infer: attentionMaskedInfer})
	// AttentionMaskedBackward is AttentionBackward of AttentionMasked:
	// q, k, v, the mask, the forward's result and its gradient, giving the
	// flat dq | dk | dv. The probabilities are exp(s - lse) with no
	// special case, so a row with no key to attend to (lse = -Inf while
	// Lk > 0) makes NaN of every gradient it reaches, as the composite's
	// softmax does.
	AttentionMaskedBackward = dispatch.Register(&dispatch.Op[AttentionParams]{
		Schema: schema("attention_masked_backward", "query", "key", "value", "attn_mask", "out", "grad"), Infer: attentionMaskedBackwardInfer})
)

// AttentionParams are the attributes of the fused attention ops: the
// factor of the scores, causal masking (query i attends to keys j ≤ i)
// and dropout of the probabilities.
//
// Dropout (P = 0: none) multiplies probability P_ij of query row i of
// (batch n, head h) and key j by ops.Dropout's factor (Dropout.Scale() or
// 0) of element ((n·Hq + h)·Lq + i)·Lk + j: the mask that ops.Dropout
// under the same Mask makes over the probabilities as a [N, Hq, Lq, Lk]
// tensor, bit for bit, so that the fused ops and the composite (softmax,
// then dropout, then the product with v) drop the same weights. The
// logsumexp column is the undropped scores'. With M the factors, the
// backward is dV = (P∘M)ᵀ·dO, dP = (dO·vᵀ)∘M and dS = P∘(dP - D), D =
// rowsum(dO∘O) - dlse as without dropout (rowsum(P∘dP) is still dO·O).
type AttentionParams struct {
	Scale   float64
	Causal  bool
	Dropout Mask
}

// DropIndex is the element of the [N, Hq, Lq, Lk] probabilities whose
// dropout factor applies to query row i of (n, h) and key j.
func (g AttentionGeometry) DropIndex(n, h, i, j int) uint64 {
	return uint64(((n*g.Hq+h)*g.Lq+i)*g.Lk + j)
}

// AttentionGeometry is the sizes of a canonical attention call.
type AttentionGeometry struct {
	N, Hq, Hk, Lq, Lk, E, Ev int
}

// AttentionShapes checks the canonical shapes of q, k and v.
func AttentionShapes(q, k, v *dispatch.Tensor) (AttentionGeometry, error) {
	names := func(i int) string { return [...]string{"query", "key", "value"}[i] }
	var g AttentionGeometry
	for i, t := range []*dispatch.Tensor{q, k, v} {
		if err := checkDType(t, names(i), Floats); err != nil {
			return g, err
		}
		if t.Rank() != 4 {
			return g, &dispatch.Error{Kind: dispatch.ErrShape, Arg: names(i), Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but the fused op takes [N, H, L, E]",
				Fix:    "call lathe.ScaledDotProductAttention, which brings any shape to this one"}
		}
	}
	if err := sameDType([]*dispatch.Tensor{q, k, v}, names, 0); err != nil {
		return g, err
	}
	g = AttentionGeometry{N: q.Shape[0], Hq: q.Shape[1], Hk: k.Shape[1], Lq: q.Shape[2], Lk: k.Shape[2], E: q.Shape[3], Ev: v.Shape[3]}
	bad := func(arg, detail string) error {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: arg, Detail: "has shape " + detail + " (query " +
			dispatch.FormatShape(q.Shape) + ", key " + dispatch.FormatShape(k.Shape) + ", value " + dispatch.FormatShape(v.Shape) + ")",
			Fix: "give query [N, Hq, Lq, E], key [N, Hk, Lk, E] and value [N, Hk, Lk, Ev] with Hk dividing Hq"}
	}
	switch {
	case k.Shape[0] != g.N || v.Shape[0] != g.N:
		return g, bad("key", "a batch unlike query's")
	case k.Shape[3] != g.E:
		return g, bad("key", "an embedding size unlike query's")
	case v.Shape[1] != g.Hk || v.Shape[2] != g.Lk:
		return g, bad("value", "heads or a sequence length unlike key's")
	case g.Hk == 0 && g.Hq != 0 || g.Hk != 0 && g.Hq%g.Hk != 0:
		return g, bad("key", strconv.Itoa(g.Hk)+" heads, which do not divide query's "+strconv.Itoa(g.Hq))
	}
	return g, nil
}

func checkAttentionParams(a AttentionParams) error {
	if !(a.Scale > 0) || math.IsInf(a.Scale, 1) {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "scale", Detail: "is " + strconv.FormatFloat(a.Scale, 'g', -1, 64),
			Fix: "give a finite scale > 0"}
	}
	if p := a.Dropout.P; !(p >= 0 && p < 1) {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "dropout_p", Found: ftoa(p),
			Detail: "is " + ftoa(p) + ", outside [0, 1)", Fix: "use a probability in [0, 1)"}
	}
	return nil
}

func attentionInfer(in []*dispatch.Tensor, a AttentionParams) (dispatch.DType, []int, error) {
	g, err := AttentionShapes(in[0], in[1], in[2])
	if err != nil {
		return 0, nil, err
	}
	if err := checkAttentionParams(a); err != nil {
		return 0, nil, err
	}
	return AttentionOutDType(in[0].DType), []int{g.N, g.Hq, g.Lq, g.Ev + 1}, nil
}

// AttentionOutDType is the dtype of the fused attention's result (its
// output and the logsumexp column) for inputs of dtype dt: float32 for a
// 16-bit float, whose logsumexp rounded to 8 or 11 bits would move every
// weight that the backward recomputes from it (by up to 8% of the
// gradients under bfloat16 with scores of a few tens), as torch's flash
// kernels keep theirs in float32; dt itself otherwise. The caller rounds
// the output to dt once.
func AttentionOutDType(dt dispatch.DType) dispatch.DType {
	if dispatch.Halves.Has(dt) {
		return dispatch.Float32
	}
	return dt
}

func attentionBackwardInfer(in []*dispatch.Tensor, a AttentionParams) (dispatch.DType, []int, error) {
	g, err := AttentionShapes(in[0], in[1], in[2])
	if err != nil {
		return 0, nil, err
	}
	if err := checkAttentionParams(a); err != nil {
		return 0, nil, err
	}
	want := []int{g.N, g.Hq, g.Lq, g.Ev + 1}
	outDType := AttentionOutDType(in[0].DType)
	for i, t := range in[3:] {
		name := [...]string{"out", "grad"}[i]
		if t.DType != outDType {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrDType, Arg: name, Expected: outDType.String(), Found: t.DType.String(),
				Detail: "is " + t.DType.String() + " but the forward's result of a " + in[0].DType.String() + " query is " + outDType.String(),
				Fix:    "give the forward's result and its gradient"}
		}
		if !equalShapes(t.Shape, want) {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name, Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but the forward's result is " + dispatch.FormatShape(want),
				Fix:    "give the forward's result and its gradient"}
		}
	}
	n := g.N * g.Hq * g.Lq * g.E
	m, ok := dispatch.CheckedNumel([]int{g.N, g.Hk, g.Lk, g.E + g.Ev})
	if !ok {
		return 0, nil, dispatch.ShapeError("", []int{g.N, g.Hk, g.Lk, g.E + g.Ev})
	}
	return in[0].DType, []int{n + m}, nil
}

// checkAttentionMask checks the mask of the masked ops against q, k and
// v's geometry, and that the params are not causal.
func checkAttentionMask(q, mask *dispatch.Tensor, g AttentionGeometry, a AttentionParams) error {
	if a.Causal {
		return &dispatch.Error{Kind: dispatch.ErrValue, Arg: "causal", Detail: "is set with a mask",
			Fix: "fold causal masking into the mask, or call the unmasked op"}
	}
	if mask.DType != q.DType {
		return &dispatch.Error{Kind: dispatch.ErrDType, Arg: "attn_mask", Expected: q.DType.String(), Found: mask.DType.String(),
			Detail: "is " + mask.DType.String() + " but query is " + q.DType.String(),
			Fix:    "give an additive mask of the inputs' dtype (lathe.ScaledDotProductAttention turns a Bool mask into one)"}
	}
	if want := []int{g.N, g.Hq, g.Lq, g.Lk}; !equalShapes(mask.Shape, want) {
		return &dispatch.Error{Kind: dispatch.ErrShape, Arg: "attn_mask", Expected: dispatch.FormatShape(want), Found: dispatch.FormatShape(mask.Shape),
			Detail: "has shape " + dispatch.FormatShape(mask.Shape) + " but the scores are " + dispatch.FormatShape(want),
			Fix:    "expand the mask to the scores' shape (a view: it is read through its strides)"}
	}
	return nil
}

func attentionMaskedInfer(in []*dispatch.Tensor, a AttentionParams) (dispatch.DType, []int, error) {
	return withMask(attentionInfer, in[:3], in, a)
}

func attentionMaskedBackwardInfer(in []*dispatch.Tensor, a AttentionParams) (dispatch.DType, []int, error) {
	return withMask(attentionBackwardInfer, []*dispatch.Tensor{in[0], in[1], in[2], in[4], in[5]}, in, a)
}

// withMask is the infer of a masked op: infer of its unmasked op's
// arguments (in without the mask, in[3]), then the mask's checks.
func withMask(infer func([]*dispatch.Tensor, AttentionParams) (dispatch.DType, []int, error), unmasked, in []*dispatch.Tensor,
	a AttentionParams) (dispatch.DType, []int, error) {
	dt, shape, err := infer(unmasked, a)
	if err != nil {
		return 0, nil, err
	}
	g, _ := AttentionShapes(in[0], in[1], in[2])
	if err := checkAttentionMask(in[0], in[3], g, a); err != nil {
		return 0, nil, err
	}
	return dt, shape, nil
}

func equalShapes(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
