//go:build cgo

package dist

import (
	"bytes"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestNCCLBinding runs the NCCL binding against a stand-in for
// libnccl.so.2 (testdata/fakenccl.c, built here with the C compiler),
// which checks each call against nccl.h's contract, as the cuda backend
// tests its cuBLAS calls: the unique id passed by value intact, the
// ncclDataType_t of every lathe dtype (a wrong one copies the wrong number
// of bytes, which the guard bytes after each buffer catch), the reduction
// ops, the stream, group-matched send and receive, NCCL's error text in
// lathe's errors, and abort. Real NCCL needs GPUs (make gpu-check).
func TestNCCLBinding(t *testing.T) {
	if err := loadNCCL(testenv.SharedLibrary(t, "testdata/fakenccl.c")); err != nil {
		t.Fatal(err)
	}
	if ncclLib.version != 21903 {
		t.Errorf("version %d", ncclLib.version)
	}
	id, err := ncclUniqueID()
	if err != nil || !bytes.HasPrefix(id[:], []byte("lathe-fake-nccl")) {
		t.Fatalf("unique id %q, %v", id[:16], err)
	}
	if _, err := ncclInitRank(id, 2, 2); err == nil || !strings.Contains(err.Error(), "ncclCommInitRank failed: invalid argument") {
		t.Errorf("rank 2 of 2: %v, want NCCL's invalid argument", err)
	}
	var bad ncclID
	if _, err := ncclInitRank(bad, 1, 0); err == nil {
		t.Error("a zero unique id was taken")
	}
	c, err := ncclInitRank(id, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	const stream = uintptr(0x5eed) // the stand-in only needs it non-null
	for _, dt := range allDTypes {
		for _, n := range []int{0, 1, 13} {
			size := dt.Size()
			send := make([]byte, n*size+16)
			for i := range send {
				send[i] = byte(i*7 + 1)
			}
			calls := map[string]func(s, r uint64) error{
				"all_reduce/sum": func(s, r uint64) error { return c.allReduce(s, r, n, dt, Sum, stream) },
				"all_reduce/max": func(s, r uint64) error { return c.allReduce(s, r, n, dt, Max, stream) },
				"broadcast":      func(s, r uint64) error { return c.broadcast(s, r, n, dt, 0, stream) },
				"all_gather":     func(s, r uint64) error { return c.allGather(s, r, n, dt, stream) },
				"reduce_scatter": func(s, r uint64) error { return c.reduceScatter(s, r, n, dt, Min, stream) },
				"send_recv/self": func(s, r uint64) error { return c.sendRecv(s, n, 0, r, n, 0, dt, stream) },
			}
			for name, f := range calls {
				recv := bytes.Repeat([]byte{0xab}, n*size+16)
				err := f(addr(send), addr(recv))
				runtime.KeepAlive(send)
				runtime.KeepAlive(recv)
				if err != nil {
					t.Fatalf("%s/%v/%d: %v", name, dt, n, err)
				}
				if !bytes.Equal(recv[:n*size], send[:n*size]) || !bytes.Equal(recv[n*size:], bytes.Repeat([]byte{0xab}, 16)) {
					t.Fatalf("%s/%v/%d: the stand-in moved other bytes than %d elements of %d bytes: the ncclDataType_t is wrong", name, dt, n, n, size)
				}
			}
		}
	}
	// ncclRedOp_t values (nccl.h): sum 0, max 2, min 3, avg 4.
	for _, c := range []struct {
		op   ReduceOp
		dt   lathe.DType
		want int
	}{{Sum, lathe.Float32, 0}, {Max, lathe.Float32, 2}, {Min, lathe.Int8, 3}, {Mean, lathe.BFloat16, 4}, {Sum, lathe.Bool, 2}} {
		if got := int(ncclOpOf(c.op, c.dt)); got != c.want {
			t.Errorf("%v on %v: ncclRedOp_t %d, want %d", c.op, c.dt, got, c.want)
		}
	}
	// ncclDataType_t values (nccl.h).
	for dt, want := range map[lathe.DType]int{lathe.Int8: 0, lathe.Uint8: 1, lathe.Int32: 2, lathe.Int64: 4, lathe.Float16: 6,
		lathe.Float32: 7, lathe.Float64: 8, lathe.BFloat16: 9, lathe.Bool: 1} {
		if got := int(ncclTypes[dt]); got != want {
			t.Errorf("%v: ncclDataType_t %d, want %d", dt, got, want)
		}
	}
	x := make([]byte, 8)
	if err := c.allReduce(addr(x), addr(x), 2, lathe.Float32, Sum, 0); err == nil || !strings.Contains(err.Error(), "invalid usage") {
		t.Errorf("on the null stream: %v, want NCCL's invalid usage", err)
	}
	if err := c.sendRecv(addr(x), 2, 0, 0, 0, -1, lathe.Float32, stream); err == nil {
		t.Error("a send to self without its receive was taken")
	}
	if err := c.asyncError(); err != nil {
		t.Errorf("async error: %v", err)
	}
	if err := c.abort(); err != nil {
		t.Fatal(err)
	}
	if err := c.allReduce(addr(x), addr(x), 2, lathe.Float32, Sum, stream); err == nil {
		t.Error("an aborted communicator was used")
	}
	runtime.KeepAlive(x)
}

// addr is b's address as a stand-in device address.
func addr(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

func TestNCCLMissing(t *testing.T) {
	err := loadNCCL(filepath.Join(t.TempDir(), "libnccl.so.2"))
	var le *lathe.Error
	if err == nil || !strings.Contains(err.Error(), "cannot open NCCL") || !isUnavailable(err, &le) {
		t.Fatalf("a missing NCCL: %v", err)
	}
}

func isUnavailable(err error, le **lathe.Error) bool {
	return errors.As(err, le) && (*le).Kind == lathe.ErrUnavailable
}
