package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/attnref"
)

// maskedAttentionCases are the masked ops' recorded cases of one float
// dtype: a whole mask over grouped heads, a key padding mask broadcast to
// the scores (strides (Lk, 0, 0, 1)) with dropout p, and Lk = 0.
func maskedAttentionCases(dt dispatch.DType) []kcase {
	var cs []kcase
	for _, c := range []struct {
		n, hq, hk, lq, lk, e, ev int
		strides                  []int // of the mask; nil: contiguous
		p                        float64
	}{
		{1, 4, 2, 70, 40, 5, 3, nil, 0},
		{2, 2, 1, 9, 33, 4, 2, []int{33, 0, 0, 1}, 0.9},
		{1, 2, 2, 3, 0, 4, 2, nil, 0},
	} {
		a := ops.AttentionParams{Scale: 0.6, Dropout: ops.Mask{P: c.p, Key: 0x0123456789abcdef}}
		q, k := tensor(dt, []int{c.n, c.hq, c.lq, c.e}), tensor(dt, []int{c.n, c.hk, c.lk, c.e})
		v, o := tensor(dt, []int{c.n, c.hk, c.lk, c.ev}), tensor(dt, []int{c.n, c.hq, c.lq, c.ev + 1})
		m := tensor(dt, []int{c.n, c.hq, c.lq, c.lk}, c.strides...)
		cs = append(cs, caseOf(ops.AttentionMasked, a, q, k, v, m), caseOf(ops.AttentionMaskedBackward, a, q, k, v, m, o, o))
	}
	return cs
}

// refCase is a case of the ops that testRef compares with attnref: the
// geometry and the mask, a view of shape [n, hq, lq, lk] over storage (at
// element offset off, through strides, any of which may be 0), or, where
// storage is nil, the unmasked ops, causal or not.
type refCase struct {
	name                     string
	n, hq, hk, lq, lk, e, ev int
	causal                   bool
	storage                  []float64
	strides                  []int
	off                      int
}

// at is the mask's element (n, h, i, j).
func (c refCase) at(n, h, i, j int) float64 {
	s := c.strides
	return c.storage[c.off+n*s[0]+h*s[1]+i*s[2]+j*s[3]]
}

// refMask is attnref's additive mask of c: its own, causal masking's -Inf
// past the diagonal, or nil.
func (c refCase) refMask() func(n, h, i, j int) float64 {
	switch {
	case c.storage != nil:
		return c.at
	case c.causal:
		return func(_, _, i, j int) float64 {
			if j > i {
				return math.Inf(-1)
			}
			return 0
		}
	}
	return nil
}

// maskedCases are the masked ops' cases, on masks of every layout: a
// whole one (grouped heads, Lq and Lk past the fused kernels' 64 query
// rows and 32-key tiles) with a row whose first 42 keys are -inf (past a
// tile) and a row whose keys all are; a key padding mask [N, 1, 1, Lk]
// expanded (strides (Lk, 0, 0, 1)) over rows longer than the rows kernel's
// unrolled loads (128 threads × 4), batch 1's first 520 keys -inf; a
// [Lq, Lk] mask of 0 and -inf expanded over the batch and the heads; and
// a transposed view at an offset, Lq and Lk below the tiles, with a dead
// row.
func maskedCases(rng *rand.Rand) []refCase {
	inf := math.Inf(-1)
	random := func(n int, masked float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
			if rng.Float64() < masked {
				v[i] = inf
			}
		}
		return v
	}
	whole := refCase{name: "whole", n: 2, hq: 4, hk: 2, lq: 70, lk: 45, e: 5, ev: 3}
	whole.storage = random(2*4*70*45, 0.15)
	whole.strides = []int{4 * 70 * 45, 70 * 45, 45, 1}
	late, dead := ((0*4+1)*70+3)*45, ((1*4+2)*70+69)*45 // rows (0, 1, 3) and (1, 2, 69)
	for j := range 45 {
		whole.storage[late+j] = rng.NormFloat64() // keys from 42 on only
		if j < 42 {
			whole.storage[late+j] = inf
		}
		whole.storage[dead+j] = inf // no key
	}

	keyPad := refCase{name: "keypad", n: 2, hq: 4, hk: 2, lq: 9, lk: 600, e: 4, ev: 2}
	keyPad.storage = random(2*600, 0)
	for j := range 600 {
		if j >= 550 {
			keyPad.storage[j] = inf
		}
		if j < 520 {
			keyPad.storage[600+j] = inf
		}
	}
	keyPad.strides = []int{600, 0, 0, 1}

	lower := refCase{name: "causal2d", n: 1, hq: 2, hk: 1, lq: 40, lk: 33, e: 3, ev: 4}
	lower.storage = make([]float64, 40*33)
	for i := range 40 {
		for j := i + 1; j < 33; j++ {
			lower.storage[i*33+j] = inf
		}
	}
	lower.strides = []int{0, 0, 33, 1}

	// Stored [1, 2, Lk, Lq] from element 2, read as its transpose.
	tr := refCase{name: "transposed", n: 1, hq: 2, hk: 2, lq: 3, lk: 5, e: 4, ev: 2, off: 2}
	tr.storage = random(2+2*5*3, 0.2)
	tr.strides = []int{2 * 5 * 3, 5 * 3, 1, 3}
	for j := range 5 {
		tr.storage[2+1*15+j*3+2] = inf // (0, 1, 2): no key
	}
	for j := 1; j < 5; j++ {
		tr.storage[2+j*3] = 0.5 // (0, 0, 0) sees keys 1 to 4
	}
	return []refCase{whole, keyPad, lower, tr}
}

// TestAttentionMasked runs the masked ops forward and backward on the
// emulation, on each path: the fused kernels (no cuBLAS), the GEMM path
// (emuGEMM) whole, and the GEMM path in chunks of one (batch, key head)
// pair, whose rows kernels find their rows' heads from the chunk's first
// row. Each is compared with internal/attnref on the inputs as the dtype holds
// them, NaN for NaN (a dead row's output and every gradient it reaches).
func TestAttentionMasked(t *testing.T) {
	emulate(t)
	rng := rand.New(rand.NewPCG(5, 6))
	// The 16-bit floats compute in float32 (dispatch.ViaCompute), their
	// mask widened as the view it is: one case each.
	cases := maskedCases(rng)
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
		for ci, c := range cases {
			if dispatch.Narrow(dt) && ci != 0 {
				continue
			}
			for _, path := range []string{"fused", "gemm", "gemm-chunked"} {
				switch {
				case path == "gemm-chunked" && dt != dispatch.Float32:
					continue // the chunks' row offsets do not depend on the dtype
				case path == "gemm" && dispatch.Narrow(dt):
					// The float32 op on the widened tensors: float32's case
					// of the GEMM path, 5 s each under the emulation.
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s", dt, c.name, path), func(t *testing.T) {
					testRef(t, rng, dt, c, path, refTol[dt], ops.Mask{})
				})
			}
		}
	}
}

// refTol is testRef's tolerance of each dtype, relative to
// max(1, |want|): the float32 kernels' rounding, or the 16-bit result's
// ulps.
var refTol = map[dispatch.DType]float64{dispatch.Float64: 1e-10, dispatch.Float32: 1e-4, dispatch.Float16: 4.0 / 1024, dispatch.BFloat16: 4.0 / 128}

// TestAttentionDropout runs the ops with dropout of the probabilities
// (P 0.3 and 0.9 under a fixed key) forward and backward on each path, as
// TestAttentionMasked does, against attnref's dropout: unmasked causal
// over grouped heads (Lq past a block of the fused kernels, Lk of two key
// blocks, the second partial, and not a multiple of 4, so that rows start
// mid-Philox-block), unmasked over rows longer than the rows kernel's
// threads' first pass of four-key blocks (128 x 4 keys), and the masked
// ops on the whole mask (a dead row, whose NaN the dropped probabilities
// carry too) and the key padding one. The 16-bit floats run the fused
// kernels (their GEMM path is float32's op on the widened tensors).
func TestAttentionDropout(t *testing.T) {
	emulate(t)
	rng := rand.New(rand.NewPCG(7, 8))
	masked := maskedCases(rng)
	cases := []refCase{
		{name: "causal", n: 1, hq: 4, hk: 2, lq: 70, lk: 67, e: 5, ev: 3, causal: true},
		{name: "long", n: 2, hq: 2, hk: 1, lq: 5, lk: 601, e: 3, ev: 2},
		masked[0], masked[1],
	}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
		for _, c := range cases {
			for _, path := range []string{"fused", "gemm", "gemm-chunked"} {
				switch {
				case dispatch.Narrow(dt) && path != "fused":
					continue
				case path == "gemm-chunked" && dt != dispatch.Float32:
					continue
				}
				for _, p := range []float64{0.3, 0.9} {
					t.Run(fmt.Sprintf("%s/%s/%s/p=%g", dt, c.name, path, p), func(t *testing.T) {
						testRef(t, rng, dt, c, path, refTol[dt], ops.Mask{P: p, Key: 0x9e3779b97f4a7c15})
					})
				}
			}
		}
	}
}

// testRef runs c's op (masked or not) forward and backward with dropout
// drop on path (fused, gemm or gemm-chunked) and compares both with
// attnref.
func testRef(t *testing.T, rng *rand.Rand, dt dispatch.DType, c refCase, path string, tol float64, drop ops.Mask) {
	// held is vals as dt holds them.
	held := func(vals []float64) []float64 {
		b := make([]byte, dt.Size())
		out := make([]float64, len(vals))
		for i, v := range vals {
			storeFloat(dt, b, v)
			out[i] = loadFloat(dt, b)
		}
		return out
	}
	normal := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * 0.8
		}
		return held(v)
	}
	if c.storage != nil {
		c.storage = held(c.storage)
	}
	shapes := [][]int{{c.n, c.hq, c.lq, c.e}, {c.n, c.hk, c.lk, c.e}, {c.n, c.hk, c.lk, c.ev}}
	const scale = 0.45
	q, k, v := normal(dispatch.Numel(shapes[0])), normal(dispatch.Numel(shapes[1])), normal(dispatch.Numel(shapes[2]))
	ref := attnref.New(attnref.Sizes{N: c.n, Hq: c.hq, Hk: c.hk, Lq: c.lq, Lk: c.lk, E: c.e, Ev: c.ev}, scale, q, k, v, c.refMask())
	ref.DropP, ref.DropKey = drop.P, drop.Key
	var in []*dispatch.Tensor
	for i, vals := range [][]float64{q, k, v} {
		in = append(in, emuFloats(t, dt, vals, shapes[i]))
	}
	fwd, bwd, plain := ops.AttentionMasked, ops.AttentionMaskedBackward, 4
	if c.storage == nil {
		fwd, bwd, plain = ops.Attention, ops.AttentionBackward, 3
	} else {
		mask := tensor(dt, []int{c.n, c.hq, c.lq, c.lk}, c.strides...)
		mask.Storage, mask.Offset = emuFloats(t, dt, c.storage, []int{len(c.storage)}).Storage, c.off
		in = append(in, mask)
	}

	calls := useEmuGEMM(t, path != "fused")
	old := attnScratchCap
	t.Cleanup(func() { attnScratchCap = old })
	// room sets the cap, chunked, to bufs buffers of one pair's scores.
	room := func(bufs int) {
		if path == "gemm-chunked" {
			attnScratchCap = bufs * c.hq / c.hk * c.lq * c.lk * dispatch.ComputeOf(dt).Size()
		}
	}
	a := ops.AttentionParams{Scale: scale, Causal: c.causal, Dropout: drop}
	room(1)
	want := ref.Forward()
	got := runEmu(t, caseOf(fwd, a, in...), in)
	checkMasked(t, "forward", ops.AttentionOutDType(dt), got, want, tol)

	oShape := []int{c.n, c.hq, c.lq, c.ev + 1}
	o, gr := held(want), normal(len(want))
	odt := ops.AttentionOutDType(dt) // the forward result's and its gradient's
	bin := append(in[:plain:plain], emuFloats(t, odt, o, oShape), emuFloats(t, odt, gr, oShape))
	room(2)
	gotB := runEmu(t, caseOf(bwd, a, bin...), bin)
	checkMasked(t, "backward", dt, gotB, ref.Backward(o, gr), tol)
	if gemm := *calls > 0; gemm != (path != "fused") {
		t.Errorf("%d GEMMs on the %s path", *calls, path)
	}
}

// checkMasked compares the emulation's bytes with the reference: NaN for
// NaN, infinities exactly, the rest within tol of max(1, |want|).
func checkMasked(t *testing.T, label string, dt dispatch.DType, got []byte, want []float64, tol float64) {
	t.Helper()
	bad, nans := 0, 0
	for i, w := range want {
		g := loadFloat(dt, got[i*dt.Size():])
		ok := math.IsNaN(g) == math.IsNaN(w)
		switch {
		case math.IsNaN(w):
			nans++
		case math.IsInf(w, 0):
			ok = g == w
		default:
			ok = ok && math.Abs(g-w) <= tol*max(1, math.Abs(w))
		}
		if !ok {
			if bad < 3 {
				t.Errorf("%s: element %d = %v, want %v", label, i, g, w)
			}
			bad++
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d elements differ", label, bad, len(want))
	}
	t.Logf("%s: %d elements, %d NaN", label, len(want), nans)
}
