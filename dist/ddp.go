package dist

import (
	"context"
	"reflect"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// DataParallel is a model trained by every rank of a group on its own
// share of each batch, as torch.nn.parallel.DistributedDataParallel: the
// ranks start from rank 0's parameters and buffers, each computes the
// gradient of its share, and SyncGradients (or Backward) replaces every
// rank's gradients by their mean over the ranks, so that each rank's
// optimizer takes the same step, the one that one process would take on
// the whole batch. Buffers (batch norm's running statistics) are
// broadcast from rank 0 before each training-mode Forward, as torch's
// broadcast_buffers does.
//
// The gradients are averaged in buckets of at most BucketBytes (one
// all-reduce each; the first bucket at most 1 MiB, as torch's), which
// Backward starts while its pass goes on: a bucket goes to a goroutine of
// its own as soon as the pass has made every gradient in it final
// (lathe.WhenReady), so the communication overlaps the rest of the
// backward pass, as torch's DDP's does. On cuda, NCCL's all-reduces queue
// on the one stream that lathe's kernels run on, so on the device they run
// in turn with the pass's kernels (torch gives NCCL a stream of its own);
// what overlaps there is the host's part, the headers and the queuing.
//
// DataParallel is an nn.Module (and nn.Buffered): its Parameters are the
// model's, for the optimizer.
type DataParallel struct {
	Model nn.Module
	// BucketBytes is the most gradient bytes one all-reduce carries
	// (torch's bucket_cap_mb, 25 MiB).
	BucketBytes int
	// Timeout bounds the buffer broadcast in Forward, which takes no
	// context (10 minutes).
	Timeout time.Duration

	g     *Group
	trace func(event string, n int) // a test's view of gradSync
}

// DDP wraps model for data-parallel training on g: it broadcasts model's
// parameters and buffers from rank 0 to every rank (by ctx's deadline),
// so every rank starts from the same model. Make the optimizer after DDP,
// from its Parameters. A failed model (nn.Err) or one whose tensors are
// not on g's device is an error, returned on every rank.
func DDP(ctx context.Context, g *Group, model nn.Module) (*DataParallel, error) {
	const op = "ddp"
	if err := g.usable(op, ctx); err != nil {
		return nil, err
	}
	if v := reflect.ValueOf(model); model == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, lathe.NewError(op, lathe.ErrValue, "model", "is nil", "build the model with the nn constructors")
	}
	if err := nn.Err(model); err != nil {
		return nil, err
	}
	d := &DataParallel{Model: model, BucketBytes: 25 << 20, Timeout: 10 * time.Minute, g: g}
	if err := d.broadcast(ctx, op, append(model.Parameters(), allBuffers(model)...)); err != nil {
		return nil, err
	}
	return d, nil
}

// broadcast replaces each tensor of ps by rank 0's, keeping RequireGrad.
func (d *DataParallel) broadcast(ctx context.Context, op string, ps []nn.Param) error {
	next := make([]*lathe.Tensor, len(ps))
	for i, p := range ps {
		b, err := d.g.Broadcast(ctx, p.T.Detach(), 0)
		if err != nil {
			for _, t := range next[:i] {
				t.Release()
			}
			return opError(op, err)
		}
		next[i] = b
	}
	for i, p := range ps {
		n := next[i]
		if p.T.RequiresGrad() {
			n = n.Detach().RequireGrad()
			next[i].Release() // the detached view keeps the data
		}
		p.T.Release()
		*p.T = *n
	}
	return nil
}

// Forward runs the model on x, first broadcasting the buffers from rank 0
// in training mode. A failed broadcast gives a failed tensor.
func (d *DataParallel) Forward(x *lathe.Tensor) *lathe.Tensor {
	if bufs := allBuffers(d.Model); len(bufs) > 0 && d.training() {
		ctx, cancel := context.WithTimeout(context.Background(), d.Timeout)
		defer cancel()
		if err := d.broadcast(ctx, "forward", bufs); err != nil {
			return lathe.Failed(err)
		}
	}
	return d.Model.Forward(x)
}

// training says whether the model is in training mode, as far as a module
// tells (nn.Base and the layers with a mode report it).
func (d *DataParallel) training() bool {
	if m, ok := d.Model.(interface{ Training() bool }); ok {
		return m.Training()
	}
	return true
}

// SyncBuffers broadcasts the model's buffers (non-persistent ones too)
// from rank 0 now.
func (d *DataParallel) SyncBuffers(ctx context.Context) error {
	if err := d.g.usable("sync_buffers", ctx); err != nil {
		return err
	}
	return d.broadcast(ctx, "sync_buffers", allBuffers(d.Model))
}

// allBuffers is every buffer of m, the non-persistent ones too, which
// torch's DistributedDataParallel broadcasts alike: rank 0's values are
// every rank's, whether or not a checkpoint holds them.
func allBuffers(m nn.Module) []nn.Param {
	return append(nn.Buffers(m), nn.NonPersistentBuffers(m)...)
}

// Backward runs loss.Backward(opts...) and averages the gradients over
// the ranks as it goes: each bucket's all-reduce starts as soon as the
// pass has made its gradients final. It ends as SyncGradients after a
// backward pass would: every parameter's gradient (accumulated, where it
// had one before) is its mean over the ranks. Every rank must call it. An
// error, from any rank's pass or from the exchange, is returned on every
// rank, and leaves each rank's gradients as they were before the call.
// For gradient accumulation (torch's no_sync), run loss.Backward() on all
// micro-batches but the last, and Backward on the last: it averages what
// the gradients have accumulated, once.
func (d *DataParallel) Backward(ctx context.Context, loss *lathe.Tensor, opts ...lathe.GradOption) error {
	const op = "backward"
	if err := d.g.usable(op, ctx); err != nil {
		return err
	}
	if err := loss.CheckArg(op, "loss"); err != nil {
		return err
	}
	ps := d.Model.Parameters()
	leaves := make([]*lathe.Tensor, len(ps))
	before := make([]*lathe.Tensor, len(ps)) // views of the gradients before the pass
	for i, p := range ps {
		leaves[i] = p.T
		if g := p.T.Grad(); g != nil {
			before[i] = g.Detach()
		}
	}
	defer func() {
		for _, t := range before {
			if t != nil {
				t.Release()
			}
		}
	}()
	s := newGradSync(ctx, d.g, ps, d.BucketBytes, true, d.trace)
	ready := func(i int, g *lathe.Tensor) error {
		if g == nil { // the pass gives parameter i no gradient
			if before[i] != nil {
				s.add(i, before[i].Detach())
			} else {
				s.add(i, nil)
			}
			return nil
		}
		// What the leaf's gradient becomes, and so what the ranks average.
		own := g.Detach()
		if before[i] != nil {
			sum := before[i].Add(own)
			own.Release()
			own = sum
		}
		if err := own.Err(); err != nil {
			return err
		}
		s.add(i, own)
		return nil
	}
	passErr := loss.Backward(append(opts[:len(opts):len(opts)], lathe.WhenReady(leaves, ready))...)
	err := s.end(func(i int) *lathe.Tensor {
		if before[i] != nil {
			return before[i].Detach() // not reached by this pass
		}
		return nil
	}, passErr)
	if passErr != nil {
		s.discard()
		return passErr
	}
	if err == nil {
		err = s.set()
	}
	if err != nil {
		s.discard()
		for i, p := range ps { // as before the call
			if p.T.RequiresGrad() {
				p.T.SetGrad(before[i])
				before[i] = nil
			}
		}
		return opError(op, err)
	}
	return nil
}

// SyncGradients replaces each parameter's gradient by its mean over the
// ranks, for a caller that ran the backward pass itself (Backward does
// both, and overlaps them). A parameter without a gradient on some ranks
// counts as a zero gradient there; one without a gradient on every rank
// keeps none (so the optimizer skips it, as it would in one process).
// Every rank must call it, after its backward pass; an error leaves the
// gradients as they were, and is returned on every rank.
func (d *DataParallel) SyncGradients(ctx context.Context) error {
	const op = "sync_gradients"
	if err := d.g.usable(op, ctx); err != nil {
		return err
	}
	s := newGradSync(ctx, d.g, d.Model.Parameters(), d.BucketBytes, false, d.trace)
	err := s.end(func(i int) *lathe.Tensor {
		if g := s.ps[i].T.Grad(); g != nil {
			return g.Detach()
		}
		return nil
	}, nil)
	if err == nil {
		err = s.set()
	}
	if err != nil {
		s.discard()
		return opError(op, err)
	}
	return nil
}

// Parameters are the model's.
func (d *DataParallel) Parameters() []nn.Param { return d.Model.Parameters() }

// Buffers are the model's.
func (d *DataParallel) Buffers() []nn.Param { return nn.Buffers(d.Model) }

// NonPersistentBuffers are the model's.
func (d *DataParallel) NonPersistentBuffers() []nn.Param { return nn.NonPersistentBuffers(d.Model) }

// To moves the model; the group's collectives then need its tensors on
// the group's device still.
func (d *DataParallel) To(dev lathe.Device) error { return d.Model.To(dev) }

// Train switches the model's training mode.
func (d *DataParallel) Train(on bool) { d.Model.Train(on) }

// Sampler splits the indices of a data set of N items among the ranks of
// a group, as torch.utils.data.DistributedSampler: every epoch each rank
// gets its own ⌈N/Size⌉ indices (padded by repeating the first ones so
// that all ranks take the same number of steps), or ⌊N/Size⌋ with
// DropLast; shuffled the same way on every rank (by Seed and the epoch)
// when Shuffle is set.
type Sampler struct {
	N, Rank, Size int
	Shuffle       bool
	Seed          uint64
	DropLast      bool
}

// NewSampler is a shuffling Sampler of n items for g's rank; a nil g
// samples for a group of one (every item).
func NewSampler(g *Group, n int) *Sampler {
	if g == nil {
		return &Sampler{N: n, Size: 1, Shuffle: true}
	}
	return &Sampler{N: n, Rank: g.Rank(), Size: g.Size(), Shuffle: true}
}

// Indices are this rank's indices for epoch, in the order to visit them.
func (s *Sampler) Indices(epoch int) []int {
	if s.N <= 0 || s.Size <= 0 || s.Rank < 0 || s.Rank >= s.Size {
		return nil
	}
	idx := make([]int, s.N)
	for i := range idx {
		idx[i] = i
	}
	if s.Shuffle {
		idx = newPerm(s.Seed, uint64(epoch), s.N)
	}
	per := (s.N + s.Size - 1) / s.Size
	if s.DropLast {
		per = s.N / s.Size
	}
	total := per * s.Size
	for len(idx) < total {
		idx = append(idx, idx[:min(total-len(idx), len(idx))]...)
	}
	idx = idx[:total]
	out := make([]int, 0, per)
	for i := s.Rank; i < total; i += s.Size {
		out = append(out, idx[i])
	}
	return out
}
