package layout

import "github.com/lathe-ml/lathe/dispatch"

// PadRegion is where pad copies x into out: the shape of the part of x
// that survives the crops (negative pads), and how many elements each of
// x and out skips from its own offset to that part's first element. With
// ok false everything of x is cropped away and only the fill remains.
// pads holds (left, right) pairs from the last dim backward, as
// torch.nn.functional.pad takes them.
func PadRegion(x, out *dispatch.Tensor, pads []int) (shape []int, xSkip, outSkip int, ok bool) {
	shape = append([]int(nil), x.Shape...)
	for i := 0; i < len(pads); i += 2 {
		d := x.Rank() - 1 - i/2
		left, right := pads[i], pads[i+1]
		// A crop past the dim's size takes all of it, -max(pad, -size):
		// -pad itself overflows for a pad of MinInt.
		cropLeft, cropRight := -max(min(left, 0), -x.Shape[d]), -max(min(right, 0), -x.Shape[d])
		shape[d] = x.Shape[d] - cropLeft - cropRight
		if shape[d] <= 0 {
			return nil, 0, 0, false
		}
		xSkip += cropLeft * x.Strides[d]
		outSkip += max(left, 0) * out.Strides[d]
	}
	return shape, xSkip, outSkip, true
}
