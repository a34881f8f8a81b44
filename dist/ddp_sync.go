package dist

import (
	"context"
	"sync/atomic"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// firstBucketBytes caps the first bucket, as torch's DDP does (1 MiB), so
// that the first all-reduce starts early in the backward pass.
const firstBucketBytes = 1 << 20

// gradSync averages one step's gradients over the ranks, a bucket at a
// time. A bucket is a run of parameters of one dtype, taken in the reverse
// order of Parameters (about the order in which backward makes their
// gradients final), of at most firstBucketBytes (the first) or BucketBytes
// bytes. A bucket goes to the worker goroutine, which all-reduces it, once
// each of its parameters has its gradient (add) and every earlier bucket
// has gone: so every rank issues the same all-reduces in the same order,
// whatever order its gradients come in, and the first ones travel while
// the backward pass goes on.
//
// A bucket's all-reduce carries, after the gradients, one element per
// parameter that is 1 where this rank has a gradient for it and 0 where it
// has none (a zero gradient travels instead): the mean of that element
// says whether any rank has one, with no exchange beforehand.
type gradSync struct {
	ctx      context.Context
	g        *Group
	ps       []nn.Param
	buckets  [][]int // parameter indices, in the order the buckets go
	bucketOf []int   // parameter index → its bucket; -1 for one without a gradient
	pending  []int   // per bucket: parameters not yet added
	added    []bool

	in   []*lathe.Tensor // per parameter: this rank's gradient (the sync's own view), or nil
	out  []*lathe.Tensor // per parameter: the mean, nil where no rank has a gradient (the worker's)
	sent int             // buckets handed to the worker
	work chan job
	done chan error
	// busy is set while a backward pass runs beside the worker, whose
	// all-reduces then wait without spinning (whileBusy).
	busy atomic.Bool
	// trace, when set (by a test), hears of each step as it happens on the
	// calling goroutine: "add i" and "send b".
	trace func(event string, n int)
}

// job is one bucket for the worker, or, with err set, a bucket that this
// rank cannot fill (its backward pass failed): it goes as a failed call,
// so that every rank's all-reduce of it returns an error, and the
// collectives stay matched.
type job struct {
	bucket int
	err    error
}

// newGradSync plans the buckets of ps and starts the worker; busy says
// that a backward pass runs beside it until end.
func newGradSync(ctx context.Context, g *Group, ps []nn.Param, capBytes int, busy bool, trace func(string, int)) *gradSync {
	s := &gradSync{g: g, ps: ps, bucketOf: make([]int, len(ps)), added: make([]bool, len(ps)),
		in: make([]*lathe.Tensor, len(ps)), out: make([]*lathe.Tensor, len(ps)), trace: trace}
	s.busy.Store(busy)
	s.ctx = whileBusy(ctx, &s.busy)
	open := map[lathe.DType]int{} // dtype → its open bucket
	var bytes []int
	first := map[*lathe.Tensor]int{} // a tensor listed twice (tied weights) goes once
	for i, p := range ps {
		if _, ok := first[p.T]; !ok {
			first[p.T] = i
		}
	}
	for i := len(ps) - 1; i >= 0; i-- {
		s.bucketOf[i] = -1
		p := ps[i].T
		if p.Err() != nil || !p.RequiresGrad() || first[p] != i {
			continue
		}
		dt, n := p.DType(), p.Numel()*p.DType().Size()
		b, ok := open[dt]
		limit := max(capBytes, 1)
		if b == 0 {
			limit = min(limit, firstBucketBytes)
		}
		if !ok || bytes[b]+n > limit && len(s.buckets[b]) > 0 {
			s.buckets, bytes = append(s.buckets, nil), append(bytes, 0)
			b = len(s.buckets) - 1
			open[dt] = b
		}
		s.buckets[b] = append(s.buckets[b], i)
		bytes[b] += n
		s.bucketOf[i] = b
	}
	s.pending = make([]int, len(s.buckets))
	for b, idx := range s.buckets {
		s.pending[b] = len(idx)
	}
	s.work = make(chan job, len(s.buckets))
	s.done = make(chan error, 1)
	go s.run()
	return s
}

// add hands over parameter i's gradient on this rank (nil: none), which
// the sync releases, and sends every bucket that is then complete, in
// order. Adding a parameter twice or one outside the plan releases g.
func (s *gradSync) add(i int, g *lathe.Tensor) {
	b := s.bucketOf[i]
	if b < 0 || s.added[i] {
		if g != nil {
			g.Release()
		}
		return
	}
	s.added[i], s.in[i] = true, g
	s.pending[b]--
	s.note("add", i)
	for s.sent < len(s.buckets) && s.pending[s.sent] == 0 {
		s.work <- job{bucket: s.sent}
		s.note("send", s.sent)
		s.sent++
	}
}

func (s *gradSync) note(event string, n int) {
	if s.trace != nil {
		s.trace(event, n)
	}
}

// end sends the buckets not yet sent: completed by rest(i), the gradient
// of each parameter not added (nil for none), or, where failed is not nil,
// as failed calls. It waits for the worker, and returns the first error of
// the all-reduces.
func (s *gradSync) end(rest func(i int) *lathe.Tensor, failed error) error {
	if failed == nil {
		for i := range s.ps {
			if s.bucketOf[i] >= 0 && !s.added[i] {
				s.add(i, rest(i))
			}
		}
	}
	for ; s.sent < len(s.buckets); s.sent++ {
		s.work <- job{bucket: s.sent, err: failed}
	}
	s.busy.Store(false) // nothing left to compute here: wait at full speed
	close(s.work)
	err := <-s.done
	for i, t := range s.in { // a failed pass leaves some unsent
		if t != nil {
			t.Release()
			s.in[i] = nil
		}
	}
	return err
}

// discard releases the means the worker made (after a failure).
func (s *gradSync) discard() {
	for _, t := range s.out {
		if t != nil {
			t.Release()
		}
	}
}

// run is the worker: it all-reduces the buckets in the order they come,
// every one of them even after an error (the other ranks issue them all
// too), and reports the first error.
func (s *gradSync) run() {
	var first error
	for j := range s.work {
		err := j.err
		if err == nil {
			err = s.reduce(s.buckets[j.bucket])
		} else {
			// A failed tensor fails the call on every rank at its header.
			_, err = s.g.AllReduce(s.ctx, lathe.Failed(err), Mean)
		}
		if first == nil {
			first = err
		}
	}
	s.done <- first
}

// reduce all-reduces one bucket: the gradients of idx, flat, then their
// presence elements; it sets out[i] for each parameter some rank has a
// gradient for.
func (s *gradSync) reduce(idx []int) error {
	dev, dt := s.g.dev, s.ps[idx[0]].T.DType()
	parts := make([]*lathe.Tensor, 0, len(idx)+1)
	has := make([]float32, len(idx))
	for k, i := range idx {
		gi := s.in[i]
		if gi == nil {
			gi = lathe.Zeros(dev, dt, s.ps[i].T.Shape()...)
		} else {
			has[k] = 1
		}
		parts = append(parts, gi.Reshape(-1))
		if gi != s.in[i] {
			gi.Release() // the flat view keeps the zeros
		}
	}
	present := lathe.FromSlice(dev, has)
	flags := present.Cast(dt)
	if flags != present { // Cast to its own dtype is the tensor itself
		present.Release()
	}
	parts = append(parts, flags)
	cat := lathe.Concat(parts, 0)
	for _, t := range parts {
		t.Release()
	}
	for _, i := range idx {
		if s.in[i] != nil {
			s.in[i].Release()
			s.in[i] = nil
		}
	}
	mean, err := s.g.AllReduce(s.ctx, cat, Mean)
	cat.Release()
	if err != nil {
		return err
	}
	defer mean.Release() // the views below keep the data
	total := mean.Numel() - len(idx)
	tail := mean.Narrow(0, total, len(idx))
	wide := tail.Cast(lathe.Float32)
	anyHas, err := wide.Float32s()
	wide.Release()
	tail.Release() // again, where wide is tail: harmless
	if err != nil {
		return err
	}
	off := 0
	for k, i := range idx {
		n := s.ps[i].T.Numel()
		if anyHas[k] > 0 {
			s.out[i] = mean.Narrow(0, off, n).Reshape(s.ps[i].T.Shape()...)
		}
		off += n
	}
	return nil
}

// set makes each mean its parameter's gradient; the gradients then are
// the parameters'.
func (s *gradSync) set() error {
	for i, p := range s.ps {
		if s.out[i] == nil {
			continue
		}
		if err := p.T.SetGrad(s.out[i]); err != nil {
			return err
		}
		s.out[i] = nil
	}
	return nil
}
