package dist

import (
	"context"

	"github.com/lathe-ml/lathe"
)

// The NCCL engine: a group of cuda tensors whose collectives move device
// memory (Tensor.DataPtr) on the stream that lathe's own ops run on
// (lathe.WithStream), so neither waits for the other and nothing passes
// through the host but the header that opens every collective
// (collectives.go). The headers travel on the group's host engine: MPI
// under mpirun, TCP under torchrun, and none in a group of one.

// deviceEngine is a transport between the group's processes over device
// memory: addresses are device addresses, counts elements of dt (one
// rank's part, for allGather and reduceScatter); each call queues its work
// on stream and returns. ncclComm (nccl.go) is the one there is.
type deviceEngine interface {
	allReduce(send, recv uint64, count int, dt lathe.DType, op ReduceOp, stream uintptr) error
	broadcast(send, recv uint64, count int, dt lathe.DType, root int, stream uintptr) error
	allGather(send, recv uint64, count int, dt lathe.DType, stream uintptr) error
	reduceScatter(send, recv uint64, count int, dt lathe.DType, op ReduceOp, stream uintptr) error
	// asyncError is the error a queued call hit (a peer gone), or nil.
	asyncError() error
	// abort ends the communicator, also with calls that would never finish.
	abort() error
	destroy() error
}

// newNCCLGroup is the NCCL engine's Init: the headers' engine, then rank
// 0's unique id to every rank over it, then the communicator.
func newNCCLGroup(ctx context.Context, g *Group) error {
	if g.dev.Kind != lathe.CUDA(0).Kind {
		return deviceError("init", "cfg.Device", g.dev, "the NCCL engine moves cuda tensors", "use lathe.CUDA(i), or the MPI engine for lathe.CPU")
	}
	if err := ncclOpen(); err != nil {
		return err
	}
	switch {
	case g.env.Launcher == MPIRun:
		e, err := newMPIEngine(ctx)
		if err != nil {
			return err
		}
		g.host = e
		g.rank, g.size = e.place()
	case g.env.Launcher == TorchRun && g.size > 1:
		e, err := newTCPEngine(ctx, g.env)
		if err != nil {
			return err
		}
		g.host = e
	default:
		g.host = selfEngine{}
	}
	comm, err := ncclJoin(ctx, g)
	if err != nil {
		g.host.close()
		return err
	}
	g.comm = comm
	return nil
}

// queue runs f (an NCCL call) on the group's stream, then waits for the
// stream by ctx's deadline. Past the deadline it aborts the communicator,
// NCCL's way out of a collective that a peer never joins, and the group is
// unusable from then on.
func (g *Group) queue(ctx context.Context, op string, f func(stream uintptr) error) error {
	if err := lathe.WithStream(g.dev, f); err != nil {
		return opError(op, err)
	}
	done := make(chan error, 1)
	go func() { done <- lathe.Synchronize(g.dev) }()
	select {
	case err := <-done:
		if err == nil {
			err = g.comm.asyncError()
		}
		if err != nil {
			return opError(op, err)
		}
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		g.broken = true
		g.mu.Unlock()
		g.comm.abort()
		return opError(op, timeoutError(op, ctx, true))
	}
}

// deviceOut is a new tensor of dt and shape on the group's device, for an
// NCCL call to write, and its address.
func (g *Group) deviceOut(op string, dt lathe.DType, shape []int) (*lathe.Tensor, uint64, error) {
	out := lathe.Zeros(g.dev, dt, shape...)
	p, err := out.DataPtr()
	if err != nil {
		out.Release()
		return nil, 0, opError(op, err)
	}
	return out, p, nil
}

// deviceResult is out divided by the group's size for a Mean, and cast
// back to the caller's 16-bit dtype where it was reduced in float32.
func (g *Group) deviceResult(c *call, out *lathe.Tensor, mean bool) (*lathe.Tensor, error) {
	if mean {
		m := out.DivScalar(float64(g.size))
		out.Release()
		out = m
	}
	if c.dt != c.work {
		f := out.Cast(c.dt)
		out.Release()
		out = f
	}
	if err := out.Err(); err != nil {
		return nil, opError(c.op, err)
	}
	return out, nil
}

func (g *Group) allReduceDevice(ctx context.Context, c *call) (*lathe.Tensor, error) {
	out, dst, err := g.deviceOut(c.op, c.work, c.shape)
	if err != nil {
		return nil, err
	}
	src, err := c.x.DataPtr()
	if err == nil {
		op := c.reduce
		if op == Mean { // a sum divided after, as the host engines do: one rounding less than NCCL's premultiplied average
			op = Sum
		}
		err = g.queue(ctx, c.op, func(s uintptr) error { return g.comm.allReduce(src, dst, c.count, c.work, op, s) })
	}
	if err != nil {
		out.Release()
		return nil, opError(c.op, err)
	}
	return g.deviceResult(c, out, c.reduce == Mean)
}

func (g *Group) broadcastDevice(ctx context.Context, c *call) (*lathe.Tensor, error) {
	out, dst, err := g.deviceOut(c.op, c.dt, c.shape)
	if err != nil {
		return nil, err
	}
	src, err := c.x.DataPtr()
	if err == nil {
		err = g.queue(ctx, c.op, func(s uintptr) error { return g.comm.broadcast(src, dst, c.count, c.dt, c.root, s) })
	}
	if err != nil {
		out.Release()
		return nil, opError(c.op, err)
	}
	return out, nil
}

// allGatherDevice gathers counts[r] elements from each rank r into rows
// rows: one ncclAllGather where the counts are equal, else one broadcast
// per rank into its place (ncclAllGather takes equal parts only).
func (g *Group) allGatherDevice(ctx context.Context, c *call, counts []int, rows int) (*lathe.Tensor, error) {
	out, dst, err := g.deviceOut(c.op, c.dt, append([]int{rows}, c.shape[1:]...))
	if err != nil {
		return nil, err
	}
	src, err := c.x.DataPtr()
	if err == nil {
		equal := true
		for _, n := range counts {
			equal = equal && n == counts[0]
		}
		size := uint64(c.dt.Size())
		err = g.queue(ctx, c.op, func(s uintptr) error {
			if equal {
				return g.comm.allGather(src, dst, counts[0], c.dt, s)
			}
			at := dst
			for r, n := range counts {
				if err := g.comm.broadcast(src, at, n, c.dt, r, s); err != nil {
					return err
				}
				at += uint64(n) * size
			}
			return nil
		})
	}
	if err != nil {
		out.Release()
		return nil, opError(c.op, err)
	}
	return out, nil
}

// reduceScatterDevice gives this rank counts[rank] elements of the
// reduction: one ncclReduceScatter where the parts are equal, else an
// all-reduce of the whole and this rank's rows of it.
func (g *Group) reduceScatterDevice(ctx context.Context, c *call, counts []int) (*lathe.Tensor, error) {
	rows := c.shape[0]
	mine := rows/g.size + b2i(g.rank < rows%g.size)
	first := 0 // this rank's first row
	for r := range g.rank {
		first += rows/g.size + b2i(r < rows%g.size)
	}
	equal := rows%g.size == 0
	shape := append([]int{mine}, c.shape[1:]...)
	if !equal {
		shape = c.shape
	}
	out, dst, err := g.deviceOut(c.op, c.work, shape)
	if err != nil {
		return nil, err
	}
	src, err := c.x.DataPtr()
	if err == nil {
		op := c.reduce
		if op == Mean {
			op = Sum
		}
		err = g.queue(ctx, c.op, func(s uintptr) error {
			if equal {
				return g.comm.reduceScatter(src, dst, counts[g.rank], c.work, op, s)
			}
			return g.comm.allReduce(src, dst, c.count, c.work, op, s)
		})
	}
	if err != nil {
		out.Release()
		return nil, opError(c.op, err)
	}
	if !equal {
		view := out.Narrow(0, first, mine)
		part := view.Contiguous()
		view.Release()
		out.Release()
		out = part
	}
	return g.deviceResult(c, out, c.reduce == Mean)
}
