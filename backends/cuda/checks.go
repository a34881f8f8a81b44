package cuda

import (
	"encoding/binary"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/layout"
)

// Value checks on the device (dispatch's ValueChecker): an index out of
// range, an integer pow's negative exponent. A check is two kernels queued
// on the stream before the op (index.cu): index_check writes the row-major
// position of the first bad value into the check's slot by atomicMin, and
// check_fetch copies that value beside it. Nothing waits for them: the
// slots are read back by the next drain, which a read-back or Synchronize
// makes once its own wait is over, and which returns the error of the
// first check that failed since the last drain. The indexing kernels bound
// every access whatever the values, so the op that follows a failed check
// computes a wrong result, never a fault.

// checkSlots is how many checks a device queues between drains. One more
// drains the log first, which waits for the stream: a program that never
// reads back waits once every checkSlots checks.
const checkSlots = 4096

// slotBytes is a slot: the position of the first bad value (all ones for
// none) and that value, two 64-bit words.
const slotBytes = 16

// checkQueue is one device's value checks, queued since the last drain:
// dispatch's CheckLog on the host and the slots on the device, which the
// kernels of check i write at slot i.
type checkQueue struct {
	mem  slotMemory
	size int // slots

	// mu is held while a check is queued and while the slots are drained,
	// so a drain finds the kernels of every logged check on the stream
	// before its copy. It is taken before the device's own mutex.
	mu    sync.Mutex
	log   dispatch.CheckLog
	slots uint64 // the slots' device address, 0 until the first check
}

// slotMemory is what a queue needs of its device besides launches, which
// go through enqueue.
type slotMemory interface {
	// alloc returns n bytes of device memory, which the queue keeps for
	// the device's life.
	alloc(n int) (uint64, error)
	// fill queues setting n bytes at p to b.
	fill(p uint64, b byte, n int) error
	// read copies len(dst) bytes from p once the work queued before it is
	// done: it waits for the stream.
	read(dst []byte, p uint64) error
}

func newCheckQueue(mem slotMemory, size int) *checkQueue {
	return &checkQueue{mem: mem, size: size}
}

// add queues c over the values of t and returns at once, unless the queue
// is full: it drains first (a wait, which settles the earlier checks and
// leaves a failure for the next Sync), then queues c.
//
// An int8 or uint8 tensor (an integer pow's exponents) is checked widened
// to int32, exactly; the temporary goes back to the pool once the check is
// queued, as borrow's does.
func (q *checkQueue) add(t *dispatch.Tensor, c *dispatch.ValueCheck) error {
	switch t.DType {
	case dispatch.Int32, dispatch.Int64, dispatch.Int8, dispatch.Uint8:
	default:
		return dispatch.Unsupported(t.Device, c.Op, t.DType)
	}
	n := t.Numel()
	if n == 0 {
		return nil
	}
	t, release, err := widened(t)
	if err != nil {
		return err
	}
	defer release()
	sfx := suffix(t.DType)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.slots == 0 {
		p, err := q.mem.alloc(q.size * slotBytes)
		if err != nil {
			return err
		}
		if err := q.mem.fill(p, 0xff, q.size*slotBytes); err != nil {
			return err
		}
		q.slots = p
	}
	if q.log.Len() == q.size {
		if err := q.drainLocked(); err != nil {
			return err
		}
	}
	values := viewOf(t)
	w := layout.Walk{Shape: values.shape, Strides: [][]int{values.strides}}
	if w.Collapse().Rank() > maxRank {
		// Dims that do not merge: the kernels walk a contiguous copy,
		// which goes back to the pool once queued (later work on the
		// stream runs after the check's).
		p, free, err := borrow(t.Device, n*t.DType.Size())
		if err != nil {
			return err
		}
		defer free()
		c := view{ptr: p, dtype: t.DType, shape: t.Shape, strides: dispatch.ContiguousStrides(t.Shape)}
		if err := copyInto(t.Device, c, values); err != nil {
			return err
		}
		values = c
		w.Strides[0] = c.strides
	}
	l, err := layoutOf(w)
	if err != nil {
		return err
	}
	slot := q.slots + uint64(q.log.Add(c)*slotBytes)
	g, b := grid1(n)
	if err := enqueue(t.Device, "index", "index_check_"+sfx, g, b, 0,
		slot, values.ptr, int64(n), cBytes(&l), c.Min, c.Max, c.Ignore, c.Flags()); err != nil {
		return err
	}
	one := [3]uint32{1, 1, 1}
	return enqueue(t.Device, "index", "check_fetch_"+sfx, one, one, 0, slot, values.ptr, cBytes(&l))
}

// report drains the log and returns the error of the first check that
// failed since the last report, not yet read through its tensors: what
// Sync returns.
func (q *checkQueue) report() error {
	if err := q.drain(); err != nil {
		return err
	}
	return q.log.Failure()
}

// drain reads the outcome of the checks queued so far.
func (q *checkQueue) drain() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.drainLocked()
}

// drainLocked copies the used slots to the host (a wait for the stream),
// queues setting them to all ones again, and settles each check (the
// failed ones wait in the log for the next Sync). q.mu is held. If the
// copy or the reset fails, the checks stay logged, their slots as they
// were.
func (q *checkQueue) drainLocked() error {
	n := q.log.Len()
	if n == 0 {
		return nil
	}
	raw := make([]byte, n*slotBytes)
	if err := q.mem.read(raw, q.slots); err != nil {
		return err
	}
	if err := q.mem.fill(q.slots, 0xff, len(raw)); err != nil {
		return err
	}
	pos, val := make([]int64, n), make([]int64, n)
	for i := range n {
		// All ones is dispatch.NoBad as an int64.
		pos[i] = int64(binary.LittleEndian.Uint64(raw[i*slotBytes:]))
		val[i] = int64(binary.LittleEndian.Uint64(raw[i*slotBytes+8:]))
	}
	q.log.Outcome(n, pos, val)
	return nil
}
