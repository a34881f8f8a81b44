package lathe

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/attnref"
)

// FuzzAttention draws ScaledDotProductAttention: query, key and value of
// rank 2 to 4 (rarely 1, or each of its own rank) whose batch dims
// broadcast or not, key heads that divide the query heads (grouped-query
// attention) or not, Lq, Lk, E and Ev from 1 to 4 and sometimes 0,
// matching or (rarely) not; a Bool or additive mask of a shape that
// broadcasts to the scores' or not (or enlarges them), often with rows
// that may attend to no key, of the inputs' dtype or another; IsCausal
// (refused with a mask); a dropout and a scale inside and outside their
// ranges (0, negative, NaN and ±Inf too); float32, float64, the 16-bit
// floats and refused dtypes; transposed operands; values mostly small,
// sometimes NaN, infinities and the edges of float32.
//
// The oracle: lathe's rule (ScaledDotProductAttention's documentation:
// torch 2.x's shapes with grouped-query heads, a mask Bool or of q's
// dtype, dropout in [0, 1), a scale finite and positive, where torch 2.x
// also takes 0 and negative ones) gives the refusal's kind, or the
// result's shape and dtype. The values are internal/attnref's
// softmax(q·kᵀ·scale + mask)·v in float64 of the inputs' host values, the
// causal triangle aligned top left (as torch 1.13's math kernel and torch
// 2.x), NaN in a row with no key to attend to, zeros where Lk is 0, and
// with dropout the weights that the key drawn from the stream drops
// (README: the fused kernels drop what Dropout drops; a call draws that
// one key, or none, and a failed one puts it back); within a tolerance
// from the dtype and the scores' size, not compared where float32 can
// overflow. On small float32 and float64 calls with finite values, the
// gradients of the sum in q, k and v must be attnref's backward, summed
// over the broadcast dims. wgpu:0 must give the cpu's values and
// gradients, or, where an infinite value meets a weight of 0, the
// reference's.
func FuzzAttention(f *testing.F) {
	// float32 [2,4,3,2] against [1,2,4,2] (grouped heads, a broadcast batch), Ev 3; gradients.
	f.Add([]byte{0, 1, 1, 1, 1, 1, 1, 1, 2, 1, 3, 1, 1, 1, 2, 2, 1, 1, 4, 1, 1, 0, 0, 5,
		5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 5, 30, 47, 12, 63, 21,
		40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18,
		1, 1, 0, 60, 27, 44, 51, 14, 38, 5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 5, 33, 18, 60, 27,
		44, 51, 14, 38, 5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 0, 1, 1, 1,
		0})
	// float64 rank 3 with a Bool mask [Lq, Lk] whose second row attends to nothing; gradients.
	f.Add([]byte{5, 1, 1, 0, 1, 1, 0, 1, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 5,
		5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 1, 1, 5, 60, 27, 44, 51, 14, 38, 5, 30, 47,
		12, 63, 21, 5, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 2, 1, 0, 3, 3, 1, 5, 1,
		0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 1, 1, 0})
	// float32 rank 3, causal with Lq > Lk, a scale of 2 and dropout 0.5.
	f.Add([]byte{0, 1, 1, 0, 1, 1, 0, 1, 3, 1, 1, 1, 2, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 5,
		5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 5, 30, 47, 12, 63, 21,
		1, 1, 5, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 5, 5, 30, 47, 12, 63, 21, 40, 9,
		0, 0, 0, 1, 2, 0, 1, 1, 1})
	// float32 with an additive mask [1, Hq, 1, Lk] with -Inf; gradients, the mask's too.
	f.Add([]byte{0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 3, 1, 1, 1, 1, 2, 1, 1, 4, 1, 1, 1, 1, 5,
		5, 30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 1, 1, 5, 14, 38, 5, 30, 47,
		12, 63, 21, 40, 9, 55, 2, 33, 18, 60, 27, 5, 44, 51, 14, 38, 5, 30, 47, 12, 63, 21, 40, 9,
		55, 2, 33, 18, 3, 0, 1, 0, 3, 0, 3, 1, 1, 5, 1, 0, 5, 9, 13, 22, 1, 0, 1, 0,
		1, 1, 0})
	// float32 causal with Lq < Lk, q rank 2 against k and v rank 4; gradients.
	f.Add([]byte{0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 3, 1, 2, 1, 0, 2, 0, 0, 0, 1, 4, 1, 1, 1,
		1, 5, 5, 30, 47, 12, 63, 21, 1, 1, 5, 40, 9, 55, 2, 33, 18, 60, 27, 44, 51, 14, 38, 5,
		30, 47, 12, 63, 21, 40, 9, 55, 2, 33, 18, 5, 60, 27, 44, 51, 14, 38, 5, 30, 0, 0, 1, 1,
		0})
	// bfloat16 with NaN and infinities in q, k and v.
	f.Add([]byte{10, 0, 1, 0, 1, 0, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2, 1, 1, 4, 1, 1, 1, 1, 5,
		20, 3, 40, 60, 21, 41, 30, 35, 1, 1, 5, 44, 50, 22, 26, 7, 52, 5, 56, 11, 17, 24, 29, 33,
		0, 1, 1, 1, 1})
	// float16, Lk = 0: zeros.
	f.Add([]byte{8, 1, 1, 0, 1, 0, 0, 1, 2, 0, 1, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 1, 5, 5,
		30, 47, 12, 63, 21, 1, 1, 5, 5, 0, 1, 1, 1, 1})
	// refused: a scale of NaN; a mask [3, Lk] that does not broadcast over Lq 2.
	f.Add([]byte{0, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 4, 1, 1, 1, 1, 5,
		5, 30, 47, 12, 1, 1, 5, 63, 21, 40, 9, 5, 55, 2, 33, 18, 2, 0, 1, 2, 3, 3, 1, 5,
		1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0, 7, 1})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		c := fzDrawAttention(&fzReader{b: data})
		fzCheckAttention(t, c)
	})
}

// fzAttnDTypes are the dtypes FuzzAttention draws q from: the float ones
// most of the time, and some that attention refuses.
var fzAttnDTypes = []DType{Float32, Float32, Float32, Float32, Float32, Float64, Float64, Float64, Float16, Float16, BFloat16, BFloat16,
	Int32, Int64, Bool, Uint8}

// fzAttnScales and fzAttnDropouts are the scales and dropouts drawn, in
// and out of range.
var (
	fzAttnScales   = []float64{0.5, 2, 0.125, 1e-3, 10, 0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 1e-300, 1e300}
	fzAttnDropouts = []float64{0, 0.25, 0.5, 0.9, -0.1, 1, 1.5, math.NaN(), math.Inf(1), math.Inf(-1)}
)

// fzAttnCall is one drawn call.
type fzAttnCall struct {
	dt                DType // query's
	q, k, v, mask     *Tensor
	causal            bool
	hasDrop, hasScale bool
	dropout, scale    float64
	hostile           bool // values with NaN, infinities and large ones
	grad              bool // check the gradients too
	label             string
	maskDType         DType
	qShape, kShape    []int
	vShape, maskShape []int
}

// opts are the call's options, with mask m (nil: none).
func (c *fzAttnCall) opts(m *Tensor) []AttentionOption {
	var o []AttentionOption
	if m != nil {
		o = append(o, AttentionMask(m))
	}
	if c.causal {
		o = append(o, IsCausal())
	}
	if c.hasDrop {
		o = append(o, AttentionDropout(c.dropout))
	}
	if c.hasScale {
		o = append(o, AttentionScale(c.scale))
	}
	return o
}

func fzDrawAttention(r *fzReader) *fzAttnCall {
	c := &fzAttnCall{dt: fzAttnDTypes[r.intn(len(fzAttnDTypes))]}
	c.hostile = r.intn(4) == 0
	// Sizes from 1 to n, and one time in sixteen 0.
	size := func(n int) int {
		if r.intn(16) == 0 {
			return 0
		}
		return 1 + r.intn(n)
	}
	batch, hk, group := size(2), size(2), 1+r.intn(2)
	lq, lk, e, ev := size(4), size(4), size(4), size(4)
	rank := 2 + r.intn(3)
	ranks := [3]int{rank, rank, rank}
	if r.intn(5) == 0 {
		ranks[r.intn(3)] = 2 + r.intn(3) // one of its own rank, its missing dims 1
	}
	if r.intn(24) == 0 {
		ranks[r.intn(3)] = 1 // too few dims
	}
	hq, ke, vl, vh := hk*group, e, lk, hk
	// Now and then one size that does not fit.
	switch r.intn(16) {
	case 0:
		hq = r.intn(5)
	case 1:
		ke = r.intn(5)
	case 2:
		vl = r.intn(5)
	case 3:
		vh = r.intn(4)
	}
	side := func(rank, b, h, l, d int) []int {
		s := []int{b, h, l, d}
		if r.intn(3) == 0 {
			s[0] = 1 // a batch dim that broadcasts
		}
		return s[4-rank:]
	}
	kb := batch
	if r.intn(16) == 0 {
		kb = r.intn(4) // batch dims that may not broadcast
	}
	c.qShape = side(ranks[0], batch, hq, lq, e)
	c.kShape = side(ranks[1], kb, hk, lk, ke)
	c.vShape = side(ranks[2], batch, vh, vl, ev)
	tame := func() float64 { return float64(int(r.byte())%17-8) / 4 }
	value := tame
	if c.hostile {
		value = r.value
	}
	c.q = fzAttnTensor(r, c.dt, c.qShape, value)
	kdt, vdt := c.dt, c.dt
	if r.intn(16) == 0 {
		kdt = fzAttnDTypes[r.intn(len(fzAttnDTypes))]
	}
	if r.intn(16) == 0 {
		vdt = fzAttnDTypes[r.intn(len(fzAttnDTypes))]
	}
	c.k = fzAttnTensor(r, kdt, c.kShape, value)
	c.v = fzAttnTensor(r, vdt, c.vShape, value)

	switch r.intn(4) {
	case 2: // Bool: true (may attend) three times in four
		scores := []int{batch, hq, lq, lk}[4-rank:]
		c.maskShape = fzBroadcastPartner(r, scores)
		c.maskDType = Bool
		c.mask = fzAttnTensor(r, Bool, c.maskShape, func() float64 { return float64(min(r.byte()%4, 1)) })
	case 3: // additive: -Inf one time in four
		scores := []int{batch, hq, lq, lk}[4-rank:]
		c.maskShape = fzBroadcastPartner(r, scores)
		c.maskDType = c.dt
		if r.intn(10) == 0 {
			c.maskDType = []DType{Float32, Float64, Float16, Int32}[r.intn(4)]
		}
		mv := func() float64 {
			b := r.byte()
			if b%4 == 0 {
				return math.Inf(-1)
			}
			return float64(int(b/4)%9-4) / 2
		}
		if c.hostile {
			mv = r.value
		}
		c.mask = fzAttnTensor(r, c.maskDType, c.maskShape, mv)
	}
	c.causal = r.intn(4) == 0
	if c.mask != nil && r.intn(3) != 0 {
		c.causal = false // with a mask it is refused: now and then
	}
	// The first few of each list are in range; the rest one time in
	// four.
	pick := func(xs []float64, good int) float64 {
		if r.intn(4) == 0 {
			return xs[r.intn(len(xs))]
		}
		return xs[r.intn(good)]
	}
	if c.hasDrop = r.intn(4) == 0; c.hasDrop {
		c.dropout = pick(fzAttnDropouts, 4)
	}
	if c.hasScale = r.intn(4) == 0; c.hasScale {
		c.scale = pick(fzAttnScales, 5)
	}
	c.grad = r.intn(3) == 0

	c.label = "sdpa/" + c.dt.String() + dispatch.FormatShape(c.qShape) + dispatch.FormatShape(c.kShape) + dispatch.FormatShape(c.vShape)
	if kdt != c.dt || vdt != c.dt {
		c.label += "/k:" + kdt.String() + ",v:" + vdt.String()
	}
	if c.mask != nil {
		c.label += "/mask:" + c.maskDType.String() + dispatch.FormatShape(c.maskShape)
	}
	if c.causal {
		c.label += "/causal"
	}
	if c.hasDrop {
		c.label += "/dropout=" + strconv.FormatFloat(c.dropout, 'g', -1, 64)
	}
	if c.hasScale {
		c.label += "/scale=" + strconv.FormatFloat(c.scale, 'g', -1, 64)
	}
	if c.hostile {
		c.label += "/hostile"
	}
	return c
}

// fzAttnTensor is a cpu tensor of dt and shape holding value()'s values,
// one time in six a transpose of its last two dims, one in six of its
// first two, so that kernels read through strides.
func fzAttnTensor(r *fzReader, dt DType, shape []int, value func() float64) *Tensor {
	s, swap := slices.Clone(shape), -1
	switch r.intn(6) {
	case 0:
		swap = len(s) - 2
	case 1:
		swap = min(0, len(s)-2)
	}
	if swap >= 0 {
		s[swap], s[swap+1] = s[swap+1], s[swap]
	}
	vals := make([]float64, dispatch.Numel(s))
	for i := range vals {
		vals[i] = value()
	}
	x := fzTensor(vals, dt, s)
	if swap >= 0 {
		x = x.Transpose(swap, swap+1)
	}
	return x
}

// fzAttnGeom is the call's geometry by the rule: every shape padded with
// leading 1s to the largest rank r, dim -3 the heads where r ≥ 3, the dims
// before them the batch.
type fzAttnGeom struct {
	r                  int
	q, k, v, mask      []int // padded
	batch              []int // broadcast
	hq, hk, lq, lk, e  int
	ev                 int
	scores, out, canon []int // canon: batch, hq, lq, lk
}

// fzAttnRule is ScaledDotProductAttention's rule written again: the
// geometry, or the kind of refusal (errAny where the call has faults of
// two kinds, which lathe may find in either order).
func fzAttnRule(c *fzAttnCall) (fzAttnGeom, error) {
	var refuse error
	fault := func(kind error) {
		if refuse != nil && refuse != kind {
			refuse = errAny
		} else {
			refuse = kind
		}
	}
	for _, x := range []*Tensor{c.q, c.k, c.v} {
		if !x.DType().IsFloat() || x.DType() != c.dt {
			fault(ErrDType)
		}
	}
	if c.mask != nil {
		if c.maskDType != Bool && c.maskDType != c.dt {
			fault(ErrDType)
		}
		if c.causal {
			fault(ErrValue)
		}
	}
	if c.hasDrop && !(c.dropout >= 0 && c.dropout < 1) {
		fault(ErrValue)
	}
	if c.hasScale && !(c.scale > 0 && !math.IsInf(c.scale, 1)) {
		fault(ErrValue)
	}
	var g fzAttnGeom
	if len(c.qShape) < 2 || len(c.kShape) < 2 || len(c.vShape) < 2 {
		fault(ErrShape)
		return g, refuse
	}
	g.r = max(len(c.qShape), len(c.kShape), len(c.vShape))
	g.q, g.k, g.v = padShape(c.qShape, g.r), padShape(c.kShape, g.r), padShape(c.vShape, g.r)
	r := g.r
	g.hq, g.hk, g.lq, g.lk, g.e, g.ev = 1, 1, g.q[r-2], g.k[r-2], g.q[r-1], g.v[r-1]
	ok := g.k[r-1] == g.e && g.v[r-2] == g.lk
	nb := r - 2
	if r >= 3 {
		nb = r - 3
		g.hq, g.hk = g.q[r-3], g.k[r-3]
		ok = ok && g.v[r-3] == g.hk
		ok = ok && (g.hk == 0 && g.hq == 0 || g.hk > 0 && g.hq%g.hk == 0)
	}
	b, bok := fzBroadcast(g.q[:nb], g.k[:nb])
	if bok {
		b, bok = fzBroadcast(b, g.v[:nb])
	}
	if !ok || !bok {
		fault(ErrShape)
		return g, refuse
	}
	g.batch = b
	g.canon = append(slices.Clone(b), g.hq, g.lq, g.lk)
	g.scores = g.canon
	if r == 2 {
		g.scores = []int{g.lq, g.lk}
	}
	if c.mask != nil {
		if m, ok := fzBroadcast(c.maskShape, g.scores); !ok || !slices.Equal(m, g.scores) {
			fault(ErrShape) // a mask may not enlarge the scores
		}
		g.mask = padShape(c.maskShape, len(g.canon))
	}
	g.out = append(slices.Clone(g.scores[:len(g.scores)-1]), g.ev)
	return g, refuse
}

// fzAt is the offset of index idx of a broadcast result in a row-major
// tensor of shape (aligned at the right; its size-1 dims broadcast).
func fzAt(idx, shape []int) int {
	o := 0
	for i, s := range shape {
		d := idx[len(idx)-len(shape)+i]
		if s == 1 {
			d = 0
		}
		o = o*s + d
	}
	return o
}

// fzAttnCanon is the host values xs of an input of padded shape brought to
// [batch..., h, l, d], row-major: attnref's canonical [N, H, L, D].
func fzAttnCanon(xs []float64, padded, batch []int, h, l, d int) []float64 {
	full := append(slices.Clone(batch), h, l, d)
	out := make([]float64, dispatch.Numel(full))
	idx := make([]int, len(full))
	for i := range out {
		out[i] = xs[fzAt(idx, padded)]
		fzNext(idx, full)
	}
	return out
}

// fzAttnUncanon is the gradient of an input of padded shape from its
// canonical one: summed over the dims the input was broadcast along.
func fzAttnUncanon(g []float64, padded, batch []int, h, l, d int) []float64 {
	full := append(slices.Clone(batch), h, l, d)
	out := make([]float64, dispatch.Numel(padded))
	idx := make([]int, len(full))
	for i := range g {
		out[fzAt(idx, padded)] += g[i]
		fzNext(idx, full)
	}
	return out
}

// fzNext steps idx through shape in row-major order.
func fzNext(idx, shape []int) {
	for d := len(idx) - 1; d >= 0; d-- {
		if idx[d]++; idx[d] < shape[d] {
			return
		}
		idx[d] = 0
	}
}

// fzAttnRef is the reference of an accepted call: attnref's inputs, with
// the mask (causal or given) made additive, and the dropout under key;
// and that mask, of canonical indices (nil: none).
func fzAttnRef(t *testing.T, c *fzAttnCall, g fzAttnGeom, key uint64) (*attnref.Ref, func(n, h, i, j int) float64) {
	host := func(x *Tensor) []float64 {
		v, err := fzHost(x)
		if err != nil {
			t.Fatalf("%s: reading an input: %v", c.label, err)
		}
		return v
	}
	q := fzAttnCanon(host(c.q), g.q, g.batch, g.hq, g.lq, g.e)
	k := fzAttnCanon(host(c.k), g.k, g.batch, g.hk, g.lk, g.e)
	v := fzAttnCanon(host(c.v), g.v, g.batch, g.hk, g.lk, g.ev)
	scale := 1.0 // E = 0: every score is 0, whatever the scale
	if g.e > 0 {
		scale = 1 / math.Sqrt(float64(g.e))
	}
	if c.hasScale {
		scale = c.scale
	}
	var mask func(n, h, i, j int) float64
	switch {
	case c.causal:
		mask = func(_, _, i, j int) float64 {
			if j > i { // top left: query i attends to keys 0 to i
				return math.Inf(-1)
			}
			return 0
		}
	case c.mask != nil:
		m := host(c.mask)
		nb := len(g.batch)
		idx := make([]int, len(g.canon))
		mask = func(n, h, i, j int) float64 {
			for d := nb - 1; d >= 0; d-- {
				idx[d], n = n%g.batch[d], n/g.batch[d]
			}
			idx[nb], idx[nb+1], idx[nb+2] = h, i, j
			x := m[fzAt(idx, g.mask)]
			if c.maskDType == Bool {
				if x != 0 {
					return 0
				}
				return math.Inf(-1)
			}
			return x
		}
	}
	sizes := attnref.Sizes{N: dispatch.Numel(g.batch), Hq: g.hq, Hk: g.hk, Lq: g.lq, Lk: g.lk, E: g.e, Ev: g.ev}
	ref := attnref.New(sizes, scale, q, k, v, mask)
	if c.hasDrop && c.dropout > 0 {
		ref.DropP, ref.DropKey = c.dropout, key
	}
	return ref, mask
}

// fzAttnOut is the reference's output, [N, Hq, Lq, Ev] row-major: zeros
// where there is no key (Lk = 0), the sum over no key.
func fzAttnOut(ref *attnref.Ref) []float64 {
	out := make([]float64, ref.N*ref.Hq*ref.Lq*ref.Ev)
	if ref.Lk == 0 {
		return out
	}
	w := ref.Ev + 1
	full := ref.Forward()
	for x := range ref.N * ref.Hq * ref.Lq {
		copy(out[x*ref.Ev:], full[x*w:x*w+ref.Ev])
	}
	return out
}

// fzAttnTol is the absolute tolerance of the output's elements, or -1
// where they are not compared. A score rounds in the compute dtype
// (float32 for float32 and the 16-bit floats) by about eps times
// |scale|·Σ|q||k| + |mask| = S, which moves each weight by that much
// relative to it; the sum over Lk keys rounds Lk times; a 16-bit result
// rounds once more. Where the compute dtype can overflow (a scale past
// float32's range, scores, dot products before the scale or sums near
// its largest values, a float16 result past 65504) the devices give Inf
// or NaN where float64 does not, as torch's kernels would, and the
// values are not compared.
func fzAttnTol(c *fzAttnCall, ref *attnref.Ref) float64 {
	epsC, top := 0x1p-23, float64(math.MaxFloat32)
	if c.dt == Float64 {
		epsC, top = 0x1p-52, math.MaxFloat64
	}
	epsO := epsC
	switch c.dt {
	case Float16:
		epsO = 0x1p-11
	case BFloat16:
		epsO = 0x1p-8
	}
	finite := func(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
	absMax := func(xs []float64) float64 {
		m := 0.0
		for _, x := range xs {
			if finite(x) {
				m = max(m, math.Abs(x))
			}
		}
		return m
	}
	scale := ref.Scale
	qm, km, v := absMax(ref.Q), absMax(ref.K), absMax(ref.V)
	maskMax := 0.0
	if c.mask != nil && c.maskDType != Bool {
		m, _ := fzHost(c.mask)
		maskMax = absMax(m)
	}
	s := scale*qm*km*float64(ref.E) + maskMax
	if c.hasDrop && c.dropout > 0 {
		v /= 1 - c.dropout
	}
	// The dot products may be summed before or after the scale.
	dot := max(scale, 1) * qm * km * float64(ref.E+1)
	if scale > top || dot > top/16 || s > top/16 || v*float64(ref.Lk+1) > top/16 || c.dt == Float16 && v > 60000 {
		return -1
	}
	return 16*epsC*(2+s+float64(ref.Lk))*(1+v) + 2*epsO*(1+v)
}

// fzAttnMatch checks got against want within the absolute tolerance tol:
// NaN matches NaN, an infinity itself; where loose, NaN matches anything
// and an infinity NaN too.
func fzAttnMatch(t *testing.T, label string, got, want []float64, tol float64, loose bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, the reference %d", label, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		switch {
		case loose && (math.IsNaN(w) || math.IsInf(w, 0) && math.IsNaN(g)):
		case math.IsNaN(w) || math.IsNaN(g):
			if math.IsNaN(w) != math.IsNaN(g) {
				t.Fatalf("%s: element %d is %v, the float64 reference %v", label, i, g, w)
			}
		case math.IsInf(w, 0) || math.IsInf(g, 0):
			if g != w {
				t.Fatalf("%s: element %d is %v, the float64 reference %v", label, i, g, w)
			}
		case math.Abs(g-w) > tol:
			t.Fatalf("%s: element %d is %v, the float64 reference %v (tolerance %g)", label, i, g, w, tol)
		}
	}
}

// fzEmptyWeights reports whether the weights of a call whose output has
// shape out ([batch..., Lq, Ev]) and key shape k ([..., Lk, E]) have no
// elements: no batch, no queries or no keys.
func fzEmptyWeights(out, k []int) bool {
	return dispatch.Numel(out[:len(out)-1]) == 0 || k[len(k)-2] == 0
}

// fzCheckAttention runs the call on the cpu and wgpu:0 and holds it to
// the rule and the reference.
func fzCheckAttention(t *testing.T, c *fzAttnCall) {
	g, refuse := fzAttnRule(c)
	saved := rngState()
	key := nextKey() // the dropout key the call draws
	call := func(in []*Tensor) *Tensor {
		setRNGState(saved) // every device's call draws that key
		out := ScaledDotProductAttention(in[0], in[1], in[2], c.opts(in[3])...)
		// It draws one key where it drops weights that have elements,
		// none otherwise (torch's dropout of an empty tensor draws
		// nothing), and a call that fails puts back what it drew.
		after := saved
		if out.err == nil && c.hasDrop && c.dropout > 0 && !fzEmptyWeights(out.t.Shape, c.kShape) {
			after.Uint64()
		}
		if rngState() != after {
			t.Fatalf("%s: the random stream moved by other than one dropout key (error %v)", c.label, out.err)
		}
		return out
	}
	var ref *attnref.Ref
	var mask func(n, h, i, j int) float64
	tol, loose := -1.0, false
	if refuse == nil {
		ref, mask = fzAttnRef(t, c, g, key)
		tol = fzAttnTol(c, ref)
		// torch's math kernel adds the causal mask to the scores, so that
		// a +Inf or NaN score of a key a query may not attend to makes its
		// row NaN, and multiplies a weight of 0 (masked, or past exp's
		// range) by the key's value, so that an infinite or NaN value
		// there makes NaN too; its fused kernels, and lathe's, never read
		// a key past the causal diagonal, nor those of blocks they skip,
		// and a device may flush a subnormal weight to 0. The reference is
		// the math kernel's; where it gives NaN, either is taken, and
		// where it gives an infinity, NaN too; each device is held to it.
		loose = !fzAttnFinite(ref.V) || c.causal && (!fzAttnFinite(ref.Q) || !fzAttnFinite(ref.K))
	}
	devTol := tol
	if loose {
		devTol = -1 // compared with the reference, not with the cpu
	}
	out := fzDiff(t, c.label, devTol, call, c.q, c.k, c.v, c.mask)
	fzWant(t, c.label, out, refuse, g.out, c.dt)
	if refuse != nil || out.Err() != nil || tol < 0 {
		return
	}
	want := fzAttnOut(ref)
	got, err := fzHost(out)
	if err != nil {
		t.Fatalf("%s: reading the result: %v", c.label, err)
	}
	fzAttnMatch(t, c.label, got, want, tol, loose)
	if gpu := fzGPU(); loose && gpu != nil {
		if in, ok := fzOnDevice(*gpu, c.q, c.k, c.v, c.mask); ok {
			label := c.label + " on " + gpu.String()
			dev := call(in)
			if err := dev.Err(); err != nil {
				if errors.Is(err, ErrUnsupported) {
					return
				}
				t.Fatalf("%s: %v, where the cpu gives a result", label, err)
			}
			got, err := fzHost(dev)
			if err != nil {
				t.Fatalf("%s: reading the result: %v", label, err)
			}
			fzAttnMatch(t, label, got, want, tol, loose)
		}
	}
	if c.grad && (c.dt == Float32 || c.dt == Float64) && !c.hostile {
		fzAttnGrads(t, c, g, ref, mask, call, tol)
	}
}

// fzAttnGrads checks the gradients of the result's sum in q, k and v
// (and an additive mask, without dropout) on the cpu against attnref's
// backward (the gradient of the output 1, of the logsumexp 0), summed
// over the dims each input was broadcast along, and wgpu:0's against the
// cpu's. A gradient's rounding is the forward's (whose tolerance has room
// for it: the worst of 2,000 random calls used a quarter of it), scaled by
// scale·|q| or scale·|k| through the scores.
func fzAttnGrads(t *testing.T, c *fzAttnCall, g fzAttnGeom, ref *attnref.Ref, mask func(n, h, i, j int) float64,
	call func([]*Tensor) *Tensor, tol float64) {
	withMask := c.mask != nil && c.maskDType != Bool && !(c.hasDrop && c.dropout > 0)
	names := []string{"query", "key", "value"}
	if withMask {
		names = append(names, "attn_mask")
	}
	grads := func(in []*Tensor) ([]*Tensor, error) {
		xs := []*Tensor{in[0].Detach().RequireGrad(), in[1].Detach().RequireGrad(), in[2].Detach().RequireGrad(), in[3]}
		if withMask {
			xs[3] = in[3].Detach().RequireGrad()
		}
		return Grad(call(xs).Sum(), xs[:len(names)])
	}
	cpu, err := grads([]*Tensor{c.q, c.k, c.v, c.mask})
	if err != nil {
		t.Fatalf("%s: gradients: %v", c.label, err)
	}
	rows := ref.N * ref.Hq * ref.Lq
	w := ref.Ev + 1
	grad := make([]float64, rows*w)
	for x := range rows {
		for e := range ref.Ev {
			grad[x*w+e] = 1
		}
	}
	fwd := ref.Forward()
	all := ref.Backward(fwd, grad)
	nq, nk := rows*ref.E, ref.N*ref.Hk*ref.Lk*ref.E
	want := [][]float64{
		fzAttnUncanon(all[:nq], g.q, g.batch, g.hq, g.lq, g.e),
		fzAttnUncanon(all[nq:nq+nk], g.k, g.batch, g.hk, g.lk, g.e),
		fzAttnUncanon(all[nq+nk:], g.v, g.batch, g.hk, g.lk, g.ev),
	}
	if withMask {
		want = append(want, fzAttnMaskGrad(ref, g, mask, fwd))
	}
	qm, km := 0.0, 0.0
	for _, x := range ref.Q {
		qm = max(qm, math.Abs(x))
	}
	for _, x := range ref.K {
		km = max(km, math.Abs(x))
	}
	tolG := 4 * tol * (1 + ref.Scale*max(qm, km))
	for i, name := range names {
		got, err := fzHost(cpu[i])
		if err != nil {
			t.Fatalf("%s: reading the gradient of %s: %v", c.label, name, err)
		}
		fzAttnMatch(t, c.label+"/grad "+name, got, want[i], tolG, false)
	}
	if gpu := fzGPU(); gpu != nil {
		if in, ok := fzOnDevice(*gpu, c.q, c.k, c.v, c.mask); ok {
			dev, err := grads(in)
			if err != nil {
				if errors.Is(err, ErrUnsupported) {
					fzKind(t, c.label+"/grad on "+gpu.String(), err)
					return
				}
				t.Fatalf("%s: gradients on %s: %v, where the cpu gives them", c.label, gpu, err)
			}
			for i, name := range names {
				fzSame(t, c.label+"/grad "+name+" on "+gpu.String(), cpu[i], dev[i], tolG)
			}
		}
	}
}

// fzAttnMaskGrad is the gradient of the output's sum in an additive mask
// (no dropout): the scores' dS = P∘(dP - D), P = exp(s - lse) from the
// reference's logsumexp fwd, dP the row sums of v, D the row sums of the
// output (attnref.Backward's terms, which it does not return), summed
// over the dims the mask was broadcast along.
func fzAttnMaskGrad(ref *attnref.Ref, g fzAttnGeom, mask func(n, h, i, j int) float64, fwd []float64) []float64 {
	out := make([]float64, dispatch.Numel(g.mask))
	w, nb := ref.Ev+1, len(g.batch)
	idx := make([]int, len(g.canon))
	for x := range ref.N * ref.Hq * ref.Lq {
		n, h, i := x/(ref.Hq*ref.Lq), x/ref.Lq%ref.Hq, x%ref.Lq
		hk := h / (ref.Hq / ref.Hk)
		o := fwd[x*w:][:w]
		d := 0.0
		for e := range ref.Ev {
			d += o[e]
		}
		for j := range ref.Lk {
			key := (n*ref.Hk+hk)*ref.Lk + j
			s := mask(n, h, i, j)
			for e := range ref.E {
				s += ref.Scale * ref.Q[x*ref.E+e] * ref.K[key*ref.E+e]
			}
			dp := 0.0
			for e := range ref.Ev {
				dp += ref.V[key*ref.Ev+e]
			}
			for b, m := nb-1, n; b >= 0; b-- {
				idx[b], m = m%g.batch[b], m/g.batch[b]
			}
			idx[nb], idx[nb+1], idx[nb+2] = h, i, j
			out[fzAt(idx, g.mask)] += math.Exp(s-o[ref.Ev]) * (dp - d)
		}
	}
	return out
}

// fzAttnFinite reports whether every element of xs is finite.
func fzAttnFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
	}
	return true
}
