//go:build soak

package nn_test

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/nn"
)

// The soak run (DESIGN.md, Tests; make soak, not part of make test): a
// small MLP (32-64-10, batch 64, SGD with momentum) trains for 10,000
// steps on the cpu and 1,000 on wgpu:0 while the pool's live and cached
// bytes, the Go heap, the process's RSS and the goroutine count are
// sampled 20 times. After a warm-up of a tenth of the steps each figure
// must stay flat: within soakBound of its first sample after the warm-up.

// soakSample is one row of figures.
type soakSample struct {
	step                    int
	allocated, cached, heap int64
	rss                     int64
	goroutines              int
}

// soakBound is how far a figure may move from its first sample after the
// warm-up: 2% or 1 MiB for the pool's bytes and the heap, 5% or 16 MiB for
// the RSS (the runtime and Dawn return pages to the system lazily), and 2
// goroutines.
func soakBound(ref int64, frac float64, floor int64) int64 {
	return max(int64(float64(ref)*frac), floor)
}

// rss is VmRSS from /proc/self/status, in bytes (0 where there is none).
func rss() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func sample(t *testing.T, dev lathe.Device, step int) soakSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st, err := lathe.MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	return soakSample{step: step, allocated: st.Allocated, cached: st.Cached, heap: int64(ms.HeapAlloc), rss: rss(), goroutines: runtime.NumGoroutine()}
}

func TestSoak(t *testing.T) {
	for _, c := range []struct {
		dev   lathe.Device
		steps int
	}{{lathe.CPU, 10000}, {lathe.WGPU(0), 1000}} {
		t.Run(c.dev.String(), func(t *testing.T) {
			if err := lathe.Ones(c.dev, lathe.Float32, 1).Err(); err != nil {
				t.Skipf("%v does not open here: %v", c.dev, err)
			}
			soak(t, c.dev, c.steps)
		})
	}
}

func soak(t *testing.T, dev lathe.Device, steps int) {
	lathe.Seed(1)
	model := nn.Sequential(nn.NewLinear(32, 64, nn.OnDevice(dev)), nn.ReLU{}, nn.NewLinear(64, 10, nn.OnDevice(dev)))
	opt, err := nn.NewSGD(model.Parameters(), 0.05, nn.Momentum(0.9))
	if err != nil {
		t.Fatal(err)
	}
	// Four batches, cycled.
	var xs, ys []*lathe.Tensor
	for b := range 4 {
		labels := make([]int32, 64)
		for i := range labels {
			labels[i] = int32((i + b) % 10)
		}
		xs = append(xs, lathe.RandN(lathe.CPU, lathe.Float32, 64, 32).To(dev))
		ys = append(ys, lathe.FromSlice(lathe.CPU, labels).To(dev))
	}
	const samples = 20
	every := steps / samples
	warm := steps / 10
	var rows []soakSample
	start := time.Now()
	var first, last float64
	for step := 1; step <= steps; step++ {
		opt.ZeroGrad()
		loss := nn.CrossEntropy(model.Forward(xs[step%4]), ys[step%4])
		if err := loss.Backward(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if err := opt.Step(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%every == 0 || step == 1 {
			l, err := loss.Item() // waits for the device
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			if step == 1 {
				first = l
			}
			last = l
		}
		loss.Release()
		if step%every == 0 {
			rows = append(rows, sample(t, dev, step))
		}
	}
	elapsed := time.Since(start)
	t.Logf("%d steps on %v in %v (%.0f µs a step); loss %.4f -> %.4f", steps, dev, elapsed.Round(time.Millisecond), float64(elapsed.Microseconds())/float64(steps), first, last)
	t.Logf("%8s %12s %12s %12s %12s %10s", "step", "allocated", "cached", "Go heap", "RSS", "goroutines")
	var ref *soakSample
	for i := range rows {
		r := rows[i]
		mark := ""
		if ref == nil && r.step > warm {
			ref, mark = &rows[i], "  <- reference"
		}
		t.Logf("%8d %12d %12d %12d %12d %10d%s", r.step, r.allocated, r.cached, r.heap, r.rss, r.goroutines, mark)
	}
	if last >= first {
		t.Errorf("the loss did not fall: %v -> %v", first, last)
	}
	for _, r := range rows {
		if r.step <= ref.step {
			continue
		}
		check := func(name string, got, want, bound int64) {
			if got-want > bound || want-got > bound {
				t.Errorf("step %d: %s %d, %d from the reference %d (bound %d)", r.step, name, got, got-want, want, bound)
			}
		}
		check("allocated bytes", r.allocated, ref.allocated, soakBound(ref.allocated, 0.02, 1<<20))
		check("cached bytes", r.cached, ref.cached, soakBound(ref.cached, 0.02, 1<<20))
		check("Go heap", r.heap, ref.heap, soakBound(ref.heap, 0.02, 1<<20))
		if grow := r.rss - ref.rss; grow > soakBound(ref.rss, 0.05, 16<<20) {
			t.Errorf("step %d: RSS %d, %d above the reference %d (bound %d)", r.step, r.rss, grow, ref.rss, soakBound(ref.rss, 0.05, 16<<20))
		}
		check("goroutines", int64(r.goroutines), int64(ref.goroutines), 2)
	}
}
