// Command ddp trains examples/mlp's model (2 → 64 → 3, ReLU, Adam) on the
// same three-armed spiral with data-parallel training: every process that
// the launcher starts takes its share of each batch (dist.Sampler), the
// gradients are averaged over the processes (dist.DDP), and so every
// process takes the step that one process would take on the whole batch.
// Rank 0 prints the progress.
//
// On cpu, launch it with Open MPI's mpirun (build it first, so that each
// rank does not compile it again), or with torchrun, whose ranks meet over
// TCP:
//
//	go build -o /tmp/ddp ./examples/ddp
//	mpirun -np 2 --oversubscribe /tmp/ddp -epochs 30
//	torchrun --nproc_per_node 2 --no_python /tmp/ddp -epochs 30
//
// (as root, add --allow-run-as-root to mpirun). Run alone, it is a job of
// one.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/dist"
	"github.com/lathe-ml/lathe/examples/internal/check"
	"github.com/lathe-ml/lathe/nn"
)

// Config is one training run.
type Config struct {
	Points  int     // points per class
	Classes int     // arms of the spiral
	Hidden  int     // hidden units
	Epochs  int     // passes over the data
	Batch   int     // the global minibatch, split among the ranks
	LR      float64 // Adam's learning rate
	Seed    uint64  // seeds the data, the initialisation and the shuffles
	Timeout time.Duration
	Log     io.Writer // rank 0's progress lines (nil: nowhere)
}

// DefaultConfig is examples/mlp's run.
func DefaultConfig() Config {
	return Config{Points: 200, Classes: 3, Hidden: 64, Epochs: 60, Batch: 32, LR: 0.01, Seed: 1, Timeout: time.Minute}
}

// Result is how a run ended, the same on every rank.
type Result struct {
	Loss     float64 // the last epoch's mean training loss over every rank's batches
	Accuracy float64 // training accuracy after the last epoch
	Ranks    int
	Elapsed  time.Duration
}

// spiral is examples/mlp's data: point i of arm k at radius i/points and
// angle 4k + 4r plus N(0, 0.2²) noise.
func spiral(points, classes int, seed uint64) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(seed, 0x5350))
	xs := make([]float32, 0, 2*points*classes)
	ys := make([]int32, 0, points*classes)
	for k := range classes {
		for i := range points {
			r := float64(i) / float64(points)
			theta := 4*float64(k) + 4*r + 0.2*rng.NormFloat64()
			xs = append(xs, float32(r*math.Sin(theta)), float32(r*math.Cos(theta)))
			ys = append(ys, int32(k))
		}
	}
	return xs, ys
}

// Check refuses settings that cannot make a run: each count at least one
// (two classes) and a deadline. Every rank has the same settings, so each
// refuses them alike, before the group opens.
func (c Config) Check() error {
	err := cmp.Or(
		check.AtLeast("ddp", "-points", c.Points, 1),
		check.AtLeast("ddp", "Classes", c.Classes, 2),
		check.AtLeast("ddp", "Hidden", c.Hidden, 1),
		check.AtLeast("ddp", "-epochs", c.Epochs, 1),
		check.NonNegative("ddp", "-lr", c.LR),
		check.AtLeast("ddp", "-batch", c.Batch, 1))
	if err == nil && c.Timeout <= 0 {
		err = lathe.NewError("ddp", lathe.ErrValue, "-timeout", "is "+c.Timeout.String(), "give the run a positive deadline")
	}
	return err
}

// perRank is each rank's share of the global batch, or an ErrValue where
// the ranks cannot share it evenly.
func (c Config) perRank(ranks int) (int, error) {
	if c.Batch%ranks != 0 {
		return 0, lathe.NewError("ddp", lathe.ErrValue, "-batch", fmt.Sprintf("is %d, which does not split evenly over %d ranks", c.Batch, ranks),
			fmt.Sprintf("use a -batch that is a multiple of %d", ranks))
	}
	return c.Batch / ranks, nil
}

// Train runs cfg on this process's rank of the launcher's job.
func Train(cfg Config) (Result, error) {
	start := time.Now()
	if err := cfg.Check(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	g, err := dist.Init(ctx, dist.Config{})
	if err != nil {
		return Result{}, err
	}
	res, err := train(ctx, g, cfg)
	res.Elapsed = time.Since(start)
	return res, errors.Join(err, g.Close())
}

func train(ctx context.Context, g *dist.Group, cfg Config) (Result, error) {
	res := Result{Ranks: g.Size()}
	logf := func(format string, a ...any) {
		if cfg.Log != nil && g.Rank() == 0 {
			fmt.Fprintf(cfg.Log, format, a...)
		}
	}
	perRank, err := cfg.perRank(g.Size())
	if err != nil {
		return res, err
	}
	xs, ys := spiral(cfg.Points, cfg.Classes, cfg.Seed)
	n := len(ys)
	x := lathe.FromSlice(lathe.CPU, xs, n, 2)
	y := lathe.FromSlice(lathe.CPU, ys, n)

	// Each rank initialises its own model; DDP replaces it with rank 0's.
	lathe.Seed(cfg.Seed + uint64(g.Rank()))
	model := nn.Sequential(nn.NewLinear(2, cfg.Hidden), nn.ReLU{}, nn.NewLinear(cfg.Hidden, cfg.Classes))
	d, err := dist.DDP(ctx, g, model)
	if err != nil {
		return res, err
	}
	opt, err := nn.NewAdam(d.Parameters(), cfg.LR)
	if err != nil {
		return res, err
	}
	sampler := dist.NewSampler(g, n)
	sampler.Seed = cfg.Seed
	logf("training on %d rank(s), %d points each per step: %v\n", g.Size(), perRank, g)
	for epoch := 1; epoch <= cfg.Epochs; epoch++ {
		idx := sampler.Indices(epoch)
		total, count := 0.0, 0
		for b := 0; b < len(idx); b += perRank {
			batch := make([]int32, 0, perRank)
			for _, i := range idx[b:min(b+perRank, len(idx))] {
				batch = append(batch, int32(i))
			}
			it := lathe.FromSlice(lathe.CPU, batch)
			loss := nn.CrossEntropy(d.Forward(x.IndexSelect(0, it)), y.IndexSelect(0, it))
			opt.ZeroGrad()
			if err := d.Backward(ctx, loss); err != nil {
				return res, err
			}
			if err := opt.Step(); err != nil {
				return res, err
			}
			l, err := loss.Item()
			if err != nil {
				return res, err
			}
			total += l * float64(len(batch))
			count += len(batch)
		}
		// The epoch's loss over every rank's points.
		mean, err := g.AllReduce(ctx, lathe.FromSlice(lathe.CPU, []float64{total / float64(max(count, 1))}), dist.Mean)
		if err != nil {
			return res, err
		}
		if res.Loss, err = mean.Item(); err != nil {
			return res, err
		}
		if res.Accuracy, err = accuracy(model, x, y); err != nil {
			return res, err
		}
		logf("epoch %3d/%d  loss %.4f  accuracy %5.1f%%\n", epoch, cfg.Epochs, res.Loss, 100*res.Accuracy)
	}
	return res, nil
}

// accuracy is the share of points whose largest logit is their class.
func accuracy(m nn.Module, x, y *lathe.Tensor) (float64, error) {
	var acc float64
	var err error
	lathe.NoGrad(func() {
		pred := m.Forward(x).ArgMax(1)
		acc, err = pred.Eq(y.Cast(pred.DType())).Cast(lathe.Float32).Mean().Item()
	})
	return acc, err
}

func main() {
	cfg := DefaultConfig()
	flag.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "passes over the data")
	flag.IntVar(&cfg.Batch, "batch", cfg.Batch, "global minibatch, split among the ranks")
	flag.IntVar(&cfg.Points, "points", cfg.Points, "points per class")
	flag.Float64Var(&cfg.LR, "lr", cfg.LR, "Adam's learning rate")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	flag.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "deadline of the whole run (a hung rank ends it)")
	flag.Parse()
	// Settings that cannot make a run are a usage error (exit 2), as in
	// the other examples, before any rank is met.
	if err := cmp.Or(check.NoArgs("ddp", flag.Args()), cfg.Check()); err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(2)
	}
	cfg.Log = os.Stdout
	res, err := Train(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddp:", err)
		os.Exit(1)
	}
	if os.Getenv("OMPI_COMM_WORLD_RANK") == "" || os.Getenv("OMPI_COMM_WORLD_RANK") == "0" {
		fmt.Printf("final loss %.4f, accuracy %.1f%% on %d rank(s) in %v\n", res.Loss, 100*res.Accuracy, res.Ranks, res.Elapsed.Round(time.Millisecond))
	}
}
