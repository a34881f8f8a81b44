package lathe

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Data-dependent selection (Nonzero, MaskedSelect, Unique) and advanced
// indexing by index tensors (Index, IndexPut), with torch 1.13's
// semantics. The sizes of Nonzero's, MaskedSelect's and Unique's results
// depend on the data, so each waits for the device once, reading back one
// byte an element of a Bool mask, and then gathers on the device; Index and
// IndexPut know their shapes from the index tensors' and never wait. All
// are built from existing kernels (cast, argsort, index_select, scatter,
// scatter_add), so they run on every device and their gradients, where
// torch has them, are those parts' rules, to any order.

// Nonzero is the coordinates of x's nonzero elements (NaN is nonzero;
// false is zero) in row-major order, as Int64 [n, rank of x]:
// torch.nonzero(x). A 0-d x gives [1, 0] or [0, 0].
//
// It syncs once: it reads x != 0 back as Bool and uploads the coordinates.
func (x *Tensor) Nonzero() *Tensor { return apply(ops.Nonzero, none, x) }

// MaskedSelect is the elements of x where mask (Bool) is true, x and mask
// broadcast together, as a 1-D tensor in row-major order:
// torch.masked_select(x, mask). Its gradient scatters back into x's
// shape (summed over the dims that broadcasting added), as torch's does.
//
// It syncs once: it reads the broadcast mask back and gathers the chosen
// positions on the device.
func (x *Tensor) MaskedSelect(mask *Tensor) *Tensor { return apply(ops.MaskedSelect, none, x, mask) }

// Unique is torch.unique(x, sorted, return_inverse, return_counts) with
// dim=None: the distinct values of flattened x in ascending order; with
// returnInverse, the Int64 index (of x's shape) of each element of x in
// values; with returnCounts, how many elements of x equal each value
// (Int64). A result not asked for is nil.
//
// The order is always ascending: torch's cpu kernel gives an unspecified
// order when sorted is false (its cuda kernel sorts anyway), and ascending
// is one of the orders it allows. Equal values keep the first of them in
// x (-0 or +0, as torch). NaN is unequal to everything, itself too, so
// each NaN is a value of its own, after every number, as in torch 1.13;
// for those NaNs torch 1.13 returns inverse 0 and count 0, which is not an
// answer, and lathe returns each NaN's own position and count 1.
//
// It syncs once: after a stable argsort on the device, it reads back
// whether each sorted element differs from the one before, and then
// gathers values and scatters the inverse on the device.
func (x *Tensor) Unique(sorted, returnInverse, returnCounts bool) (values, inverse, counts *Tensor) {
	const op = "unique"
	fail := func(err error) (*Tensor, *Tensor, *Tensor) {
		return failed(err), pick(returnInverse, failed(err)), pick(returnCounts, failed(err))
	}
	if err := x.check(op); err != nil {
		return fail(err)
	}
	dev := x.t.Device
	flat := relabel(x.Reshape(-1), op)
	perm := relabel(flat.ArgSort(0, false), op)
	sortedX := relabel(flat.Gather(0, perm), op)
	var at *Tensor // starts on the device
	// The steps go with the values' graph, which holds them for the
	// backward pass where x needs a gradient (at once where it does not).
	defer func() { ReleaseWithGraph(values, flat, perm, sortedX, at) }()
	if err := sortedX.Err(); err != nil {
		return fail(err)
	}
	n := x.t.Numel()
	starts, groups, err := runsOf(op, sortedX)
	if err != nil {
		return fail(err)
	}
	at = FromSlice(dev, starts, len(starts))
	values = relabel(sortedX.IndexSelect(0, at), op)
	if returnInverse {
		g, zeros := FromSlice(dev, groups, n), Zeros(dev, Int64, n)
		flatInverse := zeros.Scatter(0, perm, g)
		inverse = relabel(flatInverse.Reshape(x.t.Shape...), op)
		for _, t := range []*Tensor{g, zeros, flatInverse} {
			t.Release() // the reshape, a view, keeps the inverse's storage
		}
	}
	if returnCounts {
		counts = relabel(runLengths(dev, starts, n), op)
	}
	return values, inverse, counts
}

// runsOf finds the runs of equal neighbours of the 1-D tensor v (or of
// equal neighbouring slices along dim 0 of a higher-rank v) on the host
// (one sync): the place where each run starts, and each element's
// run. The n Int64s of the second are asked of v's device first, so that
// too many is ErrOutOfMemory rather than a failed host allocation, which
// Go cannot recover from.
func runsOf(op string, v *Tensor) (starts, runOf []int64, err error) {
	n := v.t.Shape[0]
	room, err := dispatch.Empty(v.t.Device, dispatch.Int64, []int{n})
	if err != nil {
		return nil, nil, located(err, op)
	}
	room.Release()
	starts, runOf = []int64{}, make([]int64, n)
	if n == 0 {
		return starts, runOf, nil
	}
	next, prev := v.Narrow(0, 1, n-1), v.Narrow(0, 0, n-1)
	step := relabel(next.Ne(prev), op)
	if v.t.Rank() > 1 { // slices along dim 0: they differ where any element does
		s := step
		step = relabel(s.Reshape(n-1, -1).Any(1), op)
		s.Release()
	}
	data, err := step.host(op)
	for _, t := range []*Tensor{next, prev, step} {
		t.Release() // the views too: each holds v's storage until released
	}
	if err != nil {
		return nil, nil, err
	}
	starts = append(starts, 0)
	for i, differs := range data.([]bool) {
		if differs {
			starts = append(starts, int64(i+1))
		}
		runOf[i+1] = int64(len(starts) - 1)
	}
	return starts, runOf, nil
}

// runLengths is the length of each run that starts at starts in n
// elements, as an Int64 tensor on dev.
func runLengths(dev Device, starts []int64, n int) *Tensor {
	c := make([]int64, len(starts))
	for i, s := range starts {
		end := int64(n)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		c[i] = end - s
	}
	return FromSlice(dev, c, len(c))
}

func pick(want bool, t *Tensor) *Tensor {
	if want {
		return t
	}
	return nil
}

// Index is x[indices[0], indices[1], ...] for Int32 or Int64 index
// tensors, as torch's advanced indexing: the index tensors broadcast
// together to a shape B, indices[d] picks along dim d of x, and a nil
// index (or a dim past the last index) is a full slice (torch's ":").
// A Bool mask indexes as many dims as it has (their sizes, exactly) with
// the coordinates of its true elements, as torch does; it syncs once to
// count them (Nonzero).
// Negative indices count from the end; any outside [-size, size) is
// ErrIndex, checked before anything is read. The result is B in place of
// the indexed dims when they are adjacent, and B first (then x's other
// dims) when a full slice separates them, as in torch. Its gradient adds
// into x's shape, repeated indices accumulating.
func (x *Tensor) Index(indices ...*Tensor) *Tensor {
	const op = "index"
	dims, places, idx, err := x.indexTensors(op, indices)
	if err != nil {
		return failed(err)
	}
	a := ops.IndexedDims{Dims: dims, Places: places}
	return namedOperands(apply(ops.Index, a, append([]*Tensor{x}, idx...)...), places, "x")
}

// IndexPut is torch.index_put(x, indices, values, accumulate), out of
// place: a copy of x with values (x's dtype, broadcast to x[indices]'s
// shape) written at the places that Index would read, or added to them
// with accumulate (repeated indices then add up). indices are as Index
// takes them. Without accumulate, where an index repeats the result is
// one of the values written there (torch leaves which unspecified; the
// cpu writes the last). Gradients go to x (zero where written, unless
// accumulate) and to values (the gradient read back at their places).
func (x *Tensor) IndexPut(indices []*Tensor, values *Tensor, accumulate bool) *Tensor {
	const op = "index_put"
	dims, places, idx, err := x.indexTensors(op, indices)
	if err != nil {
		return failed(err)
	}
	a := ops.IndexPutAttrs{Dims: dims, Places: places, Accumulate: accumulate}
	return namedOperands(apply(ops.IndexPut, a, append([]*Tensor{x, values}, idx...)...), places, "x", "values")
}

// indexTensors checks the index list and returns the integer index
// tensors, the dims they index and their places in the list. A Bool mask
// indexes as many dims as it has, with the columns of its Nonzero
// (torch's rule), which syncs once.
func (x *Tensor) indexTensors(op string, indices []*Tensor) (dims, places []int, idx []*Tensor, err error) {
	if err := x.check(op); err != nil {
		return nil, nil, nil, err
	}
	dim := 0 // the dim of x that the next entry indexes
	for p, t := range indices {
		if t == nil {
			dim++
			continue
		}
		if err := t.CheckArg(op, ops.IndexArg(p)); err != nil {
			return nil, nil, nil, err
		}
		if t.t.DType != Bool {
			dims, places, idx = append(dims, dim), append(places, p), append(idx, t)
			dim++
			continue
		}
		k := t.t.Rank()
		if k == 0 || dim+k > x.t.Rank() || !slices.Equal(t.t.Shape, x.t.Shape[dim:dim+k]) {
			return nil, nil, nil, errorf(op, ErrShape, ops.IndexArg(p), "is a mask of shape "+dispatch.FormatShape(t.t.Shape)+
				", which does not match x's "+dispatch.FormatShape(x.t.Shape)+" from dim "+strconv.Itoa(dim),
				"give a mask the sizes of the dims it indexes (a 0-d mask is not supported)")
		}
		at := relabel(t.Nonzero(), op)
		if err := at.Err(); err != nil {
			return nil, nil, nil, err
		}
		for j := range k {
			dims, places, idx = append(dims, dim+j), append(places, p), append(idx, at.Narrow(1, j, 1).Squeeze(1))
		}
		dim += k
	}
	switch {
	case dim > x.t.Rank():
		return nil, nil, nil, errorf(op, ErrIndex, "indices", "has entries for "+strconv.Itoa(dim)+" dims but x has shape "+
			dispatch.FormatShape(x.t.Shape), "pass at most one index per dim of x")
	case len(idx) == 0:
		return nil, nil, nil, errorf(op, ErrValue, "indices", "holds no index tensor",
			"pass at least one index tensor; nil entries are full slices")
	}
	return dims, places, idx, nil
}

// namedOperands gives the operand that a dispatch error names
// ("operands[i]") its name in the caller's terms: first the leading
// arguments, then the index tensors, as "indices[p]" by their place in
// the caller's list.
func namedOperands(t *Tensor, places []int, lead ...string) *Tensor {
	e, ok := t.err.(*Error)
	if !ok || !strings.HasPrefix(e.Arg, "operands[") {
		return t
	}
	i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.Arg, "operands["), "]"))
	if err != nil {
		return t
	}
	c := *e
	switch {
	case i < len(lead):
		c.Arg = lead[i]
	case i-len(lead) < len(places):
		c.Arg = ops.IndexArg(places[i-len(lead)])
	}
	c.Fix = strings.ReplaceAll(c.Fix, e.Arg, c.Arg)
	return failed(&c)
}
