package lathe

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// attnStep is one training step of attention on the cpu: forward, and the
// gradients of q, k and v of the output's sum.
func attnStep(tb testing.TB, q, k, v *Tensor, composite bool, opts ...AttentionOption) {
	var out *Tensor
	if composite {
		out = sdpaComposite(q, k, v, opts...)
	} else {
		out = ScaledDotProductAttention(q, k, v, opts...)
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

// BenchmarkAttentionMasked times the step of BenchmarkAttention with a
// key padding mask ([1, 1, 1, L] Bool, the last quarter hidden), fused
// and on the composite that masked attention took before the fused
// kernels read masks.
func BenchmarkAttentionMasked(b *testing.B) {
	const e, l = 64, 1024
	for _, composite := range []bool{false, true} {
		b.Run(fmt.Sprintf("L=%d/composite=%v", l, composite), func(b *testing.B) {
			Seed(1)
			q, k, v := RandN(CPU, Float32, 1, 1, l, e).RequireGrad(), RandN(CPU, Float32, 1, 1, l, e).RequireGrad(),
				RandN(CPU, Float32, 1, 1, l, e).RequireGrad()
			keep := make([]bool, l)
			for j := range 3 * l / 4 {
				keep[j] = true
			}
			mask := FromSlice(CPU, keep, 1, 1, 1, l)
			for b.Loop() {
				attnStep(b, q, k, v, composite, AttentionMask(mask))
			}
		})
	}
}

// attnPeakHeads is the head count of the peak-memory test: lathe-bench's
// attention rows (batch 1, 8 heads of 64, float32).
const attnPeakHeads = 8

// attnPeak is what a child of TestAttentionPeakMemory measured of one
// forward and backward step over its inputs: the cpu pool's peak bytes
// (what tensors held; the kernels' per-worker scratch of a few blocks and
// one float64 per query row are Go memory outside the pool) and the growth
// of the process's peak resident set (VmHWM), which sees everything.
type attnPeak struct{ pool, rss int64 }

// TestAttentionPeakMemory shows that the fused attention's memory is linear
// in the sequence length: each length runs in a fresh process (the peak
// statistics never go down), which reports its peaks for one forward and
// backward step of [1, 8, L, 64] float32: unmasked, causal, with a key
// padding mask, which the kernels read in place, and with dropout, whose
// mask they make block by block. Doubling L must
// not take the pool's peak past 2.5× (linear doubles it; quadratic would
// quadruple it). The composite, which holds 8×L×L scores and
// probabilities and their gradients, is run at 512 and 1024 for contrast,
// and must grow at least 3× there: quadratic.
func TestAttentionPeakMemory(t *testing.T) {
	if c := os.Getenv("LATHE_ATTN_PEAK"); c != "" {
		attnPeakChild(t, c)
		return
	}
	testenv.HostOnly(t)
	if testing.Short() {
		t.Skip("runs a child process per length")
	}
	peak := func(path string, l int, mask string) attnPeak {
		out, err := testenv.RunChild("TestAttentionPeakMemory", fmt.Sprintf("LATHE_ATTN_PEAK=%s,%d,%s", path, l, mask))
		if err != nil {
			t.Fatalf("%s L=%d: %v\n%s", path, l, err, out)
		}
		var p attnPeak
		_, after, ok := strings.Cut(out, "attention peak: ")
		if _, err := fmt.Sscanf(after, "pool %d rss %d", &p.pool, &p.rss); !ok || err != nil {
			t.Fatalf("%s L=%d: no peak in the child's output (%v):\n%s", path, l, err, out)
		}
		return p
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	for _, mask := range []string{"none", "causal", "padding", "dropout"} {
		var prev attnPeak
		// Two doublings tell linear from quadratic; 4096 took half the
		// test's 15 s.
		for _, l := range []int{512, 1024, 2048} {
			p := peak("fused", l, mask)
			t.Logf("fused mask=%s L=%d: pool peak %.2f MiB (%.0f bytes per query row), peak RSS +%.1f MiB",
				mask, l, mib(p.pool), float64(p.pool)/float64(attnPeakHeads*l), mib(p.rss))
			if prev.pool > 0 && float64(p.pool) > 2.5*float64(prev.pool) {
				t.Errorf("fused mask=%s L=%d: pool peak %d bytes, more than 2.5× the %d of L=%d: not linear in L",
					mask, l, p.pool, prev.pool, l/2)
			}
			prev = p
		}
	}
	small, large := peak("composite", 512, "none"), peak("composite", 1024, "none")
	for i, p := range []attnPeak{small, large} {
		t.Logf("composite L=%d: pool peak %.2f MiB, peak RSS +%.1f MiB", 512<<i, mib(p.pool), mib(p.rss))
	}
	if float64(large.pool) < 3*float64(small.pool) {
		t.Errorf("composite: pool peak %d bytes at L=1024, under 3× the %d of L=512: the contrast is gone", large.pool, small.pool)
	}
}

// attnPeakChild runs one step as c ("fused|composite,L,none|causal|padding|dropout")
// says and prints its peaks. A padding mask is a key padding mask,
// [1, 1, 1, L] Bool with the last quarter of the keys hidden; dropout is
// AttentionDropout(0.1).
func attnPeakChild(t *testing.T, c string) {
	var path, mask string
	var l int
	if _, err := fmt.Sscanf(strings.ReplaceAll(c, ",", " "), "%s %d %s", &path, &l, &mask); err != nil {
		t.Fatalf("LATHE_ATTN_PEAK=%q: %v", c, err)
	}
	const e = 64
	Seed(1)
	q, k, v := RandN(CPU, Float32, 1, attnPeakHeads, l, e).RequireGrad(), RandN(CPU, Float32, 1, attnPeakHeads, l, e).RequireGrad(),
		RandN(CPU, Float32, 1, attnPeakHeads, l, e).RequireGrad()
	var opts []AttentionOption
	switch mask {
	case "causal":
		opts = append(opts, IsCausal())
	case "padding":
		keep := make([]bool, l)
		for j := range 3 * l / 4 {
			keep[j] = true
		}
		opts = append(opts, AttentionMask(FromSlice(CPU, keep, 1, 1, 1, l)))
	case "dropout":
		opts = append(opts, AttentionDropout(0.1))
	}
	before, err := MemoryStats(CPU)
	if err != nil {
		t.Fatal(err)
	}
	rss := resetPeakRSS()
	attnStep(t, q, k, v, path == "composite", opts...)
	after, err := MemoryStats(CPU)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("attention peak: pool %d rss %d\n", after.PeakAllocated-before.Allocated, peakRSS()-rss)
}

// BenchmarkAttentionSmall times the step of examples/gpt's attention in
// lathe-bench's GPT row (batch 8, 4 heads of 16, 64 positions, causal),
// fused and composite, with q, k and v as the model has them: views of one
// [8, 64, 192] projection, split into heads.
func BenchmarkAttentionSmall(b *testing.B) {
	for _, c := range []struct {
		composite bool
		dropout   float64
	}{{false, 0}, {true, 0}, {false, 0.1}, {true, 0.1}} {
		composite := c.composite
		b.Run(fmt.Sprintf("composite=%v/dropout=%v", composite, c.dropout), func(b *testing.B) {
			Seed(1)
			qkv := RandN(CPU, Float32, 8, 64, 192).RequireGrad()
			heads := func(at int) *Tensor { return qkv.Narrow(2, at, 64).Reshape(8, 64, 4, 16).Transpose(1, 2) }
			for b.Loop() {
				attend := ScaledDotProductAttention
				if composite {
					attend = sdpaComposite
				}
				out := attend(heads(0), heads(64), heads(128), IsCausal(), AttentionDropout(c.dropout))
				gs, err := Grad(out.Sum(), []*Tensor{qkv})
				if err != nil {
					b.Fatal(err)
				}
				gs[0].Release()
				out.Release()
			}
		})
	}
}
