package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

func init() { scenarios["ddp"] = ddpChecks }

// mlp is examples/mlp's model: 2 → hidden → 3 with a ReLU.
func mlp(hidden int) *nn.Seq {
	return nn.Sequential(nn.NewLinear(2, hidden), nn.ReLU{}, nn.NewLinear(hidden, 3))
}

// points are n random 2-D points and labels in 0..2.
func points(n int, seed uint64) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(seed, 7))
	xs, ys := make([]float32, 2*n), make([]int32, n)
	for i := range n {
		xs[2*i], xs[2*i+1] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		ys[i] = int32(rng.IntN(3))
	}
	return xs, ys
}

func flatParams(t *testing.T, m nn.Module) []float32 {
	t.Helper()
	var out []float32
	for _, p := range m.Parameters() {
		v, err := p.T.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		out = append(out, v...)
	}
	return out
}

// ddpChecks: DDP on the ranks, each with its half of every batch, takes
// the steps that one process takes on the whole batch, to float32
// rounding, from rank 0's initial parameters; every rank holds the same
// parameters, bit for bit; buffers follow rank 0.
func ddpChecks(t *testing.T, g *Group) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const hidden, perRank, steps = 16, 16, 8
	r, size := g.Rank(), g.Size()
	lathe.Seed(uint64(1 + r)) // rank 1 starts elsewhere: DDP must bring it to rank 0's start
	model := mlp(hidden)
	d, err := DDP(ctx, g, model)
	if err != nil {
		t.Fatalf("ddp: %v", err)
	}
	opt, err := nn.NewAdam(d.Parameters(), 0.01)
	if err != nil {
		t.Fatal(err)
	}
	var ref *nn.Seq
	var refOpt nn.Optimizer
	if r == 0 {
		lathe.Seed(1)
		ref = mlp(hidden)
		if refOpt, err = nn.NewAdam(ref.Parameters(), 0.01); err != nil {
			t.Fatal(err)
		}
	}
	xs, ys := points(perRank*size*steps, 3)
	worst := 0.0
	for step := range steps {
		lo := step * perRank * size
		mine := lo + r*perRank
		x := lathe.FromSlice(lathe.CPU, xs[2*mine:2*(mine+perRank)], perRank, 2)
		y := lathe.FromSlice(lathe.CPU, ys[mine:mine+perRank])
		opt.ZeroGrad()
		d.BucketBytes = 25 << 20
		if step%2 == 1 {
			d.BucketBytes = 64 // a bucket or two per parameter, sent as the pass goes
		}
		loss := nn.CrossEntropy(d.Forward(x), y)
		if err := d.Backward(ctx, loss); err != nil {
			t.Fatalf("step %d: backward: %v", step, err)
		}
		if err := opt.Step(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		got := flatParams(t, model)
		// Every rank holds rank 0's parameters exactly.
		b, err := g.Broadcast(ctx, lathe.FromSlice(lathe.CPU, got), 0)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if r0, _ := b.Float32s(); !slices.Equal(r0, got) {
			t.Fatalf("step %d: rank %d's parameters differ from rank 0's", step, r)
		}
		if r != 0 {
			continue
		}
		// One process, the whole batch.
		X := lathe.FromSlice(lathe.CPU, xs[2*lo:2*(lo+perRank*size)], perRank*size, 2)
		Y := lathe.FromSlice(lathe.CPU, ys[lo:lo+perRank*size])
		refOpt.ZeroGrad()
		if err := nn.CrossEntropy(ref.Forward(X), Y).Backward(); err != nil {
			t.Fatal(err)
		}
		if err := refOpt.Step(); err != nil {
			t.Fatal(err)
		}
		want := flatParams(t, ref)
		for i := range want {
			diff := math.Abs(float64(got[i]-want[i])) / (1 + math.Abs(float64(want[i])))
			worst = max(worst, diff)
			if diff > 2e-6 {
				t.Fatalf("step %d: parameter element %d is %v on 2 ranks, %v in one process", step, i, got[i], want[i])
			}
		}
	}
	if r == 0 {
		fmt.Printf("ddp: %d Adam steps on %d ranks × %d points match one process on %d points to %.2g (relative)\n",
			steps, size, perRank, perRank*size, worst)
	}
	bufferChecks(t, g, ctx)
	failChecks(t, g, ctx)
}

// failChecks: when rank 0's backward pass fails part way, after some of
// its buckets went, both ranks' Backward return an error, their gradients
// are as before the call, and the next step runs.
func failChecks(t *testing.T, g *Group, ctx context.Context) {
	r := g.Rank()
	lathe.Seed(4)
	model := mlp(8)
	d, err := DDP(ctx, g, model)
	if err != nil {
		t.Fatal(err)
	}
	d.BucketBytes = 64
	xs, ys := points(8, uint64(20+r))
	step := func() error {
		loss := nn.CrossEntropy(d.Forward(lathe.FromSlice(lathe.CPU, xs, 8, 2)), lathe.FromSlice(lathe.CPU, ys))
		return d.Backward(ctx, loss)
	}
	if err := step(); err != nil {
		t.Fatal(err)
	}
	before := grads(t, model)
	boom := errors.New("boom")
	fail := r == 0
	model.Parameters()[0].T.OnGrad(func(g *lathe.Tensor) *lathe.Tensor {
		if fail {
			return lathe.Failed(boom)
		}
		return nil
	})
	err = step()
	switch {
	case r == 0 && !errors.Is(err, boom):
		t.Fatalf("rank 0: backward with a failing hook: %v, want its error", err)
	case r != 0 && err == nil:
		t.Fatalf("rank %d: backward succeeded where rank 0's failed", r)
	}
	if r == 1 {
		fmt.Printf("ddp: rank 0's pass failed; rank 1's Backward: %v\n", err)
	}
	after := grads(t, model)
	for i := range before {
		if !slices.Equal(after[i], before[i]) {
			t.Fatalf("rank %d: parameter %d's gradient after a failed step %v, want %v as before", r, i, after[i], before[i])
		}
	}
	fail = false
	if err := step(); err != nil {
		t.Fatalf("rank %d: the step after a failed one: %v", r, err)
	}
}

// bnNet is Linear → BatchNorm → ReLU → Linear on [N, 2] inputs, with the
// batch norm over [N, C, 1, 1].
type bnNet struct {
	l1, l2 *nn.Linear
	bn     *nn.BatchNorm2d
	extra  *lathe.Tensor // a non-persistent buffer, which DDP broadcasts too
}

func (m *bnNet) Forward(x *lathe.Tensor) *lathe.Tensor {
	h := m.l1.Forward(x)
	h = m.bn.Forward(h.Reshape(h.Dim(0), h.Dim(1), 1, 1)).Reshape(h.Dim(0), h.Dim(1)).ReLU()
	return m.l2.Forward(h)
}

func (m *bnNet) Parameters() []nn.Param {
	return append(append(m.l1.Parameters(), m.bn.Parameters()...), m.l2.Parameters()...)
}
func (m *bnNet) Buffers() []nn.Param { return m.bn.Buffers() }
func (m *bnNet) NonPersistentBuffers() []nn.Param {
	return []nn.Param{{Name: "extra", T: m.extra}}
}
func (m *bnNet) To(dev lathe.Device) error { return nil }
func (m *bnNet) Train(on bool)             { m.bn.Train(on) }
func (m *bnNet) Training() bool            { return !m.bn.Eval }

func bufferChecks(t *testing.T, g *Group, ctx context.Context) {
	r := g.Rank()
	m := &bnNet{l1: nn.NewLinear(2, 4), bn: nn.NewBatchNorm2d(4), l2: nn.NewLinear(4, 3),
		extra: lathe.Full(lathe.CPU, lathe.Float32, float64(r), 2)}
	d, err := DDP(ctx, g, m)
	if err != nil {
		t.Fatalf("ddp with buffers: %v", err)
	}
	if v, _ := m.extra.Float32s(); v[0] != 0 {
		t.Fatalf("rank %d: the non-persistent buffer is %v after DDP, rank 0's is 0", r, v)
	}
	xs, _ := points(8, uint64(10+r)) // each rank its own data
	x := lathe.FromSlice(lathe.CPU, xs, 8, 2)
	if r == 1 {
		m.bn.RunningMean = lathe.Full(lathe.CPU, lathe.Float32, 100, 4) // far from rank 0's
	}
	if err := d.Forward(x).Err(); err != nil {
		t.Fatal(err)
	}
	// The forward started from rank 0's statistics (zeros), so one
	// batch with momentum 0.1 moves them by far less than 100.
	rm, _ := m.bn.RunningMean.Float32s()
	for _, v := range rm {
		if math.Abs(float64(v)) > 10 {
			t.Fatalf("rank %d: running mean %v after a DDP forward: the buffers were not taken from rank 0", r, rm)
		}
	}
	if err := d.SyncBuffers(ctx); err != nil {
		t.Fatal(err)
	}
	rm, _ = m.bn.RunningMean.Float32s()
	b, err := g.Broadcast(ctx, m.bn.RunningMean, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r0, _ := b.Float32s(); !slices.Equal(r0, rm) {
		t.Fatalf("rank %d: running mean %v after SyncBuffers, rank 0's %v", r, rm, r0)
	}
}
