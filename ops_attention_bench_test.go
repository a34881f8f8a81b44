package lathe

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// attnStep is one training step of attention on the cpu: forward, and the
// gradients of q, k and v of the output's sum.
func attnStep(tb testing.TB, q, k, v *Tensor, composite bool) {
	var out *Tensor
	if composite {
		out = sdpaComposite(q, k, v)
	} else {
		out = ScaledDotProductAttention(q, k, v)
	}
	gs, err := Grad(out.Sum(), []*Tensor{q, k, v})
	if err != nil {
		tb.Fatal(err)
	}
	for _, g := range gs {
		g.Release()
	}
	out.Release()
}

// BenchmarkAttention times a forward and backward step of the fused cpu
// attention on one head of E = 64, float32, at sequence lengths 512 to
// 4096; GFLOP/s counts the products' 2·L²·E multiply-adds forward (two
// products) and backward (five).
func BenchmarkAttention(b *testing.B) {
	const e = 64
	for _, l := range []int{512, 1024, 2048, 4096} {
		b.Run("L="+strconv.Itoa(l), func(b *testing.B) {
			Seed(1)
			q, k, v := RandN(CPU, Float32, 1, 1, l, e).RequireGrad(), RandN(CPU, Float32, 1, 1, l, e).RequireGrad(),
				RandN(CPU, Float32, 1, 1, l, e).RequireGrad()
			b.ResetTimer()
			for range b.N {
				attnStep(b, q, k, v, false)
			}
			flops := 7 * 2 * float64(l) * float64(l) * e
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestAttentionPeakMemory shows that the fused attention's memory is linear
// in the sequence length: each length runs in a fresh process (the cpu's
// peak statistic never goes down), which reports the peak bytes that a
// forward and backward step of one head (E = 64, float32) allocated over
// its inputs. Doubling L must not much more than double it; the composite,
// which holds L×L scores and probabilities, is run once for contrast.
func TestAttentionPeakMemory(t *testing.T) {
	if l := os.Getenv("LATHE_ATTN_PEAK_L"); l != "" {
		attnPeakChild(t, l)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process per length")
	}
	peak := func(l int, composite bool) int64 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAttentionPeakMemory$", "-test.v")
		cmd.Env = append(os.Environ(), "LATHE_ATTN_PEAK_L="+strconv.Itoa(l), "LATHE_ATTN_PEAK_COMPOSITE="+strconv.FormatBool(composite))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("L=%d: %v\n%s", l, err, out)
		}
		_, after, ok := strings.Cut(string(out), "peak bytes: ")
		if !ok {
			t.Fatalf("L=%d: no peak in the child's output:\n%s", l, out)
		}
		n, err := strconv.ParseInt(strings.Fields(after)[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var prev int64
	for _, l := range []int{512, 1024, 2048, 4096} {
		p := peak(l, false)
		t.Logf("fused L=%d: peak %d bytes (%.2f MiB, %.0f bytes per query row)", l, p, float64(p)/(1<<20), float64(p)/float64(l))
		if prev > 0 && float64(p) > 2.5*float64(prev) {
			t.Errorf("L=%d: peak %d bytes, more than 2.5× the %d of L=%d: not linear in L", l, p, prev, l/2)
		}
		prev = p
	}
	c := peak(1024, true)
	t.Logf("composite L=1024: peak %d bytes (%.2f MiB)", c, float64(c)/(1<<20))
}

func attnPeakChild(t *testing.T, ls string) {
	l, err := strconv.Atoi(ls)
	if err != nil {
		t.Fatal(err)
	}
	const e = 64
	Seed(1)
	q, k, v := RandN(CPU, Float32, 1, 1, l, e).RequireGrad(), RandN(CPU, Float32, 1, 1, l, e).RequireGrad(),
		RandN(CPU, Float32, 1, 1, l, e).RequireGrad()
	before, err := MemoryStats(CPU)
	if err != nil {
		t.Fatal(err)
	}
	attnStep(t, q, k, v, os.Getenv("LATHE_ATTN_PEAK_COMPOSITE") == "true")
	after, err := MemoryStats(CPU)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("peak bytes: %d\n", after.PeakAllocated-before.Allocated)
}
