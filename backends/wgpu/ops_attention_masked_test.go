package wgpu_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/attnref"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The fused attention ops on wgpu:0 against a float64 reference that
// holds the Lq×Lk scores, softmax, dropout and all. The sizes put Lq and
// Lk on both sides of the kernels' tiles (64 rows per workgroup, 32 of
// the other side's rows at a time) under grouped heads; the masks are read
// through views of every kind the ops allow (transposed, broadcast by
// stride 0 with an offset, made by Expand), and hold -Inf: rows whose
// first tiles are all masked, and a row with no key to attend to.

// attnSizes are the sizes of one call, as ops.AttentionGeometry.
type attnSizes struct{ n, hq, hk, lq, lk, e, ev int }

// maskFunc makes a mask [N, Hq, Lq, Lk] on wgpu:0 and returns with it
// its value at [n, h, i, j], for the reference.
type maskFunc func(t *testing.T, rng *rand.Rand, s attnSizes) (*dispatch.Tensor, func(n, h, i, j int) float64)

func TestAttentionMasked(t *testing.T) {
	for _, c := range []attnCase{
		{name: "grouped/70x40/full_transposed", s: attnSizes{2, 4, 2, 70, 40, 40, 36}, mask: fullMask},
		{name: "grouped/3x130/key_padding", s: attnSizes{2, 4, 2, 3, 130, 8, 12}, mask: keyPadding},
		{name: "grouped/70x130/late_keys", s: attnSizes{1, 4, 2, 70, 130, 16, 16}, mask: lateKeys},
		{name: "grouped/3x130/late_keys", s: attnSizes{2, 4, 2, 3, 130, 8, 8}, mask: lateKeys},
		{name: "grouped/70x40/masked_row", s: attnSizes{2, 4, 2, 70, 40, 16, 8}, mask: maskedRow},
		{name: "heads/5x7/full_transposed", s: attnSizes{1, 2, 2, 5, 7, 4, 4}, mask: fullMask},
	} {
		c.dt = dispatch.Float32
		c.run(t)
	}
}

// TestAttentionDropout: the dropout of the probabilities in the fused
// ops' kernels, forward and backward, against attnref's, which takes each
// factor from internal/philox by the element's index in the [N, Hq, Lq,
// Lk] probabilities. Lk of 37, 70 and 130 starts most query rows in the
// middle of a Philox block, and 70 and 130 keys span the dK/dV kernel's
// workgroups of 64 keys; the 16-bit floats reach the same kernels widened.
func TestAttentionDropout(t *testing.T) {
	for _, c := range []attnCase{
		{name: "f32/grouped/70x37/p0.3", dt: dispatch.Float32, s: attnSizes{2, 4, 2, 70, 37, 16, 12}, dropout: 0.3},
		{name: "f32/grouped/3x130/p0.9", dt: dispatch.Float32, s: attnSizes{2, 4, 2, 3, 130, 8, 12}, dropout: 0.9},
		{name: "f32/causal/grouped/70x70/p0.3", dt: dispatch.Float32, s: attnSizes{1, 4, 2, 70, 70, 16, 16}, causal: true, dropout: 0.3},
		{name: "f32/masked/grouped/70x130/late_keys/p0.3", dt: dispatch.Float32, s: attnSizes{1, 4, 2, 70, 130, 16, 16}, mask: lateKeys, dropout: 0.3},
		{name: "f32/masked/grouped/70x40/full_transposed/p0.9", dt: dispatch.Float32, s: attnSizes{2, 4, 2, 70, 40, 20, 12}, mask: fullMask, dropout: 0.9},
		{name: "f32/masked/grouped/3x130/key_padding/p0.3", dt: dispatch.Float32, s: attnSizes{2, 4, 2, 3, 130, 8, 12}, mask: keyPadding, dropout: 0.3},
		{name: "f32/masked/grouped/70x37/masked_row/p0.3", dt: dispatch.Float32, s: attnSizes{2, 4, 2, 70, 37, 8, 8}, mask: maskedRow, dropout: 0.3},
		{name: "f16/grouped/70x37/p0.3", dt: dispatch.Float16, s: attnSizes{1, 4, 2, 70, 37, 16, 12}, dropout: 0.3},
		{name: "bf16/causal/grouped/5x7/p0.9", dt: dispatch.BFloat16, s: attnSizes{1, 2, 1, 5, 7, 4, 4}, causal: true, dropout: 0.9},
	} {
		c.run(t)
	}
}

// attnDropKey is the tests' dropout key; its words differ, so that a
// kernel that swaps them fails.
const attnDropKey = 0x9e3779b97f4a7c15

// attnCase is one call of the fused forward and backward on wgpu:0,
// checked against attnref.
type attnCase struct {
	name    string
	dt      dispatch.DType // of q, k, v and the gradient
	s       attnSizes
	mask    maskFunc // the masked ops' mask (float32 only); nil: the unmasked ops
	causal  bool     // the unmasked ops' causal masking
	dropout float64  // P of the probabilities' dropout, under attnDropKey
}

func (c attnCase) run(t *testing.T) {
	t.Run(c.name, func(t *testing.T) {
		if _, err := dispatch.Open(wgpu0); err != nil {
			testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
		}
		s := c.s
		rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
		q, qv := normalOn(t, rng, c.dt, []int{s.n, s.hq, s.lq, s.e})
		k, kv := normalOn(t, rng, c.dt, []int{s.n, s.hk, s.lk, s.e})
		v, vv := normalOn(t, rng, c.dt, []int{s.n, s.hk, s.lk, s.ev})
		a := ops.AttentionParams{Scale: 1 / math.Sqrt(float64(s.e)), Causal: c.causal, Dropout: ops.Mask{P: c.dropout, Key: attnDropKey}}
		fwd, bwd, args := ops.Attention, ops.AttentionBackward, []*dispatch.Tensor{q, k, v}
		var maskAt func(n, h, i, j int) float64
		switch {
		case c.mask != nil:
			var mask *dispatch.Tensor
			mask, maskAt = c.mask(t, rng, s)
			fwd, bwd, args = ops.AttentionMasked, ops.AttentionMaskedBackward, append(args, mask)
		case c.causal:
			maskAt = func(n, h, i, j int) float64 {
				if j > i {
					return math.Inf(-1)
				}
				return 0
			}
		}
		ref := attnref.New(attnref.Sizes{N: s.n, Hq: s.hq, Hk: s.hk, Lq: s.lq, Lk: s.lk, E: s.e, Ev: s.ev}, a.Scale, qv, kv, vv, maskAt)
		ref.DropP, ref.DropKey = c.dropout, attnDropKey
		tol := attnTolerance(c.dt)

		out, err := dispatch.Call(fwd, a, args...)
		if err != nil {
			t.Fatalf("%s: %v", fwd.Name, err)
		}
		res := hostFloats(t, out)
		compareAttn(t, "out", res, ref.Forward(), tol)

		// The backward takes the kernel's own forward result, as
		// autodiff gives it, so that it is checked by itself.
		grad, gv := normalOn(t, rng, out.DType, out.Shape) // float32 for a 16-bit query (ops.AttentionOutDType)
		dx, err := dispatch.Call(bwd, a, append(args, out, grad)...)
		if err != nil {
			t.Fatalf("%s: %v", bwd.Name, err)
		}
		got := hostFloats(t, dx)
		want := ref.Backward(res, gv)
		nq, nk := s.n*s.hq*s.lq*s.e, s.n*s.hk*s.lk*s.e
		if len(got) != len(want) {
			t.Fatalf("backward gives %d elements, want %d", len(got), len(want))
		}
		compareAttn(t, "dq", got[:nq], want[:nq], tol)
		compareAttn(t, "dk", got[nq:nq+nk], want[nq:nq+nk], tol)
		compareAttn(t, "dv", got[nq+nk:], want[nq+nk:], tol)
	})
}

// attnTolerance is compareAttn's bound for results of dtype dt: float32's
// for the kernels' sums, plus the 16-bit floats' one rounding of the
// result (their unit roundoff), which the kernels, computing in float32,
// add.
func attnTolerance(dt dispatch.DType) float64 {
	switch dt {
	case dispatch.Float16:
		return 2e-5 + 0x1p-11
	case dispatch.BFloat16:
		return 2e-5 + 0x1p-8
	}
	return 2e-5
}

// normals draws len(vals) normal values rounded to T by round, and keeps
// in vals each as T holds it (widen).
func normals[T any](rng *rand.Rand, vals []float64, round func(float32) T, widen func(T) float32) []T {
	d := make([]T, len(vals))
	for i := range d {
		d[i] = round(float32(rng.NormFloat64()))
		vals[i] = float64(widen(d[i]))
	}
	return d
}

// normalOn uploads a contiguous tensor of dtype dt (a float) of normal
// values to wgpu:0 and returns the values too, as dt holds them.
func normalOn(t *testing.T, rng *rand.Rand, dt dispatch.DType, shape []int) (*dispatch.Tensor, []float64) {
	t.Helper()
	vals := make([]float64, dispatch.Numel(shape))
	var data any
	switch dt {
	case dispatch.Float32:
		data = normals(rng, vals, func(v float32) float32 { return v }, func(v float32) float32 { return v })
	case dispatch.Float16:
		data = normals(rng, vals, func(v float32) half.Float16 { return half.Float16(half.Float16FromFloat32(v)) }, half.Float16.Float32)
	case dispatch.BFloat16:
		data = normals(rng, vals, func(v float32) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(v)) }, half.BFloat16.Float32)
	default:
		t.Fatalf("normalOn of %s", dt)
	}
	x, err := dispatch.Upload(wgpu0, data, dt, shape)
	if err != nil {
		t.Fatalf("upload to %s: %v", wgpu0, err)
	}
	return x, vals
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

// compareAttn checks got against want elementwise, within tol (2e-5 for
// float32, attnTolerance) of |want| plus the root mean square of want (the
// sums of the kernels and of the reference run in different orders, and
// an element near 0 is the difference of larger terms), with NaN where
// want is NaN and the same infinities.
func compareAttn(t *testing.T, name string, got, want []float64, tol float64) {
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
		g := got[i]
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
			ok = e <= tol
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
