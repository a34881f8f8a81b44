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
	// Each pass maps spatial sizes from → to; the filters always map the
	// forward op's input sizes to its output sizes (a.Size).
	k := x.Rank() - 2
	from, to, forwardIn := x.Shape[2:], a.Size, x.Shape[2:]
	if backward {
		from, to, forwardIn = a.Size, a.InputSize, a.InputSize
	}
	// The dims in the order of their passes: first to last forward, last to
	// first backward (the transpose of a product reverses it).
	order := make([]int, k)
	for i := range order {
		order[i] = i
		if backward {
			order[i] = k - 1 - i
		}
	}
	// cur is the shape after the passes so far, with N and C as one dim.
	cur := append([]int{x.Shape[0] * x.Shape[1]}, from...)
	src := span[T](x)
	dst := span[T](out)
	if len(dst) == 0 {
		return
	}
	type pass struct {
		dim int
		tp  layout.Taps[T]
	}
	var passes []pass
	for _, d := range order {
		scale := 0.0
		if a.Scales != nil {
			scale = a.Scales[d]
		}
		tp := layout.MakeTaps[T](filter, forwardIn[d], a.Size[d], scale, a.AlignCorners, a.Exact)
		if !tp.Identity(forwardIn[d]) {
			passes = append(passes, pass{d, tp})
		}
	}
	if len(passes) == 0 {
		copy(dst, src)
		return
	}
	for p, ps := range passes {
		d := ps.dim
		outer, inner := 1, 1
		for _, s := range cur[:d+1] {
			outer *= s
		}
		for _, s := range cur[d+2:] {
			inner *= s
		}
		next := dst
		cur[d+1] = to[d]
		if p < len(passes)-1 {
			next = make([]T, dispatch.Numel(cur))
		}
		if backward {
			scatterPass(next, src, outer, inner, from[d], to[d], ps.tp)
		} else {
			gatherPass(next, src, outer, inner, from[d], to[d], ps.tp)
		}
		src = next
	}
}

// gatherPass resamples the middle dim of src, (outer, n, inner), into dst,
// (outer, m, inner): dst[o, j, i] = Σ_t w[j,t]·src[o, idx[j,t], i].
func gatherPass[T float](dst, src []T, outer, inner, n, m int, tp layout.Taps[T]) {
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
