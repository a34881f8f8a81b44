package dist

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/lathe-ml/lathe"
)

// shareBlob gives every rank rank 0's blob (NCCL's unique id) through a
// small TCP rendezvous on addr:port, as torchrun's store on MASTER_ADDR
// and MASTER_PORT: rank 0 listens and answers size-1 connections, each
// with a magic word, the blob's length and the blob; every other rank
// dials, retrying until rank 0 listens, and reads it. All by ctx's
// deadline.
func shareBlob(ctx context.Context, addr string, port, rank, size int, blob []byte) ([]byte, error) {
	hostport := net.JoinHostPort(addr, strconv.Itoa(port))
	if rank == 0 {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", hostport)
		if err != nil {
			return nil, storeError("rank 0 cannot listen on "+hostport, err)
		}
		defer ln.Close()
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		msg := append(append([]byte("lathe-id"), byte(len(blob)>>8), byte(len(blob))), blob...)
		for served := 0; served < size-1; {
			conn, err := ln.Accept()
			if err != nil {
				if ctx.Err() != nil {
					return nil, storeError("rank 0 served "+itoa(served)+" of "+itoa(size-1)+" ranks before its deadline", ctx.Err())
				}
				return nil, storeError("rank 0 could not accept on "+hostport, err)
			}
			if dl, ok := ctx.Deadline(); ok {
				conn.SetDeadline(dl)
			}
			_, err = conn.Write(msg)
			conn.Close()
			if err == nil {
				served++
			}
		}
		return blob, nil
	}
	var d net.Dialer
	for sleep := 10 * time.Millisecond; ; sleep = min(2*sleep, time.Second) {
		conn, err := d.DialContext(ctx, "tcp", hostport)
		if err == nil {
			if dl, ok := ctx.Deadline(); ok {
				conn.SetDeadline(dl)
			}
			var head [10]byte
			_, err = io.ReadFull(conn, head[:])
			if err == nil && string(head[:8]) != "lathe-id" {
				err = errors.New("the answer is not a lathe rendezvous (is another program on the port?)")
			}
			var out []byte
			if err == nil {
				out = make([]byte, int(head[8])<<8|int(head[9]))
				_, err = io.ReadFull(conn, out)
			}
			conn.Close()
			if err == nil {
				return out, nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// A rank 0 that took the call but never answered: ctx's
				// deadline, which is the connection's, ended the read
				// (ctx itself may not say so yet).
				err = errors.Join(context.DeadlineExceeded, err)
			}
			return nil, storeError("rank "+itoa(rank)+" could not read the id from "+hostport, err)
		}
		select {
		case <-ctx.Done():
			return nil, storeError("rank "+itoa(rank)+" found no rank 0 at "+hostport+" before its deadline", errors.Join(ctx.Err(), err))
		case <-time.After(sleep):
		}
	}
}

func storeError(detail string, cause error) error {
	e := lathe.NewError("init", lathe.ErrUnavailable, "", "rendezvous: "+detail,
		"check MASTER_ADDR and MASTER_PORT, and that rank 0 runs")
	e.Err = cause
	return e
}
