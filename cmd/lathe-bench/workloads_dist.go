package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/dist"
	"github.com/lathe-ml/lathe/nn"
)

// The data-parallel rows: an all-reduce of float32 tensors from 1 KB to
// 64 MB, with its rate as the bus bandwidth that nccl-tests reports, and
// the MLP's training step under DDP on two ranks, each with half the
// batch, beside the same step in one process on the whole batch.

// allReduce sums bytes of float32 over ranks. Its work is the bus
// bandwidth's numerator: the bytes times 2(n-1)/n, what each rank sends
// and receives in a ring all-reduce.
func allReduce(bytes, ranks int) workload {
	return workload{Name: fmt.Sprintf("all_reduce f32 %s on %d ranks", byteSize(bytes), ranks), Family: "dist",
		spec: spec{Kind: "all_reduce", DType: "f32", Dims: []int{bytes / 4}, Ranks: ranks}, Unit: memBytes,
		Work: float64(bytes) * 2 * float64(ranks-1) / float64(ranks), MaxSamples: 5}
}

// ddpStep is mlpStep's training step under DDP: on ranks ranks of
// batch/ranks rows each. With after, the gradients are averaged after the
// backward pass (SyncGradients; torch: one all-reduce of the flattened
// gradients) instead of during it.
func ddpStep(batch, in, hidden, out, ranks int, after bool) workload {
	kind, how := "ddp_step", ""
	if after {
		kind, how = "ddp_step_after", ", averaged after backward"
	}
	return workload{Name: fmt.Sprintf("ddp step %d-%d-%d b%d on %d ranks%s", in, hidden, out, batch, ranks, how), Family: "dist",
		spec: spec{Kind: kind, DType: "f32", Dims: []int{batch / ranks, in, hidden, out}, Ranks: ranks}, Unit: perStep}
}

// overTCP is w, a row of several ranks, with lathe's ranks started as
// torchrun starts them, so that they meet over the TCP engine instead of
// MPI; PyTorch's side is the same gloo group.
func overTCP(w workload) workload {
	w.Name += " over TCP"
	w.Launcher = "torchrun"
	return w
}

// oneProcess is w (a training step) in the dist family, as the baseline of
// the rows of several ranks.
func oneProcess(w workload) workload {
	w.Name += " in 1 process"
	w.Family = "dist"
	return w
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// failSetupEnv, set to a rank's number, makes every setup fail on that
// rank alone: the test that a rank's failure stops the others (agree).
const failSetupEnv = "LATHE_BENCH_FAIL_SETUP_RANK"

// prepareRanks builds w on this rank of g.
func prepareRanks(g *dist.Group, w workload) (*prepared, error) {
	if os.Getenv(failSetupEnv) == strconv.Itoa(g.Rank()) {
		return nil, fmt.Errorf("rank %d: setup fails here (%s)", g.Rank(), failSetupEnv)
	}
	if w.DType != "f32" {
		return nil, fmt.Errorf("workload %s: the rank workloads are float32", w.Name)
	}
	ctx := context.Background()
	switch w.Kind {
	case "all_reduce":
		x := lathe.Ones(lathe.CPU, lathe.Float32, w.Dims[0])
		release, err := inputs(x)
		if err != nil {
			return nil, err
		}
		return &prepared{step: func() error {
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			y, err := g.AllReduce(ctx, x, dist.Sum)
			if err != nil {
				return err
			}
			return consume(y)
		}, release: release}, nil
	case "ddp_step", "ddp_step_after":
		return buildDDPStep(ctx, g, w.Dims, w.Kind == "ddp_step_after")
	}
	return nil, fmt.Errorf("no rank builder for workload kind %q", w.Kind)
}

// buildDDPStep is buildMLPStep's step with the model under DDP on g: every
// rank takes the same batch of dims[0] rows (the data does not change the
// time), and rank 0's parameters.
func buildDDPStep(ctx context.Context, g *dist.Group, dims []int, after bool) (*prepared, error) {
	batch, in, hidden, out := dims[0], dims[1], dims[2], dims[3]
	lathe.Seed(1)
	model := nn.Sequential(nn.NewLinear(in, hidden), nn.ReLU{}, nn.NewLinear(hidden, out))
	d, err := dist.DDP(ctx, g, model)
	if err != nil {
		return nil, err
	}
	opt, err := nn.NewSGD(d.Parameters(), 0.01)
	if err != nil {
		return nil, err
	}
	classes := make([]int32, batch)
	for i := range classes {
		classes[i] = int32(i % out)
	}
	x, y := lathe.RandN(lathe.CPU, lathe.Float32, batch, in), lathe.FromSlice(lathe.CPU, classes, batch)
	release, err := inputs(x, y)
	if err != nil {
		return nil, err
	}
	step := func() error {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		loss := nn.CrossEntropy(d.Forward(x), y)
		opt.ZeroGrad()
		if after {
			err = loss.Backward()
			if err == nil {
				err = d.SyncGradients(ctx)
			}
		} else {
			err = d.Backward(ctx, loss)
		}
		loss.Release()
		if err != nil {
			return err
		}
		return opt.Step()
	}
	return &prepared{step: step, release: release}, nil
}
