package dist

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestTCPResultPastTheLimit: a rank whose result the cpu cannot make (past
// LATHE_CPU_MEMORY) still takes part in the transfer, into memory of its
// own, and returns the error; the other rank gets its result, and the
// group stays usable. The other rank waited for its deadline, and the
// ranks' frames were out of step for good, when the failing rank returned
// at once. The same for a Recv: the next Recv gets the next Send's tensor.
func TestTCPResultPastTheLimit(t *testing.T) {
	if os.Getenv("LATHE_DIST_LIMIT_CHILD") != "1" {
		out, err := testenv.RunChild("TestTCPResultPastTheLimit", "LATHE_DIST_LIMIT_CHILD=1", "LATHE_CPU_MEMORY=8MiB")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	gs := tcpGroups(t, 2, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const row = 5 << 18 // 5 MiB of float32; rank 0's two rows pass the limit
	errs := make([]error, 2)
	err := onRanks(2, func(r int) error {
		a := lathe.Arange(lathe.CPU, lathe.Float32, 0, 3*row, 1) // host memory, outside the pool
		defer a.Release()
		x := a.Reshape(3, row)
		defer x.Release()
		y, err := gs[r].ReduceScatter(ctx, x, Sum)
		errs[r] = err
		if err == nil {
			defer y.Release()
			got, _ := y.Float32s()
			if len(got) != row || got[0] != 2*2*row || got[row-1] != 2*(3*row-1) {
				t.Errorf("rank %d's part: %d elements, first %v, last %v", r, len(got), got[0], got[len(got)-1])
			}
		}
		return gs[r].Barrier(ctx)
	})
	if err != nil {
		t.Fatalf("the group after the reduce-scatter: %v", err)
	}
	var le *lathe.Error
	if !errors.Is(errs[0], lathe.ErrOutOfMemory) || !errors.As(errs[0], &le) || le.Op != "reduce_scatter" || errs[1] != nil {
		t.Fatalf("rank 0: %v (want reduce_scatter's ErrOutOfMemory); rank 1: %v (want its part)", errs[0], errs[1])
	}

	err = onRanks(2, func(r int) error {
		if r == 0 {
			big := lathe.Arange(lathe.CPU, lathe.Float32, 0, 4<<20, 1) // 16 MiB
			defer big.Release()
			small := lathe.FromSlice(lathe.CPU, []float32{7, 8})
			defer small.Release()
			if err := gs[0].Send(ctx, big, 1); err != nil {
				return err
			}
			return gs[0].Send(ctx, small, 1)
		}
		if _, err := gs[1].Recv(ctx, 0); !errors.Is(err, lathe.ErrOutOfMemory) || !errors.As(err, &le) || le.Op != "recv" {
			t.Errorf("a Recv past the limit: %v (want recv's ErrOutOfMemory)", err)
		}
		y, err := gs[1].Recv(ctx, 0)
		if err != nil {
			return err
		}
		defer y.Release()
		if got, _ := y.Float32s(); !slices.Equal(got, []float32{7, 8}) {
			t.Errorf("the next Recv got %v, want [7 8]", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTCPRecvPastItsDeadline: a Recv whose deadline passes after the
// header of a large tensor came but before its data did still takes the
// data (or, if the header had not come, returns the deadline's error),
// so that the next Recv gets the next Send's tensor whole. It got the
// earlier tensor's data under the next one's header.
func TestTCPRecvPastItsDeadline(t *testing.T) {
	gs := tcpGroups(t, 2, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sending := make(chan struct{})
	err := onRanks(2, func(r int) error {
		if r == 0 {
			a := lathe.Full(lathe.CPU, lathe.Float32, 1, 16<<20) // 64 MB of ones
			defer a.Release()
			b := lathe.Full(lathe.CPU, lathe.Float32, 2, 8<<20, 2) // as many bytes of twos
			defer b.Release()
			close(sending)
			if err := gs[0].Send(ctx, a, 1); err != nil {
				return err
			}
			return gs[0].Send(ctx, b, 1)
		}
		<-sending
		time.Sleep(2 * time.Millisecond)
		var got []*lathe.Tensor
		short, stop := context.WithTimeout(ctx, 5*time.Millisecond)
		y, err := gs[1].Recv(short, 0)
		stop()
		switch {
		case err == nil:
			got = append(got, y)
		case !errors.Is(err, context.DeadlineExceeded):
			return err
		}
		for len(got) < 2 {
			y, err := gs[1].Recv(ctx, 0)
			if err != nil {
				return err
			}
			got = append(got, y)
		}
		for i, want := range []struct {
			shape []int
			value float32
		}{{[]int{16 << 20}, 1}, {[]int{8 << 20, 2}, 2}} {
			v, _ := got[i].Float32s()
			if !slices.Equal(got[i].Shape(), want.shape) || v[0] != want.value || v[len(v)-1] != want.value {
				t.Errorf("message %d: shape %v with values %v…%v, want %v of %v", i, got[i].Shape(), v[0], v[len(v)-1], want.shape, want.value)
			}
			got[i].Release()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTCPConcurrentMessages: two goroutines' Sends to one rank, or two
// goroutines' Recvs from one rank, never pair one message's header with
// the other's data (each came out whole within a few hundred tries before
// Send and Recv held a lock per peer for the two).
func TestTCPConcurrentMessages(t *testing.T) {
	gs := tcpGroups(t, 2, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := lathe.Full(lathe.CPU, lathe.Float32, 1, 1024)
	defer a.Release()
	b := lathe.Full(lathe.CPU, lathe.Float32, 2, 512, 2)
	defer b.Release()
	whole := func(y *lathe.Tensor) bool {
		defer y.Release()
		v, _ := y.Float32s()
		return (y.Rank() == 1) == (v[0] == 1)
	}
	for _, sendersRace := range []bool{true, false} {
		for try := range 600 {
			err := onRanks(2, func(r int) error {
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for i, x := range []*lathe.Tensor{a, b} {
					switch {
					case r == 0 && sendersRace:
						wg.Go(func() { errs[i] = gs[0].Send(ctx, x, 1) })
					case r == 0:
						errs[i] = gs[0].Send(ctx, x, 1)
					case r == 1 && sendersRace:
						y, err := gs[1].Recv(ctx, 0)
						if errs[i] = err; err == nil && !whole(y) {
							t.Errorf("try %d: a Recv got one message's header with the other's data", try)
						}
					default:
						wg.Go(func() {
							y, err := gs[1].Recv(ctx, 0)
							if errs[i] = err; err == nil && !whole(y) {
								t.Errorf("try %d: a Recv got one message's header with the other's data", try)
							}
						})
					}
				}
				wg.Wait()
				return errors.Join(errs...)
			})
			if err != nil || t.Failed() {
				t.Fatalf("senders race %v, try %d: %v", sendersRace, try, err)
			}
		}
	}
}

// TestTCPHeaderExchangeTimeout: a collective that a peer never joins ends
// at its deadline with an error that names the call made and the step
// that waited (the ranks' check of each other's calls), not the engine's
// all-gather that carries the check. It said "all_reduce: all_gather did
// not finish".
func TestTCPHeaderExchangeTimeout(t *testing.T) {
	gs := tcpGroups(t, 2, false)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	x := lathe.Full(lathe.CPU, lathe.Float32, 1, 4)
	defer x.Release()
	_, err := gs[0].AllReduce(ctx, x, Sum)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an all-reduce that rank 1 never joins: %v, want a deadline error", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "all_reduce: the ranks' check that they made the same call did not finish") || strings.Contains(msg, "all_gather") {
		t.Errorf("its error: %q; want all_reduce's, naming the check of the calls", msg)
	}
}
