package nn

import (
	"slices"
	"sort"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Packed sequences (torch.nn.utils.rnn): a batch of sequences of
// different lengths, laid out time step by time step with only the
// sequences still running at each step, so that a recurrent layer runs
// each sequence over its own length and stops there.

// PackedSequence is torch.nn.utils.rnn.PackedSequence: Data holds, for
// each time step t in turn, the step's elements of the BatchSizes[t]
// sequences at least t+1 long ([Σ lengths, *]), the sequences in order of
// decreasing length. SortedIndices[i] is the batch index of the i-th
// longest sequence, and UnsortedIndices its inverse; both are nil where
// the sequences came sorted (torch's None, enforce_sorted). BatchSizes
// and the indices live on the host, as torch keeps batch_sizes on the cpu.
type PackedSequence struct {
	Data            *lathe.Tensor
	BatchSizes      []int
	SortedIndices   []int
	UnsortedIndices []int
}

// Err is Data's error: the packing's, or that of what Data came from.
func (p *PackedSequence) Err() error {
	if p == nil {
		return nnError("packed_sequence", lathe.ErrValue, "p", "is nil", "pack sequences with PackPaddedSequence or PackSequence")
	}
	return p.Data.Err()
}

// Release releases Data.
func (p *PackedSequence) Release() {
	if p != nil {
		p.Data.Release()
	}
}

// failedPacked is a PackedSequence that carries err.
func failedPacked(err error) *PackedSequence { return &PackedSequence{Data: lathe.Failed(err)} }

// Lengths are the sequences' lengths in the batch's own order.
func (p *PackedSequence) Lengths() []int {
	if p == nil || len(p.BatchSizes) == 0 {
		return nil
	}
	sorted := make([]int, p.BatchSizes[0])
	for _, b := range p.BatchSizes {
		for i := range b {
			sorted[i]++
		}
	}
	if p.UnsortedIndices == nil {
		return sorted
	}
	out := make([]int, len(sorted))
	for i, j := range p.UnsortedIndices {
		out[i] = sorted[j]
	}
	return out
}

// PadSequence stacks seqs, each [Lᵢ, *] with the same trailing dims,
// dtype and device, into [max L, N, *] ([N, max L, *] with batchFirst),
// filling the steps past each sequence's end with paddingValue, as
// torch.nn.utils.rnn.pad_sequence. It is differentiable in every
// sequence. Sequences of different dtypes are an ErrDType (torch copies
// them into the first's dtype).
func PadSequence(seqs []*lathe.Tensor, batchFirst bool, paddingValue float64) *lathe.Tensor {
	const op = "pad_sequence"
	if len(seqs) == 0 {
		return lathe.Failed(nnError(op, lathe.ErrValue, "sequences", "is empty", "give at least one sequence"))
	}
	longest := 0
	for i, s := range seqs {
		arg := "sequences[" + strconv.Itoa(i) + "]"
		if err := s.CheckArg(op, arg); err != nil {
			return lathe.Failed(err)
		}
		if s.Rank() == 0 {
			return lathe.Failed(nnError(op, lathe.ErrShape, arg, "is 0-d", "give each sequence a time dim first"))
		}
		if i > 0 {
			switch {
			case !slices.Equal(s.Shape()[1:], seqs[0].Shape()[1:]):
				return lathe.Failed(nnError(op, lathe.ErrShape, arg, "has shape "+shapeString(s.Shape())+" but sequences[0] has "+
					shapeString(seqs[0].Shape())+": the dims after the first must agree", "give every sequence the same trailing dims"))
			case s.DType() != seqs[0].DType():
				return lathe.Failed(nnError(op, lathe.ErrDType, arg, "is "+s.DType().String()+" but sequences[0] is "+seqs[0].DType().String(),
					"cast the sequences to one dtype"))
			case s.Device() != seqs[0].Device():
				return lathe.Failed(nnError(op, lathe.ErrDevice, arg, "is on "+s.Device().String()+" but sequences[0] is on "+seqs[0].Device().String(),
					"move the sequences to one device"))
			}
		}
		longest = max(longest, s.Dim(0))
	}
	dim := 1
	if batchFirst {
		dim = 0
	}
	return lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		padded := make([]*lathe.Tensor, len(a))
		for i, s := range a {
			padded[i] = s
			if n := s.Dim(0); n < longest {
				pads := make([]int, 2*s.Rank())
				pads[len(pads)-1] = longest - n
				padded[i] = s.Pad(pads, paddingValue)
			}
		}
		return lathe.Stack(padded, dim)
	}, seqs...)
}

// PackPaddedSequence packs input, [T, N, *] ([N, T, *] with batchFirst),
// of sequences of the given lengths (each in [1, T]), as
// torch.nn.utils.rnn.pack_padded_sequence. With enforceSorted the lengths
// must not increase, and the indices are nil; otherwise the sequences are
// sorted by decreasing length (ties in batch order, as torch's sort
// gives them). Data is differentiable in input. Lengths that are not one
// per sequence (ErrShape), a length outside [1, T] (torch refuses 0, and
// reads past the input for one beyond T) and, with enforceSorted, an
// increasing one are errors (ErrValue).
func PackPaddedSequence(input *lathe.Tensor, lengths []int, batchFirst, enforceSorted bool) *PackedSequence {
	const op = "pack_padded_sequence"
	if err := input.CheckArg(op, "input"); err != nil {
		return failedPacked(err)
	}
	if input.Rank() < 2 {
		return failedPacked(nnError(op, lathe.ErrShape, "input", "is "+strconv.Itoa(input.Rank())+"-d",
			"give [T, N, *], or [N, T, *] with batchFirst"))
	}
	tdim, ndim := 0, 1
	if batchFirst {
		tdim, ndim = 1, 0
	}
	steps, n := input.Dim(tdim), input.Dim(ndim)
	if len(lengths) != n {
		return failedPacked(nnError(op, lathe.ErrShape, "lengths", "has "+strconv.Itoa(len(lengths))+" lengths for a batch of "+strconv.Itoa(n),
			"give one length per sequence (torch: expected lengths of batch size)"))
	}
	for i, l := range lengths {
		if l < 1 || l > steps {
			return failedPacked(nnError(op, lathe.ErrValue, "lengths", "holds "+strconv.Itoa(l)+" at "+strconv.Itoa(i)+", outside [1, "+
				strconv.Itoa(steps)+"] (input has "+strconv.Itoa(steps)+" time steps)", "give each sequence's length, at least 1 and at most T"))
		}
		if enforceSorted && i > 0 && l > lengths[i-1] {
			return failedPacked(nnError(op, lathe.ErrValue, "lengths", "increases at "+strconv.Itoa(i)+" ("+strconv.Itoa(lengths[i-1])+" then "+
				strconv.Itoa(l)+"), but enforceSorted needs them in decreasing order", "sort the batch by decreasing length, or pass enforceSorted false"))
		}
	}
	var sorted, unsorted []int
	if !enforceSorted {
		sorted = make([]int, n)
		for i := range sorted {
			sorted[i] = i
		}
		sort.SliceStable(sorted, func(a, b int) bool { return lengths[sorted[a]] > lengths[sorted[b]] })
		unsorted = inversePermutation(sorted)
	}
	batchSizes := make([]int, lengths[0])
	if sorted != nil {
		batchSizes = make([]int, lengths[sorted[0]])
	}
	for _, l := range lengths {
		for t := range l {
			batchSizes[t]++
		}
	}
	var idx *lathe.Tensor // made outside the body, which would leave it to the collector
	if sorted != nil {
		idx = indexTensor(sorted, input.Device())
	}
	data := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		x := a[0]
		if batchFirst {
			x = x.Transpose(0, 1)
		}
		if idx != nil {
			x = x.IndexSelect(1, idx)
		}
		parts := make([]*lathe.Tensor, len(batchSizes))
		for t, b := range batchSizes {
			parts[t] = x.Narrow(0, t, 1).Squeeze(0).Narrow(0, 0, b)
		}
		return lathe.Concat(parts, 0)
	}, input)
	if idx != nil {
		lathe.ReleaseWithGraph(data, idx)
	}
	return &PackedSequence{Data: data, BatchSizes: batchSizes, SortedIndices: sorted, UnsortedIndices: unsorted}
}

// PackSequence packs seqs, each [Lᵢ, *], as
// torch.nn.utils.rnn.pack_sequence: PackPaddedSequence of their
// PadSequence.
func PackSequence(seqs []*lathe.Tensor, enforceSorted bool) *PackedSequence {
	padded := PadSequence(seqs, false, 0)
	if err := padded.Err(); err != nil {
		return failedPacked(relabelOp(err, "pack_sequence"))
	}
	lengths := make([]int, len(seqs))
	for i, s := range seqs {
		lengths[i] = s.Dim(0)
	}
	p := PackPaddedSequence(padded, lengths, false, enforceSorted)
	if err := p.Data.Err(); err != nil {
		padded.Release()
		return failedPacked(relabelOp(err, "pack_sequence"))
	}
	lathe.ReleaseWithGraph(p.Data, padded)
	return p
}

// relabelOp names op as the failed call where err is an nn error of one
// of the functions it calls.
func relabelOp(err error, op string) error {
	if e, ok := err.(*lathe.Error); ok {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// PadPackedSequence undoes PackPaddedSequence, as
// torch.nn.utils.rnn.pad_packed_sequence: it returns [T, N, *] ([N, T, *]
// with batchFirst) in the batch's own order, paddingValue past each
// sequence's end, and the lengths. T is the longest length, or
// totalLength where that is larger (0: the longest; a totalLength below
// it is an error, as torch's).
func PadPackedSequence(p *PackedSequence, batchFirst bool, paddingValue float64, totalLength int) (*lathe.Tensor, []int) {
	const op = "pad_packed_sequence"
	if err := checkPacked(op, p); err != nil {
		return lathe.Failed(err), nil
	}
	bs := p.BatchSizes
	steps := len(bs)
	if totalLength > 0 && totalLength < steps || totalLength < 0 {
		return lathe.Failed(nnError(op, lathe.ErrValue, "total_length", "is "+strconv.Itoa(totalLength)+", below the longest length "+strconv.Itoa(steps),
			"give a total length at least the longest sequence's, or 0")), nil
	}
	steps = max(steps, totalLength)
	n := bs[0]
	var idx *lathe.Tensor
	if p.UnsortedIndices != nil {
		idx = indexTensor(p.UnsortedIndices, p.Data.Device())
	}
	padded := lathe.Compose(func(a []*lathe.Tensor) *lathe.Tensor {
		data := a[0]
		parts := make([]*lathe.Tensor, steps)
		off := 0
		for t := range steps {
			b := 0
			if t < len(bs) {
				b = bs[t]
			}
			part := data.Narrow(0, off, b)
			off += b
			if b < n {
				pads := make([]int, 2*data.Rank())
				pads[len(pads)-1] = n - b
				part = part.Pad(pads, paddingValue)
			}
			parts[t] = part
		}
		x := lathe.Stack(parts, 0)
		if idx != nil {
			x = x.IndexSelect(1, idx)
		}
		if batchFirst {
			x = x.Transpose(0, 1)
		}
		return x
	}, p.Data)
	if idx != nil {
		lathe.ReleaseWithGraph(padded, idx)
	}
	if err := padded.Err(); err != nil {
		return padded, nil
	}
	return padded, p.Lengths()
}

// checkPacked checks that p is whole: Data of Σ BatchSizes rows, batch
// sizes positive and not increasing, and indices that are inverse
// permutations of the batch.
func checkPacked(op string, p *PackedSequence) error {
	if p == nil {
		return nnError(op, lathe.ErrValue, "p", "is nil", "pack sequences with PackPaddedSequence or PackSequence")
	}
	if err := p.Data.CheckArg(op, "data"); err != nil {
		return err
	}
	total := 0
	for t, b := range p.BatchSizes {
		if b < 1 || t > 0 && b > p.BatchSizes[t-1] {
			return nnError(op, lathe.ErrValue, "batch_sizes", "holds "+strconv.Itoa(b)+" at step "+strconv.Itoa(t)+
				": batch sizes are positive and do not increase", "make the PackedSequence with PackPaddedSequence or PackSequence")
		}
		total += b
	}
	if len(p.BatchSizes) == 0 || p.Data.Rank() < 1 || p.Data.Dim(0) != total {
		return nnError(op, lathe.ErrShape, "data", "has shape "+shapeString(p.Data.Shape())+" for batch sizes summing to "+strconv.Itoa(total),
			"make the PackedSequence with PackPaddedSequence or PackSequence")
	}
	n := p.BatchSizes[0]
	if (p.SortedIndices == nil) != (p.UnsortedIndices == nil) || p.SortedIndices != nil &&
		(len(p.SortedIndices) != n || len(p.UnsortedIndices) != n || !slices.Equal(inversePermutation(p.SortedIndices), p.UnsortedIndices)) {
		return nnError(op, lathe.ErrValue, "sorted_indices", "and unsorted_indices are not inverse permutations of the batch of "+strconv.Itoa(n),
			"make the PackedSequence with PackPaddedSequence or PackSequence")
	}
	return nil
}

// inversePermutation is perm's inverse; nil where perm is not a
// permutation of [0, len(perm)).
func inversePermutation(perm []int) []int {
	inv := make([]int, len(perm))
	seen := make([]bool, len(perm))
	for i, j := range perm {
		if j < 0 || j >= len(perm) || seen[j] {
			return nil
		}
		seen[j], inv[j] = true, i
	}
	return inv
}

// indexTensor is v as an Int64 tensor on dev.
func indexTensor(v []int, dev lathe.Device) *lathe.Tensor {
	w := make([]int64, len(v))
	for i, x := range v {
		w[i] = int64(x)
	}
	t := lathe.FromSlice(lathe.CPU, w, len(w))
	if dev == lathe.CPU {
		return t
	}
	defer t.Release()
	return t.To(dev)
}

// ForwardPacked runs the LSTM over the packed sequences p (Data [Σ L, in])
// from the states h0 and c0 ((NumLayers·D, N, hidden) in the batch's own
// order, h0's last dim ProjSize where it is set; nil means zeros), as
// torch.nn.LSTM does with a PackedSequence: each sequence runs over its own
// length, and the backward direction starts at its own last step. It
// returns the output packed as p ([Σ L, D·hidden]) and the final states,
// each sequence's at its own length, in the batch's own order. BatchFirst
// does not apply (a PackedSequence has no batch dim).
func (l *LSTM) ForwardPacked(p *PackedSequence, h0, c0 *lathe.Tensor) (out *PackedSequence, hn, cn *lathe.Tensor) {
	if l == nil {
		f := lathe.Failed(nilModule("lstm", "l"))
		return &PackedSequence{Data: f}, f, f
	}
	return l.runPacked(p, h0, c0)
}

// ForwardPacked runs the RNN over the packed sequences p from h0, as
// LSTM's ForwardPacked does.
func (r *RNN) ForwardPacked(p *PackedSequence, h0 *lathe.Tensor) (out *PackedSequence, hn *lathe.Tensor) {
	if r == nil {
		f := lathe.Failed(nilModule("rnn", "r"))
		return &PackedSequence{Data: f}, f
	}
	out, hn, _ = r.runPacked(p, h0, nil)
	return out, hn
}

// ForwardPacked runs the GRU over the packed sequences p from h0, as
// LSTM's ForwardPacked does.
func (g *GRU) ForwardPacked(p *PackedSequence, h0 *lathe.Tensor) (out *PackedSequence, hn *lathe.Tensor) {
	if g == nil {
		f := lathe.Failed(nilModule("gru", "g"))
		return &PackedSequence{Data: f}, f
	}
	out, hn, _ = g.runPacked(p, h0, nil)
	return out, hn
}

// runPacked is run for a PackedSequence.
func (r *RNNBase) runPacked(p *PackedSequence, h0, c0 *lathe.Tensor) (out *PackedSequence, hn, cn *lathe.Tensor) {
	op := r.kind.String()
	fail := func(err error) (*PackedSequence, *lathe.Tensor, *lathe.Tensor) {
		f := lathe.Failed(wrapErr(op, err))
		return &PackedSequence{Data: f}, f, f
	}
	if err := checkPacked(op, p); err != nil {
		return fail(err)
	}
	for _, q := range r.Parameters() {
		if err := q.T.CheckArg(op, q.Name); err != nil {
			return fail(err)
		}
	}
	dirs := r.dirs()
	if r.NumLayers < 1 || len(r.Weights) != r.NumLayers*dirs {
		return fail(nnError(op, lathe.ErrValue, "Weights", "has "+strconv.Itoa(len(r.Weights))+" entries for "+
			strconv.Itoa(r.NumLayers)+" layers of "+strconv.Itoa(dirs)+" directions", "build the layer with NewRNN, NewLSTM or NewGRU"))
	}
	x := p.Data
	if x.Rank() != 2 || x.Dim(1) != r.InputSize {
		return fail(nnError(op, lathe.ErrShape, "data", "has shape "+shapeString(x.Shape())+", want [Σ lengths, "+strconv.Itoa(r.InputSize)+"]",
			"pack [T, N, input_size] sequences"))
	}
	batch, H, hOut := p.BatchSizes[0], r.HiddenSize, r.outSize()
	hShape, cShape := []int{r.NumLayers * dirs, batch, hOut}, []int{r.NumLayers * dirs, batch, H}
	for i, s := range []*lathe.Tensor{h0, c0} {
		if s == nil {
			continue
		}
		name, want := "h0", hShape
		if i == 1 {
			name, want = "c0", cShape
		}
		if err := s.CheckArg(op, name); err != nil {
			return fail(err)
		}
		if !slices.Equal(s.Shape(), want) {
			return fail(nnError(op, lathe.ErrShape, name, "has shape "+shapeString(s.Shape())+", want "+shapeString(want),
				"give (num_layers·directions, batch, hidden), the batch in its own order"))
		}
	}
	shapes := [][]int{{x.Dim(0), dirs * hOut}, hShape, cShape}
	states := []*lathe.Tensor{h0, c0}
	if r.kind != kindLSTM {
		shapes, states = shapes[:2], states[:1]
	}
	zeros := zeroStates(x, states[:1], hShape)
	if len(states) > 1 {
		zeros = append(zeros, zeroStates(x, states[1:], cShape)...)
	}
	var sortIdx, unsortIdx *lathe.Tensor // made outside the body, which would leave them to the collector
	if p.SortedIndices != nil {
		sortIdx, unsortIdx = indexTensor(p.SortedIndices, x.Device()), indexTensor(p.UnsortedIndices, x.Device())
		zeros = append(zeros, sortIdx, unsortIdx)
	}
	results := composeResults(op, func(a []*lathe.Tensor) []*lathe.Tensor {
		return r.packedLayers(a[0], a[1:], p.BatchSizes, sortIdx, unsortIdx)
	}, shapes, 0, append([]*lathe.Tensor{x}, states...), zeros...)
	out = &PackedSequence{Data: results[0], BatchSizes: p.BatchSizes, SortedIndices: p.SortedIndices, UnsortedIndices: p.UnsortedIndices}
	hn = results[1]
	if r.kind == kindLSTM {
		cn = results[2]
	}
	return out, hn, cn
}

// packedLayers is layers over packed data x, with batch sizes bs and
// the states permuted by sortIdx (nil: sorted already) and hn and cn back
// by unsortIdx. At step t the first BatchSizes[t] sequences run (they are sorted
// by length); the others keep their states, which are their final ones
// (forward), or still the initial ones (backward, which meets each
// sequence first at its last step).
func (r *RNNBase) packedLayers(x *lathe.Tensor, states []*lathe.Tensor, bs []int, sortIdx, unsortIdx *lathe.Tensor) []*lathe.Tensor {
	batch := bs[0]
	if sortIdx != nil {
		states = slices.Clone(states)
		for i, s := range states {
			states[i] = s.IndexSelect(1, sortIdx)
		}
	}
	offsets := make([]int, len(bs))
	for t := 1; t < len(bs); t++ {
		offsets[t] = offsets[t-1] + bs[t-1]
	}
	// keep runs the first b rows of s into next and keeps the rest.
	keep := func(next, s *lathe.Tensor, b int) *lathe.Tensor {
		if s == nil || b == batch {
			return next
		}
		return lathe.Concat([]*lathe.Tensor{next, s.Narrow(0, b, batch-b)}, 0)
	}
	x, hs, cs := r.layerStack(x, states, 1, func(w RNNWeights, gi, h, c *lathe.Tensor, reverse bool) (y, hn, cn *lathe.Tensor) {
		ys := make([]*lathe.Tensor, len(bs))
		for i := range bs {
			t := i
			if reverse {
				t = len(bs) - 1 - i
			}
			b := bs[t]
			hb, cb := h, c
			if b < batch {
				hb = h.Narrow(0, 0, b)
				if c != nil {
					cb = c.Narrow(0, 0, b)
				}
			}
			h2, c2 := r.kind.step(w, gi.Narrow(0, offsets[t], b), hb, cb, r.HiddenSize)
			ys[t] = h2
			h = keep(h2, h, b)
			if c != nil {
				c = keep(c2, c, b)
			}
		}
		return lathe.Concat(ys, 0), h, c
	})
	hn := lathe.Stack(hs, 0)
	var cn *lathe.Tensor
	if r.kind == kindLSTM {
		cn = lathe.Stack(cs, 0)
	}
	if unsortIdx != nil {
		hn = hn.IndexSelect(1, unsortIdx)
		if cn != nil {
			cn = cn.IndexSelect(1, unsortIdx)
		}
	}
	results := []*lathe.Tensor{x, hn}
	if cn != nil {
		results = append(results, cn)
	}
	return results
}
