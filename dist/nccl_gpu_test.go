package dist

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
	"github.com/lathe-ml/lathe/nn"
)

// TestNCCLOneRank runs every collective of a one-rank NCCL group on cuda:0
// with the real NCCL (make gpu-check; one GPU cannot hold two NCCL ranks):
// each dtype's bytes through ncclAllReduce, ncclBroadcast, ncclAllGather
// and ncclReduceScatter on the device's stream, a strided input, the
// float16 sum in float32, the errors of a cpu tensor and a released one,
// and DDP's overlapped all-reduces on the stream the backward pass uses
// (ddpOnDevice). A machine without a GPU or NCCL skips it by name; "nccl" in
// LATHE_REQUIRE_DEVICES makes that a failure.
func TestNCCLOneRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dev := lathe.CUDA(0)
	if err := lathe.Zeros(dev, lathe.Float32, 1).Err(); err != nil {
		testenv.SkipDevice(t, "nccl", "cuda:0 does not open: %v", err)
	}
	if err := ncclOpen(); err != nil {
		testenv.SkipDevice(t, "nccl", "NCCL does not open: %v", err)
	}
	for _, k := range []string{"RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"} {
		unsetenv(t, k)
	}
	g, err := Init(ctx, Config{Device: dev, Engine: NCCL})
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	t.Logf("%v; %s", g, ncclDescribe())
	defer func() {
		if err := g.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	n := 1<<20 + 3 // past one NCCL chunk, and odd
	if os.Getenv(testenv.EmulatedEnv) != "" {
		n = 4099 // the stand-in NCCL copies whole buffers, and the host emulation's kernels take seconds per million elements
	}
	for _, dt := range allDTypes {
		x := lathe.Arange(dev, lathe.Float32, 0, float64(n), 1).RemainderScalar(97).Cast(dt)
		want := hostOf(t, x)
		for name, f := range map[string]func() (*lathe.Tensor, error){
			"all_reduce/sum":     func() (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Sum) },
			"all_reduce/max":     func() (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Max) },
			"all_reduce/min":     func() (*lathe.Tensor, error) { return g.AllReduce(ctx, x, Min) },
			"broadcast":          func() (*lathe.Tensor, error) { return g.Broadcast(ctx, x, 0) },
			"all_gather":         func() (*lathe.Tensor, error) { return g.AllGather(ctx, x) },
			"reduce_scatter/sum": func() (*lathe.Tensor, error) { return g.ReduceScatter(ctx, x, Sum) },
		} {
			y, err := f()
			if err != nil {
				t.Fatalf("%s of %v: %v", name, dt, err)
			}
			if y.DType() != dt || y.Device() != dev || !slices.Equal(y.Shape(), []int{n}) {
				t.Errorf("%s of %v: %v %v on %v", name, dt, y.DType(), y.Shape(), y.Device())
			}
			if got := hostOf(t, y); !slices.Equal(got, want) {
				t.Errorf("%s of %v: the values changed (first %v, want %v)", name, dt, got[:4], want[:4])
			}
			y.Release()
		}
		if dt.IsFloat() {
			y, err := g.AllReduce(ctx, x, Mean)
			if err != nil {
				t.Fatal(err)
			}
			if got := hostOf(t, y); !slices.Equal(got, want) {
				t.Errorf("the mean of %v over one rank changed the values", dt)
			}
			y.Release()
		}
		x.Release()
	}
	// A transposed view goes through its contiguous copy.
	m := lathe.Arange(dev, lathe.Float32, 0, 12, 1).Reshape(3, 4)
	mt := m.Transpose(0, 1)
	y, err := g.AllReduce(ctx, mt, Sum)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := hostOf(t, y), hostOf(t, mt); !slices.Equal(got, want) || !slices.Equal(y.Shape(), []int{4, 3}) {
		t.Errorf("all_reduce of a transposed view: %v %v, want %v", y.Shape(), got, want)
	}
	// A 0-d tensor gathers to [1].
	s := lathe.FromSlice(dev, []float32{2.5})
	s0 := s.Reshape()
	if y, err := g.AllGather(ctx, s0); err != nil || !slices.Equal(y.Shape(), []int{1}) {
		t.Errorf("all_gather of a 0-d tensor: %v, %v", y, err)
	}
	// A cpu tensor in a cuda group, and a released one.
	if _, err := g.AllReduce(ctx, lathe.Zeros(lathe.CPU, lathe.Float32, 2), Sum); !errors.Is(err, lathe.ErrDevice) {
		t.Errorf("a cpu tensor: %v, want ErrDevice", err)
	}
	r := lathe.Zeros(dev, lathe.Float32, 2)
	r.Release()
	if _, err := g.AllReduce(ctx, r, Sum); !errors.Is(err, lathe.ErrReleased) {
		t.Errorf("a released tensor: %v, want ErrReleased", err)
	}
	if err := g.Barrier(ctx); err != nil {
		t.Errorf("barrier: %v", err)
	}
	ddpOnDevice(t, ctx, g)
}

// ddpOnDevice: DDP over the group, a bucket per parameter, so that its
// goroutine queues NCCL's all-reduces on the stream while the backward
// pass queues its kernels there; over one rank the gradients are the
// plain pass's.
func ddpOnDevice(t *testing.T, ctx context.Context, g *Group) {
	dev := g.Device()
	lathe.Seed(11)
	model := mlp(16)
	if err := model.To(dev); err != nil {
		t.Fatal(err)
	}
	d, err := DDP(ctx, g, model)
	if err != nil {
		t.Fatalf("ddp: %v", err)
	}
	d.BucketBytes = 1
	xs, ys := points(64, 5)
	x, y := lathe.FromSlice(dev, xs, 64, 2), lathe.FromSlice(dev, ys)
	if err := d.Backward(ctx, nn.CrossEntropy(d.Forward(x), y)); err != nil {
		t.Fatalf("ddp backward: %v", err)
	}
	got := grads(t, model)
	for _, p := range model.Parameters() {
		p.T.ZeroGrad()
	}
	if err := nn.CrossEntropy(model.Forward(x), y).Backward(); err != nil {
		t.Fatal(err)
	}
	want := grads(t, model)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("parameter %d: DDP's gradient on %v differs from the plain pass's", i, dev)
		}
	}
}

// hostOf is x's values as float64s, through float32 for the 16-bit floats
// and 0 or 1 for bool.
func hostOf(t *testing.T, x *lathe.Tensor) []float64 {
	t.Helper()
	f := x
	if x.DType() != lathe.Float64 { // a cast to the same dtype is x itself, which the caller keeps
		f = x.Cast(lathe.Float64)
		defer f.Release()
	}
	v, err := f.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
