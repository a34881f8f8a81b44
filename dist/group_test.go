package dist

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// clearLaunchEnv unsets every launcher variable for the test.
func clearLaunchEnv(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
		"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"} {
		t.Setenv(v, "")
		unsetenv(t, v)
	}
}

// groupOfOne is this process's group as a lone process, with no launcher
// variables set, closed when t ends.
func groupOfOne(t *testing.T) *Group {
	t.Helper()
	clearLaunchEnv(t)
	g, err := Init(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func TestEnv(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want Environment
		kind error
		arg  string // the variable a refusal names
	}{
		{"alone", nil, Environment{Launcher: Alone, Size: 1}, nil, ""},
		{"mpirun", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1"},
			Environment{Launcher: MPIRun, Rank: 1, Size: 4, LocalRank: 1}, nil, ""},
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "3", "MASTER_ADDR": "node0", "MASTER_PORT": "29400"},
			Environment{Launcher: TorchRun, Rank: 3, Size: 8, LocalRank: 3, MasterAddr: "node0", MasterPort: 29400}, nil, ""},
		{"torchrun/default-port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"},
			Environment{Launcher: TorchRun, Rank: 0, Size: 2, MasterAddr: "127.0.0.1", MasterPort: 29500}, nil, ""},
		{"mpirun-first", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "RANK": "5"},
			Environment{Launcher: MPIRun, Rank: 0, Size: 2}, nil, ""},
		{"bad/rank-word", map[string]string{"RANK": "one", "WORLD_SIZE": "2", "MASTER_ADDR": "x"}, Environment{}, lathe.ErrValue, "$RANK"},
		{"bad/rank-past-size", map[string]string{"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"}, Environment{}, lathe.ErrValue, "$OMPI_COMM_WORLD_RANK"},
		{"bad/mpi-local-rank", map[string]string{"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "-1"}, Environment{}, lathe.ErrValue, "$OMPI_COMM_WORLD_LOCAL_RANK"},
		{"bad/negative-rank", map[string]string{"RANK": "-1", "WORLD_SIZE": "2", "MASTER_ADDR": "x"}, Environment{}, lathe.ErrValue, "$RANK"},
		{"bad/zero-size", map[string]string{"RANK": "0", "WORLD_SIZE": "0"}, Environment{}, lathe.ErrValue, "$WORLD_SIZE"},
		{"bad/no-size", map[string]string{"RANK": "0"}, Environment{}, lathe.ErrValue, "$WORLD_SIZE"},
		{"bad/no-master", map[string]string{"RANK": "0", "WORLD_SIZE": "2"}, Environment{}, lathe.ErrValue, "$MASTER_ADDR"},
		{"bad/port", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "x", "MASTER_PORT": "70000"}, Environment{}, lathe.ErrValue, "$MASTER_PORT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clearLaunchEnv(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			got, err := Env()
			if c.kind != nil {
				var e *lathe.Error
				if !errors.Is(err, c.kind) || !errors.As(err, &e) || e.Arg != c.arg || e.Fix == "" {
					t.Fatalf("Env() = %+v, %v; want a %v naming %s, with a fix", got, err, c.kind, c.arg)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Env() = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// A lone process is a group of one: every collective is the identity, and
// the checks are those of a real group.
func TestGroupOfOne(t *testing.T) {
	ctx := context.Background()
	g := groupOfOne(t)
	if g.Rank() != 0 || g.Size() != 1 || g.Device() != lathe.CPU {
		t.Fatalf("group %v", g)
	}
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6}, 3, 2)
	for _, op := range []ReduceOp{Sum, Mean, Max, Min} {
		y, err := g.AllReduce(ctx, x, op)
		expect(t, "all_reduce/"+op.String(), y, err, lathe.Float32, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6})
		y, err = g.ReduceScatter(ctx, x, op)
		expect(t, "reduce_scatter/"+op.String(), y, err, lathe.Float32, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6})
	}
	y, err := g.Broadcast(ctx, x, 0)
	expect(t, "broadcast", y, err, lathe.Float32, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6})
	y, err = g.AllGather(ctx, x)
	expect(t, "all_gather", y, err, lathe.Float32, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6})
	h := x.Cast(lathe.BFloat16)
	y, err = g.AllReduce(ctx, h, Mean)
	expect(t, "all_reduce/bf16/mean", y, err, lathe.BFloat16, []int{3, 2}, []float64{1, 2, 3, 4, 5, 6})
	if err := g.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g.Send(ctx, x, 0); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("send to self: %v", err)
	}
}

// TestEndedContext: a call whose context has already ended fails at once,
// wrapping the context's cause, changes nothing and leaves the group
// usable, on a group of one as on many (a group of one made no wait, and
// such calls succeeded).
func TestEndedContext(t *testing.T) {
	g := groupOfOne(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -time.Second)
	defer cancel2()
	live := context.Background()
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2})
	d, err := DDP(live, g, nn.NewLinear(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Backward(cancelled, d.Forward(lathe.FromSlice(lathe.CPU, []float32{1, 2}, 1, 2)).Sum()); err == nil {
		t.Error("backward with a cancelled context: no error")
	}
	for _, p := range d.Parameters() {
		if p.T.Grad() != nil {
			t.Errorf("the failed backward left %s a gradient", p.Name)
		}
	}
	for _, c := range []struct {
		ctx   context.Context
		cause error
	}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
		calls := map[string]func(ctx context.Context) error{
			"all_reduce":     func(ctx context.Context) error { _, err := g.AllReduce(ctx, x, Sum); return err },
			"broadcast":      func(ctx context.Context) error { _, err := g.Broadcast(ctx, x, 0); return err },
			"all_gather":     func(ctx context.Context) error { _, err := g.AllGather(ctx, x); return err },
			"reduce_scatter": func(ctx context.Context) error { _, err := g.ReduceScatter(ctx, x, Sum); return err },
			"barrier":        g.Barrier,
			"ddp":            func(ctx context.Context) error { _, err := DDP(ctx, g, nn.NewLinear(2, 1)); return err },
			"sync_buffers":   d.SyncBuffers,
			"sync_gradients": d.SyncGradients,
			"backward": func(ctx context.Context) error {
				return d.Backward(ctx, d.Forward(lathe.FromSlice(lathe.CPU, []float32{1, 2}, 1, 2)).Sum())
			},
		}
		for op, call := range calls {
			err := call(c.ctx)
			if !errors.Is(err, lathe.ErrUnavailable) || !errors.Is(err, c.cause) || !strings.Contains(err.Error(), op+": ") {
				t.Errorf("%s with an ended context (%v): %v, want an ErrUnavailable of %s wrapping it", op, c.cause, err, op)
			}
			if err := call(live); err != nil {
				t.Errorf("%s after the ended context's: %v", op, err)
			}
		}
	}
	for _, p := range d.Parameters() {
		if p.T.Grad() == nil {
			t.Errorf("%s has no gradient after the live backward passes", p.Name)
		}
	}
}

// The bad-input table: every public entry point refuses what a caller
// can get wrong with the right kind of error.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	g := groupOfOne(t)
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 2)
	released.Release()
	failed := lathe.Failed(lathe.NewError("test", lathe.ErrShape, "", "failed on purpose", ""))
	ints := lathe.Zeros(lathe.CPU, lathe.Int32, 2)
	ok := lathe.Zeros(lathe.CPU, lathe.Float32, 2)
	var nilGroup *Group
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_ = cancelled
	cases := []struct {
		name string
		kind error
		f    func() error
	}{
		{"all_reduce/nil", lathe.ErrValue, func() error { _, err := g.AllReduce(ctx, nil, Sum); return err }},
		{"all_reduce/failed", lathe.ErrShape, func() error { _, err := g.AllReduce(ctx, failed, Sum); return err }},
		{"all_reduce/released", lathe.ErrReleased, func() error { _, err := g.AllReduce(ctx, released, Sum); return err }},
		{"all_reduce/mean-int", lathe.ErrDType, func() error { _, err := g.AllReduce(ctx, ints, Mean); return err }},
		{"all_reduce/op", lathe.ErrValue, func() error { _, err := g.AllReduce(ctx, ok, ReduceOp(9)); return err }},
		{"all_reduce/nil-ctx", lathe.ErrValue, func() error { _, err := g.AllReduce(nil, ok, Sum); return err }}, //nolint:staticcheck
		{"all_reduce/nil-group", lathe.ErrValue, func() error { _, err := nilGroup.AllReduce(ctx, ok, Sum); return err }},
		{"broadcast/root", lathe.ErrIndex, func() error { _, err := g.Broadcast(ctx, ok, 1); return err }},
		{"broadcast/negative-root", lathe.ErrIndex, func() error { _, err := g.Broadcast(ctx, ok, -1); return err }},
		{"broadcast/released", lathe.ErrReleased, func() error { _, err := g.Broadcast(ctx, released, 0); return err }},
		{"all_gather/failed", lathe.ErrShape, func() error { _, err := g.AllGather(ctx, failed); return err }},
		{"reduce_scatter/0-d", lathe.ErrShape, func() error { _, err := g.ReduceScatter(ctx, lathe.Scalar(lathe.CPU, float32(1)), Sum); return err }},
		{"send/peer", lathe.ErrIndex, func() error { return g.Send(ctx, ok, 3) }},
		{"recv/peer", lathe.ErrIndex, func() error { _, err := g.Recv(ctx, -1); return err }},
		{"ddp/nil-model", lathe.ErrValue, func() error { _, err := DDP(ctx, g, nil); return err }},
		{"ddp/nil-linear", lathe.ErrValue, func() error { _, err := DDP(ctx, g, (*nn.Linear)(nil)); return err }},
		{"ddp/backward-nil-loss", lathe.ErrValue, func() error {
			d, err := DDP(ctx, g, nn.NewLinear(2, 2))
			if err != nil {
				return err
			}
			return d.Backward(ctx, nil)
		}},
		{"ddp/backward-released-loss", lathe.ErrReleased, func() error {
			d, err := DDP(ctx, g, nn.NewLinear(2, 2))
			if err != nil {
				return err
			}
			return d.Backward(ctx, released)
		}},
		{"init/engine", lathe.ErrValue, func() error { _, err := Init(ctx, Config{Engine: "gloo"}); return err }},
		{"init/mpi-on-cuda", lathe.ErrDevice, func() error { _, err := Init(ctx, Config{Engine: MPI, Device: lathe.CUDA(0)}); return err }},
		{"init/wgpu", lathe.ErrDevice, func() error { _, err := Init(ctx, Config{Device: lathe.WGPU(0)}); return err }},
		{"init/nccl-on-cpu", lathe.ErrDevice, func() error { _, err := Init(ctx, Config{Engine: NCCL}); return err }},
		{"init/tcp-on-cuda", lathe.ErrDevice, func() error { _, err := Init(ctx, Config{Engine: TCP, Device: lathe.CUDA(0)}); return err }},
		{"init/nil-ctx", lathe.ErrValue, func() error { _, err := Init(nil, Config{}); return err }}, //nolint:staticcheck
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.f()
			if !errors.Is(err, c.kind) {
				t.Fatalf("got %v, want a %v", err, c.kind)
			}
			var le *lathe.Error
			if !errors.As(err, &le) || le.Op == "" || le.Op == "err" {
				t.Fatalf("%v is not a *lathe.Error with its op", err)
			}
			if strings.HasPrefix(c.name, "ddp/") && le.Arg != "model" && le.Arg != "loss" {
				t.Errorf("%v does not name DDP's argument", err)
			}
		})
	}
	// A tensor on a device the group was not built for: the first of
	// wgpu:0 and cuda:0 that opens here.
	foreign := false
	for _, dev := range []lathe.Device{lathe.WGPU(0), lathe.CUDA(0)} {
		w := lathe.Zeros(dev, lathe.Float32, 2)
		if w.Err() != nil {
			t.Logf("%v does not open here: %v", dev, w.Err())
			continue
		}
		foreign = true
		if _, err := g.AllReduce(ctx, w, Sum); !errors.Is(err, lathe.ErrDevice) {
			t.Errorf("all_reduce of a %v tensor on a cpu group: %v", dev, err)
		}
		break
	}
	if !foreign {
		t.Log("neither wgpu:0 nor cuda:0 opens here: the wrong-device case did not run")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AllReduce(ctx, ok, Sum); !errors.Is(err, lathe.ErrValue) {
		t.Errorf("all_reduce on a closed group: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

func TestSampler(t *testing.T) {
	if idx := NewSampler(nil, 3).Indices(1); len(idx) != 3 {
		t.Errorf("a nil group's sampler gives %v, want all 3 items (a group of one)", idx)
	}
	for _, c := range []struct {
		n, size  int
		dropLast bool
		per      int
	}{{10, 3, false, 4}, {10, 3, true, 3}, {9, 3, false, 3}, {2, 4, false, 1}, {0, 2, false, 0}, {1, 1, false, 1}} {
		seen := map[int]int{}
		for r := range c.size {
			s := &Sampler{N: c.n, Rank: r, Size: c.size, Shuffle: true, Seed: 5, DropLast: c.dropLast}
			idx := s.Indices(2)
			if len(idx) != c.per {
				t.Fatalf("%+v: rank %d gets %d indices, want %d", c, r, len(idx), c.per)
			}
			if !slices.Equal(idx, s.Indices(2)) {
				t.Fatalf("%+v: the same epoch gives another order", c)
			}
			for _, i := range idx {
				if i < 0 || i >= c.n {
					t.Fatalf("%+v: index %d", c, i)
				}
				seen[i]++
			}
		}
		// Every item is visited (but for DropLast's tail), and only the
		// padding repeats one.
		if !c.dropLast && len(seen) != c.n {
			t.Fatalf("%+v: %d of %d items visited", c, len(seen), c.n)
		}
	}
	a := (&Sampler{N: 100, Size: 2, Shuffle: true}).Indices(0)
	b := (&Sampler{N: 100, Size: 2, Shuffle: true}).Indices(1)
	if slices.Equal(a, b) {
		t.Fatal("two epochs shuffle alike")
	}
	if got := (&Sampler{N: 5, Size: 2}).Indices(0); !slices.Equal(got, []int{0, 2, 4}) {
		t.Fatalf("unshuffled rank 0 of 2 over 5: %v", got)
	}
}
