package cpu

import (
	"math"
	"runtime"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"gonum.org/v1/gonum/blas"
)

// Fused attention (ops.Attention, ops.AttentionBackward), blocked as
// FlashAttention-2 (Dao 2023, algorithms 1 and 2). The forward takes a
// block of attnBlockQ query rows of one (batch, head) at a time and walks
// the keys in blocks of attnBlockK: the block's scores are one small GEMM,
// an online softmax (the running max m and sum l per row, the accumulated
// output rescaled by exp(m_old - m_new)) turns them into probabilities in
// place, and a second GEMM adds their product with the value block. A
// worker holds attnBlockQ·attnBlockK scores and attnBlockQ·Ev outputs, never
// Lq×Lk. The backward recomputes the probabilities of each block from the
// saved logsumexp, P = exp(scale·q·k - lse), in two passes with no atomics:
// one over key blocks that sums dV = Pᵀ·dO and dK = scale·dSᵀ·Q over every
// query block (and every query head of a grouped key head), and one over
// query blocks that sums dQ = scale·dS·K, where dS = P∘(dP - D), dP = dO·Vᵀ
// and D = rowsum(dO∘O) - dlse (the logsumexp's own gradient, which is P
// per score, enters there). Blocks of (batch·head, block) go to workers
// that take the next one from a shared counter, heaviest first under causal
// masking, so that uneven blocks balance. The masked ops add their mask's
// block to each block of scores as the GEMM leaves it, reading the mask
// through its strides.
//
// Dropout (ops.AttentionParams' Dropout) multiplies each block of
// probabilities by its factors (dropout.go's rows, the index of a
// probability being its element of the [N, Hq, Lq, Lk] probabilities) after
// the online softmax has summed them, before the product with v: the
// logsumexp is the undropped scores'. The backward drops a copy of P,
// P∘M, which gives dV = (P∘M)ᵀ·dO and, beside P, dS = P∘(dP∘M - D) =
// (P∘M)∘dP - P·D with dP = dO·vᵀ: one mask for both.

const (
	attnBlockQ = 64
	attnBlockK = 128
)

func init() {
	forward := func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			attentionForward(out, in, g, a, sgemm)
		} else {
			attentionForward(out, in, g, a, dgemm)
		}
		return nil
	}
	backward := func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.AttentionParams) error {
		g, err := ops.AttentionShapes(in[0], in[1], in[2])
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			attentionBackward(out, in, g, a, sgemm)
		} else {
			attentionBackward(out, in, g, a, dgemm)
		}
		return nil
	}
	registerFor(ops.Attention, dispatch.Floats, forward)
	registerFor(ops.AttentionMasked, dispatch.Floats, forward)
	registerFor(ops.AttentionBackward, dispatch.Floats, backward)
	registerFor(ops.AttentionMaskedBackward, dispatch.Floats, backward)
}

// attnMask is the additive mask of the masked ops, [N, Hq, Lq, Lk], read
// in place through its strides: a mask broadcast over heads, queries or
// the batch is a view with stride 0 there, and is never expanded. Its
// data is nil for the unmasked ops.
type attnMask[T float] struct {
	data           []T // the buffer from the mask's offset
	sn, sh, si, sj int
}

// splitMask takes the mask out of a masked op's inputs (it follows q, k
// and v), leaving the unmasked op's.
func splitMask[T float](in []*dispatch.Tensor, masked bool) (attnMask[T], []*dispatch.Tensor) {
	if !masked {
		return attnMask[T]{}, in
	}
	m := in[3]
	st := m.Strides
	mask := attnMask[T]{data: elems[T](m)[m.Offset:], sn: st[0], sh: st[1], si: st[2], sj: st[3]}
	return mask, append([]*dispatch.Tensor{in[0], in[1], in[2]}, in[4:]...)
}

// add adds the mask's [n, h, i0:i0+bq, j0:j0+bk] to the block of scores
// s (row stride attnBlockK).
func (m attnMask[T]) add(s []T, n, h, i0, bq, j0, bk int) {
	if m.data == nil {
		return
	}
	for r := range bq {
		row := s[r*attnBlockK : r*attnBlockK+bk]
		at := n*m.sn + h*m.sh + (i0+r)*m.si + j0*m.sj
		if m.sj == 1 {
			for c, x := range m.data[at : at+bk] {
				row[c] += x
			}
			continue
		}
		for c := range row {
			row[c] += m.data[at+c*m.sj]
		}
	}
}

// mm is C = alpha·op(A)·op(B) + beta·C for m×n C, with the empty cases
// that a BLAS may refuse (a zero size, a leading dim of 0) handled here.
// An alpha of 0 (a scale below float32's range, rounded) still forms the
// product, as torch's q·scale does, so that NaN and Inf in A and B make
// NaN: a BLAS reads neither when alpha is 0.
func mm[T float](gemm gemmFunc[T], tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if beta == 0 {
			for r := range m {
				clear(c[r*ldc : r*ldc+n])
			}
		}
		return
	}
	if alpha == 0 {
		p := make([]T, m*n)
		gemm(tA, tB, m, n, k, 1, a, lda, b, ldb, 0, p, n)
		for r := range m {
			for j, x := range p[r*n : (r+1)*n] {
				if beta == 0 { // C is not read, as a BLAS's
					c[r*ldc+j] = alpha * x
				} else {
					c[r*ldc+j] = beta*c[r*ldc+j] + alpha*x
				}
			}
		}
		return
	}
	gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// attnWork runs fn on workers that take tasks 0..tasks-1 from next.
func attnWork(tasks, cost int, fn func(next func() (int, bool))) {
	var ctr atomic.Int64
	next := func() (int, bool) {
		t := int(ctr.Add(1) - 1)
		return t, t < tasks
	}
	workers := min(runtime.GOMAXPROCS(0), tasks)
	if workers < 2 || tasks*cost < minParallel {
		fn(next)
		return
	}
	fanOut(workers, func(int) { fn(next) })
}

// probBlock is where a block of probabilities lies: rows of cols at row
// stride ld, row r being the probabilities' elements from first + r·step
// and seeing diag + r + 1 of its keys (0 to cols) under causal masking.
type probBlock struct {
	ld, rows, cols int
	causal         bool
	diag           int
	first, step    uint64
}

// dropBlock writes the dropout factors of a block (bq rows of bk at row
// stride attnBlockK, query rows i0.. of (n, h) and keys j0..) times src's
// elements to dst, which may be src: the keys each row sees (keysOf),
// and, where dst is not src, zeros past them. (Past them src holds zeros
// or values that meet a probability of 0.)
func dropBlock[T float](dst, src []T, g ops.AttentionGeometry, a ops.AttentionParams, n, h, i0, bq, j0, bk int) {
	t, scale := a.Dropout.Threshold(), T(a.Dropout.Scale())
	b := probBlock{ld: attnBlockK, rows: bq, cols: bk, causal: a.Causal, diag: i0 - j0, first: g.DropIndex(n, h, i0, j0), step: uint64(g.Lk)}
	if !dropoutBlockC(dst, src, b, a.Dropout.Key, t, scale) {
		dropBlockRows(dst, src, b, a.Dropout.Key, t, scale)
	}
}

// dropBlockRows is dropBlock's block in Go, row by row.
func dropBlockRows[T float](dst, src []T, b probBlock, key uint64, t uint32, scale T) {
	for r := range b.rows {
		lim := keysOf(b.causal, b.diag+r, 0, b.cols)
		at := r * b.ld
		dropoutRow(dst[at:at+lim], src[at:], 1, b.first+uint64(r)*b.step, key, t, scale)
		if &dst[0] != &src[0] {
			clear(dst[at+lim : at+b.cols])
		}
	}
}

// keysOf is how many keys of a block starting at j0 (of bk) query row i
// may attend to.
func keysOf(causal bool, i, j0, bk int) int {
	if !causal {
		return bk
	}
	return max(0, min(bk, i+1-j0))
}

// attnBlockF32 is a block of float32 scores for the C loops (cgo.go): bq
// rows of bk at row stride ld in s, row r seeing keys up to diag + r + 1
// (diag = first query - first key) where causal, as keysOf says.
type attnBlockF32 struct {
	s          []float32
	ld, bq, bk int
	causal     bool
	diag       int
}

// onlineFloat32 runs a forward block's online softmax in C where T is
// float32 and the machine has AVX2 (b's scores are s), and reports whether
// it did.
func onlineFloat32[T float](s, acc []T, m, l []float64, b attnBlockF32, ev int) bool {
	s32, ok := any(s).([]float32)
	if !ok {
		return false
	}
	b.s = s32
	return attnOnlineFloat32(b, m, l, any(acc).([]float32), ev)
}

// attnBlock is one (batch, head, block) task: task t of nb blocks per
// head, in reverse order when reverse is set: under causal masking a
// head's last query blocks are its heaviest, and go first.
func attnBlock(t, nb int, reverse bool) (nh, b int) {
	nh, b = t/nb, t%nb
	if reverse {
		b = nb - 1 - b
	}
	return nh, b
}

func attentionForward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, g ops.AttentionGeometry, a ops.AttentionParams, gemm gemmFunc[T]) {
	mask, in := splitMask[T](in, len(in) == 4)
	q, rq := dense[T](in[0])
	defer rq()
	k, rk := dense[T](in[1])
	defer rk()
	v, rv := dense[T](in[2])
	defer rv()
	o := span[T](out)
	group := 1
	if g.Hk > 0 {
		group = g.Hq / g.Hk
	}
	w := g.Ev + 1
	nqb := (g.Lq + attnBlockQ - 1) / attnBlockQ
	tasks := g.N * g.Hq * nqb
	if tasks == 0 {
		return
	}
	attnWork(tasks, attnBlockQ*g.Lk*(g.E+g.Ev+8), func(next func() (int, bool)) {
		sp, ap := getScratch[T](attnBlockQ*attnBlockK), getScratch[T](attnBlockQ*g.Ev)
		mp, lp := getScratch[float64](attnBlockQ), getScratch[float64](attnBlockQ)
		defer func() { putScratch(sp); putScratch(ap); putScratch(mp); putScratch(lp) }()
		s, acc, m, l := *sp, *ap, *mp, *lp
		for t, ok := next(); ok; t, ok = next() {
			nh, qb := attnBlock(t, nqb, a.Causal)
			n, h := nh/g.Hq, nh%g.Hq
			hk := h / group
			i0 := qb * attnBlockQ
			bq := min(attnBlockQ, g.Lq-i0)
			qp := q[((n*g.Hq+h)*g.Lq+i0)*g.E:]
			kp := k[(n*g.Hk+hk)*g.Lk*g.E:]
			vp := v[(n*g.Hk+hk)*g.Lk*g.Ev:]
			for r := range bq {
				m[r], l[r] = math.Inf(-1), 0
			}
			clear(acc)
			kEnd := g.Lk
			if a.Causal {
				kEnd = min(g.Lk, i0+bq)
			}
			for j0 := 0; j0 < kEnd; j0 += attnBlockK {
				bk := min(attnBlockK, kEnd-j0)
				mm(gemm, blas.NoTrans, blas.Trans, bq, bk, g.E, T(a.Scale), qp, g.E, kp[j0*g.E:], g.E, 0, s, attnBlockK)
				mask.add(s, n, h, i0, bq, j0, bk)
				if !onlineFloat32(s, acc, m, l, attnBlockF32{nil, attnBlockK, bq, bk, a.Causal, i0 - j0}, g.Ev) {
					for r := range bq {
						row := s[r*attnBlockK : r*attnBlockK+bk]
						lim := keysOf(a.Causal, i0+r, j0, bk)
						mx := m[r]
						for _, x := range row[:lim] {
							if f := float64(x); f > mx {
								mx = f
							}
						}
						corr := 1.0
						if mx != m[r] {
							corr = math.Exp(m[r] - mx) // 0 for the first block a row sees
						}
						sum := expRow(row[:lim], mx) // zeros while every score so far is -Inf: nothing yet to weigh
						clear(row[lim:])
						l[r] = l[r]*corr + sum
						m[r] = mx
						if corr != 1 {
							ar := acc[r*g.Ev : (r+1)*g.Ev]
							for e := range ar {
								ar[e] *= T(corr)
							}
						}
					}
				}
				if a.Dropout.P > 0 {
					dropBlock(s, s, g, a, n, h, i0, bq, j0, bk)
				}
				mm(gemm, blas.NoTrans, blas.NoTrans, bq, g.Ev, bk, 1, s, attnBlockK, vp[j0*g.Ev:], g.Ev, 1, acc, g.Ev)
			}
			op := o[((n*g.Hq+h)*g.Lq+i0)*w:]
			for r := range bq {
				dst := op[r*w : (r+1)*w]
				if g.Lk == 0 {
					// No key: zeros, as softmax over nothing times an
					// empty value gives; the logsumexp is -Inf. (A row
					// whose scores are all -Inf divides 0 by 0: NaN, as
					// the softmax gives.)
					clear(dst[:g.Ev])
					dst[g.Ev] = T(math.Inf(-1))
					continue
				}
				inv := 1 / l[r]
				for e, x := range acc[r*g.Ev : (r+1)*g.Ev] {
					dst[e] = T(float64(x) * inv)
				}
				dst[g.Ev] = T(m[r] + math.Log(l[r]))
			}
		}
	})
}

// expRow replaces each score x of row by e^(x - shift) and returns their
// sum: shift is the row's running max (the forward) or its logsumexp (the
// backward), both values of T, so x - shift ≤ 0 but for rounding; a shift
// of -Inf (every score so far -Inf) gives zeros. float32 rows go to an AVX2
// loop, whose e^x is float32's (shim.c's exp8), where the machine has one.
func expRow[T float](row []T, shift float64) float64 {
	if r, ok := any(row).([]float32); ok {
		if sum, ok := expRowFloat32(r, float32(shift)); ok {
			return sum
		}
	}
	if math.IsInf(shift, -1) {
		clear(row)
		return 0
	}
	sum := 0.0
	for c, x := range row {
		p := math.Exp(float64(x) - shift)
		row[c] = T(p)
		sum += p
	}
	return sum
}

// attnProbs recomputes a block's probabilities P = exp(scale·q·k + mask
// - lse) in s (bq×bk, row stride attnBlockK), 0 where causal masking hides
// a key. Under a mask, a row with no key to attend to (lse = -Inf) gets
// NaN, exp(-Inf - -Inf), as the composite's softmax does: its gradients
// are NaN wherever they reach.
func attnProbs[T float](gemm gemmFunc[T], s, qp, kp, res []T, mask attnMask[T], g ops.AttentionGeometry, a ops.AttentionParams, n, h, i0, bq, j0, bk int) {
	w := g.Ev + 1
	mm(gemm, blas.NoTrans, blas.Trans, bq, bk, g.E, T(a.Scale), qp, g.E, kp[j0*g.E:], g.E, 0, s, attnBlockK)
	mask.add(s, n, h, i0, bq, j0, bk)
	if s32, ok := any(s).([]float32); !ok || !attnProbsFloat32(attnBlockF32{s32, attnBlockK, bq, bk, a.Causal, i0 - j0}, any(res[g.Ev:]).([]float32), w) {
		for r := range bq {
			row := s[r*attnBlockK : r*attnBlockK+bk]
			lim := keysOf(a.Causal, i0+r, j0, bk)
			expRow(row[:lim], float64(res[r*w+g.Ev]))
			clear(row[lim:])
		}
	}
	if mask.data == nil {
		return
	}
	for r := range bq {
		if math.IsInf(float64(res[r*w+g.Ev]), -1) {
			row := s[r*attnBlockK : r*attnBlockK+bk]
			for c := range row {
				row[c] = T(math.NaN())
			}
		}
	}
}

// attnDS turns dP (in dp) into dS = P∘(dP - D) in place; under dropout
// (pm, the dropped P∘M, not nil) into dS = P∘(dP∘M - D), as
// (P∘M)∘dP - P·D, so that the mask is not made again for dP.
func attnDS[T float](dp, p, pm []T, d []float64, bq, bk int) {
	if dp32, ok := any(dp).([]float32); ok {
		pm32, _ := any(pm).([]float32)
		if attnDSFloat32(dp32, any(p).([]float32), pm32, attnBlockK, bq, bk, d) {
			return
		}
	}
	for r := range bq {
		pr, dr := p[r*attnBlockK:r*attnBlockK+bk], dp[r*attnBlockK:r*attnBlockK+bk]
		if pm == nil {
			for c := range dr {
				dr[c] = T(float64(pr[c]) * (float64(dr[c]) - d[r]))
			}
			continue
		}
		mr := pm[r*attnBlockK : r*attnBlockK+bk]
		for c := range dr {
			dr[c] = T(float64(mr[c])*float64(dr[c]) - float64(pr[c])*d[r])
		}
	}
}

func attentionBackward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, g ops.AttentionGeometry, a ops.AttentionParams, gemm gemmFunc[T]) {
	mask, in := splitMask[T](in, len(in) == 6)
	q, rq := dense[T](in[0])
	defer rq()
	k, rk := dense[T](in[1])
	defer rk()
	v, rv := dense[T](in[2])
	defer rv()
	res, rr := dense[T](in[3])
	defer rr()
	gr, rg := dense[T](in[4])
	defer rg()
	dst := span[T](out)
	nq, nk := g.N*g.Hq*g.Lq*g.E, g.N*g.Hk*g.Lk*g.E
	dq, dk, dv := dst[:nq], dst[nq:nq+nk], dst[nq+nk:]
	clear(dst)
	group := 1
	if g.Hk > 0 {
		group = g.Hq / g.Hk
	}
	w := g.Ev + 1
	// D = rowsum(dO∘O) - dlse, one per query row.
	rows := g.N * g.Hq * g.Lq
	dbuf := getScratch[float64](rows)
	defer putScratch(dbuf)
	d := *dbuf
	parallel(rows, w, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o, gi := res[i*w:(i+1)*w], gr[i*w:(i+1)*w]
			s := 0.0
			for e := range g.Ev {
				s += float64(gi[e]) * float64(o[e])
			}
			d[i] = s - float64(gi[g.Ev])
		}
	})
	nqb := (g.Lq + attnBlockQ - 1) / attnBlockQ
	nkb := (g.Lk + attnBlockK - 1) / attnBlockK
	scale := T(a.Scale)
	// A row of dQ sums over every key block of its head. Where one task
	// takes all the key blocks of a head, the key pass also adds dQ =
	// scale·dS·K as it goes, and the query pass, which would recompute P
	// and dS, is not needed (about a third of the backward's work): where
	// the keys are one block (a short sequence), and where there are heads
	// enough for every worker to have two without splitting one.
	heads := g.N * g.Hk
	fuseDQ := nkb == 1 || heads >= 2*runtime.GOMAXPROCS(0)
	perTask := 1 // key blocks
	if fuseDQ && nkb > 1 {
		perTask = nkb
	}
	// Keys: dV and dK of perTask key blocks, over every query block of
	// every query head that uses them.
	attnWork(heads*nkb/perTask, perTask*group*g.Lq*attnBlockK*(2*g.E+2*g.Ev+8), func(next func() (int, bool)) {
		sp, dpp, pmp := getScratch[T](attnBlockQ*attnBlockK), getScratch[T](attnBlockQ*attnBlockK), getScratch[T](attnBlockQ*attnBlockK)
		defer func() { putScratch(sp); putScratch(dpp); putScratch(pmp) }()
		s, dp, pm := *sp, *dpp, *pmp
		for t, ok := next(); ok; t, ok = next() {
			nh, part := attnBlock(t, nkb/perTask, false)
			n, hk := nh/g.Hk, nh%g.Hk
			for kb := part * perTask; kb < (part+1)*perTask; kb++ {
				j0 := kb * attnBlockK
				bk := min(attnBlockK, g.Lk-j0)
				kp := k[(n*g.Hk+hk)*g.Lk*g.E:]
				vp := v[(n*g.Hk+hk)*g.Lk*g.Ev:]
				dkp := dk[((n*g.Hk+hk)*g.Lk+j0)*g.E:]
				dvp := dv[((n*g.Hk+hk)*g.Lk+j0)*g.Ev:]
				for h := hk * group; h < (hk+1)*group; h++ {
					first := 0
					if a.Causal {
						first = j0 / attnBlockQ
					}
					for qb := first; qb < nqb; qb++ {
						i0 := qb * attnBlockQ
						bq := min(attnBlockQ, g.Lq-i0)
						row := (n*g.Hq+h)*g.Lq + i0
						qp, rp, gp := q[row*g.E:], res[row*w:], gr[row*w:]
						attnProbs(gemm, s, qp, kp, rp, mask, g, a, n, h, i0, bq, j0, bk)
						kept, dropped := s, []T(nil)
						if a.Dropout.P > 0 {
							dropBlock(pm, s, g, a, n, h, i0, bq, j0, bk)
							kept, dropped = pm, pm
						}
						mm(gemm, blas.Trans, blas.NoTrans, bk, g.Ev, bq, 1, kept, attnBlockK, gp, w, 1, dvp, g.Ev)
						mm(gemm, blas.NoTrans, blas.Trans, bq, bk, g.Ev, 1, gp, w, vp[j0*g.Ev:], g.Ev, 0, dp, attnBlockK)
						attnDS(dp, s, dropped, d[row:], bq, bk)
						mm(gemm, blas.Trans, blas.NoTrans, bk, g.E, bq, scale, dp, attnBlockK, qp, g.E, 1, dkp, g.E)
						if fuseDQ {
							mm(gemm, blas.NoTrans, blas.NoTrans, bq, g.E, bk, scale, dp, attnBlockK, kp[j0*g.E:], g.E, 1, dq[row*g.E:], g.E)
						}
					}
				}
			}
		}
	})
	if fuseDQ {
		return
	}
	// Queries: dQ of one query block, over the key blocks it sees.
	attnWork(g.N*g.Hq*nqb, attnBlockQ*g.Lk*(2*g.E+g.Ev+8), func(next func() (int, bool)) {
		sp, dpp, pmp := getScratch[T](attnBlockQ*attnBlockK), getScratch[T](attnBlockQ*attnBlockK), getScratch[T](attnBlockQ*attnBlockK)
		defer func() { putScratch(sp); putScratch(dpp); putScratch(pmp) }()
		s, dp, pm := *sp, *dpp, *pmp
		for t, ok := next(); ok; t, ok = next() {
			nh, qb := attnBlock(t, nqb, a.Causal)
			n, h := nh/g.Hq, nh%g.Hq
			hk := h / group
			i0 := qb * attnBlockQ
			bq := min(attnBlockQ, g.Lq-i0)
			row := (n*g.Hq+h)*g.Lq + i0
			qp, rp, gp, dqp := q[row*g.E:], res[row*w:], gr[row*w:], dq[row*g.E:]
			kp := k[(n*g.Hk+hk)*g.Lk*g.E:]
			vp := v[(n*g.Hk+hk)*g.Lk*g.Ev:]
			kEnd := g.Lk
			if a.Causal {
				kEnd = min(g.Lk, i0+bq)
			}
			for j0 := 0; j0 < kEnd; j0 += attnBlockK {
				bk := min(attnBlockK, kEnd-j0)
				attnProbs(gemm, s, qp, kp, rp, mask, g, a, n, h, i0, bq, j0, bk)
				mm(gemm, blas.NoTrans, blas.Trans, bq, bk, g.Ev, 1, gp, w, vp[j0*g.Ev:], g.Ev, 0, dp, attnBlockK)
				var dropped []T
				if a.Dropout.P > 0 {
					dropBlock(pm, s, g, a, n, h, i0, bq, j0, bk)
					dropped = pm
				}
				attnDS(dp, s, dropped, d[row:], bq, bk)
				mm(gemm, blas.NoTrans, blas.NoTrans, bq, g.E, bk, scale, dp, attnBlockK, kp[j0*g.E:], g.E, 1, dqp, g.E)
			}
		}
	})
}
