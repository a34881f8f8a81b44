package dist

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
)

func init() { scenarios["bench"] = benchRanks }

// TestMPIBench prints all-reduce figures on two ranks: time per call and
// bus bandwidth as nccl-tests reports it (bytes · 2(n-1)/n per second)
// for float32 tensors from 1 KB to 64 MB. It runs only when
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
