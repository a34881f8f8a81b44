//go:build cgo

package dist

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lathe-ml/lathe"
)

// The MPI binding: every call into mpi_shim.c is here, as a thin wrapper,
// and no C type leaves this file. MPI is initialised once per process at
// MPI_THREAD_SERIALIZED, and every MPI call of the process is made under
// mpiProc.mu, so calls from any goroutine (on any OS thread) are one at a
// time, as that level asks.

// mpiProc is the process's MPI: the library, whether lathe initialised it,
// and the groups open on it.
var mpiProc struct {
	mu        sync.Mutex // held around every MPI call
	openOnce  sync.Once
	openErr   error
	path      string
	version   string
	initDone  bool // MPI_Init_thread returned (and succeeded)
	initErr   error
	ownsInit  bool // lathe called MPI_Init_thread, so lathe finalizes
	initStart bool // a goroutine is in MPI_Init_thread
	initWait  chan struct{}
	finalized bool
	groups    int // open groups on MPI
}

// mpiLibCandidates: the library that LATHE_MPI_LIB names, else the soname
// of Open MPI 3.x and 4.x (Debian's libopenmpi3). Other MPIs (MPICH's
// libmpi.so.12) have another ABI, which the handles here do not fit.
func mpiLibCandidates() []string {
	if p := os.Getenv("LATHE_MPI_LIB"); p != "" {
		return []string{p}
	}
	return []string{"libmpi.so.40"}
}

// openMPI loads Open MPI once per process.
func openMPI() error {
	mpiProc.openOnce.Do(func() {
		var tried []string
		for _, path := range mpiLibCandidates() {
			cs := C.CString(path)
			msg := C.lathe_mpi_open(cs)
			C.free(unsafe.Pointer(cs))
			if msg == nil {
				mpiProc.path = path
				break
			}
			tried = append(tried, path+": "+C.GoString(msg))
		}
		if mpiProc.path == "" {
			mpiProc.openErr = lathe.NewError("init", lathe.ErrUnavailable, "", "cannot open Open MPI ("+strings.Join(tried, "; ")+")",
				"install Open MPI 4 (Debian: apt-get install libopenmpi3 openmpi-bin, which `make deps` does), or set LATHE_MPI_LIB to its libmpi.so.40")
			return
		}
		var buf [256]C.char
		if C.lathe_mpi_library_version(&buf[0], C.int(len(buf))) == 0 {
			mpiProc.version = strings.TrimSpace(strings.SplitN(C.GoString(&buf[0]), ",", 2)[0])
		}
	})
	return mpiProc.openErr
}

// mpiErr is the error of a failed MPI call, with MPI's text for its code.
func mpiErr(call string, rc C.int) *lathe.Error {
	var buf [256]C.char
	C.lathe_mpi_error_string(rc, &buf[0], C.int(len(buf)))
	text := C.GoString(&buf[0])
	if text == "" {
		text = "error " + itoa(int(rc))
	}
	return lathe.NewError("", lathe.ErrUnavailable, "", call+" failed: "+text, "")
}

// initMPI initialises MPI once per process (unless the program did), by
// ctx's deadline: MPI_Init_thread waits for every process of the job, so a
// peer that never starts would hold it forever.
func initMPI(ctx context.Context) error {
	if err := openMPI(); err != nil {
		return err
	}
	mpiProc.mu.Lock()
	switch {
	case mpiProc.finalized:
		mpiProc.mu.Unlock()
		return lathe.NewError("init", lathe.ErrUnavailable, "", "MPI was finalized when the last group closed, and MPI cannot start twice in a process",
			"keep one group open for the whole job")
	case mpiProc.initDone || mpiProc.initErr != nil:
		err := mpiProc.initErr
		mpiProc.mu.Unlock()
		return err
	case !mpiProc.initStart:
		mpiProc.initStart = true
		mpiProc.initWait = make(chan struct{})
		var flag C.int
		C.lathe_mpi_initialized(&flag)
		if flag != 0 { // the program initialised MPI itself
			mpiProc.initDone = true
			close(mpiProc.initWait)
			mpiProc.mu.Unlock()
			return nil
		}
		// Open MPI catches SIGSEGV, SIGBUS, SIGFPE and SIGABRT to print a
		// backtrace, which would take them from Go's runtime (a nil
		// dereference must stay a Go panic): leave them alone unless the
		// user asked otherwise.
		if _, ok := os.LookupEnv("OMPI_MCA_opal_signal"); !ok {
			os.Setenv("OMPI_MCA_opal_signal", "")
		}
		go func() {
			mpiProc.mu.Lock()
			defer mpiProc.mu.Unlock()
			var provided C.int
			const serialized = 2 // MPI_THREAD_SERIALIZED
			if rc := C.lathe_mpi_init_thread(serialized, &provided); rc != 0 {
				mpiProc.initErr = opError("init", mpiErr("MPI_Init_thread", rc))
			} else if provided < serialized {
				mpiProc.initErr = lathe.NewError("init", lathe.ErrUnavailable, "", "Open MPI gives thread level "+itoa(int(provided))+
					", and lathe calls MPI from several threads (it needs MPI_THREAD_SERIALIZED, 2)", "use an Open MPI built with thread support")
			} else {
				mpiProc.initDone, mpiProc.ownsInit = true, true
			}
			close(mpiProc.initWait)
		}()
	}
	wait := mpiProc.initWait
	mpiProc.mu.Unlock()
	select {
	case <-wait:
		mpiProc.mu.Lock()
		defer mpiProc.mu.Unlock()
		return mpiProc.initErr
	case <-ctx.Done():
		return opError("init", timeoutError("MPI_Init_thread (which waits for every process of the job)", ctx, false))
	}
}

// mpiEngine is a group's transport over its own duplicate of
// MPI_COMM_WORLD.
type mpiEngine struct {
	comm       C.uintptr_t
	rank, size int
	// An operation that did not finish by its deadline breaks the group:
	// MPI cannot take a collective back, so the communicator's sequence is
	// lost for good.
	breaker
	// stuck keeps the pinned buffers of operations that never finished:
	// MPI may still write to them, so they must never be moved or reused.
	stuck []*runtime.Pinner
}

func newMPIEngine(ctx context.Context) (*mpiEngine, error) {
	if err := initMPI(ctx); err != nil {
		return nil, err
	}
	e := &mpiEngine{}
	var slot *C.uintptr_t
	var req C.uintptr_t
	mpiProc.mu.Lock()
	rc := C.lathe_mpi_comm_idup_world(&slot, &req)
	mpiProc.mu.Unlock()
	if rc != 0 {
		C.free(unsafe.Pointer(slot))
		return nil, opError("init", mpiErr("MPI_Comm_idup", rc))
	}
	if err := e.wait(ctx, "MPI_Comm_idup", req, nil); err != nil {
		// slot stays allocated: MPI may still write the handle to it.
		return nil, opError("init", err)
	}
	e.comm = *slot
	C.free(unsafe.Pointer(slot))
	var rank, size C.int
	mpiProc.mu.Lock()
	rc = C.lathe_mpi_comm_set_errors_return(e.comm)
	if rc == 0 {
		rc = C.lathe_mpi_comm_rank(e.comm, &rank)
	}
	if rc == 0 {
		rc = C.lathe_mpi_comm_size(e.comm, &size)
	}
	if rc == 0 {
		mpiProc.groups++
	}
	mpiProc.mu.Unlock()
	if rc != 0 {
		return nil, opError("init", mpiErr("MPI_Comm_rank", rc))
	}
	e.rank, e.size = int(rank), int(size)
	return e, nil
}

func (e *mpiEngine) describe() string {
	return mpiProc.version + " (" + mpiProc.path + ")"
}

func (e *mpiEngine) place() (int, int) { return e.rank, e.size }

// wait polls req until it completes, fails or ctx ends. Polling is
// MPI_Test under the process's lock, as fast as the scheduler allows for
// the first second, then backing off to sleeps of up to 100 µs (and
// sleeping between tests while ctx says its caller is busy: whileBusy). A
// non-blocking collective moves only inside MPI calls, so a sleep between
// tests stalls it: sleeping from the 64th test on made a 1 KB all-reduce
// on two local ranks take 1.8 ms instead of 39 µs, and 64 MB 1.7 s instead
// of 0.7 s. Open MPI's own blocking calls spin the same way; the back-off
// only keeps a hung peer from holding a core until the deadline. pin holds
// the buffers MPI is using: unpinned once the request is done, kept for
// good if it never is.
func (e *mpiEngine) wait(ctx context.Context, call string, req C.uintptr_t, pin *runtime.Pinner) error {
	pace := newPacer(ctx)
	for {
		var done C.int
		mpiProc.mu.Lock()
		rc := C.lathe_mpi_test(&req, &done)
		mpiProc.mu.Unlock()
		if rc != 0 {
			return e.fail(mpiErr(call, rc), pin)
		}
		if done != 0 {
			if pin != nil {
				pin.Unpin()
			}
			return nil
		}
		if ctx.Err() != nil {
			return e.fail(timeoutError(call, ctx, true), pin)
		}
		pace.pause()
	}
}

// pacer spaces the MPI_Test calls of one wait (see wait): as fast as the
// scheduler allows for the first second, then sleeps growing to 100 µs;
// while busy is set, sleeps of busyPause, and the first second starts
// again once it is cleared.
type pacer struct {
	start time.Time
	sleep time.Duration
	busy  *atomic.Bool
}

// busyPause is the sleep between tests while the caller is busy: about a
// scheduler tick, which time.Sleep rounds such short sleeps up to anyway.
const busyPause = 20 * time.Microsecond

func newPacer(ctx context.Context) pacer { return pacer{start: time.Now(), busy: busyFlag(ctx)} }

func (p *pacer) pause() {
	if p.busy != nil && p.busy.Load() {
		time.Sleep(busyPause)
		p.start, p.sleep = time.Now(), 0
		return
	}
	if time.Since(p.start) < time.Second {
		runtime.Gosched()
		return
	}
	p.sleep = min(max(2*p.sleep, time.Microsecond), 100*time.Microsecond)
	time.Sleep(p.sleep)
}

// fail marks the group broken by err, keeping pin's buffers pinned.
func (e *mpiEngine) fail(err *lathe.Error, pin *runtime.Pinner) error {
	e.bmu.Lock()
	defer e.bmu.Unlock()
	if pin != nil {
		e.stuck = append(e.stuck, pin)
	}
	if e.broken == nil {
		e.broken = err
	}
	return err
}

// start runs one MPI start call under the lock with bufs pinned, and waits
// for the request it makes.
func (e *mpiEngine) start(ctx context.Context, call string, bufs []unsafe.Pointer, f func(req *C.uintptr_t) C.int) error {
	if err := e.brokenErr(); err != nil {
		return err
	}
	pin := new(runtime.Pinner)
	for _, b := range bufs {
		if b != nil {
			pin.Pin(b)
		}
	}
	var req C.uintptr_t
	mpiProc.mu.Lock()
	rc := f(&req)
	mpiProc.mu.Unlock()
	if rc != 0 {
		pin.Unpin()
		return mpiErr(call, rc)
	}
	return e.wait(ctx, call, req, pin)
}

// ptr is the address of b's first byte, or nil for an empty b (MPI reads
// nothing from a buffer of count 0).
func ptr[T any](b []T) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

func cints(v []int) []C.int {
	out := make([]C.int, len(v))
	for i, x := range v {
		out[i] = C.int(x)
	}
	return out
}

func (e *mpiEngine) inPlace() bool { return false }

func (e *mpiEngine) barrier(ctx context.Context) error {
	return e.start(ctx, "MPI_Ibarrier", nil, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_ibarrier(e.comm, req)
	})
}

func (e *mpiEngine) allReduce(ctx context.Context, send, recv hostBuf, op reduceOp) error {
	s, r := ptr(send.b), ptr(recv.b)
	return e.start(ctx, "MPI_Iallreduce", []unsafe.Pointer{s, r}, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_iallreduce(e.comm, s, r, C.int(send.n()), C.int(send.t), C.int(op), req)
	})
}

func (e *mpiEngine) broadcast(ctx context.Context, buf hostBuf, root int) error {
	p := ptr(buf.b)
	return e.start(ctx, "MPI_Ibcast", []unsafe.Pointer{p}, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_ibcast(e.comm, p, C.int(buf.n()), C.int(buf.t), C.int(root), req)
	})
}

func (e *mpiEngine) allGather(ctx context.Context, send, recv hostBuf, counts []int) error {
	cs := cints(counts)
	displs := make([]C.int, len(counts))
	for i := 1; i < len(counts); i++ {
		displs[i] = displs[i-1] + cs[i-1]
	}
	s, r := ptr(send.b), ptr(recv.b)
	return e.start(ctx, "MPI_Iallgatherv", []unsafe.Pointer{s, r, ptr(cs), ptr(displs)}, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_iallgatherv(e.comm, s, C.int(send.n()), r, (*C.int)(ptr(cs)), (*C.int)(ptr(displs)), C.int(send.t), req)
	})
}

func (e *mpiEngine) reduceScatter(ctx context.Context, send, recv hostBuf, counts []int, op reduceOp) error {
	cs := cints(counts)
	s, r := ptr(send.b), ptr(recv.b)
	return e.start(ctx, "MPI_Ireduce_scatter", []unsafe.Pointer{s, r, ptr(cs)}, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_ireduce_scatter(e.comm, s, r, (*C.int)(ptr(cs)), C.int(send.t), C.int(op), req)
	})
}

func (e *mpiEngine) send(ctx context.Context, buf hostBuf, dst, tag int) error {
	p := ptr(buf.b)
	return e.start(ctx, "MPI_Isend", []unsafe.Pointer{p}, func(req *C.uintptr_t) C.int {
		return C.lathe_mpi_isend(e.comm, p, C.int(buf.n()), C.int(buf.t), C.int(dst), C.int(tag), req)
	})
}

// recv is the one call that a deadline does not break the group for: a
// receive that never matched can be cancelled.
func (e *mpiEngine) recv(ctx context.Context, buf hostBuf, src, tag int) error {
	if err := e.brokenErr(); err != nil {
		return err
	}
	p := ptr(buf.b)
	pin := new(runtime.Pinner)
	if p != nil {
		pin.Pin(p)
	}
	var req C.uintptr_t
	mpiProc.mu.Lock()
	rc := C.lathe_mpi_irecv(e.comm, p, C.int(buf.n()), C.int(buf.t), C.int(src), C.int(tag), &req)
	mpiProc.mu.Unlock()
	if rc != 0 {
		pin.Unpin()
		return mpiErr("MPI_Irecv", rc)
	}
	// Wait on a context that never ends, polling ctx here, so that a
	// deadline cancels the receive instead of breaking the group.
	pace := newPacer(ctx)
	for {
		var done C.int
		mpiProc.mu.Lock()
		rc := C.lathe_mpi_test(&req, &done)
		mpiProc.mu.Unlock()
		if rc != 0 {
			return e.fail(mpiErr("MPI_Irecv", rc), pin)
		}
		if done != 0 {
			pin.Unpin()
			return nil
		}
		if ctx.Err() != nil {
			mpiProc.mu.Lock()
			rc := C.lathe_mpi_cancel(&req)
			mpiProc.mu.Unlock()
			if rc != 0 {
				return e.fail(timeoutError("MPI_Irecv", ctx, true), pin)
			}
			// The cancelled request may still be completing inside MPI:
			// its buffer stays pinned for good (a small leak, once).
			e.bmu.Lock()
			e.stuck = append(e.stuck, pin)
			e.bmu.Unlock()
			return timeoutError("MPI_Irecv", ctx, false)
		}
		pace.pause()
	}
}

// close frees the communicator and, when the process's last group closes
// and lathe initialised MPI, finalizes MPI (mpirun reports a process that
// exits without MPI_Finalize as failed). A broken group's communicator is
// left alone: it has an operation that will never end.
func (e *mpiEngine) close() error {
	broken := e.brokenErr() != nil
	mpiProc.mu.Lock()
	defer mpiProc.mu.Unlock()
	var err error
	if !broken {
		if rc := C.lathe_mpi_comm_free(&e.comm); rc != 0 {
			err = mpiErr("MPI_Comm_free", rc)
		}
	}
	mpiProc.groups--
	if mpiProc.groups == 0 && mpiProc.ownsInit && !mpiProc.finalized {
		mpiProc.finalized = true
		if ferr := finalizeMPI(broken); err == nil {
			err = ferr
		}
	}
	return err
}

// brokenFinalizeWait bounds MPI_Finalize in a process whose group broke.
// Open MPI's finalize waits in a fence for every process of the job, and
// the peer whose silence broke the group is usually dead: even under
// mpirun --enable-recovery the fence may then never end (seen here about
// once in ten runs of a two-rank job whose peer exited at once). A healthy
// group's finalize waits as long as its peers take, as MPI asks.
const brokenFinalizeWait = 5 * time.Second

// finalizeMPI calls MPI_Finalize, with mpiProc.mu held. After a broken
// group, a finalize that has not returned by brokenFinalizeWait is left
// on its thread (no other MPI call can follow it) and the error says that
// the process may exit.
func finalizeMPI(broken bool) error {
	var wait time.Duration // as long as it takes
	if broken {
		wait = brokenFinalizeWait
	}
	rc, done := callWithin(func() int { return int(C.lathe_mpi_finalize()) }, wait)
	switch {
	case !done:
		return lathe.NewError("", lathe.ErrUnavailable, "", "MPI_Finalize did not return within "+wait.String()+
			" after the group broke (it waits for every process of the job, and a peer is gone)",
			"end the process: MPI cannot be used again in it")
	case rc != 0:
		return mpiErr("MPI_Finalize", C.int(rc))
	}
	return nil
}

// callWithin runs call on a goroutine of its own and waits for its result,
// at most wait where wait > 0; done is false where call had not returned
// by then (it goes on, and its result is dropped).
func callWithin(call func() int, wait time.Duration) (rc int, done bool) {
	result := make(chan int, 1)
	go func() { result <- call() }()
	if wait <= 0 {
		return <-result, true
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case rc = <-result:
		return rc, true
	case <-timer.C:
		return 0, false
	}
}
