package lathe

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-ml/lathe/dispatch"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// TestMemoryOnEveryDevice: EmptyCache and MemoryStats answer on every
// device that opens, through the one capability interface, and a released
// buffer shows up as cached until the cache is emptied. The buffer is 4 MiB,
// a block of its own on every device: a small one may share a slab with
// live tensors (cuda's pool), which EmptyCache rightly keeps, as
// torch.cuda.empty_cache keeps a segment with a live block.
func TestMemoryOnEveryDevice(t *testing.T) {
	const n, size = 1 << 20, 4 << 20 // float32s, bytes
	for _, info := range DeviceStatus() {
		dev := info.Device
		t.Run(dev.String(), func(t *testing.T) {
			if !info.Available {
				if err := EmptyCache(dev); !errors.Is(err, ErrUnavailable) {
					t.Errorf("EmptyCache = %v, want ErrUnavailable", err)
				}
				if _, err := MemoryStats(dev); !errors.Is(err, ErrUnavailable) {
					t.Errorf("MemoryStats = %v, want ErrUnavailable", err)
				}
				testenv.SkipDevice(t, dev.String(), "%v cannot be opened here: %v", dev, info.Err)
			}
			ones := Ones(dev, Float32, n)
			x := ones.MulScalar(2) // a buffer from the pool (Ones may wrap host data)
			ones.Release()
			if err := x.Err(); err != nil {
				t.Fatal(err)
			}
			before, err := MemoryStats(dev)
			if err != nil {
				t.Fatal(err)
			}
			x.Release()
			after, err := MemoryStats(dev)
			if err != nil {
				t.Fatal(err)
			}
			if after.Cached < before.Cached+size {
				t.Errorf("releasing %d bytes: cached %d -> %d, want at least %d more", size, before.Cached, after.Cached, size)
			}
			if err := EmptyCache(dev); err != nil {
				t.Fatal(err)
			}
			s, err := MemoryStats(dev)
			if err != nil {
				t.Fatal(err)
			}
			if s.Cached > before.Cached {
				t.Errorf("after EmptyCache %d bytes are cached, more than the %d before the release", s.Cached, before.Cached)
			}
			if s.Reserved > after.Reserved-size {
				t.Errorf("after EmptyCache %d bytes are reserved, want at most %d (%d given back)", s.Reserved, after.Reserved-size, size)
			}
		})
	}
}

func TestChooseDevice(t *testing.T) {
	if dev, err := chooseDevice("cpu"); err != nil || dev != CPU {
		t.Errorf(`LATHE_DEVICE=cpu: %v, %v; want cpu`, dev, err)
	}
	for _, env := range []string{"tpu:0", "cuda:x", "cpu:2"} {
		if _, err := chooseDevice(env); !errors.Is(err, ErrValue) {
			t.Errorf("LATHE_DEVICE=%s: %v, want ErrValue", env, err)
		}
	}
	// A device that does not open is an error, never a silent fallback.
	if _, err := chooseDevice("cuda:7"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("LATHE_DEVICE=cuda:7: %v, want ErrUnavailable", err)
	}
	// Unset: the first GPU that opens on real hardware, else the cpu.
	dev, err := chooseDevice("")
	if err != nil {
		t.Fatal(err)
	}
	want := CPU
	for _, d := range defaultOrder {
		if _, err := Zeros(d, Float32, 1).Float32s(); err == nil && !IsSoftware(d) {
			want = d
			break
		}
	}
	if dev != want {
		t.Errorf("default device %v, want %v", dev, want)
	}
	t.Logf("default device here: %v", dev)
}

// tunerBackend is a backend that only records the numeric options it is
// given, to check that SetAllowTF32 reaches every backend that takes them.
type tunerBackend struct {
	dispatch.Backend
	got *dispatch.NumericOptions
}

func (b tunerBackend) SetNumericOptions(o dispatch.NumericOptions) { *b.got = o }

func TestSetAllowTF32ReachesBackends(t *testing.T) {
	var got dispatch.NumericOptions
	dispatch.RegisterBackend("tf32test", tunerBackend{dispatch.Unavailable("tf32test", "a test backend"), &got})
	SetAllowTF32(true)
	if !got.AllowTF32 {
		t.Errorf("SetAllowTF32(true) did not reach the backend")
	}
	SetAllowTF32(false)
	if got.AllowTF32 {
		t.Errorf("SetAllowTF32(false) did not reach the backend")
	}
}

// TestHugeResultIsAnError: an op whose result no device could hold (4 TiB)
// is ErrOutOfMemory on every device, never a crash (issue 15, defect 5).
func TestHugeResultIsAnError(t *testing.T) {
	for _, info := range DeviceStatus() {
		dev := info.Device
		t.Run(dev.String(), func(t *testing.T) {
			if !info.Available {
				testenv.SkipDevice(t, dev.String(), "%v cannot be opened here: %v", dev, info.Err)
			}
			one := Ones(dev, Float32, 1, 1)
			err := one.Expand(1<<20, 1<<20).Contiguous().Err()
			if !errors.Is(err, ErrOutOfMemory) {
				t.Fatalf("a 4 TiB copy: %v, want ErrOutOfMemory", err)
			}
			t.Log(err)
		})
	}
}

// Close hands back what the backends hold; on a machine where only cpu and
// wgpu open there is nothing to hand back, and the cpu keeps working after.
func TestCloseLeavesTheCPUWorking(t *testing.T) {
	if err := Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	x := FromSlice(CPU, []float32{1, 2}, 2)
	got, err := x.Add(x).Float32s()
	if err != nil || got[0] != 2 || got[1] != 4 {
		t.Fatalf("x+x after Close = %v, %v; want [2 4]", got, err)
	}
}

// cpuAllocated is the bytes that cpu tensors hold now.
func cpuAllocated(t *testing.T) int64 { return allocatedOn(t, CPU) }

// allocatedOn is the bytes in blocks that tensors hold on dev.
func allocatedOn(t *testing.T, dev Device) int64 {
	t.Helper()
	s, err := MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	return s.Allocated
}

// settledAllocated is cpuAllocated once the tensors that earlier tests
// dropped without releasing have gone back to the pool: their cleanups run
// when the collector gets to them, and one that ran between a test's two
// readings made TestLinearReleasesItsProduct read -1.8 MB held. It runs
// the collector until a reading repeats, so it is for a test's first
// reading only: a later one would free the test's own garbage, which the
// tests check that lathe releases without the collector.
func settledAllocated(t *testing.T) int64 {
	t.Helper()
	prev := cpuAllocated(t)
	for range 100 {
		runtime.GC()
		time.Sleep(time.Millisecond) // the cleanups run on a goroutine of their own
		now := cpuAllocated(t)
		if now == prev {
			break
		}
		prev = now
	}
	return prev
}

// TestLinearReleasesItsProduct: Linear's product before the bias, which
// no caller can hold, goes back to the pool when the backward pass frees
// the graph (or at once without a graph), not when the garbage collector
// finds it: a training step would take new memory for it every time. A
// graph kept for a second pass keeps it until a pass frees the graph.
func TestLinearReleasesItsProduct(t *testing.T) {
	const rows, in, outDim = 256, 8, 512
	const product = rows * outDim * 4 // bytes: 512 KiB, far above the grads
	live := func() int64 { return cpuAllocated(t) }
	Seed(3)
	x := RandN(CPU, Float32, rows, in)
	w := RandN(CPU, Float32, outDim, in).RequireGrad()
	b := RandN(CPU, Float32, outDim).RequireGrad()
	for _, c := range []struct {
		name   string
		grad   bool
		retain bool
	}{{"no graph", false, false}, {"backward", true, false}, {"retained, then freed", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			before := settledAllocated(t)
			var y *Tensor
			if c.grad {
				y = x.Linear(w, b)
			} else {
				NoGrad(func() { y = x.Linear(w, b) })
			}
			loss := y.Sum()
			if c.grad {
				if c.retain {
					if err := loss.Backward(RetainGraph()); err != nil {
						t.Fatal(err)
					}
					if held := live() - before; held < 2*product { // y and the product
						t.Fatalf("with the graph retained, %d bytes held, want y's and the product's %d", held, 2*product)
					}
				}
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
			}
			y.Release()
			loss.Release()
			if held := live() - before; held >= product {
				t.Errorf("%d bytes still held after the step, want under the product's %d", held, product)
			}
			w.ZeroGrad()
			b.ZeroGrad()
		})
	}
}

// TestReleaseWithGraph: a model's intermediates handed to ReleaseWithGraph
// stay usable until a backward pass frees the graph, which then releases
// them after it has used them (the gradient is right); a retained graph
// keeps them; without a graph they go at once; the output itself is never
// released.
func TestReleaseWithGraph(t *testing.T) {
	x := FromSlice(CPU, []float64{0.5, -1, 2}, 3)
	w := FromSlice(CPU, []float64{1.5, 0.25, -0.5}, 3).RequireGrad()
	wantGrad := []float64{0.5 * math.Exp(0.75), -1 * math.Exp(-0.25), 2 * math.Exp(-1)} // d/dw Σ e^(x·w)
	released := func(ts ...*Tensor) []bool {
		r := make([]bool, len(ts))
		for i, t := range ts {
			r[i] = t.t.Released()
		}
		return r
	}
	for _, retain := range []bool{false, true} {
		y := x.Mul(w)
		z := y.Exp()
		out := z.Sum()
		ReleaseWithGraph(out, y, z, y, out, nil)
		if got := released(y, z, out); slices.Contains(got, true) {
			t.Fatalf("retain %v: released before backward: %v", retain, got)
		}
		if retain {
			if err := out.Backward(RetainGraph()); err != nil {
				t.Fatal(err)
			}
			if got := released(y, z); slices.Contains(got, true) {
				t.Fatalf("released by a pass that retains the graph: %v", got)
			}
			w.ZeroGrad()
		}
		if err := out.Backward(); err != nil {
			t.Fatal(err)
		}
		if got := released(y, z, out); !got[0] || !got[1] || got[2] {
			t.Fatalf("retain %v: after the pass that frees the graph, released %v, want y and z, not out", retain, got)
		}
		g, err := w.Grad().Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range g {
			if math.Abs(g[i]-wantGrad[i]) > 1e-12 {
				t.Errorf("retain %v: grad %v, want %v", retain, g, wantGrad)
				break
			}
		}
		w.ZeroGrad()
		out.Release()
	}
	var y, out *Tensor
	NoGrad(func() {
		y = x.Mul(w)
		out = y.Sum()
	})
	ReleaseWithGraph(out, y)
	if !y.t.Released() || out.t.Released() {
		t.Errorf("without a graph: y released %v, out released %v; want y at once, not out", y.t.Released(), out.t.Released())
	}
}

// TestPassAfterFreedGraph: a pass that reaches a tensor released with a
// graph that an earlier pass freed reports the freed graph (ErrGrad, as
// torch's "Trying to backward through the graph a second time"); one that
// reaches a tensor the caller released reports the release (ErrReleased).
func TestPassAfterFreedGraph(t *testing.T) {
	x := FromSlice(CPU, []float64{0.5, -1, 2}, 3).RequireGrad()
	a := x.Exp()
	y, z := a.Sum(), a.Narrow(0, 0, 2).Sum() // z's narrow is not on y's graph
	ReleaseWithGraph(y, a)
	if err := y.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := z.Backward(); !errors.Is(err, ErrGrad) || !strings.Contains(err.Error(), "earlier backward pass freed") {
		t.Errorf("a pass after the graph that held a was freed: %v, want the freed graph's ErrGrad", err)
	}
	b := x.Exp()
	w := b.Narrow(0, 0, 2).Sum()
	b.Release()
	if err := w.Backward(); !errors.Is(err, ErrReleased) {
		t.Errorf("a pass after the caller released b: %v, want ErrReleased", err)
	}
}

// TestReleaseWithGraphConcurrent: ReleaseWithGraph from many goroutines on
// one output, while a backward pass frees its graph, and after it has:
// every tensor handed over is released once the pass is done (none lost
// to a race, none held by a freed graph), and the gradient is right.
func TestReleaseWithGraphConcurrent(t *testing.T) {
	w := FromSlice(CPU, []float64{2}, 1).RequireGrad()
	out := w.MulScalar(3).Sum()
	ts := make([]*Tensor, 64)
	for i := range ts {
		ts[i] = Ones(CPU, Float64, 4)
	}
	var wg sync.WaitGroup
	for i := range ts {
		wg.Add(1)
		go func() { defer wg.Done(); ReleaseWithGraph(out, ts[i]) }()
		if i == len(ts)/2 {
			if err := out.Backward(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	for i, x := range ts {
		if !x.t.Released() {
			t.Errorf("tensor %d handed over was not released", i)
		}
	}
	if g, err := w.Grad().Float64s(); err != nil || g[0] != 3 {
		t.Errorf("grad %v (%v), want [3]", g, err)
	}
}

// TestAutocastReleasesItsCasts: under Autocast, the bfloat16 copies of a
// MatMul's, Linear's or Conv2d's float32 inputs (and, for Linear with a
// bias, the float32 temporaries it adds the bias in; for Conv2d, the
// product before its bias) are released with the graph, or at once
// without one, not left to the garbage collector.
func TestAutocastReleasesItsCasts(t *testing.T) {
	const rows, in, outDim = 256, 512, 8
	const cast = rows * in * 2 // bytes of x in bfloat16: 256 KiB, far above w's and the outputs
	Seed(4)
	x := RandN(CPU, Float32, rows, in)
	w := RandN(CPU, Float32, outDim, in).RequireGrad()
	b := RandN(CPU, Float32, outDim).RequireGrad()
	wc := RandN(CPU, Float32, 2, 16, 3, 3).RequireGrad()
	bc := RandN(CPU, Float32, 2).RequireGrad()
	live := func() int64 { return cpuAllocated(t) }
	for _, op := range []struct {
		name string
		f    func() *Tensor
	}{
		{"matmul", func() *Tensor { return x.MatMul(w.MT()) }},
		{"linear", func() *Tensor { return x.Linear(w, b) }},
		// x as 8 images of 16 channels: its bfloat16 copy is the same size.
		{"conv2d", func() *Tensor { return x.Reshape(8, 16, 32, 32).Conv2d(wc, bc, Padding(1)) }},
	} {
		for _, grad := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/grad=%v", op.name, grad), func(t *testing.T) {
				for _, p := range []*Tensor{w, b, wc, bc} {
					p.ZeroGrad()
				}
				before := settledAllocated(t)
				var y *Tensor
				err := Autocast(BFloat16, func() {
					if grad {
						y = op.f()
					} else {
						NoGrad(func() { y = op.f() })
					}
				})
				if err != nil || y.Err() != nil {
					t.Fatal(err, y.Err())
				}
				loss := y.Cast(Float32).Sum()
				if grad {
					if err := loss.Backward(); err != nil {
						t.Fatal(err)
					}
				}
				y.Release()
				loss.Release()
				if held := live() - before; held >= cast/2 {
					t.Errorf("%d bytes still held after the step, want under half of x's bfloat16 copy's %d", held, cast)
				}
			})
		}
	}
}

// TestBatchNormReleasesItsTemporaries: training-mode batch norm leaves
// nothing of the size of x held after the step, in float32 and in
// bfloat16 with float32 parameters (which it computes in float32): the
// detached handle it took the batch's moments through kept x's storage
// from the pool until the garbage collector came, as did the float32 copy
// of a bfloat16 x.
func TestBatchNormReleasesItsTemporaries(t *testing.T) {
	const n, c, hw = 16, 8, 32
	const size = n * c * hw * hw * 4 // bytes of x in float32: 512 KiB
	live := func() int64 { return cpuAllocated(t) }
	Seed(6)
	w, b := Ones(CPU, Float32, c).RequireGrad(), Zeros(CPU, Float32, c).RequireGrad()
	for _, dt := range []DType{Float32, BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			leaf := RandN(CPU, Float32, n, c, hw, hw).Cast(dt).RequireGrad()
			before := settledAllocated(t)
			x := leaf.MulScalar(2) // an activation, released below
			y := x.BatchNorm(nil, nil, w, b, true, 0.1, 1e-5)
			yf := y.Cast(Float32)
			loss := yf.Sum()
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			for _, t := range []*Tensor{x, y, yf, loss} {
				t.Release()
			}
			for _, p := range []*Tensor{leaf, w, b} {
				p.ZeroGrad()
			}
			if held := live() - before; held >= size/4 {
				t.Errorf("%d bytes still held after the step, want under %d", held, size/4)
			}
			leaf.Release()
		})
	}
}

// TestCompositeReleasesItsIntermediates: what a composite op's body makes
// on the way to its result (the 2-norm's square, tril's mask, a loss's
// log-probabilities) goes back to the pool at once without a graph, and
// when a backward pass frees the graph with one, after the pass has used
// it (the gradient is right); a retained graph keeps it for a second
// pass. The arguments stay live throughout.
func TestCompositeReleasesItsIntermediates(t *testing.T) {
	const n = 256
	Seed(5)
	x := RandN(CPU, Float32, n, n).RequireGrad()
	xs, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	target := make([]int64, n)
	for i := range target {
		target[i] = int64(i*7) % n
	}
	// The gradients of Σ f(x)², from xs on the host.
	twice := func(keep func(i, j int) bool) []float64 {
		g := make([]float64, n*n)
		for i := range n {
			for j := range n {
				if keep(i, j) {
					g[i*n+j] = 2 * float64(xs[i*n+j])
				}
			}
		}
		return g
	}
	crossEntropyGrad := func() []float64 {
		// L = mean over rows of logsumexp(x_i) - x_i[t_i]; d(L²) = 2L·dL.
		g := make([]float64, n*n)
		loss := 0.0
		for i := range n {
			row := xs[i*n : (i+1)*n]
			m := float64(slices.Max(row))
			sum := 0.0
			for _, v := range row {
				sum += math.Exp(float64(v) - m)
			}
			loss += m + math.Log(sum) - float64(row[target[i]])
			for j, v := range row {
				g[i*n+j] = math.Exp(float64(v)-m) / sum
			}
			g[i*n+int(target[i])]--
		}
		loss /= n
		for k := range g {
			g[k] *= 2 * loss / n
		}
		return g
	}
	for _, c := range []struct {
		name  string
		f     func(*Tensor) *Tensor
		grad  []float64
		inner int64 // bytes of the intermediate that must not stay
	}{
		{"vector_norm", func(x *Tensor) *Tensor { return x.Norm(2, 1) }, twice(func(int, int) bool { return true }), n * n * 4},
		{"tril", func(x *Tensor) *Tensor { return x.Tril(0) }, twice(func(i, j int) bool { return j <= i }), n * n},
		{"cross_entropy", func(x *Tensor) *Tensor { return x.CrossEntropy(FromSlice(CPU, target, n)) }, crossEntropyGrad(), n * n * 4},
	} {
		for _, mode := range []string{"no graph", "backward", "retained, then freed"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				before := settledAllocated(t)
				var y *Tensor
				if mode == "no graph" {
					NoGrad(func() { y = c.f(x) })
				} else {
					y = c.f(x)
				}
				square := y.Square()
				loss := square.Sum()
				var grads [][]float32
				if mode != "no graph" {
					passes := 1
					if mode == "retained, then freed" {
						passes = 2
					}
					for p := range passes {
						var opts []GradOption
						if p < passes-1 {
							opts = append(opts, RetainGraph())
						}
						if err := loss.Backward(opts...); err != nil {
							t.Fatalf("pass %d: %v", p+1, err)
						}
						grad := x.Grad()
						g, err := grad.Float32s()
						grad.Release() // its own claim on the gradient
						if err != nil {
							t.Fatal(err)
						}
						grads = append(grads, g)
						x.ZeroGrad()
					}
				}
				if len(grads) == 2 && !slices.Equal(grads[0], grads[1]) {
					t.Errorf("the second pass through the retained graph gave another gradient")
				}
				for p, g := range grads {
					for k, v := range g {
						if d := math.Abs(float64(v) - c.grad[k]); d > 1e-5*(1+math.Abs(c.grad[k])) {
							t.Fatalf("pass %d: gradient [%d] = %v, want %v", p+1, k, v, c.grad[k])
						}
					}
				}
				for _, r := range []*Tensor{y, square, loss} {
					r.Release()
				}
				if held := cpuAllocated(t) - before; held >= c.inner {
					t.Errorf("%d bytes still held after the step, want under the intermediate's %d", held, c.inner)
				}
				if _, err := x.Float32s(); err != nil {
					t.Fatalf("the argument after the step: %v", err)
				}
			})
		}
	}
}

// TestCompositesInManyGoroutines: goroutines that run the same composite
// on one shared leaf, each through its own backward pass, release only
// their own intermediates: every pass succeeds and the leaf's gradient is
// the sum of theirs.
func TestCompositesInManyGoroutines(t *testing.T) {
	const workers, n = 8, 64
	Seed(9)
	x := RandN(CPU, Float32, n, n).RequireGrad()
	xs, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range 5 {
				y := x.Norm(2, 1)
				sq := y.Square()
				loss := sq.Sum()
				if err := loss.Backward(); err != nil {
					errs <- err
					return
				}
				for _, r := range []*Tensor{y, sq, loss} {
					r.Release()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	g, err := x.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range g {
		want := 2 * float64(xs[k]) * workers * 5 // d Σ‖x_i‖² = 2x, from each pass
		if math.Abs(float64(v)-want) > 1e-4*(1+math.Abs(want)) {
			t.Fatalf("gradient [%d] = %v, want %v", k, v, want)
		}
	}
}

// TestNoOpConversionsAreOwnHandles: Cast to x's dtype, Contiguous of a
// contiguous x, To x's device and Dropout out of training have nothing to
// do, but each returns a handle of the caller's own: releasing it leaves x
// live, its values are x's, and gradients flow through it to x.
func TestNoOpConversionsAreOwnHandles(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(*Tensor) *Tensor
	}{
		{"cast", func(x *Tensor) *Tensor { return x.Cast(Float32) }},
		{"contiguous", func(x *Tensor) *Tensor { return x.Contiguous() }},
		{"to", func(x *Tensor) *Tensor { return x.To(CPU) }},
		{"dropout eval", func(x *Tensor) *Tensor { return x.Dropout(0.5, false) }},
		{"dropout p=0", func(x *Tensor) *Tensor { return x.Dropout(0, true) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := FromSlice(CPU, []float32{1, -2, 3, 0.5, 0, -4}, 2, 3).RequireGrad()
			y := c.f(x)
			if y == x {
				t.Fatal("returned x's own handle")
			}
			got, err := y.Float32s()
			if err != nil || !slices.Equal(got, []float32{1, -2, 3, 0.5, 0, -4}) {
				t.Fatalf("values %v, %v; want x's", got, err)
			}
			if err := y.Square().Sum().Backward(); err != nil {
				t.Fatal(err)
			}
			g, err := x.Grad().Float32s()
			if err != nil || !slices.Equal(g, []float32{2, -4, 6, 1, 0, -8}) {
				t.Fatalf("x's gradient %v, %v; want 2x", g, err)
			}
			y.Release()
			if _, err := x.Float32s(); err != nil {
				t.Fatalf("x after releasing the result: %v", err)
			}
		})
	}
}

// TestCompose: a function of many ops run through Compose gives its
// result, with gradients, and what its ops made from the arguments goes
// back to the pool at once without a graph and with the graph after
// backward; an argument that f returns comes back in a handle of the
// caller's own; an argument given twice is one handle inside; a failure
// or a nil result is an error; a tensor made from an argument by a
// weight f holds is released, the weight is not.
func TestCompose(t *testing.T) {
	const n = 256
	const big = n * n * 4
	Seed(11)
	x := RandN(CPU, Float32, n, n).RequireGrad()
	w := RandN(CPU, Float32, n, n)
	xs, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	// Σ over rows of (x·x + x)·w summed: each step a [n, n] intermediate.
	f := func(a []*Tensor) *Tensor {
		y := a[0].Mul(a[0]).Add(a[0])
		return y.Mul(w).Sum(1)
	}
	for _, grad := range []bool{false, true} {
		before := settledAllocated(t)
		var out *Tensor
		if grad {
			out = Compose(f, x)
		} else {
			NoGrad(func() { out = Compose(f, x) })
		}
		loss := out.Sum()
		if grad {
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			grad := x.Grad()
			g, err := grad.Float32s()
			grad.Release() // its own claim on the gradient
			if err != nil {
				t.Fatal(err)
			}
			ws, _ := w.Float32s()
			for k, v := range g {
				want := (2*float64(xs[k]) + 1) * float64(ws[k])
				if math.Abs(float64(v)-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("gradient [%d] = %v, want %v", k, v, want)
				}
			}
			x.ZeroGrad()
		}
		out.Release()
		loss.Release()
		if held := cpuAllocated(t) - before; held >= big {
			t.Errorf("grad %v: %d bytes still held, want under one intermediate's %d", grad, held, big)
		}
	}
	if _, err := w.Float32s(); err != nil {
		t.Fatalf("the weight f holds: %v", err)
	}

	same := Compose(func(a []*Tensor) *Tensor { return a[0] }, x)
	if same == x {
		t.Fatal("an argument came back as the caller's own handle")
	}
	same.Release()
	if _, err := x.Float32s(); err != nil {
		t.Fatalf("x after releasing what Compose returned of it: %v", err)
	}
	if got := Compose(func(a []*Tensor) *Tensor {
		if a[0] != a[1] {
			return Failed(errors.New("an argument given twice came as two handles"))
		}
		return a[0].Add(a[1])
	}, x, x); got.Err() != nil {
		t.Fatal(got.Err())
	}
	if err := Compose(func(a []*Tensor) *Tensor { return nil }, x).Err(); err == nil {
		t.Error("a nil result gave no error")
	}
	before := settledAllocated(t)
	bad := Compose(func(a []*Tensor) *Tensor { return a[0].Mul(a[0]).Reshape(3) }, x)
	if !errors.Is(bad.Err(), ErrShape) {
		t.Errorf("a failing body gave %v, want its ErrShape", bad.Err())
	}
	if held := cpuAllocated(t) - before; held >= big {
		t.Errorf("a failing body left %d bytes held", held)
	}
}

// TestScalarOpsReleaseTheirScalar: x·s takes s as a 0-d tensor on x's
// device (and x's cast, where s promotes it), which goes back once the
// result is made, or with the result's graph where it is recorded, not
// when the collector finds it: an optimizer's step left a block per
// scalar op on a device until then. wgpu:0's pool counts every block
// (the cpu's leaves out those under 16 KiB).
func TestScalarOpsReleaseTheirScalar(t *testing.T) {
	dev := WGPU(0)
	x, ints, leaf := Ones(dev, Float32, 4), Ones(dev, Int32, 4), Ones(dev, Float32, 4).RequireGrad()
	if err := ints.Err(); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 does not open: %v", err)
	}
	for name, op := range map[string]func() *Tensor{
		"mul":          func() *Tensor { return x.MulScalar(2) },
		"int*0.5":      func() *Tensor { return ints.MulScalar(0.5) }, // casts ints to float32 first
		"gt":           func() *Tensor { return x.GtScalar(0.5) },
		"recorded/mul": func() *Tensor { return leaf.MulScalar(3) },
	} {
		runtime.GC()
		before := allocatedOn(t, dev)
		y := op()
		if err := y.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "recorded/mul" {
			loss := y.Sum()
			if err := loss.Backward(); err != nil { // frees the graph, and the scalar with it
				t.Fatal(err)
			}
			loss.Release()
			leaf.ZeroGrad() // releases the gradient
		}
		y.Release()
		if after := allocatedOn(t, dev); after > before {
			t.Errorf("%s: wgpu:0 holds %d bytes after the op's result went, %d before", name, after, before)
		}
	}
}

// TestReleaseRacingAnOp: a Release on one goroutine while an op, a
// read-back or a draw reads the tensor on another gives the result as if
// the Release came after it, or an ErrReleased if it came before; never a
// result read from the buffer that the pool handed on to the next tensor
// (7s here). Without the op holding its arguments' storage
// (dispatch.Tensor.Hold), 1 to 26 in 100 of each read 7s.
func TestReleaseRacingAnOp(t *testing.T) {
	testenv.HostOnly(t)
	const n = 1 << 20
	// Each reads x, whose elements are 0 and 1 by turns, and reports
	// whether what it read was x's.
	reads := map[string]func(x *Tensor) (bool, error){
		"mul_scalar": func(x *Tensor) (bool, error) {
			z := x.MulScalar(2)
			defer z.Release()
			v, err := z.Float32s()
			return err != nil || (v[0] == 0 && v[n-1] == 2 && !slices.Contains(v, 14)), err
		},
		"float32s": func(x *Tensor) (bool, error) {
			v, err := x.Float32s()
			return err != nil || !slices.Contains(v, 7), err
		},
		"multinomial": func(x *Tensor) (bool, error) {
			i, err := Multinomial(x, 1, false).Int64s()
			return err != nil || i[0]%2 == 1, err
		},
	}
	for _, dev := range []Device{CPU, WGPU(0)} {
		if err := Zeros(dev, Float32, 1).Err(); err != nil {
			testenv.SkipDevice(t, dev.String(), "%s does not open: %v", dev, err)
			continue
		}
		for name, read := range reads {
			bad := 0
			for i := range 60 {
				x := FromSlice(dev, []float32{0, 1}, 1, 2).Expand(n/2, 2).Reshape(n)
				done := make(chan bool)
				go func() {
					ok, err := read(x)
					if err != nil && !errors.Is(err, ErrReleased) {
						t.Error(err)
					}
					done <- ok
				}()
				time.Sleep(time.Duration(i%15) * 30 * time.Microsecond)
				x.Release()
				y := Full(dev, Float32, 7, n) // takes x's buffer from the pool once it is free
				if !<-done {
					bad++
				}
				y.Release()
			}
			if bad > 0 {
				t.Errorf("%s on %s: %d of 60 results read the buffer handed on", name, dev, bad)
			}
		}
	}
}
