package dist

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

func init() {
	scenarios["peer-exits"] = func(t *testing.T, g *Group) { peerGone(t, g, false) }
	scenarios["peer-crashes"] = func(t *testing.T, g *Group) { peerGone(t, g, true) }
	closeMayFail["peer-crashes"] = true
}

// peerGone: rank 1 leaves without taking part (closing its group, or
// exiting at once without a word to MPI), and rank 0's all-reduce must end
// with a deadline error by its deadline, not hang.
func peerGone(t *testing.T, g *Group, crash bool) {
	const deadline = 2 * time.Second
	if g.Rank() == 1 {
		if crash {
			fmt.Println("rank 1: exiting without MPI_Finalize")
			os.Exit(3)
		}
		return // the worker closes the group
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	_, err := g.AllReduce(ctx, lathe.Ones(lathe.CPU, lathe.Float32, 1000), Sum)
	took := time.Since(start)
	fmt.Printf("rank 0: all_reduce ended after %v with: %v\n", took.Round(time.Millisecond), err)
	if err == nil || took > deadline+2*time.Second {
		t.Fatalf("all_reduce with rank 1 gone: %v after %v, want an error by the %v deadline", err, took, deadline)
	}
	if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, lathe.ErrUnavailable) {
		t.Errorf("error %v: want a deadline or unavailable error", err)
	}
	// The group is unusable now, and says so at once.
	start = time.Now()
	if err := g.Barrier(context.Background()); err == nil || time.Since(start) > time.Second {
		t.Errorf("barrier on a broken group: %v after %v, want an error at once", err, time.Since(start))
	} else {
		fmt.Println("rank 0: then barrier:", err)
	}
}
