package dist

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

func init() { scenarios["bench"] = benchRanks }

// TestMPIBench prints all-reduce figures on two ranks: time per call and
// bus bandwidth as nccl-tests reports it (bytes · 2(n-1)/n per second)
// for float32 tensors from 1 KB to 64 MB; then a DDP training step on two
// ranks against one process (benchDDP). It runs only when
// LATHE_DIST_BENCH=1 (`make bench` sets it); it is a measure, not a test.
func TestMPIBench(t *testing.T) {
	if os.Getenv("LATHE_DIST_BENCH") != "1" {
		t.Skip("set LATHE_DIST_BENCH=1 to measure all-reduce over MPI")
	}
	out := runRanks(t, 2, "bench")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "bench ") {
			fmt.Println(strings.TrimPrefix(l, "bench "))
		}
	}
}

func benchRanks(t *testing.T, g *Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if g.Rank() == 0 {
		fmt.Printf("bench %-10s %12s %12s %12s\n", "size", "time/call", "algbw GB/s", "busbw GB/s")
	}
	for bytes := 1 << 10; bytes <= 64<<20; bytes <<= 2 {
		x := lathe.Ones(lathe.CPU, lathe.Float32, bytes/4)
		if _, err := g.AllReduce(ctx, x, Sum); err != nil { // warm up
			t.Fatal(err)
		}
		iters := max(3, min(50, (64<<20)/bytes))
		if err := g.Barrier(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range iters {
			y, err := g.AllReduce(ctx, x, Sum)
			if err != nil {
				t.Fatal(err)
			}
			y.Release()
		}
		per := time.Since(start) / time.Duration(iters)
		alg := float64(bytes) / per.Seconds() / 1e9
		bus := alg * 2 * float64(g.Size()-1) / float64(g.Size())
		if g.Rank() == 0 {
			fmt.Printf("bench %-10s %12v %12.3f %12.3f\n", byteSize(bytes), per.Round(time.Microsecond), alg, bus)
		}
	}
	benchDDP(t, ctx, g)
}

// benchDDP times a training step of lathe-bench's MLP (784-256-10, SGD)
// under DDP on every rank, each with a batch of perRank, against rank 0
// alone on the combined batch while the others wait at a barrier: the
// step time on n ranks against 1 for the same total batch.
func benchDDP(t *testing.T, ctx context.Context, g *Group) {
	const perRank, steps = 128, 20
	step := func(model nn.Module, sync func(loss *lathe.Tensor) error, batch int) time.Duration {
		opt, err := nn.NewSGD(model.Parameters(), 0.01)
		if err != nil {
			t.Fatal(err)
		}
		x := lathe.RandN(lathe.CPU, lathe.Float32, batch, 784)
		y := lathe.RandInt(lathe.CPU, lathe.Int64, 0, 10, batch)
		var start time.Time
		for i := range steps + 2 { // two warm-up steps
			if i == 2 {
				start = time.Now()
			}
			if err := sync(model.Forward(x).CrossEntropy(y)); err != nil {
				t.Fatal(err)
			}
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			opt.ZeroGrad()
		}
		return time.Since(start) / steps
	}
	newMLP := func() *nn.Seq { return nn.Sequential(nn.NewLinear(784, 256), nn.ReLU{}, nn.NewLinear(256, 10)) }
	d, err := DDP(ctx, g, newMLP())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	ranks := step(d, func(loss *lathe.Tensor) error { return d.Backward(ctx, loss) }, perRank)
	if err := g.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if g.Rank() == 0 {
		alone := step(newMLP(), func(loss *lathe.Tensor) error { return loss.Backward() }, perRank*g.Size())
		fmt.Printf("bench DDP step, MLP 784-256-10, batch %d: %v on %d ranks (%d each), %v on 1; %.2f× the one-process time\n",
			perRank*g.Size(), ranks.Round(time.Microsecond), g.Size(), perRank, alone.Round(time.Microsecond), ranks.Seconds()/alone.Seconds())
	}
	if err := g.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + " MB"
	case n >= 1<<10:
		return itoa(n>>10) + " KB"
	}
	return itoa(n) + " B"
}
