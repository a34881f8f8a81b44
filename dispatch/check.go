package dispatch

import (
	"slices"
	"sync"
)

// Value checks: what an argument's shape cannot say but its values can,
// such as an index out of range, a class outside [0, C) or a negative
// integer exponent. An op's schema declares them (Op.Checks) and Call runs
// them before the op, on the device where the values are: the cpu checks
// on the host and the call fails at once; a GPU queues a check kernel that
// writes the outcome to device memory, and the error comes back, with the
// op and the user's call site, at the latest from the next read-back or
// Synchronize, so that no check makes a device wait in the middle of a
// step (PyTorch's device-side assert does the same, but kills the
// process). The kernels of such ops stay inside their buffers whatever the
// values, so a failed check leaves a result that is wrong, never memory
// that is corrupt.

// ValueCheck says that every value of an integer argument lies in
// [Min, Max], except Ignore when Ignoring is set (a loss's ignore_index),
// or, when Outside is set, that none does (an integer divisor's zero).
type ValueCheck struct {
	Arg      int   // the argument, a tensor of an integer dtype
	Min, Max int64 // the values it may hold, both included (those it may not, when Outside)
	Ignore   int64 // a value outside [Min, Max] that is allowed too, when Ignoring
	Ignoring bool
	Outside  bool // the values must lie outside [Min, Max] instead
	// Fail is the error for a value v outside the range; Error adds the op
	// and the call site.
	Fail func(v int64) *Error
	// Op is the op whose call queued the check, which Call fills in.
	Op   string
	site Site
	// pending is the outcome of a check that a device queued, which the
	// result of the op carries (pending.go); failure is its error.
	pending *Pending
	failure *Error
}

// Bad reports whether v breaks the check.
func (c *ValueCheck) Bad(v int64) bool {
	return (v < c.Min || v > c.Max) != c.Outside && !(c.Ignoring && v == c.Ignore)
}

// Flags are Ignoring (bit 0) and Outside (bit 1) as one word, as the
// devices' check kernels take them.
func (c *ValueCheck) Flags() int32 {
	f := int32(0)
	if c.Ignoring {
		f |= 1
	}
	if c.Outside {
		f |= 2
	}
	return f
}

// Error is the check's error for the first bad value v (in row-major
// order), naming the op and the user's call, on every backend alike.
func (c *ValueCheck) Error(v int64) *Error {
	e := c.Fail(v)
	e.Op = c.Op
	if e.Site == "" {
		e.Site = c.site.String()
	}
	e.fromCheck = true
	return e
}

// ValueChecker is a backend that checks values where they live. On the
// host, CheckValues returns c.Error at once for the first bad value of t;
// a device queues the check behind the work already queued, in a
// CheckLog, and returns nil: reading the log back settles the check's
// Pending (pending.go), and the device's next Sync returns the error of
// the first check that failed since the last Sync (CheckLog.Failure).
type ValueChecker interface {
	CheckValues(t *Tensor, c *ValueCheck) error
}

// runChecks runs the checks of one call and returns the outcomes of those
// that a device queued. A backend without a ValueChecker has its values
// read back to the host and checked there.
func runChecks(op string, checks []ValueCheck, in []*Tensor) ([]*Pending, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	b, err := BackendFor(in[0].Device.Kind)
	if err != nil {
		return nil, err
	}
	site := CaptureSite()
	var queued []*Pending
	for i := range checks {
		c := &checks[i]
		t := in[c.Arg]
		if t.Numel() == 0 {
			continue
		}
		c.Op, c.site = op, site
		if vc, ok := b.(ValueChecker); ok && in[0].Device.Kind != Host {
			c.pending = newPending()
			err = vc.CheckValues(t, c)
			if err == nil {
				queued = append(queued, c.pending)
			}
		} else if ok {
			err = vc.CheckValues(t, c)
		} else {
			err = checkOnHost(t, c)
		}
		if err != nil {
			return nil, err
		}
	}
	return queued, nil
}

// checkOnHost reads t back and checks it: the way for a backend that
// cannot check where its values are.
func checkOnHost(t *Tensor, c *ValueCheck) error {
	data, err := ReadStrided(t)
	if err != nil {
		return err
	}
	return c.Scan(data)
}

// Scan checks host values (a []int32 or []int64 in row-major order).
func (c *ValueCheck) Scan(data any) error {
	switch v := data.(type) {
	case []int32:
		for _, x := range v {
			if c.Bad(int64(x)) {
				return c.Error(int64(x))
			}
		}
	case []int64:
		for _, x := range v {
			if c.Bad(x) {
				return c.Error(x)
			}
		}
	case []int8:
		return scanInts(c, v)
	case []uint8:
		return scanInts(c, v)
	default:
		return &Error{Kind: ErrDType, Detail: "a value check needs integer values"}
	}
	return nil
}

func scanInts[T int8 | uint8](c *ValueCheck, v []T) error {
	for _, x := range v {
		if c.Bad(int64(x)) {
			return c.Error(int64(x))
		}
	}
	return nil
}

// ReadStrided copies any tensor's elements to the host in row-major order,
// as the Go slice of its dtype: it reads the span of storage that the view
// covers and picks the view's elements out of it.
func ReadStrided(t *Tensor) (any, error) {
	if t.IsContiguous() {
		return ReadHost(t)
	}
	data, err := readStrided(t)
	if err != nil {
		return nil, err
	}
	if err := settledChecks(t); err != nil {
		return nil, err
	}
	return data, nil
}

// readStrided is ReadStrided's read of a view that is not contiguous.
func readStrided(t *Tensor) (any, error) {
	span := 1
	for d, n := range t.Shape {
		if n == 0 {
			return ReadHost(t)
		}
		span += (n - 1) * t.Strides[d] // views' strides are not negative
	}
	b, err := Open(t.Device)
	if err != nil {
		return nil, err
	}
	if !t.Hold() {
		return nil, releasedError("")
	}
	data, err := b.Read(t.Device, t.Storage.Buffer, t.DType, t.Offset, span)
	t.LetGo()
	if err != nil {
		return nil, err
	}
	switch v := data.(type) {
	case []float32:
		return pick(v, t), nil
	case []float64:
		return pick(v, t), nil
	case []int32:
		return pick(v, t), nil
	case []int64:
		return pick(v, t), nil
	case []bool:
		return pick(v, t), nil
	}
	return nil, &Error{Kind: ErrDType, Detail: "cannot read a " + t.DType.String() + " view"}
}

// pick gathers a view's elements, row-major, from the storage span that
// starts at its offset.
func pick[T any](span []T, t *Tensor) []T {
	out := make([]T, 0, t.Numel())
	idx := make([]int, t.Rank())
	for range t.Numel() {
		at := 0
		for d, i := range idx {
			at += i * t.Strides[d]
		}
		out = append(out, span[at])
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < t.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// CheckLog is the host's half of a device's queued value checks: the
// checks in the order they were queued since the outcomes were last read.
// The device writes the outcome of check i to slot i of its own memory;
// Outcome settles each check from the slots it read back, and Failure
// gives a failed one to the device's next Sync. Its methods are safe from
// any goroutine.
type CheckLog struct {
	mu     sync.Mutex
	checks []*ValueCheck
	failed []*ValueCheck // those that failed since Failure last asked
}

// maxUnreported is how many failed checks a CheckLog keeps for Failure.
const maxUnreported = 64

// NoBad is what a slot holds when its check found nothing wrong.
const NoBad = -1

// Add queues c and returns its slot.
func (l *CheckLog) Add(c *ValueCheck) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	cc := *c
	l.checks = append(l.checks, &cc)
	return len(l.checks) - 1
}

// Len is how many checks are queued.
func (l *CheckLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.checks)
}

// Outcome takes the slots of the first n queued checks: for each, the
// row-major position of its first bad value, or NoBad, and that value. It
// settles each check's Pending and forgets the checks.
func (l *CheckLog) Outcome(n int, pos, val []int64) {
	l.mu.Lock()
	checks := l.checks[:n:n]
	l.checks = append([]*ValueCheck(nil), l.checks[n:]...)
	l.mu.Unlock()
	for i, c := range checks {
		if pos[i] == NoBad {
			if c.pending != nil {
				c.pending.settle(nil)
			}
			continue
		}
		c.failure = c.Error(val[i])
		if c.pending != nil {
			c.pending.settle(c.failure)
		}
		l.mu.Lock()
		// Failures that a tensor has reported go, and the list keeps its
		// first few: Failure gives one, and a program that never calls
		// Synchronize must not grow it without end.
		l.failed = slices.DeleteFunc(l.failed, func(f *ValueCheck) bool { return f.pending != nil && f.pending.reported.Load() })
		if len(l.failed) < maxUnreported {
			l.failed = append(l.failed, c)
		}
		l.mu.Unlock()
	}
}

// Failure returns the error of the first check that failed since it was
// last called and whose error no tensor has given yet (pending.go), or
// nil: what a device's Sync reports, once, beside the failed tensors,
// which give it every time they are read.
func (l *CheckLog) Failure() error {
	l.mu.Lock()
	failed := l.failed
	l.failed = nil
	l.mu.Unlock()
	for _, c := range failed {
		if c.pending == nil || !c.pending.reported.Load() {
			return c.failure
		}
	}
	return nil
}
