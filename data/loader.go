package data

import (
	"errors"
	"iter"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/lathe-ml/lathe"
)

// Batch is one batch of a Loader: for each tensor of an example, the
// examples' tensors stacked along a new first dimension (or what the
// Loader's Collate made). The caller releases it.
type Batch []*lathe.Tensor

// Release releases each tensor of the batch.
func (b Batch) Release() { release(b) }

// Loader walks a Dataset in batches, as torch.utils.data.DataLoader with
// its map-style sampler in the loop's own goroutine (num_workers=0). Set
// its fields, then range over All once per epoch; change them only
// between epochs, and run one epoch of a Loader at a time.
type Loader struct {
	Dataset Dataset
	// BatchSize is the examples per batch; 0 means 1, as torch's default.
	BatchSize int
	// Shuffle walks the examples in a new random order each epoch, drawn
	// from the Loader's own generator, seeded with Seed at the first
	// shuffled epoch: the same seed gives the same orders, epoch after
	// epoch, whatever else draws from lathe's stream. Without it the
	// examples come in index order.
	Shuffle bool
	Seed    uint64
	// DropLast leaves out the last batch where it is short.
	DropLast bool
	// Device, where set, is the device the batches are put on; the zero
	// Device leaves them on the dataset's.
	Device lathe.Device
	// Collate, where set, makes a batch of the examples (Get's tensors,
	// which the Loader releases after it returns, so it must not keep
	// them). Where nil, each position's tensors are stacked (lathe.Stack
	// along dim 0), or the dataset's GetBatch gives the batch where it
	// is a BatchGetter.
	Collate func(examples [][]*lathe.Tensor) ([]*lathe.Tensor, error)

	mu  sync.Mutex
	rng *rand.Rand
}

const loaderOp = "data.loader"

// Len is the number of batches an epoch yields.
func (l *Loader) Len() int {
	if l.Dataset == nil || l.BatchSize < 0 {
		return 0
	}
	n, b := l.Dataset.Len(), max(l.BatchSize, 1)
	if l.DropLast {
		return n / b
	}
	return (n + b - 1) / b
}

// All is one epoch: each batch in turn with a nil error, or, where the
// Loader's fields are wrong or a Get, the collate or the move to Device
// fails, a nil batch and the error (a *lathe.Error that names the
// example and wraps the cause), after which it stops. The batches are the
// caller's to release; nothing else is left behind, however the loop
// ends.
func (l *Loader) All() iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		order, err := l.order()
		if err != nil {
			yield(nil, err)
			return
		}
		b := max(l.BatchSize, 1)
		for at := 0; at < len(order); at += b {
			idx := order[at:min(at+b, len(order))]
			if len(idx) < b && l.DropLast {
				return
			}
			batch, err := l.batch(idx)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(batch, nil) {
				return
			}
		}
	}
}

// order checks the fields and returns the epoch's order of examples.
func (l *Loader) order() ([]int, error) {
	switch {
	case l.Dataset == nil:
		return nil, lathe.NewError(loaderOp, lathe.ErrValue, "Dataset", "is nil", "set the Loader's Dataset")
	case l.BatchSize < 0:
		return nil, lathe.NewError(loaderOp, lathe.ErrValue, "BatchSize", "is "+strconv.Itoa(l.BatchSize), "use a batch size ≥ 1 (0 means 1)")
	}
	n := l.Dataset.Len()
	if !l.Shuffle {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		return order, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rng == nil {
		l.rng = newRand(l.Seed)
	}
	return l.rng.Perm(n), nil
}

// batch makes the batch of the examples at idx, on l.Device if set.
func (l *Loader) batch(idx []int) (Batch, error) {
	var out []*lathe.Tensor
	var err error
	switch bg, ok := l.Dataset.(BatchGetter); {
	case l.Collate != nil:
		out, err = l.collate(idx)
	case ok:
		out, err = bg.GetBatch(idx)
		if err != nil {
			err = wrapCause(err, "Dataset", "GetBatch of "+strconv.Itoa(len(idx))+" examples from "+strconv.Itoa(idx[0])+" failed")
		}
	default:
		out, err = stackExamples(l.Dataset, idx)
	}
	if err != nil {
		return nil, err
	}
	if l.Device == (lathe.Device{}) {
		return out, nil
	}
	for i, t := range out {
		if t.Device() == l.Device {
			continue
		}
		moved := t.To(l.Device)
		t.Release()
		out[i] = moved
		if err := moved.Err(); err != nil {
			release(out)
			return nil, wrapCause(err, "Device", "moving the batch to "+l.Device.String()+" failed")
		}
	}
	return out, nil
}

// collate runs l.Collate on the examples at idx.
func (l *Loader) collate(idx []int) ([]*lathe.Tensor, error) {
	examples, err := getAll(l.Dataset, idx)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, e := range examples {
			release(e)
		}
	}()
	out, err := l.Collate(examples)
	if err != nil {
		release(out)
		return nil, wrapCause(err, "Collate", "failed")
	}
	return out, nil
}

// getAll is the examples of ds at idx; on a failure, those got so far are
// released.
func getAll(ds Dataset, idx []int) ([][]*lathe.Tensor, error) {
	examples := make([][]*lathe.Tensor, 0, len(idx))
	for _, i := range idx {
		e, err := ds.Get(i)
		if err == nil && len(e) == 0 {
			err = lathe.NewError(loaderOp, lathe.ErrValue, "Dataset", "gave no tensors", "return at least one tensor from Get")
		}
		if err != nil {
			release(e)
			for _, e := range examples {
				release(e)
			}
			return nil, wrapCause(err, "Dataset", "Get("+strconv.Itoa(i)+") failed")
		}
		examples = append(examples, e)
	}
	return examples, nil
}

// stackExamples gets the examples of ds at idx and stacks each position's
// tensors along a new dim 0.
func stackExamples(ds Dataset, idx []int) ([]*lathe.Tensor, error) {
	examples, err := getAll(ds, idx)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, e := range examples {
			release(e)
		}
	}()
	out := make([]*lathe.Tensor, len(examples[0]))
	column := make([]*lathe.Tensor, len(examples))
	for k := range out {
		for j, e := range examples {
			if len(e) != len(out) {
				release(out[:k])
				return nil, lathe.NewError(loaderOp, lathe.ErrShape, "Dataset", "gave "+strconv.Itoa(len(e))+" tensors for example "+
					strconv.Itoa(idx[j])+" but "+strconv.Itoa(len(out))+" for example "+strconv.Itoa(idx[0]), "give every example the same tensors")
			}
			column[j] = e[k]
		}
		out[k] = lathe.Stack(column, 0)
		if err := out[k].Err(); err != nil {
			release(out[:k+1])
			return nil, wrapCause(err, "Dataset", "stacking tensor "+strconv.Itoa(k)+" of examples "+strconv.Itoa(idx[0])+"… failed")
		}
	}
	return out, nil
}

// wrapCause is a Loader error that names the field at fault (arg), says
// what failed and wraps err, of
// err's kind where it is a *lathe.Error (ErrValue else).
func wrapCause(err error, arg, what string) error {
	kind := lathe.ErrValue
	var le *lathe.Error
	if errors.As(err, &le) && le.Kind != nil {
		kind = le.Kind
	}
	e := lathe.NewError(loaderOp, kind, arg, what, "")
	e.Err = err
	return e
}
