package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Copy ops make new tensors from strided reads: Flip, Concat, Stack, Pad.
// Split and Chunk return views.

// Flip returns a copy of x with the order of elements reversed along each
// of dims (no dims: x unchanged, as torch.flip(x, [])).
func (x *Tensor) Flip(dims ...int) *Tensor {
	return apply(ops.Flip, ops.FlipDims{Dims: append([]int(nil), dims...)}, x)
}

// Concat joins tensors of one dtype, device and rank along dim; their sizes
// must agree in every other dim. Unlike torch 1.13, a 1-D empty tensor is
// not skipped: it must have the others' rank like any argument.
func Concat(tensors []*Tensor, dim int) *Tensor {
	return apply(ops.Concat, ops.ConcatDim{Dim: dim}, tensors...)
}

// Stack joins tensors of one shape along a new dim, in [-rank-1, rank].
func Stack(tensors []*Tensor, dim int) *Tensor {
	return apply(ops.Stack, ops.ConcatDim{Dim: dim}, tensors...)
}

// Pad is torch.nn.functional.pad: pads holds (left, right) pairs, the
// first for the last dim, the next for the one before, and so on, and a
// negative pad crops. In constant mode (the default) the new elements are
// value; PadMode chooses another mode, which fills them from x's own
// elements and takes value 0, as torch does:
//
//	y := x.Pad([]int{1, 1, 2, 2}, 0, lathe.PadMode("reflect"))
//
// torch 1.13 pads in reflect and replicate mode only 2-D..5-D inputs, in
// their last 1..3 dims, and in circular mode every dim but the first two;
// lathe pads any dims of any rank in every mode, and gives torch's values
// wherever torch gives any.
func (x *Tensor) Pad(pads []int, value float64, opts ...PadOption) *Tensor {
	var o padOptions
	for _, opt := range opts {
		if opt != nil { // a nil option sets nothing, as elsewhere
			opt(&o)
		}
	}
	a := ops.Padding{Pads: append([]int(nil), pads...), Value: value}
	switch o.mode {
	case "", "constant":
		return apply(ops.Pad, a, x)
	case "reflect", "replicate", "circular":
		if err := x.checkPadHost(o.mode, pads); err != nil {
			return failed(err)
		}
	}
	switch o.mode {
	case "reflect":
		return apply(ops.ReflectPad, a, x)
	case "replicate":
		return apply(ops.ReplicatePad, a, x)
	case "circular":
		return apply(ops.CircularPad, a, x)
	}
	if x != nil && x.err != nil {
		return x
	}
	return failed(errorf("pad", ErrValue, "mode", "is "+strconv.Quote(o.mode), `use "constant", "reflect", "replicate" or "circular"`))
}

// checkPadHost refuses the pads of a mode whose indices (one int64 per
// element of each padded dim, computed in host memory before the upload)
// the machine cannot hold. Sizes that overflow or go below 0, and pads
// that mode cannot fill, are left to the op, which says so.
func (x *Tensor) checkPadHost(mode string, pads []int) error {
	if x == nil || x.err != nil || x.t == nil || len(pads)%2 != 0 || len(pads)/2 > x.t.Rank() {
		return nil
	}
	for i := 0; i+1 < len(pads); i += 2 {
		n := x.t.Shape[x.t.Rank()-1-i/2]
		out, ok := ops.PaddedSize(n, pads[i], pads[i+1])
		if ok && out > 0 && !ops.PadTooFar(mode, n, pads[i], pads[i+1]) {
			if err := checkHost("pad", "pads", out, 8); err != nil {
				return err
			}
		}
	}
	return nil
}

// PadOption sets an option of Pad.
type PadOption func(*padOptions)

type padOptions struct{ mode string }

// PadMode sets how Pad fills the new elements, by PyTorch's name:
// "constant" (the default: with value), "reflect" (x mirrored at each
// edge, the edge not repeated; each pad less than its dim's size),
// "replicate" (the edge element repeated) or "circular" (x wrapped around;
// each pad at most its dim's size). The last three are composites of
// index_select, so they run on every device, and their gradients are
// index_select's.
func PadMode(m string) PadOption { return func(o *padOptions) { o.mode = m } }

// Split cuts x along dim into views of size elements each; the last is
// smaller when size does not divide the dim (torch.split with an int).
func (x *Tensor) Split(size, dim int) ([]*Tensor, error) {
	d, n, err := x.pieceDim("split", dim)
	if err != nil {
		return nil, err
	}
	switch {
	case size < 0:
		return nil, errorf("split", ErrValue, "size", "is "+strconv.Itoa(size), "use a size ≥ 1")
	case size == 0 && n > 0:
		return nil, errorf("split", ErrValue, "size", "is 0 but dim "+strconv.Itoa(dim)+" has size "+strconv.Itoa(n),
			"use a size ≥ 1; 0 splits only an empty dim")
	case n == 0:
		return x.pieces("split", d, []int{0})
	}
	return x.cut("split", "size", d, n, size, (n-1)/size+1)
}

// Chunk cuts x along dim into at most n views of ceil(size/n) elements, as
// torch.chunk does (so there may be fewer than n; an empty dim gives n empty
// pieces).
func (x *Tensor) Chunk(n, dim int) ([]*Tensor, error) {
	d, size, err := x.pieceDim("chunk", dim)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errorf("chunk", ErrValue, "n", "is "+strconv.Itoa(n), "use n ≥ 1")
	}
	if size == 0 {
		return x.cut("chunk", "n", d, 0, 0, n) // n empty pieces, as torch.chunk gives
	}
	step := (size-1)/n + 1 // ceil(size/n): size+n-1 would overflow for a huge n
	return x.cut("chunk", "n", d, size, step, (size-1)/step+1)
}

// cut narrows x along d, of the given size, into count consecutive views
// of step elements, the last one what is left. Every piece is a tensor
// (an expanded dim of 2⁴⁰ cut by 1 would be 2⁴⁰ of them), so a count that
// host memory cannot hold is refused (about arg) before any is made.
func (x *Tensor) cut(op, arg string, d, size, step, count int) ([]*Tensor, error) {
	if err := checkHost(op, arg, count, pieceBytes); err != nil {
		return nil, err
	}
	sizes := make([]int, count)
	for i, at := 0, 0; i < count; i++ {
		sizes[i] = min(step, size-at)
		at += sizes[i]
	}
	return x.pieces(op, d, sizes)
}

// pieceBytes is about what one piece of Split or Chunk costs: its two
// handles and their shapes and strides.
const pieceBytes = 256

// pieceDim checks x and dim for Split and Chunk and returns the dim and its
// size.
func (x *Tensor) pieceDim(op string, dim int) (d, size int, err error) {
	if err := x.check(op); err != nil {
		return 0, 0, err
	}
	if x.t.Rank() == 0 {
		return 0, 0, errorf(op, ErrShape, "x", "is 0-d but "+op+" needs at least one dim", "use Unsqueeze first")
	}
	d, err = ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return 0, 0, located(err, op)
	}
	return d, x.t.Shape[d], nil
}

// pieces narrows x along d into consecutive views of the given sizes.
func (x *Tensor) pieces(op string, d int, sizes []int) ([]*Tensor, error) {
	out := make([]*Tensor, len(sizes))
	at := 0
	for i, s := range sizes {
		out[i] = apply(ops.Narrow, ops.NarrowRange{Dim: d, Start: at, Length: s}, x)
		if out[i].err != nil {
			return nil, located(out[i].err, op)
		}
		at += s
	}
	return out, nil
}
