package cpu

import (
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
	"gonum.org/v1/gonum/blas"
)

// Convolution by im2col + GEMM, for float32 and float64 from one template.
//
// Per image, im2col lays every window out as a column: a (C·K) × L matrix,
// row c·K + k holding kernel element k of channel c at each of the L output
// positions (zeros where the window hangs over the padding). The
// convolution of group g is then one GEMM, W_g (O/G × C/G·K) times that
// group's rows of the matrix (C/G·K × L), which BLAS (OpenBLAS when it
// opens) runs at full speed however small the channel counts. The input
// gradient is the transposed product W_gᵀ·G_g scattered back by col2im;
// the weight gradient is G_g·col_gᵀ summed over the batch. float32 at
// stride 1 takes the direct kernels instead where the machine has AVX2
// (conv_direct.go): the column matrix's traffic, not the products, was
// most of those convolutions' time.
//
// Images are spread over goroutines; each worker owns its column buffer,
// which for a small image stays in cache between im2col and the GEMM.
// One GEMM over the whole batch's columns side by side, (C·K) × (N·L), was
// tried and measured slower on the ResNet-block benchmark (185 ms against
// 110 ms): its column matrix (19 MB there) streams through memory twice.
// The GEMMs alone say the same (single-threaded OpenBLAS, time per image,
// best of many; 16 channels, 3×3, 32×32): forward 47 µs alone, 53 µs in a
// batch of 8, 58-64 in one of 32; input gradient 45, 63, 68; weight
// gradient 66, 69, 83; the gather and scatter of the output between
// (N, O, L) and (O, N·L) would come on top. Batching pays only where an
// image's L is tiny (a 4×4 output at 128 channels: 56 µs alone, 35 in a
// batch of 16; at 8×8 it no longer does), which no benchmark here has.
// So were rounds of one image per core (im2col on goroutines) whose GEMMs
// ran one at a time on OpenBLAS's threads (95 ms against 86). So each
// image's GEMMs are one-thread calls (sgemm, dgemm; blas_threads.go).
//
// Spatial dims are padded to three (size 1, kernel 1) so that 1-, 2- and
// 3-d convolutions share one loop nest.

func init() {
	// A 16-bit convolution takes the direct kernels on its bits where they
	// take its shape (conv_direct.go), else bfloat16 AMX's tiles where the
	// machine has them (amx_conv.go).
	registerFast(ops.Conv, dispatch.Floats, floatKernel(convForward[float32], convForward[float64]),
		convForwardHalf, tiled(convForwardTiles))
	registerFast(ops.ConvInputBackward, dispatch.Floats, floatKernel(convInputBackward[float32], convInputBackward[float64]),
		convInputBackwardHalf, tiled(convInputBackwardTiles))
	registerFast(ops.ConvWeightBackward, dispatch.Floats, floatKernel(convWeightBackward[float32], convWeightBackward[float64]),
		convWeightBackwardHalf, tiled(convWeightBackwardTiles))
	registerFor(ops.Unfold, dispatch.Floats, floatKernel(unfold[float32], unfold[float64]))
	registerFor(ops.Fold, dispatch.Floats, floatKernel(fold[float32], fold[float64]))
}

// floatKernel picks the float32 or float64 instance of a kernel; it is
// registered for those two dtypes only.
func floatKernel[A any](f32, f64 func(out *dispatch.Tensor, in []*dispatch.Tensor, a A)) dispatch.Kernel[A] {
	return func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		if out.DType == dispatch.Float32 {
			f32(out, in, a)
		} else {
			f64(out, in, a)
		}
		return nil
	}
}

// gemmOf is the BLAS GEMM of T.
func gemmOf[T float]() gemmFunc[T] {
	var z T
	if _, ok := any(z).(float32); ok {
		return any(sgemm).(gemmFunc[T])
	}
	return any(dgemm).(gemmFunc[T])
}

// dense returns t's elements in row-major order: its own storage when it
// is contiguous, else a copy. release frees the copy.
func dense[T any](t *dispatch.Tensor) (data []T, release func()) {
	if t.IsContiguous() {
		return span[T](t), func() {}
	}
	c := contiguous(t)
	return span[T](c), c.Release
}

// geom is a window over three spatial dims (leading dims of size 1 and
// kernel 1 stand in for missing ones): input sizes in, output sizes out,
// and the kernel, stride, padding and dilation per dim.
type geom struct {
	in, out, kernel, stride, pad, dil [3]int
	inSize, k, l                      int // elements of one channel of the image, of the kernel, of the output
}

func newGeom(w layout.Window, in, out []int) geom {
	g := geom{inSize: 1, k: 1, l: 1}
	lead := 3 - len(in)
	for i := range 3 {
		g.in[i], g.out[i], g.kernel[i], g.stride[i], g.dil[i] = 1, 1, 1, 1, 1
		if j := i - lead; j >= 0 {
			g.in[i], g.out[i], g.kernel[i] = in[j], out[j], w.Kernel[j]
			g.stride[i], g.pad[i], g.dil[i] = w.Stride[j], w.Padding[j], w.Dilation[j]
		}
		g.inSize *= g.in[i]
		g.k *= g.kernel[i]
		g.l *= g.out[i]
	}
	return g
}

// pointwise reports whether the window is 1×1 with stride 1 and no
// padding: the column matrix is then the image itself.
func (g *geom) pointwise() bool {
	return g.k == 1 && g.l == g.inSize && g.pad == [3]int{} && g.stride == [3]int{1, 1, 1}
}

// span returns the output positions o in [lo, hi) of dim i whose input
// position o·stride + off lies inside the input, off being the kernel
// element's offset less the padding.
func (g *geom) reach(i, off int) (lo, hi int) {
	s, n := g.stride[i], g.in[i]
	// ceil(a/s) for a > 0 is (a-1)/s + 1: a+s-1 overflows for a stride
	// near MaxInt. The window's check keeps n - off, at most n + padding,
	// inside an int.
	if off < 0 {
		lo = (-off-1)/s + 1
	}
	if n-off <= 0 {
		return lo, lo
	}
	hi = min((n-off-1)/s+1, g.out[i])
	return min(lo, hi), hi
}

// planes calls f for each channel ch, kernel element and output position
// of dim 0: a plane of out1 rows of out2 values of the column matrix,
// starting at element col (row (ch·K + k)·L + o0·out1·out2 of the matrix
// read flat). Rows a ≤ o1 < b of the plane read the input (the others lie
// over the padding of dim 0 or 1), row o1 reading the input from element
// img + o1·step; positions lo ≤ o < hi of a row read it, position o at
// o·stride2 + off of that input row.
func (g *geom) planes(c int, f func(col, img, step, a, b, lo, hi, off int)) {
	for ch := range c {
		kk := 0
		for k0 := range g.kernel[0] {
			for k1 := range g.kernel[1] {
				off1 := k1*g.dil[1] - g.pad[1]
				a, b := g.reach(1, off1)
				for k2 := range g.kernel[2] {
					col := (ch*g.k + kk) * g.l
					kk++
					off2 := k2*g.dil[2] - g.pad[2]
					lo, hi := g.reach(2, off2)
					for o0 := range g.out[0] {
						i0 := o0*g.stride[0] + k0*g.dil[0] - g.pad[0]
						a, b := a, b
						if i0 < 0 || i0 >= g.in[0] {
							a, b = 0, 0
						}
						f(col, ch*g.inSize+(i0*g.in[1]+off1)*g.in[2], g.stride[1]*g.in[2], a, b, lo, hi, off2)
						col += g.out[1] * g.out[2]
					}
				}
			}
		}
	}
}

// im2col writes the column matrix of img (c channels) into col. Where
// strides 1 and 2 are 1 and dim 2 keeps its size (a "same" convolution's
// padding) a plane's rows read the input at one distance, so the plane is
// one copy, and only the |off| values per row that it wrapped over from the
// next input row are cleared: a row of a small image is too short for the
// copy per row to pay its way.
func im2col[T any](col, img []T, c int, g *geom) {
	n, s := g.out[2], g.stride[2]
	flat := s == 1 && g.stride[1] == 1 && n == g.in[2]
	g.planes(c, func(c0, i0, step, a, b, lo, hi, off int) {
		plane := col[c0 : c0+g.out[1]*n]
		clear(plane[:a*n])
		clear(plane[b*n:])
		if lo >= hi {
			clear(plane[a*n : b*n])
			return
		}
		if flat && b > a {
			copy(plane[a*n+lo:(b-1)*n+hi], img[i0+a*step+lo+off:])
			for o1 := a; o1 < b; o1++ {
				row := plane[o1*n : (o1+1)*n]
				clear(row[:lo])
				clear(row[hi:])
			}
			return
		}
		for o1 := a; o1 < b; o1++ {
			row := plane[o1*n : (o1+1)*n]
			src := img[i0+o1*step+lo*s+off:]
			clear(row[:lo])
			if s == 1 {
				copy(row[lo:hi], src)
			} else {
				src = src[:(hi-lo-1)*s+1]
				for o := lo; o < hi; o++ {
					row[o] = src[(o-lo)*s]
				}
			}
			clear(row[hi:])
		}
	})
}

// col2im adds the column matrix col back into img (c channels): the
// adjoint of im2col, so overlapping windows sum. Where col is scratch,
// which col2im may overwrite, and im2col's rows would be one copy a plane,
// a plane is one add too, its wrapped-over values zeroed first: the add
// then runs in vector lanes (addTo) instead of a Go loop per short row.
func col2im[T float](img, col []T, c int, g *geom, scratch bool) {
	n, s := g.out[2], g.stride[2]
	flat := scratch && s == 1 && g.stride[1] == 1 && n == g.in[2]
	g.planes(c, func(c0, i0, step, a, b, lo, hi, off int) {
		if lo >= hi || a >= b {
			return
		}
		if flat {
			for o1 := a; o1 < b; o1++ {
				row := col[c0+o1*n : c0+(o1+1)*n]
				clear(row[:lo])
				clear(row[hi:])
			}
			src := col[c0+a*n+lo : c0+(b-1)*n+hi]
			addTo(img[i0+a*step+lo+off:][:len(src)], src)
			return
		}
		for o1 := a; o1 < b; o1++ {
			src := col[c0+o1*n+lo : c0+o1*n+hi]
			dst := img[i0+o1*step+lo*s+off:]
			if s == 1 {
				dst = dst[:len(src)]
				for i, v := range src {
					dst[i] += v
				}
				continue
			}
			dst = dst[:(len(src)-1)*s+1]
			for i, v := range src {
				dst[i*s] += v
			}
		}
	})
}

// addTo adds src to dst, which has src's length: in vector lanes for a
// long enough float32 row, in a Go loop otherwise.
func addTo[T float](dst, src []T) {
	if d, ok := any(dst).([]float32); ok && arithFloat32(opAdd, d, d, any(src).([]float32), 0) {
		return
	}
	for i, v := range src {
		dst[i] += v
	}
}

// convShapes is what the three conv kernels share: batch, channels in and
// out, groups, and the geometry of the window over x.
type convShapes struct {
	n, c, o, groups int
	g               geom
}

// cg, og and ck are the channels per group in and out, and the rows of a
// group's part of the column matrix.
func (s *convShapes) cg() int { return s.c / s.groups }
func (s *convShapes) og() int { return s.o / s.groups }
func (s *convShapes) ck() int { return s.c / s.groups * s.g.k }

func newConvShapes(x, y []int, win layout.Window, groups int) convShapes {
	return convShapes{n: x[0], c: x[1], o: y[1], groups: groups, g: newGeom(win, x[2:], y[2:])}
}

// columnsOf is image i of the batch x as its column matrix: im2col into
// col, or the image itself where col is nil (a pointwise window).
func columnsOf[T any](s *convShapes, col, x []T, i int) []T {
	img := x[i*s.c*s.g.inSize : (i+1)*s.c*s.g.inSize]
	if col == nil {
		return img
	}
	im2col(col, img, s.c, &s.g)
	return col
}

// colElem is what a column matrix holds: a float, or bfloat16 for the
// products on AMX's tiles (amx_conv.go).
type colElem interface {
	float | half.BFloat16
}

// perImage runs f over the batch on goroutines, giving each worker a
// column buffer of its own (nil when the window is pointwise).
func perImage[T colElem](s *convShapes, f func(i int, col []T)) {
	cost := s.o * s.ck() * s.g.l
	cols, chunk, release := columns[T](s, cost)
	defer release()
	parallel(s.n, cost, func(lo, hi int) {
		col := cols[lo/chunk]
		for i := lo; i < hi; i++ {
			f(i, col)
		}
	})
}

// columns makes the column buffers of the workers that parallel(s.n, cost,
// ...) starts, worker i/chunk taking image i's; they are nil when the
// window is pointwise. They are made here, on the kernel's goroutine, where
// newBuffer's refusal unwinds: c·k·l elements can pass what memory (or an
// int) holds for a long or dilated kernel over an expanded input. release
// gives them back to the pool.
func columns[T colElem](s *convShapes, cost int) (cols [][]T, chunk int, release func()) {
	workers, chunk := split(s.n, cost)
	if s.g.pointwise() || s.n == 0 {
		return make([][]T, workers), chunk, func() {}
	}
	size, ok := dispatch.CheckedNumel([]int{s.c, s.g.k, s.g.l})
	if !ok {
		panic(refusal{&dispatch.Error{Kind: dispatch.ErrOutOfMemory, Found: dispatch.FormatShape([]int{s.c, s.g.k, s.g.l}),
			Detail: "cpu: out of memory: a convolution's column matrix (channels, kernel, windows) has more elements than an int counts",
			Fix:    "use a smaller kernel or input"}})
	}
	cols, release = workerBuffers[T](workers, size)
	return cols, chunk, release
}

// workerBuffers makes one buffer of size elements for each of workers
// goroutines, from the pool, on the kernel's goroutine (where newBuffer's
// refusal unwinds); release gives them back.
func workerBuffers[T colElem](workers, size int) (bufs [][]T, release func()) {
	var dt dispatch.DType
	switch any(*new(T)).(type) {
	case float32:
		dt = dispatch.Float32
	case float64:
		dt = dispatch.Float64
	case half.BFloat16:
		dt = dispatch.BFloat16
	}
	ts := make([]*dispatch.Tensor, workers)
	bufs = make([][]T, workers)
	for w := range bufs {
		ts[w] = dispatch.NewTensor(dispatch.Device{Kind: kind}, dt, []int{size}, newBuffer(dt, size))
		bufs[w] = span[T](ts[w])
	}
	return bufs, func() {
		for _, t := range ts {
			t.Release()
		}
	}
}

// convForward: y_n,g = W_g · im2col(x_n)_g for each image n and group g.
func convForward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) {
	x, relX := dense[T](in[0])
	defer relX()
	w, relW := dense[T](in[1])
	defer relW()
	y := span[T](out)
	s := newConvShapes(in[0].Shape, out.Shape, a.WindowFor(in[1].Shape), a.Groups)
	if s.ck() == 0 {
		clear(y)
		return
	}
	if p, ok := directForward(&s); ok {
		if y32, ok := any(y).([]float32); ok && convDirect(p, convData{f32: y32}, convData{f32: any(x).([]float32)}, convData{f32: any(w).([]float32)}, s.n, s.groups, false) {
			return
		}
	}
	gemm := gemmOf[T]()
	l, og, ck := s.g.l, s.og(), s.ck()
	perImage(&s, func(i int, col []T) {
		col = columnsOf(&s, col, x, i)
		for gi := range s.groups {
			gemm(blas.NoTrans, blas.NoTrans, og, l, ck, 1, w[gi*og*ck:], ck, col[gi*ck*l:], l,
				0, y[(i*s.o+gi*og)*l:], l)
		}
	})
}

// convInputBackward: dx_n = col2im(W_gᵀ · g_n,g) over the groups, the
// adjoint of convForward in x (and so the transposed convolution).
func convInputBackward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) {
	gy, relG := dense[T](in[0])
	defer relG()
	w, relW := dense[T](in[1])
	defer relW()
	dx := span[T](out)
	s := newConvShapes(out.Shape, in[0].Shape, a.WindowFor(in[1].Shape), a.Groups)
	if p, ok := directInputGrad(&s); ok {
		if dx32, ok := any(dx).([]float32); ok && convDirect(p, convData{f32: dx32}, convData{f32: any(gy).([]float32)}, convData{f32: any(w).([]float32)}, s.n, s.groups, true) {
			return
		}
	}
	clear(dx)
	if s.ck() == 0 || s.o == 0 {
		return
	}
	gemm := gemmOf[T]()
	l, og, ck := s.g.l, s.og(), s.ck()
	perImage(&s, func(i int, col []T) {
		img := dx[i*s.c*s.g.inSize : (i+1)*s.c*s.g.inSize]
		direct := col == nil
		if direct {
			col = img
		}
		for gi := range s.groups {
			gemm(blas.Trans, blas.NoTrans, ck, l, og, 1, w[gi*og*ck:], ck, gy[(i*s.o+gi*og)*l:], l,
				0, col[gi*ck*l:], l)
		}
		if !direct {
			col2im(img, col, s.c, &s.g, true)
		}
	})
}

// convWeightBackward: dW_g = Σ_n g_n,g · im2col(x_n)_gᵀ. Each worker sums
// its images into a partial gradient of its own; the partials are added at
// the end. Where a group has more column rows than output channels (as a
// 3×3 kernel makes it: 144 against 16 at 16 channels) a worker sums the
// transpose, col_g · g_n,gᵀ, instead: OpenBLAS runs the product with the
// longer side as its rows a quarter faster (16×144 by 1024: 67 µs; 144×16
// by 1024: 51 µs, one core), and the partials are transposed as they are
// added.
func convWeightBackward[T float](out *dispatch.Tensor, in []*dispatch.Tensor, a ops.ConvParams) {
	x, relX := dense[T](in[0])
	defer relX()
	gy, relG := dense[T](in[1])
	defer relG()
	dw := span[T](out)
	s := newConvShapes(in[0].Shape, in[1].Shape, a.Window, a.Groups)
	clear(dw)
	if s.ck() == 0 || s.o == 0 {
		return
	}
	if p, ok := directWeightGrad(&s); ok {
		if dw32, ok := any(dw).([]float32); ok && p.weightGrad(convData{f32: dw32}, convData{f32: any(x).([]float32)}, convData{f32: any(gy).([]float32)}, s.n, s.groups) {
			return
		}
	}
	gemm := gemmOf[T]()
	l, og, ck := s.g.l, s.og(), s.ck()
	tr := ck > og
	var mu sync.Mutex
	cost := s.o * ck * l
	cols, chunk, release := columns[T](&s, cost)
	defer release()
	parts, releaseParts := workerBuffers[T](len(cols), len(dw)) // each worker's sum
	defer releaseParts()
	parallel(s.n, cost, func(lo, hi int) {
		part := parts[lo/chunk]
		clear(part)
		col := cols[lo/chunk]
		for i := lo; i < hi; i++ {
			c := columnsOf(&s, col, x, i)
			for gi := range s.groups {
				gg, cg, pg := gy[(i*s.o+gi*og)*l:], c[gi*ck*l:], part[gi*og*ck:]
				if tr {
					gemm(blas.NoTrans, blas.Trans, ck, og, l, 1, cg, l, gg, l, 1, pg, og)
				} else {
					gemm(blas.NoTrans, blas.Trans, og, ck, l, 1, gg, l, cg, l, 1, pg, ck)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !tr {
			for j, v := range part {
				dw[j] += v
			}
			return
		}
		for gi := range s.groups {
			pg, dg := part[gi*og*ck:(gi+1)*og*ck], dw[gi*og*ck:(gi+1)*og*ck]
			for j := range ck {
				for o, v := range pg[j*og : (j+1)*og] {
					dg[o*ck+j] += v
				}
			}
		}
	})
}

// unfold is im2col of each image: (N, C, H, W) to (N, C·K, L).
func unfold[T float](out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) {
	x, rel := dense[T](in[0])
	defer rel()
	y := span[T](out)
	g := newGeom(a.Window, in[0].Shape[2:], a.Window.OutShape(in[0].Shape[2:]))
	c := in[0].Shape[1]
	parallel(in[0].Shape[0], c*g.k*g.l, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			im2col(y[i*c*g.k*g.l:(i+1)*c*g.k*g.l], x[i*c*g.inSize:(i+1)*c*g.inSize], c, &g)
		}
	})
}

// fold is col2im of each image: (N, C·K, L) to (N, C, H, W), summing
// where windows overlap.
func fold[T float](out *dispatch.Tensor, in []*dispatch.Tensor, a ops.UnfoldParams) {
	x, rel := dense[T](in[0])
	defer rel()
	y := span[T](out)
	clear(y)
	g := newGeom(a.Window, a.OutputSize, a.Window.OutShape(a.OutputSize))
	c := out.Shape[1]
	parallel(out.Shape[0], c*g.k*g.l, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			col2im(y[i*c*g.inSize:(i+1)*c*g.inSize], x[i*c*g.k*g.l:(i+1)*c*g.k*g.l], c, &g, false)
		}
	})
}
