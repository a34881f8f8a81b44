package dist

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/lathe-ml/lathe"
)

// The TCP engine: the transport of a job that torchrun started (or any
// launcher that sets its variables), as gloo is PyTorch's. Every pair of
// ranks shares one connection (tcp_rendezvous.go makes them), on which
// each message is a frame: a tag, a length and the bytes. A goroutine per
// connection reads the frames as they come and queues them by tag, so that
// a send never waits for the peer to call its receive, and a peer that
// exits or closes its group ends every wait on it at once. The collectives
// are rings: reduce-scatter, then all-gather for an all-reduce, so that
// each rank sends and receives about twice the data whatever the job's
// size, and every rank reduces each chunk in the same order and gets the
// same bits; an all-reduce of two ranks, or a small one, goes directly
// from each rank to every other in one round (directAllReduce).

// tagRing is the tag of the collectives' frames, which every rank sends in
// the same order; Send and Recv use tags of their own (p2p.go).
const tagRing = -1

// tcpEngine is a group's transport over TCP.
type tcpEngine struct {
	rank, size int
	at         string     // the rendezvous's host:port, for describe
	peers      []*tcpPeer // by rank; nil at this rank's

	// run is held for the whole of a collective: two at once from one
	// rank's goroutines would take each other's frames, which share a tag.
	run sync.Mutex

	// directBytes is the size up to which an all-reduce of more than two
	// ranks sends every rank's data to every other (directAllReduce)
	// rather than round the ring: fewer rounds, more data.
	directBytes int

	// work is the memory of the reduce-scatter's ring, which reduces a
	// copy of its input in place.
	work hostPool

	// A collective that failed part way (a deadline, a peer gone) breaks
	// the group: the ranks' sequence of frames is lost for good.
	breaker
}

// tcpPeer is the connection to one other rank, and the frames it sent
// that no receive has taken yet.
type tcpPeer struct {
	rank int
	conn net.Conn
	wmu  sync.Mutex // one frame written at a time

	// A put's context, cancelled, sets a write deadline in the past from a
	// goroutine of its own, which may run late: it does so only while its
	// put is the one under way (writes, under dmu).
	dmu    sync.Mutex
	writes uint64

	frames hostPool // frames' memory that receives are done with (recycle)

	mu   sync.Mutex
	got  map[int32][][]byte // by tag, oldest first
	wake chan struct{}      // closed, and replaced, when a frame comes or reading ends
	err  error              // why reading ended: the peer left, or the connection failed
}

func newTCPPeer(rank int, conn net.Conn) *tcpPeer {
	p := &tcpPeer{rank: rank, conn: conn, got: map[int32][][]byte{}, wake: make(chan struct{})}
	go p.read()
	return p
}

// frameHead is a frame's tag (int32) and length (uint64), little-endian.
const frameHead = 12

// read queues the peer's frames until the connection ends.
func (p *tcpPeer) read() {
	var head [frameHead]byte
	for {
		_, err := io.ReadFull(p.conn, head[:])
		var b []byte
		if err == nil {
			n := binary.LittleEndian.Uint64(head[4:])
			if n > maxCount*8 {
				err = errors.New("it sent a frame of " + itoa(int(n>>20)) + " MiB, which no lathe rank sends (is another program on the port?)")
			} else {
				b = p.frames.take(int(n))
				_, err = io.ReadFull(p.conn, b)
			}
		}
		p.mu.Lock()
		if err == nil {
			tag := int32(binary.LittleEndian.Uint32(head[:4]))
			p.got[tag] = append(p.got[tag], b)
		} else {
			p.err = err
		}
		close(p.wake)
		p.wake = make(chan struct{})
		p.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// recycle gives back a frame that take returned, once its bytes are used.
func (p *tcpPeer) recycle(b []byte) { p.frames.give(b) }

// take waits, by ctx's deadline, for the oldest frame of tag.
func (p *tcpPeer) take(ctx context.Context, tag int) ([]byte, error) {
	for {
		p.mu.Lock()
		if q := p.got[int32(tag)]; len(q) > 0 {
			b := q[0]
			q[0] = nil
			if len(q) == 1 {
				delete(p.got, int32(tag))
			} else {
				p.got[int32(tag)] = q[1:]
			}
			p.mu.Unlock()
			return b, nil
		}
		err, wake := p.err, p.wake
		p.mu.Unlock()
		if err != nil {
			return nil, p.gone(err)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put writes one frame, by ctx's deadline.
func (p *tcpPeer) put(ctx context.Context, tag int, b []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	dl, _ := ctx.Deadline() // the zero time, without one: no deadline
	p.conn.SetWriteDeadline(dl)
	p.dmu.Lock()
	this := p.writes
	p.dmu.Unlock()
	stop := context.AfterFunc(ctx, func() { // cancelled
		p.dmu.Lock()
		if p.writes == this {
			p.conn.SetWriteDeadline(time.Unix(1, 0))
		}
		p.dmu.Unlock()
	})
	defer func() {
		stop()
		p.dmu.Lock()
		p.writes++
		p.dmu.Unlock()
	}()
	var head [frameHead]byte
	binary.LittleEndian.PutUint32(head[:4], uint32(int32(tag)))
	binary.LittleEndian.PutUint64(head[4:], uint64(len(b)))
	bufs := net.Buffers{head[:], b}
	_, err := bufs.WriteTo(p.conn)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return errors.Join(context.DeadlineExceeded, err)
	}
	return p.gone(err)
}

// gone is the error of a peer whose connection ended.
func (p *tcpPeer) gone(err error) *lathe.Error {
	detail := "rank " + itoa(p.rank) + " is gone: its connection ended (it closed its group, or exited)"
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		detail = "the connection to rank " + itoa(p.rank) + " failed"
	}
	e := lathe.NewError("", lathe.ErrUnavailable, "", detail, "every rank must take part in every collective until the job ends")
	e.Err = err
	return e
}

func (e *tcpEngine) describe() string {
	return "TCP between " + itoa(e.size) + " processes (rendezvous " + e.at + ")"
}

func (e *tcpEngine) place() (int, int) { return e.rank, e.size }

func (e *tcpEngine) inPlace() bool { return true }

func (e *tcpEngine) close() error {
	for _, p := range e.peers {
		if p != nil {
			p.conn.Close()
		}
	}
	return nil
}

// collective runs f, the frames of one collective, on an unbroken group,
// and breaks the group if f fails: the ranks' frames are out of step.
func (e *tcpEngine) collective(ctx context.Context, call string, f func() error) error {
	e.run.Lock()
	defer e.run.Unlock()
	if err := e.brokenErr(); err != nil {
		return err
	}
	err := f()
	if err == nil {
		return nil
	}
	var le *lathe.Error
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &le) {
		le = timeoutError(call, ctx, true)
		if ctx.Err() == nil {
			le.Err = err
		}
	}
	e.breakWith(le)
	return le
}

// exchange sends b to the next rank of the ring and returns the frame
// the previous rank sent.
func (e *tcpEngine) exchange(ctx context.Context, b []byte) ([]byte, error) {
	next, prev := e.peers[(e.rank+1)%e.size], e.peers[(e.rank+e.size-1)%e.size]
	if err := next.put(ctx, tagRing, b); err != nil {
		return nil, err
	}
	return prev.take(ctx, tagRing)
}

// chunks are the byte offsets of counts elements of size bytes each, one
// part per rank, and the end.
func chunks(counts []int, size int) []int {
	offs := make([]int, len(counts)+1)
	for i, c := range counts {
		offs[i+1] = offs[i] + c*size
	}
	return offs
}

// ringReduceScatter reduces every rank's buf into its own chunk: after it,
// chunk r of rank r's buf is the reduction over the ranks, and the other
// chunks hold partial sums. At step s a rank passes on chunk r-s-1, which
// it reduced at the step before (its own at the first), and reduces chunk
// r-s-2 from the previous rank into its own copy.
func (e *tcpEngine) ringReduceScatter(ctx context.Context, buf hostBuf, offs []int, op reduceOp) error {
	return e.ring(ctx, buf.b, offs, 1, func(dst, got []byte) { reduceInto(dst, dst, got, buf.t, op) })
}

// ringAllGather gives every rank every rank's chunk of buf, each rank
// starting with its own: at step s a rank passes on chunk r-s and takes
// chunk r-s-1 from the previous rank.
func (e *tcpEngine) ringAllGather(ctx context.Context, buf hostBuf, offs []int) error {
	return e.ring(ctx, buf.b, offs, 0, func(dst, got []byte) { copy(dst, got) })
}

// ring is n-1 steps round the ring over the chunks of buf at offs: at step
// s a rank sends chunk r-s-lag to the next rank and combines chunk
// r-s-lag-1, from the previous one, into its own.
func (e *tcpEngine) ring(ctx context.Context, buf []byte, offs []int, lag int, combine func(dst, got []byte)) error {
	n := e.size
	prev := e.peers[(e.rank+n-1)%n]
	for s := range n - 1 {
		out := (e.rank - s - lag + 2*n) % n
		in := (out + n - 1) % n
		got, err := e.exchange(ctx, buf[offs[out]:offs[out+1]])
		if err != nil {
			return err
		}
		if err := fits(got, offs[in+1]-offs[in], prev); err != nil {
			return err
		}
		combine(buf[offs[in]:offs[in+1]], got)
		prev.recycle(got)
	}
	return nil
}

// fits checks that a frame from p has the n bytes the collective expects.
func fits(got []byte, n int, p *tcpPeer) error {
	if len(got) != n {
		return lathe.NewError("", lathe.ErrUnavailable, "", "rank "+itoa(p.rank)+" sent "+itoa(len(got))+" bytes where "+itoa(n)+
			" were due: the ranks' collectives are out of step", "call the same collectives in the same order on every rank")
	}
	return nil
}

func (e *tcpEngine) barrier(ctx context.Context) error {
	// Passing an empty frame round the ring n-1 times reaches each rank
	// from every other.
	return e.collective(ctx, "barrier", func() error {
		return e.ringAllGather(ctx, hostBuf{b: []byte{}, t: tByte}, make([]int, e.size+1))
	})
}

func (e *tcpEngine) allReduce(ctx context.Context, send, recv hostBuf, op reduceOp) error {
	if e.size == 2 || len(send.b) <= e.directBytes {
		return e.collective(ctx, "all_reduce", func() error { return e.directAllReduce(ctx, send, recv, op) })
	}
	copy(recv.b, send.b)
	counts := make([]int, e.size)
	n := send.n()
	for i := range counts {
		counts[i] = n/e.size + btoi(i < n%e.size)
	}
	offs := chunks(counts, send.t.size())
	return e.collective(ctx, "all_reduce", func() error {
		if err := e.ringReduceScatter(ctx, recv, offs, op); err != nil {
			return err
		}
		return e.ringAllGather(ctx, recv, offs)
	})
}

// directAllReduce sends send to every other rank and reduces what they
// all sent in rank order, so that every rank gets the same bits: one
// round where the ring takes 2(n-1), for (n-1) times the data where the
// ring sends 2(n-1)/n. Two ranks send as much either way.
func (e *tcpEngine) directAllReduce(ctx context.Context, send, recv hostBuf, op reduceOp) error {
	for _, p := range e.peers {
		if p != nil {
			if err := p.put(ctx, tagRing, send.b); err != nil {
				return err
			}
		}
	}
	var first []byte // rank 0's, reduced with rank 1's in one pass
	for r, p := range e.peers {
		part := send.b
		if p != nil {
			got, err := p.take(ctx, tagRing)
			if err != nil {
				return err
			}
			if err := fits(got, len(send.b), p); err != nil {
				return err
			}
			defer p.recycle(got)
			part = got
		}
		switch r {
		case 0:
			first = part
		case 1:
			reduceInto(recv.b, first, part, send.t, op)
		default:
			reduceInto(recv.b, recv.b, part, send.t, op)
		}
	}
	return nil
}

func (e *tcpEngine) broadcast(ctx context.Context, buf hostBuf, root int) error {
	return e.collective(ctx, "broadcast", func() error {
		if e.rank != root {
			got, err := e.peers[root].take(ctx, tagRing)
			if err == nil {
				err = fits(got, len(buf.b), e.peers[root])
			}
			copy(buf.b, got)
			e.peers[root].recycle(got)
			return err
		}
		for _, p := range e.peers {
			if p != nil {
				if err := p.put(ctx, tagRing, buf.b); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (e *tcpEngine) allGather(ctx context.Context, send, recv hostBuf, counts []int) error {
	offs := chunks(counts, send.t.size())
	copy(recv.b[offs[e.rank]:offs[e.rank+1]], send.b)
	return e.collective(ctx, "all_gather", func() error { return e.ringAllGather(ctx, recv, offs) })
}

func (e *tcpEngine) reduceScatter(ctx context.Context, send, recv hostBuf, counts []int, op reduceOp) error {
	work := hostBuf{b: e.work.take(len(send.b)), t: send.t}
	copy(work.b, send.b)
	offs := chunks(counts, send.t.size())
	return e.collective(ctx, "reduce_scatter", func() error {
		if err := e.ringReduceScatter(ctx, work, offs, op); err != nil {
			return err
		}
		copy(recv.b, work.b[offs[e.rank]:offs[e.rank+1]])
		e.work.give(work.b)
		return nil
	})
}

func (e *tcpEngine) send(ctx context.Context, buf hostBuf, dst, tag int) error {
	return e.collective(ctx, "send", func() error { return e.peers[dst].put(ctx, tag, buf.b) })
}

// recv is the one call that a deadline does not break the group for: a
// frame that comes later waits for the next receive.
func (e *tcpEngine) recv(ctx context.Context, buf hostBuf, src, tag int) error {
	if err := e.brokenErr(); err != nil {
		return err
	}
	got, err := e.peers[src].take(ctx, tag)
	switch {
	case err != nil && ctx.Err() != nil:
		return timeoutError("recv", ctx, false)
	case err != nil:
		return err
	}
	if err := fits(got, len(buf.b), e.peers[src]); err != nil {
		return err
	}
	copy(buf.b, got)
	e.peers[src].recycle(got)
	return nil
}

// aligned is n bytes on an 8-byte boundary, where every element type's
// values may be read in place.
func aligned(n int) []byte { return asBytes(make([]uint64, (n+7)/8))[:n] }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// reduceInto sets dst to a op b, element-wise, for elements of t; dst
// may be a.
func reduceInto(dst, a, b []byte, t elemType, op reduceOp) {
	switch t {
	case tFloat32:
		reduce(fromBytes[float32](dst), fromBytes[float32](a), fromBytes[float32](b), op)
	case tFloat64:
		reduce(fromBytes[float64](dst), fromBytes[float64](a), fromBytes[float64](b), op)
	case tInt8:
		reduce(fromBytes[int8](dst), fromBytes[int8](a), fromBytes[int8](b), op)
	case tUint8, tByte:
		reduce(dst, a, b, op)
	case tInt16:
		reduce(fromBytes[int16](dst), fromBytes[int16](a), fromBytes[int16](b), op)
	case tUint16:
		reduce(fromBytes[uint16](dst), fromBytes[uint16](a), fromBytes[uint16](b), op)
	case tInt32:
		reduce(fromBytes[int32](dst), fromBytes[int32](a), fromBytes[int32](b), op)
	case tInt64:
		reduce(fromBytes[int64](dst), fromBytes[int64](a), fromBytes[int64](b), op)
	}
}

// reduce is dst = a op b elementwise: integers wrap, as MPI's C sums do,
// and a NaN wins a max or min, as in torch.maximum.
func reduce[T int8 | uint8 | int16 | uint16 | int32 | int64 | float32 | float64](dst, a, b []T, op reduceOp) {
	a, b = a[:len(dst)], b[:len(dst)]
	switch op {
	case opSum:
		for i := range dst {
			dst[i] = a[i] + b[i]
		}
	case opMax:
		for i := range dst {
			dst[i] = max(a[i], b[i])
		}
	case opMin:
		for i := range dst {
			dst[i] = min(a[i], b[i])
		}
	}
}
