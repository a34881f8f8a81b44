package dist

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/emucuda"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestEmulatedNCCLRanks runs an NCCL group of two ranks that torchrun's
// variables describe, each a process on the emulated cuda:0 with the
// stand-in NCCL (testdata/fakenccl.c, whose ranks meet in a shared file):
// rank 0's unique id and every collective's header travel over the TCP
// engine, the data over "NCCL" on the device's stream. One GPU cannot hold
// two NCCL ranks, so no lent machine runs this with the real library.
func TestEmulatedNCCLRanks(t *testing.T) {
	lib := testenv.SharedLibrary(t, "testdata/fakenccl.c")
	port := itoa(freePort(t))
	for r := range 2 {
		t.Run("rank"+itoa(r), func(t *testing.T) {
			t.Parallel()
			emucuda.Run(t, "..", "TestNCCLRanks", emucuda.Kernels, "LATHE_NCCL_LIB="+lib, "RANK="+itoa(r), "WORLD_SIZE=2",
				"LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port)
		})
	}
}

// TestNCCLRanks is one rank of TestEmulatedNCCLRanks: every collective on
// cuda:0 tensors of rank-dependent values, against the values made here.
func TestNCCLRanks(t *testing.T) {
	if os.Getenv("WORLD_SIZE") == "" || os.Getenv(testenv.EmulatedEnv) == "" {
		t.Skip("runs as a rank of TestEmulatedNCCLRanks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dev := lathe.CUDA(0)
	g, err := Init(ctx, Config{Device: dev})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	defer func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	if g.Size() != 2 || g.engine != NCCL || g.comm == nil {
		t.Fatalf("group %v: want 2 ranks over NCCL", g)
	}
	if _, ok := g.host.(*tcpEngine); !ok {
		t.Fatalf("the headers go over %T, want the TCP engine", g.host)
	}
	r := float64(g.Rank())
	mine := func(n int) *lathe.Tensor { return lathe.Arange(dev, lathe.Float32, 0, float64(n), 1).AddScalar(10 * r) } // i + 10r
	for _, c := range []struct {
		name string
		f    func() (*lathe.Tensor, error)
		want []float32
	}{
		{"all_reduce/sum", func() (*lathe.Tensor, error) { return g.AllReduce(ctx, mine(3), Sum) }, []float32{10, 12, 14}},
		{"all_reduce/max", func() (*lathe.Tensor, error) { return g.AllReduce(ctx, mine(3), Max) }, []float32{10, 11, 12}},
		{"all_reduce/mean", func() (*lathe.Tensor, error) { return g.AllReduce(ctx, mine(3), Mean) }, []float32{5, 6, 7}},
		{"broadcast", func() (*lathe.Tensor, error) { return g.Broadcast(ctx, mine(3), 1) }, []float32{10, 11, 12}},
		{"all_gather", func() (*lathe.Tensor, error) { return g.AllGather(ctx, mine(2)) }, []float32{0, 1, 10, 11}},
		{"reduce_scatter", func() (*lathe.Tensor, error) { return g.ReduceScatter(ctx, mine(4), Sum) },
			[]float32{10, 12, 14, 16}[2*g.Rank() : 2*g.Rank()+2]},
	} {
		y, err := c.f()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := y.Float32s()
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s on rank %d: %v, %v; want %v", c.name, g.Rank(), got, err, c.want)
		}
	}
	if err := g.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
}
