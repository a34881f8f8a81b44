package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Attention has two paths. Where the device has cuBLAS and the dtype is
// float32 or float64 (the narrow dtypes compute in float32), the GEMM path
// (attentionGEMM, attentionGEMMBackward) is PyTorch's composite: the
// scores of a chunk of (batch, key head) pairs by one strided-batched
// GEMM, a rows kernel (kernels/cuda/attention.cu, attention_rows_*) that
// masks them and turns them into probabilities in place, and GEMMs for the
// rest, so that the work is cuBLAS's at its speed. It holds the chunk's
// scores (group·Lq × Lk per pair, twice in the backward) in scratch of at
// most attnScratchCap bytes. Otherwise (no cuBLAS, a pair whose scores
// alone pass the cap, an empty dim) the fused kernels run: the forward in
// one kernel, the backward in three (the rows' D = rowsum(dO∘O) - dlse
// into scratch, then dK and dV per key row, then dQ per query row), each
// thread owning one row, in attnRows-thread blocks, with nothing of size
// Lq × Lk. Both paths read their inputs row-major (copied first where
// they are not), but for the masked ops' mask (ops.AttentionMasked and
// ops.AttentionMaskedBackward, which the same kernels run), which every
// kernel that forms a score reads in place through its strides and adds
// to the scaled scores: a broadcast mask (stride 0 where it repeats) costs
// no copy of size Lq × Lk either. Dropout of the probabilities
// (ops.AttentionParams' Dropout) is made where they are formed, from each
// probability's Philox word (maskArgs), by the kernels' entries with
// dropout (attnEntry): the fused kernels drop them after the row's sum,
// and the GEMM path's rows kernels write P∘M where P·V and Pᵀ·dO take P,
// dS taking P undropped, so the path needs no more scratch.

const attnRows = 64

// The rows kernels' geometry: at most attnRowThreads threads a row, each
// loading attnUnroll elements at a time (ATT_UNROLL in attention.cu).
const attnRowThreads, attnUnroll = 128, 4

// attnScratchCap bounds the GEMM path's score scratch per chunk, in bytes
// (a variable so that the tests can force chunks of one pair).
var attnScratchCap = 1 << 30

func init() {
	kernel(ops.Attention, dispatch.Floats, attentionForward(ops.Attention.Name))
	kernel(ops.AttentionMasked, dispatch.Floats, attentionForward(ops.AttentionMasked.Name))
	kernel(ops.AttentionBackward, dispatch.Floats, attentionBackward(ops.AttentionBackward.Name))
	kernel(ops.AttentionMaskedBackward, dispatch.Floats, attentionBackward(ops.AttentionMaskedBackward.Name))
}

// attentionForward is the kernel of the forward op called name, masked or
// not (splitMask).
func attentionForward(name string) dispatch.Kernel[ops.AttentionParams] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		in, mask := splitMask(in, 3)
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return named(name, err)
		}
		vs, free, err := rowMajorAll(in)
		if err != nil {
			return named(name, err)
		}
		defer free()
		if used, err := attentionGEMM(out, vs, mask, g, a); used || err != nil {
			return named(name, err)
		}
		tiles := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows)
		args := append([]any{addressOf(out), vs[0].ptr, vs[1].ptr, vs[2].ptr}, attnDims(g, a)...)
		return named(name, enqueue(out.Device, "attention", attnEntry("fwd", out.DType, a),
			[3]uint32{blocksFor(tiles, 1), 1, 1}, [3]uint32{attnRows, 1, 1}, 0, append(args, attnMask(mask)...)...))
	}
}

// attentionBackward is the kernel of the backward op called name, masked
// or not (splitMask).
func attentionBackward(name string) dispatch.Kernel[ops.AttentionParams] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		in, mask := splitMask(in, 5)
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil || out.Numel() == 0 {
			return named(name, err)
		}
		vs, free, err := rowMajorAll(in)
		if err != nil {
			return named(name, err)
		}
		defer free()
		dev, sfx, size := out.Device, suffix(out.DType), uint64(out.DType.Size())
		rows := g.N * g.Hq * g.Lq
		d, freeD, err := borrow(dev, max(rows*out.DType.Size(), 1))
		if err != nil {
			return named(name, err)
		}
		defer freeD()
		if rows > 0 {
			if err := enqueue(dev, "attention", "attention_bwd_delta_"+sfx, [3]uint32{blocksFor(rows, attnRows), 1, 1}, [3]uint32{attnRows, 1, 1}, 0,
				d, vs[3].ptr, vs[4].ptr, int64(rows), int64(g.Ev)); err != nil {
				return named(name, err)
			}
		}
		if used, err := attentionGEMMBackward(out, vs, mask, d, g, a); used || err != nil {
			return named(name, err)
		}
		dq := addressOf(out)
		dk := dq + uint64(rows*g.E)*size
		dv := dk + uint64(g.N*g.Hk*g.Lk*g.E)*size
		q, k, v, o, gr := vs[0].ptr, vs[1].ptr, vs[2].ptr, vs[3].ptr, vs[4].ptr
		block := [3]uint32{attnRows, 1, 1}
		if kt := g.N * g.Hk * ((g.Lk + attnRows - 1) / attnRows); kt > 0 {
			args := append(append([]any{dk, dv, q, k, v, o, gr, d}, attnDims(g, a)...), attnMask(mask)...)
			if err := enqueue(dev, "attention", attnEntry("bwd_dkv", out.DType, a), [3]uint32{blocksFor(kt, 1), 1, 1}, block, 0, args...); err != nil {
				return named(name, err)
			}
		}
		if qt := g.N * g.Hq * ((g.Lq + attnRows - 1) / attnRows); qt > 0 && g.E > 0 {
			args := append(append([]any{dq, q, k, v, o, gr}, attnDims(g, a)...), attnMask(mask)...)
			if err := enqueue(dev, "attention", attnEntry("bwd_dq", out.DType, a), [3]uint32{blocksFor(qt, 1), 1, 1}, block, 0, args...); err != nil {
				return named(name, err)
			}
		}
		return nil
	}
}

// splitMask takes a masked op's additive mask out of its inputs (the mask
// follows q, k and v) and returns the rest, the unmasked op's plain
// inputs; the mask is nil where in has only those. The mask is never
// copied row-major as the rest are: the kernels read it through its
// strides (attnMask), so a broadcast one stays the view it is.
func splitMask(in []*dispatch.Tensor, plain int) ([]*dispatch.Tensor, *dispatch.Tensor) {
	if len(in) == plain {
		return in, nil
	}
	return append(in[:3:3], in[4:]...), in[3]
}

// attnMask are the kernels' last parameters (ATT_MASK_PARAMS in
// attention.cu): the mask's address and its strides along n, h, i and j
// in elements, or a null address for the unmasked ops.
func attnMask(mask *dispatch.Tensor) []any {
	if mask == nil {
		return []any{uint64(0), int64(0), int64(0), int64(0), int64(0)}
	}
	s := mask.Strides
	return []any{addressOf(mask), int64(s[0]), int64(s[1]), int64(s[2]), int64(s[3])}
}

// attnDims are the kernels' trailing parameters but the mask's: the
// sizes, the scale, causal masking and the dropout (maskArgs; ATT_DROP_PARAMS
// in attention.cu).
func attnDims(g ops.AttentionGeometry, a ops.AttentionParams) []any {
	causal := int64(0)
	if a.Causal {
		causal = 1
	}
	return append([]any{int64(g.N), int64(g.Hq), int64(g.Hk), int64(g.Lq), int64(g.Lk), int64(g.E), int64(g.Ev), a.Scale, causal},
		maskArgs(a.Dropout)...)
}

// attnEntry is the name of attention kernel kind (fwd, bwd_dkv, bwd_dq,
// rows_fwd, rows_bwd) for dt: its drop_ entry where a drops probabilities.
// The kernels without dropout are entries of their own (ATT_ENTRIES in
// attention.cu), which carry none of its registers or instructions.
func attnEntry(kind string, dt dispatch.DType, a ops.AttentionParams) string {
	if a.Dropout.P > 0 {
		kind += "_drop"
	}
	return "attention_" + kind + "_" + suffix(dt)
}

// rowMajorAll is rowMajor of each tensor, with one function that frees
// every copy.
func rowMajorAll(ts []*dispatch.Tensor) ([]view, func(), error) {
	var frees []func()
	free := func() {
		for _, f := range frees {
			f()
		}
	}
	vs := make([]view, len(ts))
	for i, t := range ts {
		v, f, err := rowMajor(t)
		if err != nil {
			free()
			return nil, nil, err
		}
		vs[i] = v
		frees = append(frees, f)
	}
	return vs, free, nil
}

// attnPlan is the GEMM path's plan of a call: the (batch, key head) pairs,
// each a block of rows = group·Lq query rows (its query heads' rows are
// consecutive in q, in the out and in the gradient), taken chunk at a time.
type attnPlan struct {
	dt          dispatch.DType
	size        int // bytes per element
	pairs, rows int // N·Hk pairs of rows query rows each
	chunk       int // pairs per chunk
	perPair     int // bytes of one pair's scores
	scale       float64
	causal      int64
	drop        []any  // maskArgs' parameters
	rowsFwd     string // the rows kernels' entries (attnEntry)
	rowsBwd     string
	rowsGrid    [3]uint32
	rowsBlock   [3]uint32
}

// planAttention is the GEMM path's plan, ok false where the fused kernels
// run instead: no cuBLAS, a dtype cuBLAS has no product for, an empty dim
// (the fused kernels' zeros and -inf), a size past cuBLAS's int32, or one
// pair whose buffers (bufs of them) alone pass attnScratchCap.
func planAttention(out *dispatch.Tensor, g ops.AttentionGeometry, a ops.AttentionParams, bufs int) (attnPlan, bool) {
	dt := out.DType
	if dt != dispatch.Float32 && dt != dispatch.Float64 || min(g.N, g.Hq, g.Lq, g.Lk, g.E, g.Ev) == 0 {
		return attnPlan{}, false
	}
	p := attnPlan{dt: dt, size: dt.Size(), pairs: g.N * g.Hk, rows: g.Hq / g.Hk * g.Lq, scale: a.Scale, drop: maskArgs(a.Dropout),
		rowsFwd: attnEntry("rows_fwd", dt, a), rowsBwd: attnEntry("rows_bwd", dt, a)}
	if a.Causal {
		p.causal = 1
	}
	p.perPair = p.rows * g.Lk * p.size
	p.chunk = min(p.pairs, attnScratchCap/(bufs*p.perPair))
	if p.chunk == 0 || !fitsInt32(p.rows, g.Lk, g.E, g.Ev+1, p.chunk, p.chunk*p.rows) || !blasOn(out.Device) {
		return attnPlan{}, false
	}
	// A block per row, of enough warps that each thread has attnUnroll
	// elements (the rows kernels' loads in flight), at most
	// attnRowThreads: 32 elements a thread at Lk = 4096, and the rows
	// (group·Lq per pair) fill the SMs many times over.
	threads := min(max((g.Lk/attnUnroll+31)/32*32, 32), attnRowThreads)
	p.rowsGrid = [3]uint32{blocksFor(p.chunk*p.rows, 1), 1, 1}
	p.rowsBlock = [3]uint32{uint32(threads), 1, 1}
	return p, true
}

// mat is a product's operand in row-major terms: element (r, c) of batch
// matrix b is at ptr + (b·stride + r·ld + c) elements, or, trans, the
// matrix is stored transposed (element (r, c) at c·ld + r).
type mat struct {
	ptr    uint64
	ld     int
	stride int
	trans  bool
}

// at is the operand moved by off elements of size bytes.
func (m mat) at(off, size int) mat { m.ptr += uint64(off * size); return m }

// strides are m's batch, row and column strides.
func (m mat) strides() [3]int64 {
	if m.trans {
		return [3]int64{int64(m.stride), 1, int64(m.ld)}
	}
	return [3]int64{int64(m.stride), int64(m.ld), 1}
}

// product runs C = A·B for count m×n matrices C (A m×k, B k×n) on cuBLAS
// (stridedGemm, conv's mapping to the column-major call); planAttention
// has checked that cuBLAS is there and takes the sizes.
func (p attnPlan) product(dev dispatch.Device, m, n, k int, a, b, c mat, count int) error {
	g, ok := stridedGemm(a.ptr, b.ptr, c.ptr, m, n, k, count, cMatmulStrides{a.strides(), b.strides(), c.strides()})
	if !ok {
		return &dispatch.Error{Kind: dispatch.ErrUnsupported, Detail: "a product cuBLAS does not take"}
	}
	used, err := gemm(dev, p.dt, g)
	if err == nil && !used {
		err = errNoBLAS
	}
	return err
}

// attentionGEMM is the forward's GEMM path; used is false where the fused
// kernel must run (planAttention), before anything was queued.
func attentionGEMM(out *dispatch.Tensor, vs []view, mask *dispatch.Tensor, g ops.AttentionGeometry, a ops.AttentionParams) (used bool, err error) {
	p, ok := planAttention(out, g, a, 1)
	if !ok {
		return false, nil
	}
	dev, size, w, rows := out.Device, p.size, g.Ev+1, p.rows
	s, free, err := borrow(dev, p.chunk*p.perPair)
	if err != nil {
		return true, err
	}
	defer free()
	q := mat{vs[0].ptr, g.E, rows * g.E, false}
	kt := mat{vs[1].ptr, g.E, g.Lk * g.E, true} // Kᵀ: k's rows are its columns
	v := mat{vs[2].ptr, g.Ev, g.Lk * g.Ev, false}
	o := mat{addressOf(out), w, rows * w, false}
	sc := mat{s, g.Lk, rows * g.Lk, false}
	maskArgs := attnMask(mask)
	for b0 := 0; b0 < p.pairs; b0 += p.chunk {
		n := min(p.chunk, p.pairs-b0)
		if err := p.product(dev, rows, g.Lk, g.E, q.at(b0*rows*g.E, size), kt.at(b0*g.Lk*g.E, size), sc, n); err != nil {
			return true, err
		}
		lse := o.ptr + uint64((b0*rows*w+g.Ev)*size) // the out's last column
		// b0·rows is the chunk's first query row, from which the rows
		// kernel finds each row's batch and head in the mask.
		// It also numbers each row's dropout from it (row b0·rows + r's
		// key j is element (b0·rows + r)·Lk + j of the probabilities).
		args := append([]any{s, lse, int64(n * rows), int64(g.Lq), int64(g.Lk), int64(w), p.scale, p.causal, int64(g.Hq), int64(b0 * rows)},
			p.drop...)
		if err := enqueue(dev, "attention", p.rowsFwd, p.rowsGrid, p.rowsBlock, 0, append(args, maskArgs...)...); err != nil {
			return true, err
		}
		if err := p.product(dev, rows, g.Ev, g.Lk, sc, v.at(b0*g.Lk*g.Ev, size), o.at(b0*rows*w, size), n); err != nil {
			return true, err
		}
	}
	return true, nil
}

// attentionGEMMBackward is the backward's GEMM path, d being the rows'
// D = rowsum(dO∘O) - dlse; used is false where the fused kernels must run.
// Per chunk: S = Q·Kᵀ and dP = dO·Vᵀ, the rows kernel's P and dS (scale
// folded in) in their place, then dV = Pᵀ·dO, dQ = dS·K and dK = dSᵀ·Q
// (Dao et al. 2022, appendix B.2); with dropout the rows kernel leaves P∘M
// in P's place, for dV = (P∘M)ᵀ·dO, having taken P for dS. A pair's rows
// are all its query heads', so the products over them sum dK and dV over
// the group.
func attentionGEMMBackward(out *dispatch.Tensor, vs []view, mask *dispatch.Tensor, d uint64, g ops.AttentionGeometry, a ops.AttentionParams) (used bool, err error) {
	p, ok := planAttention(out, g, a, 2)
	if !ok {
		return false, nil
	}
	dev, size, w, rows := out.Device, p.size, g.Ev+1, p.rows
	buf, free, err := borrow(dev, 2*p.chunk*p.perPair)
	if err != nil {
		return true, err
	}
	defer free()
	s, dp := buf, buf+uint64(p.chunk*p.perPair)
	q := mat{vs[0].ptr, g.E, rows * g.E, false}
	k := mat{vs[1].ptr, g.E, g.Lk * g.E, false}
	v := mat{vs[2].ptr, g.Ev, g.Lk * g.Ev, false}
	dO := mat{vs[4].ptr, w, rows * w, false}
	dq := mat{addressOf(out), g.E, rows * g.E, false}
	dk := dq.at(g.N*g.Hq*g.Lq*g.E, size)
	dk.stride = g.Lk * g.E
	dv := mat{dk.ptr + uint64(g.N*g.Hk*g.Lk*g.E*size), g.Ev, g.Lk * g.Ev, false}
	sm := mat{s, g.Lk, rows * g.Lk, false}
	dsm := mat{dp, g.Lk, rows * g.Lk, false}
	tr := func(m mat) mat { m.trans = !m.trans; return m }
	maskArgs := attnMask(mask)
	for b0 := 0; b0 < p.pairs; b0 += p.chunk {
		n := min(p.chunk, p.pairs-b0)
		qb, kb, vb := q.at(b0*rows*g.E, size), k.at(b0*g.Lk*g.E, size), v.at(b0*g.Lk*g.Ev, size)
		dOb := dO.at(b0*rows*w, size)
		if err := p.product(dev, rows, g.Lk, g.E, qb, tr(kb), sm, n); err != nil {
			return true, err
		}
		if err := p.product(dev, rows, g.Lk, g.Ev, dOb, tr(vb), dsm, n); err != nil {
			return true, err
		}
		lse := vs[3].ptr + uint64((b0*rows*w+g.Ev)*size)
		args := append([]any{s, dp, lse, d + uint64(b0*rows*size), int64(n * rows), int64(g.Lq), int64(g.Lk), int64(w), p.scale, p.causal,
			int64(g.Hq), int64(b0 * rows)}, p.drop...)
		if err := enqueue(dev, "attention", p.rowsBwd, p.rowsGrid, p.rowsBlock, 0, append(args, maskArgs...)...); err != nil {
			return true, err
		}
		steps := []struct {
			m, n, k int
			a, b, c mat
		}{
			{g.Lk, g.Ev, rows, tr(sm), dOb, dv.at(b0*g.Lk*g.Ev, size)},
			{rows, g.E, g.Lk, dsm, kb, dq.at(b0*rows*g.E, size)},
			{g.Lk, g.E, rows, tr(dsm), qb, dk.at(b0*g.Lk*g.E, size)},
		}
		for _, st := range steps {
			if err := p.product(dev, st.m, st.n, st.k, st.a, st.b, st.c, n); err != nil {
				return true, err
			}
		}
	}
	return true, nil
}
