package dispatch

import (
	"slices"
	"sync/atomic"
)

// A device's value checks (ValueChecker) come back later than the op that
// queued them, so what a failed one refused must stay refused once it is
// known. Each queued check has a Pending, settled when the device's log is
// read back (CheckLog.Outcome), and every storage made from the checked
// values carries it: the checked op's result, and what Call makes from a
// storage that carries one, views sharing their storage's. Reading such a
// tensor, or its Err, gives the check's error every time it is asked,
// Call refuses it as an argument once the failure is known, and tensors
// that do not depend on the check read back as they are. (Before, the
// first read-back of any tensor returned the error, once, and the failed
// op's garbage read back as data after it.)

// A Pending is a queued check's outcome.
type Pending struct {
	state atomic.Int32 // pendingOpen, pendingPassed or pendingFailed
	err   *Error       // set before state turns pendingFailed
	seq   uint64       // the order it was queued in, program-wide
	// reported is set once a tensor has given err (a read, Err, a Call
	// refusing it), so that Sync does not report it again.
	reported atomic.Bool
}

// pendingSeq numbers the checks as they are queued.
var pendingSeq atomic.Uint64

func newPending() *Pending { return &Pending{seq: pendingSeq.Add(1)} }

const (
	pendingOpen = iota
	pendingPassed
	pendingFailed
)

// settle records the check's outcome: err, or nil where it passed.
func (p *Pending) settle(err *Error) {
	if err != nil {
		p.err = err
		p.state.Store(pendingFailed)
		return
	}
	p.state.Store(pendingPassed)
}

// checkSet is the checks that a storage's values depend on which had not
// passed when it was last looked at; a stored set never changes.
type checkSet []*Pending

// maxOpenChecks is how many unsettled checks a storage may carry: an op
// whose result would carry more waits for the device to settle them, so
// that a program that never reads back (a training loop over an embedding
// that syncs nowhere) carries a bounded set from step to step.
const maxOpenChecks = 64

// failedCheck is the error of the first queued of the failed checks that
// s's values depend on (the cause: a composite's own check comes before
// its parts', a check on an input before those on what was made from it),
// or nil. Every failed check of the set counts as reported with it: the
// parts' failures are the cause's consequences (embedding's bad index is
// index_select's too), which Sync must not report again as news.
func (s *Storage) failedCheck() *Error {
	set := s.checks.Load()
	if set == nil {
		return nil
	}
	var first *Pending
	for _, p := range *set {
		if p.state.Load() == pendingFailed && (first == nil || p.seq < first.seq) {
			first = p
		}
	}
	if first == nil {
		return nil
	}
	for _, p := range *set {
		if p.state.Load() == pendingFailed {
			p.reported.Store(true)
		}
	}
	return first.err
}

// withdraw takes back the checks that a failed call queued: it returned
// its own error and made nothing that depends on them, so their outcome
// is no news for Sync to report later (a composite that queued its value
// check and then refused an argument; a kernel that failed after its
// checks).
func withdraw(queued []*Pending) {
	for _, p := range queued {
		p.reported.Store(true)
	}
}

// openChecks is how many checks that s depends on are unsettled.
func (s *Storage) openChecks() int {
	set := s.checks.Load()
	if set == nil {
		return 0
	}
	n := 0
	for _, p := range *set {
		if p.state.Load() == pendingOpen {
			n++
		}
	}
	return n
}

// addChecks adds add to the checks s carries, dropping those that passed.
func (s *Storage) addChecks(add []*Pending) {
	for {
		old := s.checks.Load()
		var set checkSet
		if old != nil {
			for _, p := range *old {
				if p.state.Load() != pendingPassed {
					set = append(set, p)
				}
			}
		}
		for _, p := range add {
			if p.state.Load() != pendingPassed && !slices.Contains(set, p) {
				set = append(set, p)
			}
		}
		if s.checks.CompareAndSwap(old, &set) {
			return
		}
	}
}

// carryChecks gives out's storage the checks of its op (own) and those
// that in's storages carry, unless out shares one of theirs (a view)
// and its op checked nothing.
func carryChecks(out *Tensor, in []*Tensor, own []*Pending) {
	var add []*Pending
	add = append(add, own...)
	for _, t := range in {
		if set := t.Storage.checks.Load(); set != nil && t.Storage != out.Storage {
			add = append(add, *set...)
		}
	}
	if len(add) > 0 {
		out.Storage.addChecks(add)
	}
}

// CarryChecks gives dst's storage the checks that src's carries: autodiff
// gives a backward pass's gradients those of the result it differentiates,
// since a gradient through a failed op is as wrong as the op's result
// (its backward ops may not read the failed values themselves, as
// Index's, which wraps the index before it gathers).
func CarryChecks(dst, src *Tensor) {
	if set := src.Storage.checks.Load(); set != nil && dst.Storage != src.Storage {
		dst.Storage.addChecks(*set)
	}
}

// FailedCheck is the error of a device's value check that failed and that
// t's values depend on, as far as the device has reported, or nil.
func (t *Tensor) FailedCheck() error {
	if e := t.Storage.failedCheck(); e != nil {
		return e
	}
	return nil
}

// settledChecks waits for the device to settle the checks that t depends
// on, where any is open, and returns the error of one that failed. A
// device fault met while waiting is returned too.
func settledChecks(t *Tensor) error {
	if t.Storage.openChecks() > 0 {
		b, err := Open(t.Device)
		if err != nil {
			return err
		}
		if s, ok := b.(CheckSettler); ok {
			err = s.SettleChecks(t.Device)
		} else {
			err = b.Sync(t.Device)
		}
		if err != nil && !IsCheckError(err) {
			return err
		}
	}
	if e := t.Storage.failedCheck(); e != nil {
		return e
	}
	return nil
}

// A CheckSettler is a ValueChecker that can read back its log, settling
// the checks queued so far, without Sync's report of a failed one, which
// is the program's to take from Synchronize (an internal wait took it).
type CheckSettler interface {
	SettleChecks(dev Device) error
}

// IsCheckError reports whether err is a value check's error (ValueCheck.Error).
func IsCheckError(err error) bool {
	e, ok := err.(*Error)
	return ok && e.fromCheck
}
