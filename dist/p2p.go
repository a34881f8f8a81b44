package dist

import (
	"context"
	"sync"
	"time"

	"github.com/lathe-ml/lathe"
)

// Send and Recv move a tensor between two ranks: Send sends a header
// (dtype and shape) and then the data, each matched in order by the Recv
// of the other rank, so the receiver needs to know nothing beforehand.

const (
	tagHeader = 0x1a7e
	tagData   = 0x1a7f
	p2pMagic  = 0x1a7e0001
	// maxDims bounds the shape a header carries.
	maxDims = 62
)

// dataWait bounds the wait for a message's data once its header has come.
const dataWait = time.Minute

// p2pLock is the lock of this rank's messages to peer (recv false) or from
// it (recv true), held for a message's header and data, so that two
// goroutines' messages between the same ranks do not interleave.
func (g *Group) p2pLock(recv bool, peer int) *sync.Mutex {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := [2]int{btoi(recv), peer}
	if g.p2p == nil {
		g.p2p = map[[2]int]*sync.Mutex{}
	}
	if g.p2p[key] == nil {
		g.p2p[key] = new(sync.Mutex)
	}
	return g.p2p[key]
}

func (g *Group) checkPeer(op, arg string, peer int) error {
	if peer < 0 || peer >= g.size {
		return lathe.NewError(op, lathe.ErrIndex, arg, "is "+itoa(peer)+", outside the group of "+itoa(g.size), "give a rank from 0 to Size()-1")
	}
	if peer == g.rank {
		return lathe.NewError(op, lathe.ErrValue, arg, "is this rank ("+itoa(peer)+"), which would wait for itself", "send to another rank")
	}
	return nil
}

// Send sends x to rank dst, whose Recv returns a copy of it
// (torch.distributed.send). It returns once x's data is on its way, which
// may mean once dst has called Recv, or with an error at ctx's deadline
// (after which the group is unusable, as after a collective's). x is
// checked as a collective checks it; dst outside the group is an ErrIndex,
// and this rank itself an ErrValue. Sends from one rank to another arrive
// in the order they were made, each whole, from any number of goroutines.
func (g *Group) Send(ctx context.Context, x *lathe.Tensor, dst int) error {
	const op = "send"
	if err := g.usable(op, ctx); err != nil {
		return err
	}
	if err := g.checkPeer(op, "dst", dst); err != nil {
		return err
	}
	c := &call{op: op}
	g.prepare(c, x)
	if c.err != nil {
		return opError(op, c.err)
	}
	if len(c.shape) > maxDims {
		return lathe.NewError(op, lathe.ErrShape, "x", "has "+itoa(len(c.shape))+" dims, more than a message carries ("+itoa(maxDims)+")", "reshape it")
	}
	h := make([]int64, 2+maxDims)
	h[0], h[1] = p2pMagic|int64(c.dt)<<32, int64(len(c.shape))
	for i, s := range c.shape {
		h[2+i] = int64(s)
	}
	mu := g.p2pLock(false, dst) // the header and the data go together
	mu.Lock()
	defer mu.Unlock()
	_, err := g.withData(c, func() (*lathe.Tensor, error) {
		if c.err != nil { // x could not be read: nothing was sent
			return nil, opError(op, c.err)
		}
		if err := g.host.send(ctx, hostBuf{b: asBytes(h), t: tInt64}, dst, tagHeader); err != nil {
			return nil, opError(op, err)
		}
		if err := g.host.send(ctx, c.data, dst, tagData); err != nil {
			return nil, opError(op, err)
		}
		return nil, nil
	})
	return err
}

// Recv returns the next tensor that rank src sends to this one with Send
// (torch.distributed.recv, without the buffer: the shape and dtype come
// with the data). A Recv that ctx's deadline ends before a message comes
// is cancelled, and the group stays usable; once a message's header has
// come, Recv takes its data, which follows at once, even past the
// deadline (by a minute), so that the next Recv gets the next message.
// Receives from one rank, from any number of goroutines, each get a whole
// message, in the order they were sent. src outside the group is an ErrIndex, and this rank
// itself an ErrValue.
func (g *Group) Recv(ctx context.Context, src int) (*lathe.Tensor, error) {
	const op = "recv"
	if err := g.usable(op, ctx); err != nil {
		return nil, err
	}
	if err := g.checkPeer(op, "src", src); err != nil {
		return nil, err
	}
	mu := g.p2pLock(true, src) // the header and the data come together
	mu.Lock()
	defer mu.Unlock()
	h := make([]int64, 2+maxDims)
	if err := g.host.recv(ctx, hostBuf{b: asBytes(h), t: tInt64}, src, tagHeader); err != nil {
		return nil, opError(op, err)
	}
	dt, ndim := lathe.DType(h[0]>>32), int(h[1])
	if h[0]&0xffffffff != p2pMagic || !dt.Valid() || ndim < 0 || ndim > maxDims {
		return nil, lathe.NewError(op, lathe.ErrValue, "", "got a message from rank "+itoa(src)+" that is not a lathe tensor's header",
			"pair every Recv with a dist Send on rank "+itoa(src))
	}
	shape := make([]int, ndim)
	n := 1
	for i := range shape {
		shape[i] = int(h[2+i])
		if shape[i] < 0 || (shape[i] > 0 && n > maxCount/shape[i]) {
			return nil, lathe.NewError(op, lathe.ErrValue, "", "got a header from rank "+itoa(src)+" with sizes "+shapeString(shape[:i+1]), "")
		}
		n *= shape[i]
	}
	// The header has come, and the data follows it at once: it is taken
	// even past ctx's deadline, or the next Recv would take it for its own.
	dataCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dataWait)
	defer cancel()
	t := makeHost(g.dev, dt, shape, g.spare(), func(data hostBuf) error { return g.host.recv(dataCtx, data, src, tagData) })
	if err := t.Err(); err != nil {
		return nil, resultError(op, err)
	}
	return t, nil
}
