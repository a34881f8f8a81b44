package dist

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/lathe-ml/lathe"
)

// The rendezvous of the TCP engine, at MASTER_ADDR:MASTER_PORT as
// torchrun's store is. Rank 0 listens there. Every other rank listens on
// a port of its own, dials rank 0 (again and again until rank 0 listens)
// and says its rank and port; once all have, rank 0 answers each with the
// table of every rank's address. Then each rank dials the ranks below it
// and accepts the ranks above it, so that every pair has one connection
// (rank 0's are those of the rendezvous). All by the context's deadline.

// The first words of the rendezvous's messages, so that a stray program on
// a port is told apart from a rank: a rank's join (its rank, the job's
// size and its port), rank 0's table, and a rank's hello to a peer.
var (
	joinMagic  = []byte("lathe-j1")
	tableMagic = []byte("lathe-t1")
	helloMagic = []byte("lathe-h1")
)

// newTCPEngine connects this process to every other of the job that env
// describes.
func newTCPEngine(ctx context.Context, env Environment) (*tcpEngine, error) {
	e := &tcpEngine{rank: env.Rank, size: env.Size, peers: make([]*tcpPeer, env.Size), directBytes: 256 << 10,
		at: net.JoinHostPort(env.MasterAddr, strconv.Itoa(env.MasterPort))}
	if env.Size == 1 {
		return e, nil
	}
	if env.MasterAddr == "" {
		return nil, lathe.NewError("init", lathe.ErrValue, "", "the TCP engine's ranks meet at MASTER_ADDR:MASTER_PORT, which "+
			string(env.Launcher)+" did not set", "launch with torchrun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT")
	}
	conns, err := mesh(ctx, env)
	if err != nil {
		return nil, err
	}
	for r, c := range conns {
		if c != nil {
			c.SetDeadline(time.Time{})
			e.peers[r] = newTCPPeer(r, c)
		}
	}
	return e, nil
}

// mesh makes the connection to every other rank, by rank (nil at env's).
func mesh(ctx context.Context, env Environment) (conns []net.Conn, err error) {
	conns = make([]net.Conn, env.Size)
	var w watch
	defer func() {
		if !w.end() && err == nil { // the context ended as the rendezvous did
			err = rendezvousError("rank "+itoa(env.Rank)+" met the others as its context ended", ctx.Err())
		}
		if err != nil {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
		}
	}()
	if env.Rank == 0 {
		return conns, serveRendezvous(ctx, &w, env, conns)
	}
	ln, err := listen(ctx, ":0")
	if err != nil {
		return conns, rendezvousError("rank "+itoa(env.Rank)+" cannot listen for its peers", err)
	}
	defer ln.Close()
	c, err := dialRetrying(ctx, &w, net.JoinHostPort(env.MasterAddr, strconv.Itoa(env.MasterPort)))
	if err != nil {
		return conns, rendezvousError("rank "+itoa(env.Rank)+" found no rank 0 at "+net.JoinHostPort(env.MasterAddr, strconv.Itoa(env.MasterPort)), err)
	}
	conns[0] = c
	join := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(bytes.Clone(joinMagic), uint32(env.Size)), uint32(env.Rank))
	join = binary.LittleEndian.AppendUint16(join, uint16(ln.Addr().(*net.TCPAddr).Port))
	if _, err := c.Write(join); err != nil {
		return conns, rendezvousError("rank "+itoa(env.Rank)+" could not join at rank 0", err)
	}
	table, err := readTable(c, env.Size)
	if err != nil {
		return conns, rendezvousError("rank "+itoa(env.Rank)+" could not read the ranks' addresses from rank 0", err)
	}
	hello := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(bytes.Clone(helloMagic), uint32(env.Size)), uint32(env.Rank))
	for j := 1; j < env.Rank; j++ {
		c, err := dial(ctx, &w, table[j])
		if err == nil {
			conns[j] = c
			_, err = c.Write(hello)
		}
		if err != nil {
			return conns, rendezvousError("rank "+itoa(env.Rank)+" could not reach rank "+itoa(j)+" at "+table[j], err)
		}
	}
	for left := env.Size - 1 - env.Rank; left > 0; {
		c, head, err := accept(ctx, &w, ln, len(helloMagic)+8, helloMagic)
		if err != nil {
			return conns, rendezvousError("rank "+itoa(env.Rank)+" heard from "+itoa(env.Size-1-env.Rank-left)+" of the "+
				itoa(env.Size-1-env.Rank)+" ranks above it", err)
		}
		if c == nil {
			continue // not a rank
		}
		size, rank := int(binary.LittleEndian.Uint32(head[8:])), int(binary.LittleEndian.Uint32(head[12:]))
		if size != env.Size || rank <= env.Rank || rank >= env.Size || conns[rank] != nil {
			c.Close()
			return conns, rendezvousError("rank "+itoa(env.Rank)+" was called by a rank "+itoa(rank)+" of a job of "+itoa(size), nil)
		}
		conns[rank] = c
		left--
	}
	return conns, nil
}

// serveRendezvous is rank 0's part: it takes every other rank's join on
// MASTER_PORT, then sends each the table of addresses.
func serveRendezvous(ctx context.Context, w *watch, env Environment, conns []net.Conn) error {
	ln, err := listen(ctx, net.JoinHostPort("", strconv.Itoa(env.MasterPort)))
	if err != nil {
		return rendezvousError("rank 0 cannot listen on port "+itoa(env.MasterPort), err)
	}
	defer ln.Close()
	table := make([]string, env.Size)
	for joined := 0; joined < env.Size-1; {
		c, head, err := accept(ctx, w, ln, len(joinMagic)+10, joinMagic)
		if err != nil {
			return rendezvousError("rank 0 heard from "+itoa(joined)+" of the "+itoa(env.Size-1)+" other ranks", err)
		}
		if c == nil {
			continue // not a rank
		}
		size, rank := int(binary.LittleEndian.Uint32(head[8:])), int(binary.LittleEndian.Uint32(head[12:]))
		if size != env.Size || rank < 1 || rank >= env.Size || conns[rank] != nil {
			c.Close()
			return rendezvousError("rank 0 was joined by a rank "+itoa(rank)+" of a job of "+itoa(size)+", in a job of "+itoa(env.Size)+
				" (two jobs on one MASTER_PORT, or a rank started twice?)", nil)
		}
		host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		table[rank] = net.JoinHostPort(host, strconv.Itoa(int(binary.LittleEndian.Uint16(head[16:]))))
		conns[rank] = c
		joined++
	}
	msg := bytes.Clone(tableMagic)
	for _, a := range table {
		msg = append(binary.LittleEndian.AppendUint16(msg, uint16(len(a))), a...)
	}
	for r, c := range conns {
		if c == nil {
			continue
		}
		if _, err := c.Write(msg); err != nil {
			return rendezvousError("rank 0 could not send the addresses to rank "+itoa(r), err)
		}
	}
	return nil
}

// readTable reads rank 0's table of size addresses.
func readTable(c net.Conn, size int) ([]string, error) {
	head := make([]byte, len(tableMagic))
	if _, err := io.ReadFull(c, head); err != nil {
		return nil, err
	}
	if !bytes.Equal(head, tableMagic) {
		return nil, errors.New("the answer is not a lathe rendezvous (is another program on MASTER_PORT?)")
	}
	table := make([]string, size)
	for i := range table {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return nil, err
		}
		a := make([]byte, binary.LittleEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, a); err != nil {
			return nil, err
		}
		table[i] = string(a)
	}
	return table, nil
}

// listen listens on addr until ctx ends.
func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	return stopListener{ln, stop}, nil
}

// stopListener is a listener that ctx's end closes, until it is closed.
type stopListener struct {
	net.Listener
	stop func() bool
}

func (l stopListener) Close() error {
	l.stop()
	return l.Listener.Close()
}

// accept takes the next connection on ln and reads its first n bytes,
// which start with magic; a connection whose first bytes do not (a stray
// program's) is closed, and accept returns no connection and no error.
func accept(ctx context.Context, w *watch, ln net.Listener, n int, magic []byte) (net.Conn, []byte, error) {
	c, err := ln.Accept()
	if err != nil {
		return nil, nil, errors.Join(ctx.Err(), err)
	}
	w.add(ctx, c)
	head := make([]byte, n)
	if _, err := io.ReadFull(c, head); err != nil || !bytes.Equal(head[:len(magic)], magic) {
		c.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, nil
	}
	return c, head, nil
}

// dial connects to addr by ctx's end, which the connection keeps until
// the rendezvous ends.
func dial(ctx context.Context, w *watch, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	w.add(ctx, c)
	return c, nil
}

// dialRetrying dials addr until it answers (rank 0 may start last), by
// ctx's deadline.
func dialRetrying(ctx context.Context, w *watch, addr string) (net.Conn, error) {
	for sleep := 10 * time.Millisecond; ; sleep = min(2*sleep, time.Second) {
		c, err := dial(ctx, w, addr)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), err)
		case <-time.After(sleep):
		}
	}
}

// watch ends the rendezvous's reads and writes when its context ends: its
// connections take the context's deadline, and a cancellation sets one in
// the past, until end (the connections then serve the group, and a later
// end of the context must not touch them).
type watch struct{ stops []func() bool }

func (w *watch) add(ctx context.Context, c net.Conn) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	w.stops = append(w.stops, context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) }))
}

// end stops watching, and reports whether the context was still live.
func (w *watch) end() bool {
	live := true
	for _, stop := range w.stops {
		live = stop() && live
	}
	return live
}

// rendezvousError is an Init error of the rendezvous; a read that ran
// into the deadline wraps context.DeadlineExceeded.
func rendezvousError(detail string, cause error) error {
	if errors.Is(cause, os.ErrDeadlineExceeded) && !errors.Is(cause, context.DeadlineExceeded) {
		cause = errors.Join(context.DeadlineExceeded, cause)
	}
	e := lathe.NewError("init", lathe.ErrUnavailable, "", "rendezvous: "+detail,
		"check MASTER_ADDR and MASTER_PORT, and that every rank of the job runs")
	e.Err = cause
	return e
}
