package cpu

import (
	"math"
	"slices"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// Direct convolution: float32 at stride 1 over a window of the last one
// or two dims, where the machine has AVX2, without a column matrix; and
// float16 and bfloat16 the same way, widened as they are read and rounded
// once as they are written (convForwardHalf, ...): on the shapes these
// kernels take they beat AMX's tiles too (the ResNet block's 16 channels
// of 32×32: forward 0.70 ms against 0.87, input gradient 0.68 against
// 1.33, weight gradient 1.05 against 1.24).
//
// im2col writes each image K times over (a 3×3 window: nine copies of
// it), and the GEMM then packs that matrix once more: on the ResNet
// block's 16-channel 32×32 images that traffic, not the products, was
// most of a convolution's time (im2col and its copies 30% of
// BenchmarkConvBlock, the GEMMs 44%). lathe_conv_f32 (shim.c, vec_conv.h)
// reads the input where it lies instead, padded once: a block of 16
// neighbouring outputs (32 in AVX-512's lanes) reads as many neighbouring
// inputs at each window position, and up to six output channels (twelve)
// share each read. The input gradient at stride 1 is
// the same kernel run on the output gradient, padded by the window's
// reach less the padding, with the window flipped and its channels
// swapped. The weight gradient (lathe_conv_wgrad_f32) sums, for a few
// output channels and window elements at once, their products over the
// positions, 8 or 16 at a time, from the same padded input.

// directConvOn lets tests run the im2col path where the direct one
// would run, and dotConvOn the float32 kernels where the bfloat16 dot
// products would.
var directConvOn, dotConvOn = true, true

// dotSlack is the 32-bit words past a padded image of channel pairs that
// conv_dot.c's kernel may read: a block of sixteen positions from the
// last one of a row.
const dotSlack = 16

// directPlan is one direct convolution per image and group: in channels
// of h × w, padded by ph and pw, into out channels of oh × ow, through a
// kh × kw window dilated by dh and dw, in AVX-512's lanes where wide.
type directPlan struct {
	in, out, h, w, ph, pw, oh, ow, kh, kw, dh, dw int
	wide                                          bool
}

// forwardPlan is the plan of s's convolution, and whether the direct
// kernels can run it: stride 1, a window over at most the last two dims,
// not pointwise (whose GEMM reads the image itself), and AVX2.
func forwardPlan(s *convShapes) (directPlan, bool) {
	g := &s.g
	p := directPlan{in: s.cg(), out: s.og(), h: g.in[1], w: g.in[2], ph: g.pad[1], pw: g.pad[2], oh: g.out[1], ow: g.out[2],
		kh: g.kernel[1], kw: g.kernel[2], dh: g.dil[1], dw: g.dil[2]}
	ok := haveAVX2 && directConvOn && g.stride == [3]int{1, 1, 1} && g.in[0] == 1 && g.kernel[0] == 1 && g.pad[0] == 0 &&
		!g.pointwise() && s.n > 0 && s.ck() > 0 && s.og() > 0 && g.l > 0 && p.h > 0 && p.w > 0
	return p, ok && p.fits()
}

// directForward is the plan of s's convolution, and whether the direct
// kernels take it: they can and it pays.
func directForward(s *convShapes) (directPlan, bool) {
	p, ok := forwardPlan(s)
	return p, ok && p.pays()
}

// directWeightGrad is directForward for the weight gradient, whose kernel
// pays on fewer shapes: on rows of 32 or more into at most 32 channels
// (on rows of 16, 32 channels took 1.55 ms direct against 1.31; 64 output
// channels 4.6 against 4.1; the ResNet block's 16 channels of 32×32 1.05
// against 1.7).
func directWeightGrad(s *convShapes) (directPlan, bool) {
	p, ok := directForward(s)
	return p, ok && p.ow >= 32 && p.out <= 32
}

// pays reports whether the direct kernels beat im2col and the GEMM on p,
// and picks their width. They win where the column matrix's traffic is
// most of the work: few products per output (in·kh·kw ≤ 288, 32 channels
// of a 3×3 window) into 4 channels or more, on output rows of a block or
// more (16 positions; AVX-512's lanes from 32). Past that the GEMM's
// blocking wins. On this machine (2 cores, AVX-512), 3×3, batch 32: 16
// channels of 32×32 forward 0.70 ms direct against 1.60, 32 channels 3.4
// against 6.0; but 64 of 16×16 5.1 against 3.5, 128 of 8×8 (batch 16) 5.5
// against 2.5, and a weight gradient on 8-wide rows 33 ms against 2.9.
func (p *directPlan) pays() bool {
	if p.in*p.kh*p.kw > 288 || p.out < 4 || p.ow < 16 {
		return false
	}
	p.wide = useAVX512 && p.ow >= 32
	return true
}

// fits reports whether the padded input's size is an int, plus the slack
// (a padding near an int's range is left to im2col's checks and errors).
func (p directPlan) fits() bool {
	n, ok := dispatch.CheckedNumel([]int{p.in, p.h + 2*p.ph, p.w + 2*p.pw, 2})
	return ok && p.h+2*p.ph > 0 && p.w+2*p.pw > 0 && n/2 < math.MaxInt-convSlack
}

// directInputGrad is the plan of the input gradient of s's convolution as
// a forward one over the output gradient: padded by the window's reach
// less the padding (which must not be negative: a padding past the reach
// crops, and stays with col2im), into the input's size.
func directInputGrad(s *convShapes) (directPlan, bool) {
	f, ok := forwardPlan(s)
	p := directPlan{in: f.out, out: f.in, h: f.oh, w: f.ow, ph: (f.kh-1)*f.dh - f.ph, pw: (f.kw-1)*f.dw - f.pw, oh: f.h, ow: f.w,
		kh: f.kh, kw: f.kw, dh: f.dh, dw: f.dw}
	return p, ok && p.ph >= 0 && p.pw >= 0 && p.fits() && p.pays()
}

// weights lays the weights [groups·out][in][kh][kw] (or, where flip, the
// forward's [groups·in][out][kh][kw], each window reversed and in and out
// swapped: the input gradient's) out as [groups][in·kh·kw][out], the order
// lathe_conv_f32 reads them in.
func (p directPlan) weights(dst, w []float32, groups int, flip bool) {
	k := p.kh * p.kw
	for gi := range groups {
		g := dst[gi*p.in*k*p.out:]
		for o := range p.out {
			for c := range p.in {
				for j := range k {
					var v float32
					if flip {
						v = w[((gi*p.in+c)*p.out+o)*k+k-1-j]
					} else {
						v = w[((gi*p.out+o)*p.in+c)*k+j]
					}
					g[(c*k+j)*p.out+o] = v
				}
			}
		}
	}
}

// padded is the size of a padded input for one image and group, and the
// floats the kernels may read past it.
func (p directPlan) padded() int { return p.in*(p.h+2*p.ph)*(p.w+2*p.pw) + convSlack }

// pad copies image at (its in planes of h × w, at element at·in·h·w of
// src) into dst with the zero border. A 16-bit image is widened whole
// into scratch first (in·h·w floats): one call of the vector loop, where
// its rows are too short for it.
func (p directPlan) pad(dst []float32, src convData, at int, scratch []float32) {
	size := p.in * p.h * p.w
	img := src.span(at*size, size, scratch)
	hp, wp := p.h+2*p.ph, p.w+2*p.pw
	for c := range p.in {
		plane := dst[c*hp*wp : (c+1)*hp*wp]
		clear(plane[:p.ph*wp+p.pw])
		for r := range p.h {
			row := plane[(p.ph+r)*wp+p.pw:]
			copy(row[:p.w], img[(c*p.h+r)*p.w:])
			if r < p.h-1 {
				clear(row[p.w : p.w+2*p.pw])
			}
		}
		clear(plane[(p.ph+p.h-1)*wp+p.pw+p.w:])
	}
	clear(dst[p.in*hp*wp : p.padded()])
}

// convData is a tensor's elements (row-major) as the direct kernels read
// and write them: float32 itself, or float16 or bfloat16 bits, widened an
// image at a time as they are read and rounded once as they are written,
// so that a 16-bit convolution needs no float32 copy of its tensors.
type convData struct {
	f32  []float32
	bits []uint16
	bf   bool
}

// read sets dst to the len(dst) elements from off.
func (e convData) read(dst []float32, off int) {
	if e.bits == nil {
		copy(dst, e.f32[off:off+len(dst)])
		return
	}
	widenHalf(dst, e.bits[off:off+len(dst)], e.bf)
}

// write sets the len(src) elements from off to src.
func (e convData) write(off int, src []float32) {
	if e.bits == nil {
		copy(e.f32[off:off+len(src)], src)
		return
	}
	roundHalf(e.bits[off:off+len(src)], src, e.bf)
}

// span is the n elements from off as float32: e's own where it is
// float32, else read into scratch.
func (e convData) span(off, n int, scratch []float32) []float32 {
	if e.bits == nil {
		return e.f32[off : off+n]
	}
	e.read(scratch[:n], off)
	return scratch[:n]
}

// directScratch is one worker's buffers: the padded input, and the
// float32 images of a 16-bit input and of a 16-bit output (or output
// gradient), nil where those are float32.
type directScratch struct{ padded, in, out []float32 }

// scratch makes, from the pool, the buffers of the workers that
// parallel(n, cost, ...) starts: worker lo/chunk takes ws[lo/chunk].
func (p directPlan) scratch(n, cost int, in16, out16 bool) (ws []directScratch, chunk int, release func()) {
	workers, chunk := split(n, cost)
	ws = make([]directScratch, workers)
	var releases []func()
	take := func(size int, set func(w *directScratch, b []float32)) {
		bufs, rel := workerBuffers[float32](workers, size)
		releases = append(releases, rel)
		for w := range ws {
			set(&ws[w], bufs[w])
		}
	}
	take(p.padded(), func(w *directScratch, b []float32) { w.padded = b })
	if in16 {
		take(p.in*p.h*p.w, func(w *directScratch, b []float32) { w.in = b })
	}
	if out16 {
		take(p.out*p.oh*p.ow, func(w *directScratch, b []float32) { w.out = b })
	}
	return ws, chunk, func() {
		for _, rel := range releases {
			rel()
		}
	}
}

// run convolves each of n images' groups: x is [n][groups·in][h][w], y
// [n][groups·out][oh][ow], wt as weights lays them out. It reports whether
// every call ran: the C wrapper declines slices shorter than the plan,
// which would be a bug in lathe, and the caller then takes im2col.
func (p directPlan) run(y, x convData, wt []float32, n, groups int) bool {
	cost := groups * p.out * p.in * p.kh * p.kw * p.oh * p.ow
	ws, chunk, release := p.scratch(n, cost, x.bits != nil, y.bits != nil)
	defer release()
	outSize, k := p.out*p.oh*p.ow, p.in*p.kh*p.kw
	declined := make([]bool, len(ws))
	parallel(n, cost, func(lo, hi int) {
		w := ws[lo/chunk]
		for i := lo; i < hi; i++ {
			for gi := range groups {
				at := i*groups + gi
				p.pad(w.padded, x, at, w.in)
				img := w.out // where the kernel writes the image
				if y.bits == nil {
					img = y.f32[at*outSize : (at+1)*outSize]
				}
				if !convDirectFloat32(img, w.padded, wt[gi*k*p.out:(gi+1)*k*p.out],
					p.in, p.out, p.h+2*p.ph, p.w+2*p.pw, p.oh, p.ow, p.kh, p.kw, p.dh, p.dw, p.wide) {
					declined[lo/chunk] = true
					return
				}
				if y.bits != nil {
					y.write(at*outSize, img)
				}
			}
		}
	})
	return !slices.Contains(declined, true)
}

// convDirect runs plan p over x into y with the weights w (flipped for the
// input gradient), the weights laid out in a buffer from the pool, and
// reports whether it did (run's).
func convDirect(p directPlan, y, x, w convData, n, groups int, flip bool) bool {
	if x.bf && x.bits != nil && w.bits != nil && y.bits != nil && p.in >= 2 && haveDotConv && dotConvOn {
		return p.runDot(y, x, w, n, groups, flip)
	}
	size := groups * p.in * p.kh * p.kw * p.out
	wts, release := workerBuffers[float32](2, size)
	defer release()
	p.weights(wts[0], w.span(0, size, wts[1]), groups, flip)
	return p.run(y, x, wts[0], n, groups)
}

// runDot is run for bfloat16 images, weights and output on AVX512-BF16's
// dot products (conv_dot.c): each image's pairs of channels interleaved
// into one padded plane of 32-bit words (no float32 copy), the weights as
// pairWeights lays them out, the float32 result rounded once into y. On
// the ResNet block's 16 channels of 32×32 under autocast the float32
// kernels widened every input value and took a multiply-add per product,
// where a dot product takes two. It reports whether every call ran, as
// run does.
func (p directPlan) runDot(y, x, w convData, n, groups int, flip bool) bool {
	pairs, k := (p.in+1)/2, p.kh*p.kw
	hp, wp := p.h+2*p.ph, p.w+2*p.pw
	size := groups * pairs * k * p.out
	wbuf, releaseW := workerBuffers[float32](1, size)
	defer releaseW()
	wt := words(wbuf[0])
	p.pairWeights(wt, w.bits, groups, flip)
	cost := groups * p.out * p.in * k * p.oh * p.ow
	workers, chunk := split(n, cost)
	padded, releaseP := workerBuffers[float32](workers, pairs*hp*wp+dotSlack)
	defer releaseP()
	outs, releaseO := workerBuffers[float32](workers, p.out*p.oh*p.ow)
	defer releaseO()
	inSize, outSize := p.in*p.h*p.w, p.out*p.oh*p.ow
	declined := make([]bool, workers)
	parallel(n, cost, func(lo, hi int) {
		xp, img := words(padded[lo/chunk]), outs[lo/chunk]
		for i := lo; i < hi; i++ {
			for gi := range groups {
				at := i*groups + gi
				if !padPairsBF16(xp, x.bits[at*inSize:(at+1)*inSize], p.in, p.h, p.w, p.ph, p.pw) ||
					!convDotBF16(img, xp, wt[gi*pairs*k*p.out:], pairs, p.out, hp, wp, p.oh, p.ow, p.kh, p.kw, p.dh, p.dw) {
					declined[lo/chunk] = true
					return
				}
				y.write(at*outSize, img)
			}
		}
	})
	return !slices.Contains(declined, true)
}

// pairWeights is weights for the dot products: [groups][pairs][kh·kw][out]
// 32-bit words, input channel 2c's weight in the low half of pair c's word
// and 2c + 1's in the high half (zero past an odd count), from bfloat16
// weights laid out as weights takes them.
func (p directPlan) pairWeights(dst []uint32, w []uint16, groups int, flip bool) {
	k, pairs := p.kh*p.kw, (p.in+1)/2
	clear(dst[:groups*pairs*k*p.out])
	for gi := range groups {
		g := dst[gi*pairs*k*p.out:]
		for o := range p.out {
			for c := range p.in {
				for j := range k {
					var v uint16
					if flip {
						v = w[((gi*p.in+c)*p.out+o)*k+k-1-j]
					} else {
						v = w[((gi*p.out+o)*p.in+c)*k+j]
					}
					g[((c/2)*k+j)*p.out+o] |= uint32(v) << (16 * (c % 2))
				}
			}
		}
	}
}

// words is a float32 scratch buffer's memory as 32-bit words.
func words(f []float32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(f))), len(f))
}

// weightGrad writes the weight gradient of n images' groups to dw
// ([groups·out][in][kh][kw]), where the caller has cleared it: x is
// [n][groups·in][h][w] and gy [n][groups·out][oh][ow]. Each worker sums
// its images into a partial gradient of its own; the partials are added
// in the workers' order, so that the result does not depend on which
// finished first, and a 16-bit dw is rounded once from their float32 sum.
// It reports whether it did, as run; dw is unchanged where it did not.
func (p directPlan) weightGrad(dw, x, gy convData, n, groups int) bool {
	if x.bf && x.bits != nil && gy.bits != nil && haveDotConv && dotConvOn {
		return p.weightGradDot(dw, x, gy, n, groups)
	}
	k := p.in * p.kh * p.kw
	size := groups * p.out * k
	cost := size * p.oh * p.ow
	ws, chunk, release := p.scratch(n, cost, x.bits != nil, gy.bits != nil)
	defer release()
	parts, releaseParts := workerBuffers[float32](len(ws)+1, size) // the last: a 16-bit dw's sum
	defer releaseParts()
	outSize := p.out * p.oh * p.ow
	declined := make([]bool, len(ws))
	parallel(n, cost, func(lo, hi int) {
		w, part := ws[lo/chunk], parts[lo/chunk]
		clear(part)
		for i := lo; i < hi; i++ {
			for gi := range groups {
				at := i*groups + gi
				p.pad(w.padded, x, at, w.in)
				if !convWeightGradFloat32(part[gi*p.out*k:(gi+1)*p.out*k], gy.span(at*outSize, outSize, w.out), w.padded,
					p.in, p.out, p.h+2*p.ph, p.w+2*p.pw, p.oh, p.ow, p.kh, p.kw, p.dh, p.dw, p.wide) {
					declined[lo/chunk] = true
					return
				}
			}
		}
	})
	if slices.Contains(declined, true) {
		return false
	}
	addParts(dw, parts)
	return true
}

// weightGradDot is weightGrad for bfloat16 images and output gradient on
// AVX512-BF16's dot products (conv_dot.c's lathe_conv_wgrad_dot_bf16):
// each image padded as bfloat16 bits, the products of pairs of
// neighbouring positions summed in float32 into the worker's partial
// gradient, where the float32 kernel widened both tensors first.
func (p directPlan) weightGradDot(dw, x, gy convData, n, groups int) bool {
	k := p.in * p.kh * p.kw
	size := groups * p.out * k
	cost := size * p.oh * p.ow
	hp, wp := p.h+2*p.ph, p.w+2*p.pw
	workers, chunk := split(n, cost)
	padded, releasePadded := workerBuffers[half.BFloat16](workers, p.in*hp*wp)
	defer releasePadded()
	parts, releaseParts := workerBuffers[float32](workers+1, size) // the last: a 16-bit dw's sum
	defer releaseParts()
	inSize, outSize := p.in*p.h*p.w, p.out*p.oh*p.ow
	declined := make([]bool, workers)
	parallel(n, cost, func(lo, hi int) {
		xp, part := uint16s(padded[lo/chunk]), parts[lo/chunk]
		clear(part)
		for i := lo; i < hi; i++ {
			for gi := range groups {
				at := i*groups + gi
				p.pad16(xp, x.bits[at*inSize:(at+1)*inSize])
				if !convWeightGradDotBF16(part[gi*p.out*k:(gi+1)*p.out*k], gy.bits[at*outSize:(at+1)*outSize], xp,
					p.in, p.out, hp, wp, p.oh, p.ow, p.kh, p.kw, p.dh, p.dw) {
					declined[lo/chunk] = true
					return
				}
			}
		}
	})
	if slices.Contains(declined, true) {
		return false
	}
	addParts(dw, parts)
	return true
}

// pad16 copies a 16-bit image (its in planes of h × w) into dst with the
// zero border, as pad does for float32.
func (p directPlan) pad16(dst, img []uint16) {
	hp, wp := p.h+2*p.ph, p.w+2*p.pw
	clear(dst[:p.in*hp*wp])
	for c := range p.in {
		for r := range p.h {
			copy(dst[(c*hp+p.ph+r)*wp+p.pw:][:p.w], img[(c*p.h+r)*p.w:])
		}
	}
}

// addParts adds the workers' partial weight gradients, all of parts but
// the last, in their order (so that the result does not depend on which
// finished first) into dw, or into the last part and then dw rounded once
// where dw is 16-bit.
func addParts(dw convData, parts [][]float32) {
	total := dw.f32
	if total == nil {
		total = parts[len(parts)-1]
		clear(total)
	}
	for _, part := range parts[:len(parts)-1] {
		addTo(total, part)
	}
	if dw.bits != nil {
		dw.write(0, total)
	}
}

// convForwardHalf, convInputBackwardHalf and convWeightBackwardHalf run a
// convolution whose tensors are all float16 or all bfloat16 on the direct
// kernels, reading the bits in place, where those take its shape, and
// report whether they did.
func convForwardHalf(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	s := newConvShapes(in[0].Shape, out.Shape, a.WindowFor(in[1].Shape), a.Groups)
	p, ok := directForward(&s)
	return ok && onHalves(out, in, func(y, x, w convData) bool { return convDirect(p, y, x, w, s.n, s.groups, false) })
}

func convInputBackwardHalf(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	s := newConvShapes(out.Shape, in[0].Shape, a.WindowFor(in[1].Shape), a.Groups)
	p, ok := directInputGrad(&s)
	return ok && onHalves(out, in, func(dx, gy, w convData) bool { return convDirect(p, dx, gy, w, s.n, s.groups, true) })
}

func convWeightBackwardHalf(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) bool {
	s := newConvShapes(in[0].Shape, in[1].Shape, a.Window, a.Groups)
	p, ok := directWeightGrad(&s)
	return ok && onHalves(out, in, func(dw, x, gy convData) bool { return p.weightGrad(dw, x, gy, s.n, s.groups) })
}

// onHalves calls f with out and the two arguments as convData where all
// three are float16 or all bfloat16 (the arguments read contiguous), and
// reports what f did; false for other dtypes.
func onHalves(out *dispatch.Tensor, in []*dispatch.Tensor, f func(out, a, b convData) bool) bool {
	dt := out.DType
	if !dispatch.Halves.Has(dt) || in[0].DType != dt || in[1].DType != dt {
		return false
	}
	a, releaseA := halfData(in[0])
	defer releaseA()
	b, releaseB := halfData(in[1])
	defer releaseB()
	o := convData{bits: bits16(out.Storage.Buffer)[out.Offset : out.Offset+out.Numel()], bf: dt == dispatch.BFloat16}
	return f(o, a, b)
}

// halfData is a 16-bit tensor's elements in row-major order: its own
// bits where it is contiguous, else a copy's; release frees the copy.
func halfData(t *dispatch.Tensor) (convData, func()) {
	if t.DType == dispatch.BFloat16 {
		v, release := dense[half.BFloat16](t)
		return convData{bits: uint16s(v), bf: true}, release
	}
	v, release := dense[half.Float16](t)
	return convData{bits: uint16s(v)}, release
}
