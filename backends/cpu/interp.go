package cpu

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// Interpolation (upsample_nearest, upsample_linear, upsample_bicubic and
// their backward ops). Every filter is separable: the output is the
// tensor product of one 1-d filter per spatial dim, so the kernel resamples
// one dim at a time (a pass), and the backward op runs the transposed passes
// (scatter-adds) in the reverse order. A 1-d filter is a table of taps
// (layout.Taps, PyTorch's formulas, shared with the other backends): for
// each output index, K input indices and their weights (1 for nearest, 2
// for linear, 4 for cubic), computed once per dim in the tensor's dtype.

func init() {
	for _, u := range ops.Upsamples {
		for op, backward := range map[*dispatch.Op[ops.Interp]]bool{u.Forward: false, u.Backward: true} {
			registerFor(op, dispatch.Floats, floatKernel(
				func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Interp) {
					upsample[float32](out, in[0], a, u.Filter, backward)
				},
				func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.Interp) {
					upsample[float64](out, in[0], a, u.Filter, backward)
				}))
		}
	}
}

// upsample runs the forward op (x is the input) or the backward op (x is
// the output's gradient) into the contiguous out.
func upsample[T float](out, x *dispatch.Tensor, a ops.Interp, filter int, backward bool) {
	if !x.IsContiguous() {
		x = contiguous(x)
		defer x.Release()
	}
	src := span[T](x)
	dst := span[T](out)
	if len(dst) == 0 {
		return
	}
	passes := layout.UpsamplePasses[T](filter, x.Shape[2:], a.Size, a.InputSize, a.Scales, a.AlignCorners, a.Exact, backward)
	if len(passes) == 0 {
		copy(dst, src)
		return
	}
	// cur is the shape after the passes so far, with N and C as one dim.
	cur := append([]int{x.Shape[0] * x.Shape[1]}, x.Shape[2:]...)
	for p, ps := range passes {
		d := ps.Dim
		outer, inner := 1, 1
		for _, s := range cur[:d+1] {
			outer *= s
		}
		for _, s := range cur[d+2:] {
			inner *= s
		}
		next := dst
		cur[d+1] = ps.To
		if p < len(passes)-1 {
			// Scratch from the pool: a new slice's pages faulted in at
			// about 10 µs each (a bilinear upsample of [32,16,32,32] by 2
			// took 5.8 times torch's time).
			buf := getScratch[T](dispatch.Numel(cur))
			defer putScratch(buf)
			next = *buf
		}
		if backward {
			scatterPass(next, src, outer, inner, ps.From, ps.To, ps.Taps)
		} else {
			gatherPass(next, src, outer, inner, ps.From, ps.To, ps.Taps)
		}
		src = next
	}
}

// gatherPass resamples the middle dim of src, (outer, n, inner), into dst,
// (outer, m, inner): dst[o, j, i] = Σ_t w[j,t]·src[o, idx[j,t], i].
func gatherPass[T float](dst, src []T, outer, inner, n, m int, tp layout.Taps[T]) {
	if inner == 1 {
		gatherLast(dst, src, outer, n, m, tp)
		return
	}
	parallel(outer, m*inner*tp.K, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			for j := range m {
				row := dst[(o*m+j)*inner : (o*m+j+1)*inner]
				for t := range tp.K {
					w := tp.W[j*tp.K+t]
					at := (o*n + tp.Idx[j*tp.K+t]) * inner
					in := src[at : at+inner]
					if t == 0 {
						for i := range row {
							row[i] = w * in[i]
						}
						continue
					}
					for i := range row {
						row[i] += w * in[i]
					}
				}
			}
		}
	})
}

// scatterPass is gatherPass transposed: src is (outer, m, inner), a
// gradient of gatherPass's output, and dst, (outer, n, inner), gets
// dst[o, idx[j,t], i] += w[j,t]·src[o, j, i].
func scatterPass[T float](dst, src []T, outer, inner, m, n int, tp layout.Taps[T]) {
	if inner == 1 {
		scatterLast(dst, src, outer, m, n, tp)
		return
	}
	parallel(outer, m*inner*tp.K, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			clear(dst[o*n*inner : (o+1)*n*inner])
			for j := range m {
				g := src[(o*m+j)*inner : (o*m+j+1)*inner]
				for t := range tp.K {
					w := tp.W[j*tp.K+t]
					at := (o*n + tp.Idx[j*tp.K+t]) * inner
					row := dst[at : at+inner]
					for i := range row {
						row[i] += w * g[i]
					}
				}
			}
		}
	})
}

// gatherLast is gatherPass along the last dim (inner 1), where a row of
// one value made each tap's slices and loop cost more than its product:
// the taps summed in a register, in gatherPass's order (the first tap's
// product, then the others added), so the values are the same.
func gatherLast[T float](dst, src []T, outer, n, m int, tp layout.Taps[T]) {
	k := tp.K
	ws, is := tp.W[:m*k], tp.Idx[:m*k]
	parallel(outer, m*k, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			in, out := src[o*n:(o+1)*n], dst[o*m:(o+1)*m]
			if k == 2 { // linear: the common case, without a loop over taps
				for j := range out {
					out[j] = ws[2*j]*in[is[2*j]] + ws[2*j+1]*in[is[2*j+1]]
				}
				continue
			}
			for j := range out {
				acc := ws[j*k] * in[is[j*k]]
				for t := 1; t < k; t++ {
					acc += ws[j*k+t] * in[is[j*k+t]]
				}
				out[j] = acc
			}
		}
	})
}

// scatterLast is scatterPass along the last dim (inner 1), in its order.
func scatterLast[T float](dst, src []T, outer, m, n int, tp layout.Taps[T]) {
	k := tp.K
	parallel(outer, m*k, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			g, out := src[o*m:(o+1)*m], dst[o*n:(o+1)*n]
			clear(out)
			for j, v := range g {
				w, idx := tp.W[j*k:(j+1)*k], tp.Idx[j*k:(j+1)*k]
				for t := range k {
					out[idx[t]] += w[t] * v
				}
			}
		}
	})
}
