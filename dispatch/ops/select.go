package ops

import "github.com/lathe-ml/lathe/dispatch"

// Data-dependent selection: nonzero and masked_select. How many elements
// they give depends on the data, so each reads a Bool copy of its mask
// back to the host (one sync, one byte an element), lists the positions
// there and uploads them as Int64 indices; masked_select then gathers with
// index_select, whose gradient rule scatters back into x's shape. No new
// kernel: the parts are the cast, expand, index_select and reshape that
// every device has, and each is recorded on the tape, so gradients of any
// order follow.

// The selection ops.
var (
	Nonzero      = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("nonzero", "x"), Compose: nonzeroCompose})
	MaskedSelect = dispatch.Register(&dispatch.Op[dispatch.None]{Schema: schema("masked_select", "x", "mask"), Compose: maskedSelectCompose})
)

// nonzeroCompose is torch.nonzero(x): the coordinates of x's nonzero
// elements (NaN is nonzero) in row-major order, as Int64 [n, rank].
func nonzeroCompose(in []*dispatch.Tensor, _ dispatch.None) (*dispatch.Tensor, error) {
	x := in[0]
	set, err := readMask(x)
	if err != nil {
		return nil, err
	}
	rank, n := x.Rank(), countTrue(set)
	if err := reserve(x.Device, []int{n, rank}); err != nil {
		return nil, err
	}
	coords := make([]int64, 0, n*rank)
	at := make([]int64, rank) // the coordinates of element i, counted up as i goes
	for _, on := range set {
		if on {
			coords = append(coords, at...)
		}
		for d := rank - 1; d >= 0; d-- {
			if at[d]++; int(at[d]) < x.Shape[d] {
				break
			}
			at[d] = 0
		}
	}
	return dispatch.Upload(x.Device, coords, dispatch.Int64, []int{n, rank})
}

// maskedSelectCompose is torch.masked_select(x, mask): the elements of x
// where mask is true, both broadcast to one shape, in row-major order, as
// a 1-D tensor.
func maskedSelectCompose(in []*dispatch.Tensor, _ dispatch.None) (*dispatch.Tensor, error) {
	x, mask := in[0], in[1]
	if err := checkDType(mask, "mask", 1<<dispatch.Bool); err != nil {
		return nil, err
	}
	shape, ok := BroadcastShapes(x.Shape, mask.Shape)
	if !ok {
		return nil, &dispatch.Error{Kind: dispatch.ErrShape, Arg: "mask", Expected: dispatch.FormatShape(x.Shape), Found: dispatch.FormatShape(mask.Shape),
			Detail: "has shape " + dispatch.FormatShape(mask.Shape) + ", which does not broadcast with x's " + dispatch.FormatShape(x.Shape),
			Fix:    "make each dimension equal or 1"}
	}
	if _, ok := dispatch.CheckedNumel(shape); !ok {
		return nil, dispatch.ShapeError("mask", shape)
	}
	m, err := dispatch.Call(Expand, ViewShape{Shape: shape}, mask)
	if err != nil {
		return nil, err
	}
	set, err := readMask(m)
	m.Release() // a view: mask keeps its storage
	if err != nil {
		return nil, err
	}
	n := countTrue(set)
	if err := reserve(x.Device, []int{n}); err != nil {
		return nil, err
	}
	at := make([]int64, 0, n)
	for i, on := range set {
		if on {
			at = append(at, int64(i))
		}
	}
	index, err := dispatch.Upload(x.Device, at, dispatch.Int64, []int{len(at)})
	if err != nil {
		return nil, err
	}
	xs, err := dispatch.Call(Expand, ViewShape{Shape: shape}, x)
	if err != nil {
		index.Release()
		return nil, err
	}
	flat, err := dispatch.Call(Reshape, ViewShape{Shape: []int{-1}}, xs)
	if err != nil {
		releaseWith(nil, xs, index)
		return nil, err
	}
	out, err := dispatch.Call(IndexSelect, IndexDim{Dim: 0}, flat, index)
	releaseWith(out, xs, flat, index) // the tape's entries may hold them
	return out, err
}

// readMask is t != 0 in row-major order on the host: the one sync of
// nonzero and masked_select. The Bool copy it reads is a byte an element,
// whatever t's dtype.
func readMask(t *dispatch.Tensor) ([]bool, error) {
	b := t
	if t.DType != dispatch.Bool || !t.IsContiguous() {
		var err error
		if b, err = dispatch.Call(Cast, CastTo{DType: dispatch.Bool}, t); err != nil {
			return nil, err
		}
		defer b.Release()
	}
	data, err := dispatch.ReadHost(b)
	if err != nil {
		return nil, err
	}
	return data.([]bool), nil
}

// reserve checks that dev can hold an Int64 tensor of shape before the
// host builds its data, so that a result too large is ErrOutOfMemory from
// the device's allocator rather than a failed host allocation, which Go
// cannot recover from.
func reserve(dev dispatch.Device, shape []int) error {
	t, err := dispatch.Empty(dev, dispatch.Int64, shape)
	if err != nil {
		return err
	}
	t.Release()
	return nil
}

func countTrue(set []bool) int {
	n := 0
	for _, on := range set {
		if on {
			n++
		}
	}
	return n
}
