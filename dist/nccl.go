//go:build cgo

package dist

/*
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"context"
	"os"
	"sync"
	"unsafe"

	"github.com/lathe-ml/lathe"
)

// The NCCL binding: every call into nccl_shim.c is here, as a thin
// wrapper. Device memory is a 64-bit address and a stream an opaque
// pointer (the cuda backend's CUstream), so no C type leaves this file.
// The collectives queue work on the stream and return; completion and
// asynchronous errors are the stream's and ncclCommGetAsyncError's.

var ncclLib struct {
	once    sync.Once
	err     error
	path    string
	version int
}

// openNCCL loads $LATHE_NCCL_LIB, else libnccl.so.2 (the soname NVIDIA's
// packages and PyTorch's wheels install), once per process.
func openNCCL() error {
	ncclLib.once.Do(func() {
		path := os.Getenv("LATHE_NCCL_LIB")
		if path == "" {
			path = "libnccl.so.2"
		}
		ncclLib.err = loadNCCL(path)
	})
	return ncclLib.err
}

// loadNCCL fills the binding's table from the library at path.
func loadNCCL(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	if msg := C.lathe_nccl_open(cs); msg != nil {
		return lathe.NewError("init", lathe.ErrUnavailable, "", "cannot open NCCL ("+path+": "+C.GoString(msg)+")",
			"install NCCL 2 (a PyTorch CUDA install carries libnccl.so.2), or set LATHE_NCCL_LIB to it")
	}
	var v C.int
	if rc := C.lathe_nccl_version(&v); rc != 0 {
		return ncclErr("ncclGetVersion", rc)
	}
	ncclLib.path, ncclLib.version = path, int(v)
	return nil
}

// ncclErr is a failed NCCL call's error, with NCCL's words for its code.
func ncclErr(call string, rc C.int) *lathe.Error {
	return lathe.NewError("", lathe.ErrUnavailable, "", call+" failed: "+C.GoString(C.lathe_nccl_error_string(rc))+
		" (ncclResult_t "+itoa(int(rc))+")", "")
}

// ncclInProgress is ncclResult_t's "still running", which
// ncclCommGetAsyncError reports for a non-blocking communicator.
const ncclInProgress = 7

// ncclTypes maps lathe's dtypes to ncclDataType_t: bool travels as uint8.
var ncclTypes = map[lathe.DType]C.int{
	lathe.Float32: C.LATHE_NCCL_FLOAT32, lathe.Float64: C.LATHE_NCCL_FLOAT64, lathe.Float16: C.LATHE_NCCL_FLOAT16,
	lathe.BFloat16: C.LATHE_NCCL_BFLOAT16, lathe.Int32: C.LATHE_NCCL_INT32, lathe.Int64: C.LATHE_NCCL_INT64,
	lathe.Int8: C.LATHE_NCCL_INT8, lathe.Uint8: C.LATHE_NCCL_UINT8, lathe.Bool: C.LATHE_NCCL_UINT8,
}

// ncclOpOf maps a ReduceOp (on dt) to ncclRedOp_t: Mean is ncclAvg
// (NCCL 2.10 on) on the float dtypes; bool's sum is max, as its or.
func ncclOpOf(op ReduceOp, dt lathe.DType) C.int {
	switch {
	case op == Mean:
		return C.LATHE_NCCL_AVG
	case op == Max || (op == Sum && dt == lathe.Bool):
		return C.LATHE_NCCL_MAX
	case op == Min:
		return C.LATHE_NCCL_MIN
	}
	return C.LATHE_NCCL_SUM
}

// ncclID is an ncclUniqueId: rank 0 makes it, every rank gets a copy
// (store.go), and ncclCommInitRank takes it.
type ncclID [C.LATHE_NCCL_UNIQUE_ID_BYTES]byte

// ncclJoin makes this rank's communicator: rank 0's unique id goes to
// every rank over the group's host engine, then each joins with the
// group's device current (ncclCommInitRank takes the runtime's current
// device). Joining waits for every rank; past ctx's deadline it returns an
// error, and the join that may still finish is left to the process's end.
func ncclJoin(ctx context.Context, g *Group) (deviceEngine, error) {
	var id ncclID
	if g.rank == 0 {
		var err error
		if id, err = ncclUniqueID(); err != nil {
			return nil, err
		}
	}
	if err := g.host.broadcast(ctx, hostBuf{b: id[:], t: tByte}, 0); err != nil {
		return nil, opError("init", err)
	}
	type joined struct {
		c   ncclComm
		err error
	}
	done := make(chan joined, 1)
	go func() {
		var j joined
		j.err = lathe.WithStream(g.dev, func(uintptr) error {
			var err error
			j.c, err = ncclInitRank(id, g.size, g.rank)
			return err
		})
		done <- j
	}()
	select {
	case j := <-done:
		if j.err != nil {
			return nil, opError("init", j.err)
		}
		return j.c, nil
	case <-ctx.Done():
		return nil, opError("init", timeoutError("ncclCommInitRank", ctx, false))
	}
}

func ncclUniqueID() (ncclID, error) {
	var id ncclID
	if rc := C.lathe_nccl_get_unique_id((*C.char)(unsafe.Pointer(&id[0]))); rc != 0 {
		return id, ncclErr("ncclGetUniqueId", rc)
	}
	return id, nil
}

// ncclComm is one rank's communicator.
type ncclComm struct{ h C.uintptr_t }

// ncclInitRank joins rank of nranks to the clique of id. It blocks until
// every rank has joined (callers run it with a deadline of their own).
func ncclInitRank(id ncclID, nranks, rank int) (ncclComm, error) {
	var c ncclComm
	if rc := C.lathe_nccl_comm_init_rank(&c.h, C.int(nranks), (*C.char)(unsafe.Pointer(&id[0])), C.int(rank)); rc != 0 {
		return ncclComm{}, ncclErr("ncclCommInitRank", rc)
	}
	return c, nil
}

// asyncError is the communicator's state: nil, or the error that a queued
// collective hit (a peer gone, a network failure).
func (c ncclComm) asyncError() error {
	var r C.int
	if rc := C.lathe_nccl_comm_async_error(c.h, &r); rc != 0 {
		return ncclErr("ncclCommGetAsyncError", rc)
	}
	if r != 0 && r != ncclInProgress {
		return ncclErr("a queued collective", r)
	}
	return nil
}

// abort ends the communicator at once, also with collectives that will
// never finish (a dead peer's): NCCL's way out of a hang.
func (c ncclComm) abort() error {
	if rc := C.lathe_nccl_comm_abort(c.h); rc != 0 {
		return ncclErr("ncclCommAbort", rc)
	}
	return nil
}

func (c ncclComm) destroy() error {
	if rc := C.lathe_nccl_comm_destroy(c.h); rc != 0 {
		return ncclErr("ncclCommDestroy", rc)
	}
	return nil
}

// The collectives, queued on stream; counts are in elements of dt (for
// AllGather and ReduceScatter, one rank's part).

func (c ncclComm) allReduce(send, recv uint64, count int, dt lathe.DType, op ReduceOp, stream uintptr) error {
	return ncclCheck("ncclAllReduce", C.lathe_nccl_all_reduce(C.uint64_t(send), C.uint64_t(recv), C.size_t(count), ncclTypes[dt],
		ncclOpOf(op, dt), c.h, C.uintptr_t(stream)))
}

func (c ncclComm) broadcast(send, recv uint64, count int, dt lathe.DType, root int, stream uintptr) error {
	return ncclCheck("ncclBroadcast", C.lathe_nccl_broadcast(C.uint64_t(send), C.uint64_t(recv), C.size_t(count), ncclTypes[dt],
		C.int(root), c.h, C.uintptr_t(stream)))
}

func (c ncclComm) allGather(send, recv uint64, count int, dt lathe.DType, stream uintptr) error {
	return ncclCheck("ncclAllGather", C.lathe_nccl_all_gather(C.uint64_t(send), C.uint64_t(recv), C.size_t(count), ncclTypes[dt],
		c.h, C.uintptr_t(stream)))
}

func (c ncclComm) reduceScatter(send, recv uint64, count int, dt lathe.DType, op ReduceOp, stream uintptr) error {
	return ncclCheck("ncclReduceScatter", C.lathe_nccl_reduce_scatter(C.uint64_t(send), C.uint64_t(recv), C.size_t(count), ncclTypes[dt],
		ncclOpOf(op, dt), c.h, C.uintptr_t(stream)))
}

// sendRecv queues a send to dst and a receive from src as one group
// (ncclGroupStart/End), so two ranks that exchange cannot deadlock; a
// negative dst or src leaves that half out.
func (c ncclComm) sendRecv(send uint64, sendCount int, dst int, recv uint64, recvCount int, src int, dt lathe.DType, stream uintptr) error {
	if rc := C.lathe_nccl_group_start(); rc != 0 {
		return ncclErr("ncclGroupStart", rc)
	}
	var err error
	if dst >= 0 {
		err = ncclCheck("ncclSend", C.lathe_nccl_send(C.uint64_t(send), C.size_t(sendCount), ncclTypes[dt], C.int(dst), c.h, C.uintptr_t(stream)))
	}
	if src >= 0 && err == nil {
		err = ncclCheck("ncclRecv", C.lathe_nccl_recv(C.uint64_t(recv), C.size_t(recvCount), ncclTypes[dt], C.int(src), c.h, C.uintptr_t(stream)))
	}
	if rc := C.lathe_nccl_group_end(); rc != 0 && err == nil {
		err = ncclErr("ncclGroupEnd", rc)
	}
	return err
}

func ncclCheck(call string, rc C.int) error {
	if rc != 0 {
		return ncclErr(call, rc)
	}
	return nil
}

func ncclOpen() error { return openNCCL() }

func ncclDescribe() string { return "NCCL " + itoa(ncclLib.version) + ", " + ncclLib.path }
