//go:build cgo

package cpu

import (
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// Convolutions of bfloat16 on AMX's tiles: conv.go's im2col and GEMMs,
// the column matrix built from the bfloat16 values themselves and each
// product on the tiles (amx.go), which sum in float32. The forward rounds
// each output once; the input gradient adds its windows (col2im) in
// float32 and rounds once; the weight gradient sums the batch in float32
// and rounds once: what the float32 kernels give through
// dispatch.ViaCompute, without widening every operand first. Each returns
// false where C could not allocate its scratch, and the float32 path then
// writes the whole result.

// convForwardTiles: y_n,g = W_g · im2col(x_n)_g, rounded once.
func convForwardTiles(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	x, w, release := denseBits(in)
	defer release()
	y := bf16Bits(out)[out.Offset:]
	s := newConvShapes(in[0].Shape, out.Shape, a.WindowFor(in[1].Shape), a.Groups)
	l, og, ck := s.g.l, s.og(), s.ck()
	if ck == 0 || s.n == 0 {
		return false
	}
	packs, releaseP := imageScratch[half.BFloat16](&s, packedSize(ck, l))
	defer releaseP()
	var failed atomic.Bool
	perImage(&s, func(i int, col []half.BFloat16) {
		c := columnsOf(&s, uint16s(col), x, i)
		for gi := range s.groups {
			if !tileProduct(tileOut{bf: y[(i*s.o+gi*og)*l:], ld: l}, tileMatrix{w[gi*og*ck:], ck, 1}, tileMatrix{c[gi*ck*l:], l, 1},
				og, ck, l, uint16s(packs(i))) {
				failed.Store(true)
			}
		}
	})
	return !failed.Load()
}

// convInputBackwardTiles: dx_n = col2im(W_gᵀ · g_n,g), in float32 until
// it is rounded.
func convInputBackwardTiles(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	s := newConvShapes(out.Shape, in[0].Shape, a.WindowFor(in[1].Shape), a.Groups)
	gy, w, release := denseBits(in)
	defer release()
	dx := bf16Bits(out)[out.Offset:]
	l, og, ck := s.g.l, s.og(), s.ck()
	if ck == 0 || s.o == 0 || s.n == 0 {
		return false
	}
	packs, releaseP := imageScratch[half.BFloat16](&s, packedSize(og, l))
	defer releaseP()
	imgs, releaseI := imageScratch[float32](&s, s.c*s.g.inSize)
	defer releaseI()
	var failed atomic.Bool
	perImage(&s, func(i int, col []float32) {
		img := imgs(i)
		direct := col == nil
		if direct {
			col = img
		}
		for gi := range s.groups {
			if !tileProduct(tileOut{f32: col[gi*ck*l:], ld: l}, tileMatrix{w[gi*og*ck:], 1, ck}, tileMatrix{gy[(i*s.o+gi*og)*l:], l, 1},
				ck, og, l, uint16s(packs(i))) {
				failed.Store(true)
			}
		}
		if !direct {
			clear(img)
			col2im(img, col, s.c, &s.g, true)
		}
		roundHalf(dx[i*s.c*s.g.inSize:(i+1)*s.c*s.g.inSize], img, true)
	})
	return !failed.Load()
}

// convWeightBackwardTiles: dW_g = Σ_n g_n,g · im2col(x_n)_gᵀ, each worker
// summing its images in float32, the sums added and rounded at the end.
func convWeightBackwardTiles(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	x, gy, release := denseBits(in)
	defer release()
	dw := bf16Bits(out)[out.Offset:]
	s := newConvShapes(in[0].Shape, in[1].Shape, a.Window, a.Groups)
	l, og, ck := s.g.l, s.og(), s.ck()
	if ck == 0 || s.o == 0 || s.n == 0 {
		return false
	}
	cost := s.o * ck * l
	cols, chunk, releaseC := columns[half.BFloat16](&s, cost)
	defer releaseC()
	packs, releaseP := workerBuffers[half.BFloat16](len(cols), packedSize(l, ck))
	defer releaseP()
	// Each worker's float32 sum, and the total's, from the pool.
	sums, releaseS := workerBuffers[float32](len(cols)+1, len(dw))
	defer releaseS()
	sum := sums[len(cols)]
	clear(sum)
	var mu sync.Mutex
	var failed atomic.Bool
	parallel(s.n, cost, func(lo, hi int) {
		part := sums[lo/chunk]
		clear(part)
		col, pack := cols[lo/chunk], uint16s(packs[lo/chunk])
		for i := lo; i < hi; i++ {
			c := columnsOf(&s, uint16s(col), x, i)
			for gi := range s.groups {
				if !tileProduct(tileOut{f32: part[gi*og*ck:], acc: true, ld: ck}, tileMatrix{gy[(i*s.o+gi*og)*l:], l, 1},
					tileMatrix{c[gi*ck*l:], 1, l}, og, l, ck, pack) {
					failed.Store(true)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for j, v := range part {
			sum[j] += v
		}
	})
	roundHalf(dw, sum, true)
	return !failed.Load()
}

// denseBits is a convolution's two bfloat16 arguments in row-major order,
// as their bits (conv.go's dense); release frees the copies it made.
func denseBits(in []*dispatch.Tensor) (a, b []uint16, release func()) {
	as, relA := dense[half.BFloat16](in[0])
	bs, relB := dense[half.BFloat16](in[1])
	return uint16s(as), uint16s(bs), func() { relA(); relB() }
}

// imageScratch makes size elements of scratch for each goroutine that
// perImage starts; image i's is of(i).
func imageScratch[T colElem](s *convShapes, size int) (of func(i int) []T, release func()) {
	workers, chunk := split(s.n, s.o*s.ck()*s.g.l)
	bufs, release := workerBuffers[T](workers, size)
	return func(i int) []T { return bufs[i/chunk] }, release
}
