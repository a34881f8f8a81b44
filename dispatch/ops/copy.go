package ops

import (
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Copy ops: flip, concat, stack and pad make a fresh tensor from strided
// reads of their inputs. They take every dtype.

// FlipDims is the attribute of flip: the dims to reverse (none: no change).
type FlipDims struct{ Dims []int }

// ConcatDim is the attribute of concat and stack: the dim to join along.
type ConcatDim struct{ Dim int }

// Padding is the attribute of pad, as torch.nn.functional.pad's constant
// mode: Pads holds (left, right) pairs from the last dim backward; a
// negative pad crops. Value fills the new elements.
type Padding struct {
	Pads  []int
	Value float64
}

// The copy ops.
var (
	Flip   = dispatch.Register(&dispatch.Op[FlipDims]{Schema: schema("flip", "x"), Infer: flipInfer})
	Concat = dispatch.Register(&dispatch.Op[ConcatDim]{Schema: dispatch.Schema{Name: "concat", Args: []string{"tensors"}, Variadic: true}, Infer: concatInfer})
	Stack  = dispatch.Register(&dispatch.Op[ConcatDim]{Schema: dispatch.Schema{Name: "stack", Args: []string{"tensors"}, Variadic: true}, Compose: stackCompose})
	Pad    = dispatch.Register(&dispatch.Op[Padding]{Schema: schema("pad", "x"), Infer: padInfer})
)

func flipInfer(in []*dispatch.Tensor, a FlipDims) (dispatch.DType, []int, error) {
	if _, err := NormDims(a.Dims, in[0].Rank(), "dims"); err != nil {
		return 0, nil, err
	}
	return in[0].DType, clone(in[0].Shape), nil
}

// Of is the dims that flip reverses in t, normalised (Infer has checked
// them). No dims flips nothing, as torch.flip(x, []); a 0-d tensor has
// none to flip.
func (a FlipDims) Of(t *dispatch.Tensor) []int {
	if len(a.Dims) == 0 || t.Rank() == 0 {
		return nil
	}
	d, _ := NormDims(a.Dims, t.Rank(), "dims")
	return d
}

func concatInfer(in []*dispatch.Tensor, a ConcatDim) (dispatch.DType, []int, error) {
	name := func(i int) string { return "tensors[" + itoa(i) + "]" }
	if err := sameDType(in, name, 0); err != nil {
		return 0, nil, err
	}
	first := in[0]
	if first.Rank() == 0 {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name(0), Detail: "is 0-d, which has no dim to concatenate along",
			Fix: "use Stack, or Unsqueeze each tensor first"}
	}
	d, err := NormDim(a.Dim, first.Rank(), "dim")
	if err != nil {
		return 0, nil, err
	}
	shape := clone(first.Shape)
	for i := 1; i < len(in); i++ {
		t := in[i]
		if t.Rank() != first.Rank() {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name(i), Expected: dispatch.FormatShape(first.Shape), Found: dispatch.FormatShape(t.Shape),
				Detail: "has rank " + itoa(t.Rank()) + " but tensors[0] has rank " + itoa(first.Rank()),
				Fix:    "give every tensor the same number of dims"}
		}
		for j, s := range t.Shape {
			if j != d && s != first.Shape[j] {
				return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name(i), Expected: dispatch.FormatShape(first.Shape), Found: dispatch.FormatShape(t.Shape),
					Detail: "has shape " + dispatch.FormatShape(t.Shape) + ", which differs from tensors[0]'s " + dispatch.FormatShape(first.Shape) + " at dim " + itoa(j),
					Fix:    "sizes must match except along dim " + itoa(a.Dim)}
			}
		}
		var ok bool
		if shape[d], ok = dispatch.CheckedAdd(shape[d], t.Shape[d]); !ok {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: name(i), Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + ", which takes the sizes along dim " + itoa(a.Dim) + " past what an int counts",
				Fix:    "concatenate fewer or smaller tensors"}
		}
	}
	return first.DType, shape, nil
}

// Of is the dim that concat joins along for its inputs in, normalised;
// Infer has checked it.
func (a ConcatDim) Of(in []*dispatch.Tensor) int {
	d, _ := NormDim(a.Dim, in[0].Rank(), "dim")
	return d
}

// stackCompose unsqueezes each tensor at dim and concatenates them.
func stackCompose(in []*dispatch.Tensor, a ConcatDim) (*dispatch.Tensor, error) {
	d, err := NormDim(a.Dim, in[0].Rank()+1, "dim")
	if err != nil {
		return nil, err
	}
	parts := make([]*dispatch.Tensor, len(in))
	for i, t := range in {
		if !slices.Equal(t.Shape, in[0].Shape) {
			return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "tensors[" + itoa(i) + "]", Expected: dispatch.FormatShape(in[0].Shape), Found: dispatch.FormatShape(t.Shape),
				Detail: "has shape " + dispatch.FormatShape(t.Shape) + " but tensors[0] has " + dispatch.FormatShape(in[0].Shape),
				Fix:    "stack needs tensors of one shape"}
		}
		if parts[i], err = dispatch.Call(Unsqueeze, UnsqueezeDim{Dim: d}, t); err != nil {
			dispatch.ReleaseWithGraph(nil, parts[:i]...)
			return nil, err
		}
	}
	out, err := dispatch.Call(Concat, ConcatDim{Dim: d}, parts...)
	dispatch.ReleaseWithGraph(out, parts...) // views of the inputs
	return out, err
}

func padInfer(in []*dispatch.Tensor, a Padding) (dispatch.DType, []int, error) {
	x := in[0]
	if len(a.Pads)%2 != 0 || len(a.Pads)/2 > x.Rank() {
		return 0, nil, &dispatch.Error{Kind: dispatch.ErrValue, Arg: "pads", Detail: "has " + itoa(len(a.Pads)) + " values for a tensor of rank " + itoa(x.Rank()),
			Fix: "give (left, right) pairs, at most one per dim, from the last dim backward"}
	}
	if err := CheckScalar(x.DType, a.Value, "value"); err != nil {
		return 0, nil, err
	}
	shape := clone(x.Shape)
	for i := 0; i < len(a.Pads); i += 2 {
		d := x.Rank() - 1 - i/2
		grown, ok := PaddedSize(shape[d], a.Pads[i], a.Pads[i+1])
		if !ok {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "pads", Found: dispatch.FormatShape(a.Pads),
				Detail: "is " + dispatch.FormatShape(a.Pads) + ", which takes dim " + itoa(d) + " of size " + itoa(x.Shape[d]) + " past what an int counts",
				Fix:    "use smaller pads"}
		}
		shape[d] = grown
		if shape[d] < 0 {
			return 0, nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "pads", Detail: "is " + dispatch.FormatShape(a.Pads) + ", which crops dim " + itoa(d) +
				" of size " + itoa(x.Shape[d]) + " to a negative size", Fix: "crop at most the dim's size"}
		}
	}
	return x.DType, shape, nil
}

// PaddedSize is n + lo + hi, the size of a dim of size n ≥ 0 padded by
// (lo, hi), and whether it fits an int. The smaller pad goes first, so
// that no partial sum passes an int where the size fits (3 + (MaxInt-1)
// - 3), as torch's int64 sum gives it; a partial sum can pass only where
// both pads are positive or both negative, and the size with it.
func PaddedSize(n, lo, hi int) (int, bool) {
	s, ok := dispatch.CheckedAdd(n, min(lo, hi))
	if ok {
		s, ok = dispatch.CheckedAdd(s, max(lo, hi))
	}
	return s, ok
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
