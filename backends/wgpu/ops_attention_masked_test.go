package wgpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/attnref"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The masked fused attention ops on wgpu:0 against a float64 reference
// that holds the Lq×Lk scores, softmax and all. The sizes put Lq and Lk
// on both sides of the kernels' tiles (64 rows per workgroup, 32 of the
// other side's rows at a time) under grouped heads; the masks are read
// through views of every kind the ops allow (transposed, broadcast by
// stride 0 with an offset, made by Expand), and hold -Inf: rows whose
// first tiles are all masked, and a row with no key to attend to.

// attnSizes are the sizes of one call, as ops.AttentionGeometry.
type attnSizes struct{ n, hq, hk, lq, lk, e, ev int }

// maskFunc makes a mask [N, Hq, Lq, Lk] on wgpu:0 and returns with it
// its value at [n, h, i, j], for the reference.
type maskFunc func(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64)

func TestAttentionMasked(t *testing.T) {
	if _, err := dispatch.Open(wgpu0); err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	cases := []struct {
		name string
		s    attnSizes
		mask maskFunc
	}{
		{"grouped/70x40/full_transposed", attnSizes{2, 4, 2, 70, 40, 40, 36}, fullMask},
		{"grouped/3x130/key_padding", attnSizes{2, 4, 2, 3, 130, 8, 12}, keyPadding},
		{"grouped/70x130/late_keys", attnSizes{1, 4, 2, 70, 130, 16, 16}, lateKeys},
		{"grouped/3x130/late_keys", attnSizes{2, 4, 2, 3, 130, 8, 8}, lateKeys},
		{"grouped/70x40/masked_row", attnSizes{2, 4, 2, 70, 40, 16, 8}, maskedRow},
		{"heads/5x7/full_transposed", attnSizes{1, 2, 2, 5, 7, 4, 4}, fullMask},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			q, qv := normalOn(t, rng, []int{s.n, s.hq, s.lq, s.e})
			k, kv := normalOn(t, rng, []int{s.n, s.hk, s.lk, s.e})
			v, vv := normalOn(t, rng, []int{s.n, s.hk, s.lk, s.ev})
			mask, maskAt := c.mask(t, rng, s)
			a := ops.AttentionParams{Scale: 1 / math.Sqrt(float64(s.e))}
			ref := attnref.New(attnref.Sizes{N: s.n, Hq: s.hq, Hk: s.hk, Lq: s.lq, Lk: s.lk, E: s.e, Ev: s.ev}, a.Scale, qv, kv, vv, maskAt)

			out, err := dispatch.Call(ops.AttentionMasked, a, q, k, v, mask)
			if err != nil {
				t.Fatalf("attention_masked: %v", err)
			}
			res := floats(t, out)
			compareAttn(t, "out", res, ref.Forward())

			// The backward takes the kernel's own forward result, as
			// autodiff gives it, so that it is checked by itself.
			grad, gv := normalOn(t, rng, out.Shape)
			dx, err := dispatch.Call(ops.AttentionMaskedBackward, a, q, k, v, mask, out, grad)
			if err != nil {
				t.Fatalf("attention_masked_backward: %v", err)
			}
			got := floats(t, dx)
			want := ref.Backward(widen(res), gv)
			nq, nk := s.n*s.hq*s.lq*s.e, s.n*s.hk*s.lk*s.e
			if len(got) != len(want) {
				t.Fatalf("backward gives %d elements, want %d", len(got), len(want))
			}
			compareAttn(t, "dq", got[:nq], want[:nq])
			compareAttn(t, "dk", got[nq:nq+nk], want[nq:nq+nk])
			compareAttn(t, "dv", got[nq+nk:], want[nq+nk:])
		})
	}
}

// normalOn uploads a contiguous tensor of normal values to wgpu:0 and
// returns the values too.
func normalOn(t *testing.T, rng *rand.Rand, shape []int) (*dispatch.Tensor, []float64) {
	t.Helper()
	data := make([]float32, dispatch.Numel(shape))
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	return upload(t, wgpu0, data, shape), widen(data)
}

func widen(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

var negInf = float32(math.Inf(-1))

// fullMask is a mask with every score its own, an eighth of them -Inf,
// stored [N, Hq, Lk, Lq] and read transposed.
func fullMask(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64) {
	stored := []int{s.n, s.hq, s.lk, s.lq}
	data := make([]float32, dispatch.Numel(stored))
	for x := range data {
		data[x] = float32(rng.NormFloat64())
		if rng.IntN(8) == 0 {
			data[x] = negInf
		}
	}
	st := dispatch.ContiguousStrides(stored)
	m := upload(t, wgpu0, data, stored).View([]int{s.n, s.hq, s.lq, s.lk}, []int{st[0], st[1], st[3], st[2]}, 0)
	return m, func(n, h, i, j int) float64 { return float64(data[((n*s.hq+h)*s.lk+j)*s.lq+i]) }
}

// keyPadding is a key padding mask [N, 1, 1, Lk] seen as [N, Hq, Lq, Lk]
// with strides (Lk, 0, 0, 1) from offset 1 of its buffer: batch n may not
// attend to its last 7·(n+1) keys, and the others' scores move a little.
func keyPadding(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64) {
	data := make([]float32, 1+s.n*s.lk)
	data[0] = float32(math.NaN()) // before the view: never read
	for n := range s.n {
		for j := range s.lk {
			x := float32(rng.NormFloat64()) / 4
			if j >= s.lk-7*(n+1) {
				x = negInf
			}
			data[1+n*s.lk+j] = x
		}
	}
	m := upload(t, wgpu0, data, []int{len(data)}).View([]int{s.n, s.hq, s.lq, s.lk}, []int{s.lk, 0, 0, 1}, 1)
	return m, func(n, h, i, j int) float64 { return float64(data[1+n*s.lk+j]) }
}

// lateKeys is a mask [1, 1, Lq, Lk] expanded over N and Hq (strides
// (0, 0, Lk, 1)) under which query row i may not attend to its first
// 40 + i%13 keys: every score of the first tile, and of some of the
// second, is -Inf, and the online softmax must start from later ones.
func lateKeys(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64) {
	data := make([]float32, s.lq*s.lk)
	for i := range s.lq {
		for j := range s.lk {
			data[i*s.lk+j] = float32(rng.NormFloat64())
			if j < 40+i%13 {
				data[i*s.lk+j] = negInf
			}
		}
	}
	small := upload(t, wgpu0, data, []int{1, 1, s.lq, s.lk})
	m, err := dispatch.Call(ops.Expand, ops.ViewShape{Shape: []int{s.n, s.hq, s.lq, s.lk}}, small)
	if err != nil {
		t.Fatalf("expand: %v", err)
	}
	if m.Strides[1] != 0 {
		t.Fatalf("expand gave strides %v, want a view with stride 0 over Hq", m.Strides)
	}
	return m, func(n, h, i, j int) float64 { return float64(data[i*s.lk+j]) }
}

// maskedRow is a contiguous mask whose row [N-1, 1, Lq/2] is all -Inf:
// that row's output is NaN and its logsumexp -Inf, and the backward makes
// NaN of its dQ and of the dK and dV of its key head.
func maskedRow(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64) {
	shape := []int{s.n, s.hq, s.lq, s.lk}
	data := make([]float32, dispatch.Numel(shape))
	for x := range data {
		data[x] = float32(rng.NormFloat64())
	}
	row := (((s.n-1)*s.hq+1)*s.lq + s.lq/2) * s.lk
	for j := range s.lk {
		data[row+j] = negInf
	}
	return upload(t, wgpu0, data, shape), func(n, h, i, j int) float64 { return float64(data[((n*s.hq+h)*s.lq+i)*s.lk+j]) }
}

// compareAttn checks got against want elementwise, within 2e-5 of |want|
// plus the root mean square of want (the sums of the kernels and of the
// reference run in different orders, and an element near 0 is the
// difference of larger terms), with NaN where want is NaN and the same
// infinities.
func compareAttn(t *testing.T, name string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, len(got), len(want))
	}
	sq, finite := 0.0, 0
	for _, w := range want {
		if !math.IsNaN(w) && !math.IsInf(w, 0) {
			sq += w * w
			finite++
		}
	}
	rms := math.Sqrt(sq / float64(max(finite, 1)))
	bad, worst, special := 0, 0.0, 0
	for i, w := range want {
		g := float64(got[i])
		var ok bool
		switch {
		case math.IsNaN(w):
			ok = math.IsNaN(g)
			special++
		case math.IsInf(w, 0):
			ok = g == w
			special++
		default:
			e := math.Abs(g-w) / (math.Abs(w) + rms)
			worst = max(worst, e)
			ok = e <= 2e-5
		}
		if !ok {
			if bad++; bad <= 5 {
				t.Errorf("%s[%d] = %g, want %g", name, i, g, w)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d elements of %d differ", name, bad, len(want))
	}
	t.Logf("%s: worst error %.3g of |want| + rms; %d elements NaN or infinite in want", name, worst, special)
}
