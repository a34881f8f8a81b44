package dispatch

import (
	"math"
	"slices"
	"strconv"
)

// Copy ops: flip, concat, stack and pad make a fresh tensor from strided
// reads of their inputs. They take every dtype.

// Flip is the attribute of flip: the dims to reverse (none: no change).
type Flip struct{ Dims []int }

// Concat is the attribute of concat and stack: the dim to join along.
type Concat struct{ Dim int }

// Pad is the attribute of pad, as torch.nn.functional.pad's constant mode:
// Pads holds (left, right) pairs from the last dim backward; a negative pad
// crops. Value fills the new elements.
type Pad struct {
	Pads  []int
	Value float64
}

var opConcat *Op

func init() {
	Register(&Op{Name: "flip", Args: []string{"x"}, Infer: flipInfer})
	opConcat = Register(&Op{Name: "concat", Args: []string{"tensors"}, Variadic: true, Infer: concatInfer})
	Register(&Op{Name: "stack", Args: []string{"tensors"}, Variadic: true, Compose: stackCompose})
	Register(&Op{Name: "pad", Args: []string{"x"}, Infer: padInfer})
}

func flipInfer(in []*Tensor, attrs any) (DType, []int, error) {
	a, ok := attrs.(Flip)
	if !ok {
		return 0, nil, attrError("Flip")
	}
	if _, err := NormDims(a.Dims, in[0].Rank(), "dims"); err != nil {
		return 0, nil, err
	}
	return in[0].DType, clone(in[0].Shape), nil
}

// FlipDims is flip's dims, normalised (Infer has checked them). No dims
// flips nothing, as torch.flip(x, []); a 0-d tensor has none to flip.
func FlipDims(t *Tensor, attrs any) []int {
	dims := attrs.(Flip).Dims
	if len(dims) == 0 || t.Rank() == 0 {
		return nil
	}
	d, _ := NormDims(dims, t.Rank(), "dims")
	return d
}

func concatInfer(in []*Tensor, attrs any) (DType, []int, error) {
	a, ok := attrs.(Concat)
	if !ok {
		return 0, nil, attrError("Concat")
	}
	name := func(i int) string { return "tensors[" + itoa(i) + "]" }
	if err := sameDType(in, name, 0); err != nil {
		return 0, nil, err
	}
	first := in[0]
	if first.Rank() == 0 {
		return 0, nil, &Error{Kind: ErrShape, Arg: name(0), Detail: "is 0-d, which has no dim to concatenate along",
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
			return 0, nil, &Error{Kind: ErrShape, Arg: name(i), Expected: FormatShape(first.Shape), Found: FormatShape(t.Shape),
				Detail: "has rank " + itoa(t.Rank()) + " but tensors[0] has rank " + itoa(first.Rank()),
				Fix:    "give every tensor the same number of dims"}
		}
		for j, s := range t.Shape {
			if j != d && s != first.Shape[j] {
				return 0, nil, &Error{Kind: ErrShape, Arg: name(i), Expected: FormatShape(first.Shape), Found: FormatShape(t.Shape),
					Detail: "has shape " + FormatShape(t.Shape) + ", which differs from tensors[0]'s " + FormatShape(first.Shape) + " at dim " + itoa(j),
					Fix:    "sizes must match except along dim " + itoa(a.Dim)}
			}
		}
		shape[d] += t.Shape[d]
	}
	return first.DType, shape, nil
}

// ConcatDim is concat's dim, normalised; Infer has checked it.
func ConcatDim(in []*Tensor, attrs any) int {
	d, _ := NormDim(attrs.(Concat).Dim, in[0].Rank(), "dim")
	return d
}

// stackCompose unsqueezes each tensor at dim and concatenates them.
func stackCompose(in []*Tensor, attrs any) (*Tensor, error) {
	a, ok := attrs.(Concat)
	if !ok {
		return nil, attrError("Concat")
	}
	d, err := NormDim(a.Dim, in[0].Rank()+1, "dim")
	if err != nil {
		return nil, err
	}
	parts := make([]*Tensor, len(in))
	for i, t := range in {
		if !slices.Equal(t.Shape, in[0].Shape) {
			return nil, &Error{Kind: ErrShape, Arg: "tensors[" + itoa(i) + "]", Expected: FormatShape(in[0].Shape), Found: FormatShape(t.Shape),
				Detail: "has shape " + FormatShape(t.Shape) + " but tensors[0] has " + FormatShape(in[0].Shape),
				Fix:    "stack needs tensors of one shape"}
		}
		if parts[i], err = Call(Lookup("unsqueeze"), Unsqueeze{Dim: d}, t); err != nil {
			return nil, err
		}
	}
	return Call(opConcat, Concat{Dim: d}, parts...)
}

func padInfer(in []*Tensor, attrs any) (DType, []int, error) {
	a, ok := attrs.(Pad)
	if !ok {
		return 0, nil, attrError("Pad")
	}
	x := in[0]
	if len(a.Pads)%2 != 0 || len(a.Pads)/2 > x.Rank() {
		return 0, nil, &Error{Kind: ErrValue, Arg: "pads", Detail: "has " + itoa(len(a.Pads)) + " values for a tensor of rank " + itoa(x.Rank()),
			Fix: "give (left, right) pairs, at most one per dim, from the last dim backward"}
	}
	if err := CheckScalar(x.DType, a.Value, "value"); err != nil {
		return 0, nil, err
	}
	shape := clone(x.Shape)
	for i := 0; i < len(a.Pads); i += 2 {
		d := x.Rank() - 1 - i/2
		shape[d] += a.Pads[i] + a.Pads[i+1]
		if shape[d] < 0 {
			return 0, nil, &Error{Kind: ErrShape, Arg: "pads", Detail: "crops dim " + itoa(d) + " of size " + itoa(x.Shape[d]) +
				" by " + itoa(-a.Pads[i]-a.Pads[i+1]) + ", to a negative size", Fix: "crop at most the dim's size"}
		}
	}
	return x.DType, shape, nil
}

// CheckScalar refuses a fill value that dtype dt cannot hold exactly (1.5 in
// an int tensor) rather than truncating it, as lathe's constructors do.
func CheckScalar(dt DType, v float64, arg string) error {
	if dt.IsInt() && v != math.Trunc(v) {
		return &Error{Kind: ErrDType, Arg: arg, Detail: "is " + ftoa(v) + ", not an integer, but the tensor is " + dt.String(),
			Fix: "use an integral value or a float tensor"}
	}
	return nil
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// PadRegion is where pad copies x into out: the shape of the part of x
// that survives the crops (negative pads), and how many elements each of
// x and out skips from its own offset to that part's first element. With
// ok false everything of x is cropped away and only the fill remains.
func PadRegion(x, out *Tensor, pads []int) (shape []int, xSkip, outSkip int, ok bool) {
	shape = append([]int(nil), x.Shape...)
	for i := 0; i < len(pads); i += 2 {
		d := x.Rank() - 1 - i/2
		left, right := pads[i], pads[i+1]
		shape[d] = x.Shape[d] - max(-left, 0) - max(-right, 0)
		if shape[d] <= 0 {
			return nil, 0, 0, false
		}
		xSkip += max(-left, 0) * x.Strides[d]
		outSkip += max(left, 0) * out.Strides[d]
	}
	return shape, xSkip, outSkip, true
}
