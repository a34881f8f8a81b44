package dist

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/mpitest"
)

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback TCP here")
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func torchEnv(rank, size, port int) Environment {
	return Environment{Launcher: TorchRun, Rank: rank, Size: size, LocalRank: rank, MasterAddr: "127.0.0.1", MasterPort: port}
}

// tcpRanks joins size TCP engines in this process, rank 0 last.
func tcpRanks(t *testing.T, size int) []*tcpEngine {
	t.Helper()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	es := make([]*tcpEngine, size)
	err := onRanks(size, func(r int) error {
		if r == 0 {
			time.Sleep(30 * time.Millisecond) // the others dial before rank 0 listens
		}
		var err error
		es[r], err = newTCPEngine(ctx, torchEnv(r, size, port))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range es {
			e.close()
		}
	})
	return es
}

// onRanks runs f for every rank at once and returns the first error.
func onRanks(size int, f func(r int) error) error {
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() { errs[r] = f(r) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// bufOf is vals as n elements of t (truncated toward zero for integers).
func bufOf(t elemType, vals []float64) hostBuf {
	h := hostBuf{b: aligned(len(vals) * t.size()), t: t}
	for i, v := range vals {
		switch t {
		case tFloat32:
			fromBytes[float32](h.b)[i] = float32(v)
		case tFloat64:
			fromBytes[float64](h.b)[i] = v
		case tInt8:
			fromBytes[int8](h.b)[i] = int8(v)
		case tUint8:
			h.b[i] = uint8(v)
		case tInt32:
			fromBytes[int32](h.b)[i] = int32(v)
		case tInt64:
			fromBytes[int64](h.b)[i] = int64(v)
		}
	}
	return h
}

func valuesOf(h hostBuf) []float64 {
	out := make([]float64, h.n())
	for i := range out {
		switch h.t {
		case tFloat32:
			out[i] = float64(fromBytes[float32](h.b)[i])
		case tFloat64:
			out[i] = fromBytes[float64](h.b)[i]
		case tInt8:
			out[i] = float64(fromBytes[int8](h.b)[i])
		case tUint8:
			out[i] = float64(h.b[i])
		case tInt32:
			out[i] = float64(fromBytes[int32](h.b)[i])
		case tInt64:
			out[i] = float64(fromBytes[int64](h.b)[i])
		}
	}
	return out
}

// ringValues are rank r's n values: small integers, so that every dtype
// holds them and every sum is exact.
func ringValues(r, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64((r*7+i*3)%11 - 4)
	}
	return v
}

// TestTCPCollectives runs the TCP engine's collectives on three ranks in
// this process, for every element type a reduction takes, each op and
// sizes that leave ring chunks empty or uneven, against the reduction
// made here, round the ring and sent directly; every rank gets the same
// bits.
func TestTCPCollectives(t *testing.T) {
	const size = 3
	es := tcpRanks(t, size)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, ring := range []bool{true, false} {
		for _, e := range es {
			e.directBytes = map[bool]int{true: 0, false: 1 << 20}[ring]
		}
		for _, et := range []elemType{tFloat32, tFloat64, tInt8, tUint8, tInt32, tInt64} {
			for _, n := range []int{0, 1, 2, 7, 1000} {
				for _, op := range []reduceOp{opSum, opMax, opMin} {
					name := fmt.Sprintf("all_reduce (ring %v) type %d n %d op %d", ring, et, n, op)
					want := ringValues(0, n)
					for r := 1; r < size; r++ {
						for i, v := range ringValues(r, n) {
							want[i] = map[reduceOp]float64{opSum: want[i] + v, opMax: max(want[i], v), opMin: min(want[i], v)}[op]
						}
					}
					if et == tUint8 {
						for i := range want { // the values as uint8 bytes: -4..6 wrap
							want[i] = float64(uint8(int8(want[i])))
						}
					}
					got := make([][]float64, size)
					err := onRanks(size, func(r int) error {
						send := bufOf(et, ringValues(r, n))
						if et == tUint8 {
							for i, v := range ringValues(r, n) {
								send.b[i] = uint8(int8(v))
							}
						}
						recv := hostBuf{b: aligned(len(send.b)), t: et}
						err := es[r].allReduce(ctx, send, recv, op)
						got[r] = valuesOf(recv)
						return err
					})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if et == tUint8 && op != opSum {
						continue // uint8 orders -4 above 6: checked by the sum, and by bool's max in the process tests
					}
					for r := range size {
						if !slices.Equal(got[r], want) {
							t.Fatalf("%s: rank %d got %v, want %v", name, r, got[r], want)
						}
					}
				}
			}
		}
	}

	// A NaN wins a max, on every rank.
	got := make([]float64, size)
	err := onRanks(size, func(r int) error {
		v := []float64{float64(r)}
		if r == 1 {
			v[0] = math.NaN()
		}
		recv := hostBuf{b: aligned(8), t: tFloat64}
		err := es[r].allReduce(ctx, bufOf(tFloat64, v), recv, opMax)
		got[r] = valuesOf(recv)[0]
		return err
	})
	if err != nil || !math.IsNaN(got[0]) || !math.IsNaN(got[2]) {
		t.Errorf("max with a NaN on rank 1: %v, %v", got, err)
	}

	counts := []int{2, 0, 3}
	gathered := make([][]float64, size)
	err = onRanks(size, func(r int) error {
		recv := hostBuf{b: aligned(5 * 4), t: tInt32}
		err := es[r].allGather(ctx, bufOf(tInt32, ringValues(r, counts[r])), recv, counts)
		gathered[r] = valuesOf(recv)
		return err
	})
	want := slices.Concat(ringValues(0, 2), ringValues(1, 0), ringValues(2, 3))
	for r := range size {
		if err != nil || !slices.Equal(gathered[r], want) {
			t.Fatalf("all_gather %v: rank %d got %v, want %v (%v)", counts, r, gathered[r], want, err)
		}
	}

	counts = []int{1, 3, 0}
	scattered := make([][]float64, size)
	err = onRanks(size, func(r int) error {
		recv := hostBuf{b: aligned(counts[r] * 8), t: tFloat64}
		err := es[r].reduceScatter(ctx, bufOf(tFloat64, ringValues(r, 4)), recv, counts, opSum)
		scattered[r] = valuesOf(recv)
		return err
	})
	sum := make([]float64, 4)
	for r := range size {
		for i, v := range ringValues(r, 4) {
			sum[i] += v
		}
	}
	for r, part := range [][]float64{sum[:1], sum[1:4], sum[4:]} {
		if err != nil || !slices.Equal(scattered[r], part) {
			t.Fatalf("reduce_scatter %v: rank %d got %v, want %v (%v)", counts, r, scattered[r], part, err)
		}
	}

	for root := range size {
		bufs := make([][]float64, size)
		err := onRanks(size, func(r int) error {
			buf := bufOf(tFloat32, ringValues(r, 5))
			err := es[r].broadcast(ctx, buf, root)
			bufs[r] = valuesOf(buf)
			return err
		})
		for r := range size {
			if err != nil || !slices.Equal(bufs[r], ringValues(root, 5)) {
				t.Fatalf("broadcast from %d: rank %d got %v (%v)", root, r, bufs[r], err)
			}
		}
	}
	if err := onRanks(size, func(r int) error { return es[r].barrier(ctx) }); err != nil {
		t.Fatal(err)
	}
}

// TestTCPSendRecv: frames are matched by sender and tag, in order within
// a tag; a receive that its deadline ends leaves the group usable.
func TestTCPSendRecv(t *testing.T) {
	es := tcpRanks(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, tag := range []int{5, 6, 5} {
		if err := es[0].send(ctx, bufOf(tInt64, []float64{float64(i)}), 2, tag); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ tag, want int }{{6, 1}, {5, 0}, {5, 2}} {
		buf := hostBuf{b: aligned(8), t: tInt64}
		if err := es[2].recv(ctx, buf, 0, c.tag); err != nil || valuesOf(buf)[0] != float64(c.want) {
			t.Fatalf("tag %d: %v, %v; want %d", c.tag, valuesOf(buf), err, c.want)
		}
	}
	short, stop := context.WithTimeout(ctx, 50*time.Millisecond)
	defer stop()
	err := es[1].recv(short, hostBuf{b: aligned(8), t: tInt64}, 0, 5)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lathe.ErrUnavailable) {
		t.Fatalf("a receive that nothing matches: %v, want a deadline error", err)
	}
	if err := onRanks(3, func(r int) error { return es[r].barrier(ctx) }); err != nil {
		t.Fatalf("barrier after a receive's deadline: %v", err)
	}
	// A frame of another size than the receive's is an error, not a
	// partial copy.
	if err := es[0].send(ctx, bufOf(tInt64, []float64{1, 2}), 1, 9); err != nil {
		t.Fatal(err)
	}
	if err := es[1].recv(ctx, hostBuf{b: aligned(8), t: tInt64}, 0, 9); err == nil || !strings.Contains(err.Error(), "sent 16 bytes where 8") {
		t.Errorf("a 16-byte frame into 8 bytes: %v", err)
	}
}

// TestTCPPeerGone: when a rank closes its group, the others' collectives
// end at once with an error naming it, not at their deadline, and their
// group is unusable from then on.
func TestTCPPeerGone(t *testing.T) {
	es := tcpRanks(t, 3)
	es[2].close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := onRanks(2, func(r int) error {
		recv := hostBuf{b: aligned(400), t: tFloat32}
		return es[r].allReduce(ctx, bufOf(tFloat32, ringValues(r, 100)), recv, opSum)
	})
	if !errors.Is(err, lathe.ErrUnavailable) || !strings.Contains(err.Error(), "rank 2 is gone") || time.Since(start) > 5*time.Second {
		t.Fatalf("all_reduce with rank 2 gone: %v after %v", err, time.Since(start))
	}
	if err := es[0].barrier(ctx); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("barrier after a failed collective: %v, want the broken group's error", err)
	}
}

// TestTCPRendezvous: a program on MASTER_PORT that is not a rank is
// ignored; a rank of a job of another size is an error naming it; a job
// whose ranks never all come ends at the deadline, on rank 0 and on the
// others.
func TestTCPRendezvous(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	es := make([]*tcpEngine, 2)
	err := onRanks(3, func(r int) error {
		if r == 2 { // a stray program, before the ranks
			c, err := dialRetrying(ctx, new(watch), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
			return err
		}
		if r == 1 {
			time.Sleep(50 * time.Millisecond)
		}
		var err error
		es[r], err = newTCPEngine(ctx, torchEnv(r, 2, port))
		return err
	})
	if err != nil {
		t.Fatalf("with a stray connection: %v", err)
	}
	for _, e := range es {
		e.close()
	}

	port = freePort(t)
	err = onRanks(2, func(r int) error {
		env := torchEnv(r, 2, port)
		if r == 1 {
			env.Size = 3
		}
		e, err := newTCPEngine(ctx, env)
		if err == nil {
			e.close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "a rank 1 of a job of 3") {
		t.Errorf("a rank of a job of 3 in a job of 2: %v", err)
	}

	for _, r := range []int{0, 1} {
		short, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := newTCPEngine(short, torchEnv(r, 2, freePort(t)))
		stop()
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lathe.ErrUnavailable) || time.Since(start) > 3*time.Second {
			t.Errorf("rank %d alone: %v after %v, want a deadline error by it", r, err, time.Since(start))
		}
	}
}

// TestTorchRun runs the scenarios of TestMPI as two processes of this test
// binary with torchrun's variables, over the TCP engine: the collectives
// for every dtype and op, DDP against one process, and a peer that closes
// its group or exits; torchrun's own launcher is not needed.
func TestTorchRun(t *testing.T) {
	for _, name := range []string{"collectives", "ddp", "peer-exits", "peer-crashes"} {
		t.Run(name, func(t *testing.T) {
			port := freePort(t)
			outs := make([]string, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for r := range 2 {
				cmd := exec.Command(os.Args[0], "-test.run", "^TestMPIWorker$", "-test.v", "-test.count=1")
				cmd.Env = append(os.Environ(), scenarioEnv+"="+name, "RANK="+itoa(r), "WORLD_SIZE=2", "LOCAL_RANK="+itoa(r),
					"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+itoa(port))
				wg.Go(func() { outs[r], errs[r] = mpitest.Run(cmd, 90*time.Second) })
			}
			wg.Wait()
			out := outs[0] + outs[1]
			if name == "peer-crashes" {
				if errs[0] != nil || !strings.Contains(out, "rank 0: all_reduce ended") || strings.Contains(out, "--- FAIL") {
					t.Fatalf("%v\n%s", errs, out)
				}
				return
			}
			if errs[0] != nil || errs[1] != nil || mpitest.Passed(out, "TestMPIWorker") != 2 {
				t.Fatalf("%v\n%s", errs, out)
			}
			if testing.Verbose() {
				t.Log(out)
			}
		})
	}
}

// TestTCPPutCancelled: a frame that a stuck peer never reads ends when its
// context is cancelled, without a deadline, and the next frame, on a new
// context, is not cut short by the old one.
func TestTCPPutCancelled(t *testing.T) {
	a, b := net.Pipe() // no buffer: a write waits for its read
	defer b.Close()
	p := newTCPPeer(1, a)
	defer a.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if err := p.put(ctx, 0, make([]byte, 64)); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("a put to a peer that never reads, cancelled: %v after %v", err, time.Since(start))
	}
	// The pipe holds the part of the frame written before the cancel:
	// read that, then the next frame whole.
	go io.Copy(io.Discard, b)
	if err := p.put(context.Background(), 0, make([]byte, 64)); err != nil {
		t.Errorf("the next put: %v", err)
	}
}
