package data

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe"
)

// Dataset is a sized collection of examples, as a torch map-style
// Dataset (__len__ and __getitem__).
type Dataset interface {
	// Len is the number of examples.
	Len() int
	// Get returns example i, 0 ≤ i < Len(), as tensors that the caller
	// releases (views of the dataset's own tensors are fine: releasing a
	// view leaves what it views alone).
	Get(i int) ([]*lathe.Tensor, error)
}

// BatchGetter is a Dataset that can also return a batch of examples at
// once, each tensor with a new first dimension of len(indices): the
// batch that stacking the examples' tensors gives. A Loader uses it in
// place of Get and stacking where the dataset has it.
type BatchGetter interface {
	Dataset
	GetBatch(indices []int) ([]*lathe.Tensor, error)
}

// TensorDataset is a Dataset of tensors whose first dimension indexes
// the examples, as torch.utils.data.TensorDataset: example i is the i-th
// slice of each. It holds the tensors without owning them: the caller
// releases them once the dataset is no longer used.
type TensorDataset struct {
	tensors []*lathe.Tensor
	n       int
}

// NewTensorDataset makes a TensorDataset of one or more tensors of rank
// ≥ 1 of the same first size, on one device.
func NewTensorDataset(tensors ...*lathe.Tensor) (*TensorDataset, error) {
	const op = "data.tensor_dataset"
	if len(tensors) == 0 {
		return nil, lathe.NewError(op, lathe.ErrValue, "tensors", "are none", "pass at least one tensor")
	}
	n := -1
	for i, t := range tensors {
		arg := "tensors[" + strconv.Itoa(i) + "]"
		if err := t.CheckArg(op, arg); err != nil {
			return nil, err
		}
		s := t.Shape()
		switch {
		case len(s) == 0:
			return nil, lathe.NewError(op, lathe.ErrShape, arg, "is 0-d, with no first dimension to index examples by",
				"give tensors of rank ≥ 1 whose first size is the number of examples")
		case n >= 0 && s[0] != n:
			return nil, lathe.NewError(op, lathe.ErrShape, arg, "has "+strconv.Itoa(s[0])+" examples (shape "+fmtShape(s)+
				") but tensors[0] has "+strconv.Itoa(n), "give tensors of the same first size")
		case t.Device() != tensors[0].Device():
			return nil, lathe.NewError(op, lathe.ErrDevice, arg, "is on "+t.Device().String()+" but tensors[0] is on "+
				tensors[0].Device().String(), "move it with .To("+tensors[0].Device().String()+")")
		}
		n = s[0]
	}
	return &TensorDataset{tensors: slices.Clone(tensors), n: n}, nil
}

// Len is the number of examples: the tensors' first size.
func (d *TensorDataset) Len() int { return d.n }

// Get returns views of the i-th slice of each tensor, to be released.
func (d *TensorDataset) Get(i int) ([]*lathe.Tensor, error) {
	if err := checkIndex("data.tensor_dataset.get", "i", i, d.n); err != nil {
		return nil, err
	}
	out := make([]*lathe.Tensor, len(d.tensors))
	for k, t := range d.tensors {
		row := t.Narrow(0, i, 1)
		out[k] = row.Squeeze(0)
		row.Release()
		if err := out[k].Err(); err != nil {
			release(out[:k+1])
			return nil, err
		}
	}
	return out, nil
}

// GetBatch gathers the examples at indices from each tensor at once
// (IndexSelect), in the order given.
func (d *TensorDataset) GetBatch(indices []int) ([]*lathe.Tensor, error) {
	const op = "data.tensor_dataset.get_batch"
	idx := make([]int64, len(indices))
	for k, i := range indices {
		if err := checkIndex(op, "indices", i, d.n); err != nil {
			return nil, err
		}
		idx[k] = int64(i)
	}
	index := lathe.FromSlice(d.tensors[0].Device(), idx)
	defer index.Release()
	out := make([]*lathe.Tensor, len(d.tensors))
	for k, t := range d.tensors {
		out[k] = t.IndexSelect(0, index)
		if err := out[k].Err(); err != nil {
			release(out[:k+1])
			return nil, err
		}
	}
	return out, nil
}

// Subset is the examples of a Dataset at some of its indices, in their
// order, as torch.utils.data.Subset.
type Subset struct {
	Dataset Dataset
	Indices []int
}

// NewSubset is the Subset of ds at indices (copied), each in [0, Len()).
func NewSubset(ds Dataset, indices []int) (*Subset, error) {
	const op = "data.subset"
	if ds == nil {
		return nil, lathe.NewError(op, lathe.ErrValue, "ds", "is nil", "pass a Dataset")
	}
	n := ds.Len()
	for _, i := range indices {
		if err := checkIndex(op, "indices", i, n); err != nil {
			return nil, err
		}
	}
	return &Subset{Dataset: ds, Indices: slices.Clone(indices)}, nil
}

// Len is the number of indices.
func (s *Subset) Len() int { return len(s.Indices) }

// Get is the example of the dataset at Indices[i].
func (s *Subset) Get(i int) ([]*lathe.Tensor, error) {
	if err := checkIndex("data.subset.get", "i", i, len(s.Indices)); err != nil {
		return nil, err
	}
	return s.Dataset.Get(s.Indices[i])
}

// GetBatch is the dataset's GetBatch of the mapped indices where it has
// one, and else stacks the examples as a Loader does.
func (s *Subset) GetBatch(indices []int) ([]*lathe.Tensor, error) {
	mapped := make([]int, len(indices))
	for k, i := range indices {
		if err := checkIndex("data.subset.get_batch", "indices", i, len(s.Indices)); err != nil {
			return nil, err
		}
		mapped[k] = s.Indices[i]
	}
	if b, ok := s.Dataset.(BatchGetter); ok {
		return b.GetBatch(mapped)
	}
	return stackExamples(s.Dataset, mapped)
}

// RandomSplit splits ds into len(lengths) Subsets of those lengths, which
// must sum to ds.Len(), over a random permutation of its indices drawn
// from a generator seeded with seed (the same split for the same seed,
// whatever lathe's own stream has drawn), as
// torch.utils.data.random_split(ds, lengths, generator) with integer
// lengths (torch's permutation differs: its generator is not lathe's).
func RandomSplit(ds Dataset, seed uint64, lengths ...int) ([]*Subset, error) {
	const op = "data.random_split"
	if ds == nil {
		return nil, lathe.NewError(op, lathe.ErrValue, "ds", "is nil", "pass a Dataset")
	}
	sum := 0
	for i, l := range lengths {
		if l < 0 {
			return nil, lathe.NewError(op, lathe.ErrValue, "lengths", "has "+strconv.Itoa(l)+" at "+strconv.Itoa(i), "give lengths ≥ 0")
		}
		sum += l
	}
	if n := ds.Len(); sum != n {
		return nil, lathe.NewError(op, lathe.ErrValue, "lengths", "sum to "+strconv.Itoa(sum)+", but the dataset has "+strconv.Itoa(n)+" examples",
			"give lengths that sum to the dataset's length, or fractions to RandomSplitFractions")
	}
	perm := newRand(seed).Perm(sum)
	out := make([]*Subset, len(lengths))
	at := 0
	for i, l := range lengths {
		out[i] = &Subset{Dataset: ds, Indices: perm[at : at+l : at+l]}
		at += l
	}
	return out, nil
}

// RandomSplitFractions is RandomSplit with lengths given as fractions of
// ds.Len() that sum to 1 (within 1e-6), as torch 1.13's random_split
// takes them: each length is floor(n·fraction), and the examples left
// over go one each to the splits in turn from the first.
func RandomSplitFractions(ds Dataset, seed uint64, fractions ...float64) ([]*Subset, error) {
	const op = "data.random_split"
	if ds == nil {
		return nil, lathe.NewError(op, lathe.ErrValue, "ds", "is nil", "pass a Dataset")
	}
	sum := 0.0
	for i, f := range fractions {
		if !(f >= 0 && f <= 1) {
			return nil, lathe.NewError(op, lathe.ErrValue, "fractions", "has "+strconv.FormatFloat(f, 'g', -1, 64)+" at "+strconv.Itoa(i),
				"give fractions in [0, 1]")
		}
		sum += f
	}
	if math.Abs(sum-1) > 1e-6 || len(fractions) == 0 {
		return nil, lathe.NewError(op, lathe.ErrValue, "fractions", "sum to "+strconv.FormatFloat(sum, 'g', -1, 64), "give fractions that sum to 1")
	}
	n := ds.Len()
	lengths := make([]int, len(fractions))
	left := n
	for i, f := range fractions {
		lengths[i] = int(math.Floor(float64(n) * f))
		left -= lengths[i]
	}
	for i := 0; left > 0; i = (i + 1) % len(lengths) {
		lengths[i]++
		left--
	}
	return RandomSplit(ds, seed, lengths...)
}

// newRand is the generator of a seed, for RandomSplit and Loader.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x64617461)) }

func checkIndex(op, arg string, i, n int) error {
	if i < 0 || i >= n {
		return lathe.NewError(op, lathe.ErrIndex, arg, "has the index "+strconv.Itoa(i)+", outside [0, "+strconv.Itoa(n)+")",
			"use an index in [0, Len())")
	}
	return nil
}

func fmtShape(s []int) string {
	b := []byte{'['}
	for i, v := range s {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return string(append(b, ']'))
}

// release releases each tensor of ts.
func release(ts []*lathe.Tensor) {
	for _, t := range ts {
		t.Release()
	}
}
