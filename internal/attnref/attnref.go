// Package attnref is scaled dot-product attention in float64 from the
// scores whole, with an additive mask: the reference that the backends'
// fused attention kernels (ops.AttentionMasked and its backward, and the
// unmasked ops with a mask of zeros), with and without dropout, are tested
// against. Tensors are flat
// row-major slices of the canonical shapes: q [N, Hq, Lq, E],
// k [N, Hk, Lk, E], v [N, Hk, Lk, Ev], query head h using key head
// h/(Hq/Hk).
package attnref

import (
	"math"

	"github.com/lathe-ml/lathe/internal/philox"
)

// Sizes is the geometry of a call.
type Sizes struct{ N, Hq, Hk, Lq, Lk, E, Ev int }

// Ref is one call's inputs and their scores.
type Ref struct {
	Sizes
	Scale   float64
	Q, K, V []float64
	// DropP and DropKey are the dropout of the probabilities (DropP = 0:
	// none), ops.AttentionParams' Dropout: probability (n, h, i, j) is
	// kept, times 1/(1-DropP), where Philox's word of element
	// ((n·Hq + h)·Lq + i)·Lk + j under DropKey is at least
	// ⌈DropP·2³²⌉, as ops.Mask's Threshold.
	DropP   float64
	DropKey uint64
	scores  [][]float64 // a row per (n, h, i), in order
}

// factor is the dropout factor of the probability of query row x (in
// order) and key j: 1 without dropout.
func (r *Ref) factor(x, j int) float64 {
	if r.DropP == 0 {
		return 1
	}
	i := uint64(x*r.Lk + j)
	threshold := uint32(min(math.Ceil(r.DropP*(1<<32)), 1<<32-1))
	if philox.Words(r.DropKey, i)[i%4] < threshold {
		return 0
	}
	return 1 / (1 - r.DropP)
}

// New computes the scores s = scale·q·k + mask(n, h, i, j) of every query
// row (n, h, i) and key j; mask is additive (-Inf: not attended), nil for
// none.
func New(s Sizes, scale float64, q, k, v []float64, mask func(n, h, i, j int) float64) *Ref {
	r := &Ref{Sizes: s, Scale: scale, Q: q, K: k, V: v}
	for n := range s.N {
		for h := range s.Hq {
			hk := r.keyHead(h)
			for i := range s.Lq {
				row := make([]float64, s.Lk)
				for j := range s.Lk {
					dot := 0.0
					for e := range s.E {
						dot += q[((n*s.Hq+h)*s.Lq+i)*s.E+e] * k[((n*s.Hk+hk)*s.Lk+j)*s.E+e]
					}
					row[j] = scale * dot
					if mask != nil {
						row[j] += mask(n, h, i, j)
					}
				}
				r.scores = append(r.scores, row)
			}
		}
	}
	return r
}

func (r *Ref) keyHead(h int) int { return h / (r.Hq / r.Hk) }

// Forward is the ops' result [N, Hq, Lq, Ev+1]: each row's output, then
// its logsumexp. A row with every score -Inf has the output NaN (0/0, as
// the softmax gives) and the logsumexp -Inf.
func (r *Ref) Forward() []float64 {
	w := r.Ev + 1
	out := make([]float64, len(r.scores)*w)
	for x, row := range r.scores {
		n, h := x/(r.Hq*r.Lq), x/r.Lq%r.Hq
		hk := r.keyHead(h)
		o := out[x*w:][:w]
		m := math.Inf(-1)
		for _, sc := range row {
			m = max(m, sc)
		}
		if math.IsInf(m, -1) {
			for e := range r.Ev {
				o[e] = math.NaN()
			}
			o[r.Ev] = m
			continue
		}
		sum := 0.0
		for j, sc := range row {
			p := math.Exp(sc - m)
			sum += p
			p *= r.factor(x, j)
			for e := range r.Ev {
				o[e] += p * r.V[((n*r.Hk+hk)*r.Lk+j)*r.Ev+e]
			}
		}
		for e := range r.Ev {
			o[e] /= sum
		}
		o[r.Ev] = m + math.Log(sum)
	}
	return out
}

// Backward is the backward op's flat dq | dk | dv, given the forward's
// result out (as the kernel under test gave it) and its gradient grad
// (FlashAttention-2's backward, Dao 2023): P = exp(s - lse) with no
// special case, so that a row with no key to attend to makes NaN of what
// it reaches; with M the dropout factors, dV = (P∘M)ᵀ·dO,
// dP = (dO·Vᵀ)∘M, D = rowsum(dO∘O) - dlse,
// dS = P∘(dP - D), dQ = scale·dS·K and dK = scale·dSᵀ·Q, dK and dV summed
// over the query heads of a key head.
func (r *Ref) Backward(out, grad []float64) []float64 {
	w := r.Ev + 1
	nq, nk := r.N*r.Hq*r.Lq*r.E, r.N*r.Hk*r.Lk*r.E
	res := make([]float64, nq+nk+r.N*r.Hk*r.Lk*r.Ev)
	dq, dk, dv := res[:nq], res[nq:nq+nk], res[nq+nk:]
	for x, row := range r.scores {
		n, h := x/(r.Hq*r.Lq), x/r.Lq%r.Hq
		hk := r.keyHead(h)
		o, g := out[x*w:][:w], grad[x*w:][:w]
		d := -g[r.Ev]
		for e := range r.Ev {
			d += g[e] * o[e]
		}
		for j, sc := range row {
			key := (n*r.Hk+hk)*r.Lk + j
			p := math.Exp(sc - o[r.Ev])
			f := r.factor(x, j)
			dp := 0.0
			for e := range r.Ev {
				dp += g[e] * r.V[key*r.Ev+e]
				dv[key*r.Ev+e] += p * f * g[e]
			}
			dp *= f
			ds := p * (dp - d)
			for e := range r.E {
				dq[x*r.E+e] += r.Scale * ds * r.K[key*r.E+e]
				dk[key*r.E+e] += r.Scale * ds * r.Q[x*r.E+e]
			}
		}
	}
	return res
}
