package cpu

import (
	"math"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// Fused batch norm (ops.BatchNormMoments, ops.BatchNormApply,
// ops.BatchNormBackward) on x read as [N, C, S], contiguous (copied first
// if it is not). The per-channel sums (the moments, the backward's Σg and
// Σg·(x - mean)) run a block of channels per task, in float64 and in a
// fixed order (forPlanes), so that the result does not depend on how many
// cores share the work; the elementwise passes run an (n, c) plane of S
// elements per task with the channel's coefficients hoisted out of the
// loop. A float16 or bfloat16 x (with float32 statistics: the ops' mixed
// type) is widened a plane at a time into a worker's scratch (bnPlanes),
// and y rounded from it once, so that no float32 copy of x is ever whole.

const bnDTypes = dispatch.DTypeSet(1<<dispatch.Float32|1<<dispatch.Float64) | dispatch.Halves

func init() {
	// T is the statistics' dtype (ops.StatsDType): out's for the moments
	// and the backward, the [C] arguments' for the normalisation.
	registerNative(ops.BatchNormMoments, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			batchNormMoments[float32](out, in[0], g)
		} else {
			batchNormMoments[float64](out, in[0], g)
		}
		return nil
	})
	registerNative(ops.BatchNormApply, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.BatchNormParams) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil {
			return err
		}
		if in[1].DType == dispatch.Float32 {
			batchNormApply[float32](out, in, g, a)
		} else {
			batchNormApply[float64](out, in, g, a)
		}
		return nil
	})
	registerNative(ops.BatchNormBackward, bnDTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.BatchNormParams) error {
		g, err := ops.BatchNormShape(in[0])
		if err != nil {
			return err
		}
		if out.DType == dispatch.Float32 {
			batchNormBackward[float32](out, in, g, a)
		} else {
			batchNormBackward[float64](out, in, g, a)
		}
		return nil
	})
}

// bnPlanes reads x [N, C, S] (or the gradient) of a batch norm an (n, c)
// plane at a time in T, the statistics' dtype: x's own elements where x
// is T, or a plane widened from x's 16 bits into a worker's scratch where
// x is float16 or bfloat16 (and T float32).
type bnPlanes[T float] struct {
	wide    []T
	narrow  []uint16
	bf      bool
	s       int
	release func()
}

func readPlanes[T float](x *dispatch.Tensor, s int) bnPlanes[T] {
	if !dispatch.Halves.Has(x.DType) {
		xs, release := dense[T](x)
		return bnPlanes[T]{wide: xs, s: s, release: release}
	}
	if x.DType == dispatch.BFloat16 {
		v, release := dense[half.BFloat16](x)
		return bnPlanes[T]{narrow: uint16s(v), bf: true, s: s, release: release}
	}
	v, release := dense[half.Float16](x)
	return bnPlanes[T]{narrow: uint16s(v), s: s, release: release}
}

// at is the plane at element off: x's own, or widened into scratch (S
// elements).
func (p bnPlanes[T]) at(off int, scratch []T) []T {
	if p.narrow == nil {
		return p.wide[off:][:p.s]
	}
	widenHalf(any(scratch[:p.s]).([]float32), p.narrow[off:][:p.s], p.bf)
	return scratch[:p.s]
}

// bnChannel is where a channel's planes lie in x [N, C, S] from its first:
// planes runs of n values, stride apart.
type bnChannel struct{ planes, stride, n int }

func channelOf(g ops.BatchNormGeometry) bnChannel { return bnChannel{g.N, g.C * g.S, g.S} }

// fits reports whether the C loops take the channel (planes long enough to
// pay for a call, at least one) in a buffer of length from its first.
func (c bnChannel) fits(length int) bool {
	return c.planes > 0 && c.n >= vectorMin && length >= (c.planes-1)*c.stride+c.n
}

// sum is channel c's Σv in float64, or with squares its Σ(v - mean)²,
// each plane's sum added in the order of n: one C call for the channel
// where its planes are long enough (a call per plane cost about as much as
// a plane's sums), else a plane at a time by sum64 or sqdev64 (the C loops
// sum a plane in another order).
func (p bnPlanes[T]) sum(g ops.BatchNormGeometry, c int, squares bool, mean float64, scratch []T) float64 {
	if g.N == 0 {
		return 0 // an empty batch: the planes' offsets lie past x's end
	}
	ch, off := channelOf(g), c*g.S
	shift := 0.0
	if squares {
		shift = mean
	}
	s, q, ok := 0.0, 0.0, false
	if p.narrow != nil {
		s, q, ok = bnMomentsHalf(p.narrow[off:], ch, shift, p.bf)
	} else if v, wide := any(p.wide).([]float32); wide {
		s, q, ok = bnMomentsFloat32(v[off:], ch, shift)
	}
	if ok && squares {
		return q
	}
	if ok {
		return s
	}
	total := 0.0
	for n := range g.N {
		v := p.at(off+n*ch.stride, scratch)
		if squares {
			total += sqdev64(v, mean)
		} else {
			total += sum64(v)
		}
	}
	return total
}

// sumProd is channel c's Σg and Σg·(x - mean) in float64 over the planes of
// gs and xs, as sums.
func sumProd[T float](gs, xs bnPlanes[T], g ops.BatchNormGeometry, c int, mean float64, scratch [][]T) (sg, sgx float64) {
	if g.N == 0 {
		return 0, 0
	}
	ch, off := channelOf(g), c*g.S
	if gs.narrow != nil && xs.narrow != nil && gs.bf == xs.bf {
		if a, b, ok := bnSumProdHalf(gs.narrow[off:], xs.narrow[off:], ch, mean, gs.bf); ok {
			return a, b
		}
	} else if g32, ok := any(gs.wide).([]float32); ok && xs.narrow == nil {
		if a, b, ok := bnSumProdFloat32(g32[off:], any(xs.wide).([]float32)[off:], ch, mean); ok {
			return a, b
		}
	}
	for n := range g.N {
		o := off + n*ch.stride
		a, b := sumProd64(gs.at(o, scratch[0]), xs.at(o, scratch[1]), mean)
		sg += a
		sgx += b
	}
	return sg, sgx
}

// halves is the 16-bit planes at off of gs and xs where both are 16-bit
// floats of one dtype; ok is false otherwise.
func halves[T float](gs, xs bnPlanes[T], off int) (g, x []uint16, ok bool) {
	if gs.narrow == nil || xs.narrow == nil || gs.bf != xs.bf {
		return nil, nil, false
	}
	return gs.narrow[off:][:gs.s], xs.narrow[off:][:xs.s], true
}

// parallel is parallel(n, cost, fn) that hands each goroutine k planes of
// scratch for at, from the pool, where x is 16-bit (none otherwise).
func (p bnPlanes[T]) parallel(n, cost, k int, fn func(lo, hi int, scratch [][]T)) {
	if p.narrow == nil {
		parallel(n, cost, func(lo, hi int) { fn(lo, hi, make([][]T, k)) })
		return
	}
	workers, chunk := split(n, cost)
	bufs, release := workerBuffers[T](workers*k, p.s)
	defer release()
	parallel(n, cost, func(lo, hi int) {
		w := lo / chunk
		fn(lo, hi, bufs[w*k:][:k])
	})
}

// batchNormMoments writes each channel's mean and biased variance, two
// passes over the channel (the sum, then the squared deviations from the
// mean): one pass of Σx² - (Σx)²/M cancels when the mean is large next to
// the spread, even in float64 for float64 data.
func batchNormMoments[T float](out, x *dispatch.Tensor, g ops.BatchNormGeometry) {
	xs := readPlanes[T](x, g.S)
	defer xs.release()
	o := span[T](out)
	m := float64(g.N * g.S)
	xs.parallel(g.C, 2*g.N*g.S, 1, func(lo, hi int, scratch [][]T) {
		for c := lo; c < hi; c++ {
			mean := xs.sum(g, c, false, 0, scratch[0]) / m // NaN for an empty batch, as torch's mean of nothing
			dev := xs.sum(g, c, true, mean, scratch[0])
			o[c], o[g.C+c] = T(mean), T(dev/m)
		}
	})
}

// batchNormApply writes x·s + t per channel with s = weight/√(var + eps)
// and t = bias - mean·s (computed in float64 per channel), as the
// composite's scaleShift and PyTorch's cpu kernel: one pass over x. A
// 16-bit x's plane is computed in its scratch and rounded into y once.
func batchNormApply[T float](out *dispatch.Tensor, in []*dispatch.Tensor, g ops.BatchNormGeometry, a ops.BatchNormParams) {
	xs := readPlanes[T](in[0], g.S)
	defer xs.release()
	mean, variance, weight, bias := channels[T](in[1]), channels[T](in[2]), channels[T](in[3]), channels[T](in[4])
	scale, shift := make([]T, g.C), make([]T, g.C)
	for c := range g.C {
		s := float64(weight[c]) / math.Sqrt(float64(variance[c])+a.Eps)
		scale[c], shift[c] = T(s), T(float64(bias[c])-float64(mean[c])*s)
	}
	var wide []T
	var narrow []uint16
	if dispatch.Halves.Has(out.DType) {
		narrow = bits16(out.Storage.Buffer)[out.Offset:]
	} else {
		wide = span[T](out)
	}
	xs.parallel(g.N*g.C, g.S, 1, func(lo, hi int, scratch [][]T) {
		for p := lo; p < hi; p++ {
			s, t := scale[p%g.C], shift[p%g.C]
			if narrow != nil && xs.narrow != nil && bnApplyHalf(narrow[p*g.S:][:g.S], xs.narrow[p*g.S:][:g.S], float32(s), float32(t), xs.bf) {
				continue
			}
			src := xs.at(p*g.S, scratch[0])
			dst := src // a widened plane is computed in place, then rounded
			if wide != nil {
				dst = wide[p*g.S:][:g.S]
			}
			if d, ok := any(dst).([]float32); !ok || !bnApplyFloat32(d, any(src).([]float32), float32(s), float32(t)) {
				for i, v := range src {
					dst[i] = v*s + t
				}
			}
			if narrow != nil {
				roundHalf(narrow[p*g.S:][:g.S], any(dst).([]float32), xs.bf)
			}
		}
	})
}

// batchNormBackward writes dx, dweight and dbias one after the other, as
// PyTorch's batch_norm_backward_cpu: with invstd = 1/√(var + eps),
// xhat = (x - mean)·invstd and M = N·S,
//
//	dbias = Σg    dweight = Σg·xhat
//	dx = weight·invstd·(g - dbias/M - xhat·dweight/M)   (training)
//	dx = weight·invstd·g                                 (mean and var constant)
//
// The training dx is weight·invstd·g + k·(x - mean) + d per channel, with
// k = -weight·invstd³·Σg·(x - mean)/M and d = -weight·invstd·Σg/M. All of
// it is in T, the statistics' dtype, also for a 16-bit x and g (widened a
// plane at a time).
func batchNormBackward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, g ops.BatchNormGeometry, a ops.BatchNormParams) {
	xs := readPlanes[T](in[0], g.S)
	defer xs.release()
	gs := readPlanes[T](in[4], g.S)
	defer gs.release()
	mean, variance, weight := channels[T](in[1]), channels[T](in[2]), channels[T](in[3])
	o := span[T](out)
	numel := g.N * g.C * g.S
	dx, dweight, dbias := o[:numel], o[numel:numel+g.C], o[numel+g.C:]
	m := g.N * g.S
	// Per channel: dx = a·g + k·(x - mean) + d.
	coefA, coefK, coefD := make([]T, g.C), make([]T, g.C), make([]T, g.C)
	gs.parallel(g.C, 2*m, 2, func(lo, hi int, scratch [][]T) {
		for c := lo; c < hi; c++ {
			sg, sgx := sumProd(gs, xs, g, c, float64(mean[c]), scratch)
			invstd := 1 / math.Sqrt(float64(variance[c])+a.Eps)
			w := float64(weight[c])
			dbias[c] = T(sg)
			dweight[c] = 0 // an empty batch: the sums are 0 but invstd may be NaN
			if m > 0 {
				dweight[c] = T(sgx * invstd)
			}
			coefA[c] = T(w * invstd)
			if a.Training && m > 0 {
				coefK[c] = T(-w * invstd * invstd * invstd * sgx / float64(m))
				coefD[c] = T(-w * invstd * sg / float64(m))
			}
		}
	})
	gs.parallel(g.N*g.C, g.S, 2, func(lo, hi int, scratch [][]T) {
		for p := lo; p < hi; p++ {
			c := p % g.C
			dst, ca := dx[p*g.S:][:g.S], coefA[c]
			if g16, x16, both := halves(gs, xs, p*g.S); both && a.Training {
				if d, ok := any(dst).([]float32); ok && bnGradHalf(d, g16, x16, float32(ca), float32(coefK[c]), float32(mean[c]), float32(coefD[c]), gs.bf) {
					continue
				}
			}
			gp := gs.at(p*g.S, scratch[0])
			if !a.Training {
				if d, ok := any(dst).([]float32); ok && bnApplyFloat32(d, any(gp).([]float32), float32(ca), 0) {
					continue
				}
				for i, v := range gp {
					dst[i] = ca * v
				}
				continue
			}
			ck, cd, mu := coefK[c], coefD[c], mean[c]
			xp := xs.at(p*g.S, scratch[1])
			if d, ok := any(dst).([]float32); ok &&
				bnGradFloat32(d, any(gp).([]float32), any(xp).([]float32), float32(ca), float32(ck), float32(mu), float32(cd)) {
				continue
			}
			for i, v := range gp {
				dst[i] = ca*v + ck*(xp[i]-mu) + cd
			}
		}
	})
}

// channels is the elements of a [C] tensor, copied if it is strided (a
// view of the moments' rows is not).
func channels[T float](t *dispatch.Tensor) []T {
	if t.IsContiguous() {
		return span[T](t)
	}
	v := make([]T, t.Shape[0])
	e := elems[T](t)
	for i := range v {
		v[i] = e[t.Offset+i*t.Strides[0]]
	}
	return v
}

// sum64 is Σv in float64, over four accumulators so that the adds do not
// wait on each other.
func sum64[T float](v []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += float64(v[i])
		s1 += float64(v[i+1])
		s2 += float64(v[i+2])
		s3 += float64(v[i+3])
	}
	for ; i < len(v); i++ {
		s0 += float64(v[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sqdev64 is Σ(v - mean)² in float64, as sum64.
func sqdev64[T float](v []T, mean float64) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		d0, d1, d2, d3 := float64(v[i])-mean, float64(v[i+1])-mean, float64(v[i+2])-mean, float64(v[i+3])-mean
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < len(v); i++ {
		d := float64(v[i]) - mean
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// sumProd64 is Σg and Σg·(x - mean) in float64, as sum64. x has g's
// length.
func sumProd64[T float](g, x []T, mean float64) (sg, sgx float64) {
	x = x[:len(g)]
	var a0, a1, a2, a3, b0, b1, b2, b3 float64
	i := 0
	for ; i+4 <= len(g); i += 4 {
		g0, g1, g2, g3 := float64(g[i]), float64(g[i+1]), float64(g[i+2]), float64(g[i+3])
		a0 += g0
		a1 += g1
		a2 += g2
		a3 += g3
		b0 += g0 * (float64(x[i]) - mean)
		b1 += g1 * (float64(x[i+1]) - mean)
		b2 += g2 * (float64(x[i+2]) - mean)
		b3 += g3 * (float64(x[i+3]) - mean)
	}
	for ; i < len(g); i++ {
		gi := float64(g[i])
		a0 += gi
		b0 += gi * (float64(x[i]) - mean)
	}
	return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)
}
