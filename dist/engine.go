package dist

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe"
)

// elemType is how an engine moves an element: the MPI codes of cdecl.h.
type elemType int

const (
	tFloat32 elemType = iota
	tFloat64
	tInt8
	tUint8
	tInt16
	tUint16
	tInt32
	tInt64
	tByte
)

var elemSizes = [...]int{tFloat32: 4, tFloat64: 8, tInt8: 1, tUint8: 1, tInt16: 2, tUint16: 2, tInt32: 4, tInt64: 8, tByte: 1}

func (t elemType) size() int { return elemSizes[t] }

// reduceOp is an engine's reduction: the MPI codes of cdecl.h. Mean is a
// sum that the caller divides.
type reduceOp int

const (
	opSum reduceOp = iota
	opMax
	opMin
)

// hostBuf is host memory an engine reads or writes: n elements of t.
type hostBuf struct {
	b []byte
	t elemType
}

func (h hostBuf) n() int { return len(h.b) / h.t.size() }

// hostEngine is a transport between the group's processes over host
// memory. Every call ends by ctx's deadline with an error wrapping
// ctx.Err(); counts are in elements, one per rank. Calls are made in the
// same order on every rank (a collective's contract).
type hostEngine interface {
	describe() string
	place() (rank, size int)
	barrier(ctx context.Context) error
	allReduce(ctx context.Context, send, recv hostBuf, op reduceOp) error
	broadcast(ctx context.Context, buf hostBuf, root int) error
	allGather(ctx context.Context, send, recv hostBuf, counts []int) error
	reduceScatter(ctx context.Context, send, recv hostBuf, counts []int, op reduceOp) error
	send(ctx context.Context, buf hostBuf, dst, tag int) error
	recv(ctx context.Context, buf hostBuf, src, tag int) error
	close() error
	// inPlace reports whether a call is done with its buffers when it
	// returns, even with an error, so that they may be tensors' own
	// memory: the TCP engine's calls and a group of one's run in the
	// caller's goroutine; a request of MPI's may outlive its deadline,
	// reading and writing its pinned buffers after the call returned.
	inPlace() bool
}

// selfEngine is the transport of a group of one: every collective is a
// copy, and there is no peer to send to.
type selfEngine struct{}

func (selfEngine) describe() string                  { return "a group of one (no transport)" }
func (selfEngine) barrier(ctx context.Context) error { return nil }
func (selfEngine) place() (int, int)                 { return 0, 1 }
func (selfEngine) allReduce(_ context.Context, send, recv hostBuf, _ reduceOp) error {
	copy(recv.b, send.b)
	return nil
}
func (selfEngine) broadcast(context.Context, hostBuf, int) error { return nil }
func (selfEngine) allGather(_ context.Context, send, recv hostBuf, _ []int) error {
	copy(recv.b, send.b)
	return nil
}
func (selfEngine) reduceScatter(_ context.Context, send, recv hostBuf, _ []int, _ reduceOp) error {
	copy(recv.b, send.b)
	return nil
}
func (selfEngine) send(context.Context, hostBuf, int, int) error { return errNoPeer }
func (selfEngine) recv(context.Context, hostBuf, int, int) error { return errNoPeer }
func (selfEngine) close() error                                  { return nil }
func (selfEngine) inPlace() bool                                 { return true }

var errNoPeer = lathe.NewError("", lathe.ErrValue, "peer", "is this process: a group of one has no other", "launch the job with several processes")

// breaker is an engine's broken state: set by the first call that failed
// part way, after which every call fails.
type breaker struct {
	bmu    sync.Mutex
	broken *lathe.Error
}

// breakWith breaks the group by err, unless it is broken already.
func (b *breaker) breakWith(err *lathe.Error) {
	b.bmu.Lock()
	defer b.bmu.Unlock()
	if b.broken == nil {
		b.broken = err
	}
}

// brokenErr is the error of every call on a broken group: a new one, at
// the caller's site, whose cause is the call that broke it.
func (b *breaker) brokenErr() error {
	b.bmu.Lock()
	defer b.bmu.Unlock()
	if b.broken == nil {
		return nil
	}
	err := lathe.NewError("", lathe.ErrUnavailable, "", "cannot run: the group is unusable since an earlier call failed",
		"close the group and end the job (every process must start again)")
	err.Err = b.broken
	return err
}

// busyKey marks a context whose caller computes on the cores while a call
// on it waits: DDP's all-reduces during the backward pass. While the flag
// it carries is set, an engine that polls (MPI, whose transfers move only
// inside its calls) sleeps between its tests instead of spinning, so that
// the wait does not take a core from the computation for as long as the
// pass runs; once the flag is cleared, it polls at full speed again. (The
// MLP's DDP step on this project's 2-core machine is one bucket, sent at
// the pass's end, and reads the same either way.)
type busyKey struct{}

// whileBusy is ctx marked with busy.
func whileBusy(ctx context.Context, busy *atomic.Bool) context.Context {
	return context.WithValue(ctx, busyKey{}, busy)
}

// busyFlag is ctx's mark, or nil.
func busyFlag(ctx context.Context) *atomic.Bool {
	b, _ := ctx.Value(busyKey{}).(*atomic.Bool)
	return b
}

// callKey is the context key of namedCall's name.
type callKey struct{}

// namedCall is ctx whose engine call a timeout error names as name, where
// the engine's own name for it would mislead: the ranks' check of each
// other's calls is an all-gather to the engine, and a user who called
// all_reduce was told "all_gather did not finish".
func namedCall(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, callKey{}, name)
}

// timeoutError is what a call that passed ctx's deadline (or was
// cancelled) returns: it wraps ctx.Err(), so errors.Is(err,
// context.DeadlineExceeded) holds. It names the call as namedCall did
// where ctx has a name.
func timeoutError(call string, ctx context.Context, broken bool) *lathe.Error {
	if name, ok := ctx.Value(callKey{}).(string); ok {
		call = name
	}
	detail := "did not finish before its context ended (a peer is slow, hung or gone)"
	fix := "give the context a later deadline, or find the peer that did not take part"
	if broken {
		detail += "; the group is unusable now, since a collective cannot be taken back once started"
		fix = "close the group and end the job (every process must start again), or give the context a later deadline"
	}
	e := lathe.NewError("", lathe.ErrUnavailable, "", call+" "+detail, fix)
	e.Err = context.Cause(ctx)
	return e
}

// opError fills in the public op's name on an engine's error.
func opError(op string, err error) error {
	var e *lathe.Error
	if errors.As(err, &e) {
		if e.Op == "" {
			e.Op = op
		}
		return e
	}
	e = lathe.NewError(op, lathe.ErrUnavailable, "", "failed", "")
	e.Err = err
	return e
}

// resultError is opError for a fault in making op's result, which the
// lathe ops that op runs (FromFunc, Cast) name as their own: the caller
// called op ("reduce_scatter: cpu: out of memory", not "from_func").
func resultError(op string, err error) error {
	var e *lathe.Error
	if errors.As(err, &e) {
		named := *e
		named.Op = op
		return &named
	}
	return opError(op, err)
}

func itoa(i int) string { return strconv.Itoa(i) }
