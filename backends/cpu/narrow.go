package cpu

import (
	"errors"
	"slices"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

// The narrow dtypes (float16, bfloat16, int8, uint8) are stored narrow and
// computed wide through dispatch.ViaCompute, whose comment gives the
// rules; the cpu brings its storage and convert.

// convert is the cpu's dispatch.Converter.
func convert(dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) error {
	if n <= chunk && convertBlock(dst, to, dstOff, src, from, srcOff, n) {
		return nil
	}
	out := &dispatch.Tensor{Shape: []int{n}, Strides: []int{1}, Offset: dstOff, DType: to, Device: dev, Storage: &dispatch.Storage{Buffer: dst, Len: dstOff + n}}
	x := &dispatch.Tensor{Shape: []int{n}, Strides: []int{1}, Offset: srcOff, DType: from, Device: dev, Storage: &dispatch.Storage{Buffer: src, Len: srcOff + n}}
	if dispatch.Narrow(from) {
		widenInto(out, x)
	} else {
		narrowInto(out, x)
	}
	return nil
}

// convertBlock converts a block of 16-bit floats to float32 or back, as
// registerElementwise does a few thousand times a step, straight over the
// buffers with the machine's conversion loop, without the tensors and the
// goroutine split of the general path; it reports whether it did (not:
// other dtypes, or no F16C).
func convertBlock(dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) bool {
	bf := from == dispatch.BFloat16 || to == dispatch.BFloat16
	switch {
	case dispatch.Halves.Has(from) && to == dispatch.Float32:
		return widen16(dst.(*buffer[float32]).data[dstOff:dstOff+n], bits16(src)[srcOff:srcOff+n], bf)
	case from == dispatch.Float32 && dispatch.Halves.Has(to):
		return narrow16(bits16(dst)[dstOff:dstOff+n], src.(*buffer[float32]).data[srcOff:srcOff+n], bf)
	}
	return false
}

// widenHalf widens the float16 (or, where bf, bfloat16) bits at src into
// dst, exactly: the machine's conversion loop where it has one.
func widenHalf(dst []float32, src []uint16, bf bool) {
	if widen16(dst, src, bf) {
		return
	}
	for i, v := range src {
		if bf {
			dst[i] = half.BFloat16(v).Float32()
		} else {
			dst[i] = half.Float16(v).Float32()
		}
	}
}

// roundHalf rounds src into dst's float16 (or, where bf, bfloat16) bits,
// to nearest even.
func roundHalf(dst []uint16, src []float32, bf bool) {
	if narrow16(dst, src, bf) {
		return
	}
	for i, v := range src {
		if bf {
			dst[i] = half.BFloat16FromFloat32(v)
		} else {
			dst[i] = half.Float16FromFloat32(v)
		}
	}
}

// bits16 is the bits of a 16-bit float buffer's elements.
func bits16(b dispatch.Buffer) []uint16 {
	if f, ok := b.(*buffer[half.Float16]); ok {
		return uint16s(f.data)
	}
	return uint16s(b.(*buffer[half.BFloat16]).data)
}

// widened is t (of a narrow dtype) in its compute dtype, for a kernel that
// moves narrow elements itself (cast); a temporary the pool refuses
// unwinds as newBuffer's do.
func widened(t *dispatch.Tensor) *dispatch.Tensor {
	w, err := dispatch.Widened(backend{}, convert, t)
	if err != nil {
		panic(refusal{err})
	}
	return w
}

// widenInto writes x, of a narrow dtype, into out, of its compute dtype and
// x's shape (any layouts), exactly.
func widenInto(out, x *dispatch.Tensor) {
	switch x.DType {
	case dispatch.Float16:
		mapRows1To(out, x, func(d []float32, s []half.Float16) bool { return widen16(d, uint16s(s), false) }, half.Float16.Float32)
	case dispatch.BFloat16:
		mapRows1To(out, x, func(d []float32, s []half.BFloat16) bool { return widen16(d, uint16s(s), true) }, half.BFloat16.Float32)
	case dispatch.Int8:
		map1(out, x, func(v int8) int32 { return int32(v) })
	case dispatch.Uint8:
		map1(out, x, func(v uint8) int32 { return int32(v) })
	}
}

// narrowInto rounds x, of out's compute dtype and shape (any layout), into
// out: to nearest even for the 16-bit floats, the low 8 bits for the 8-bit
// integers.
func narrowInto(out, x *dispatch.Tensor) {
	switch out.DType {
	case dispatch.Float16:
		mapRows1To(out, x, func(d []half.Float16, s []float32) bool { return narrow16(uint16s(d), s, false) },
			func(v float32) half.Float16 { return half.Float16(half.Float16FromFloat32(v)) })
	case dispatch.BFloat16:
		mapRows1To(out, x, func(d []half.BFloat16, s []float32) bool { return narrow16(uint16s(d), s, true) },
			func(v float32) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(v)) })
	case dispatch.Int8:
		map1(out, x, func(v int32) int8 { return int8(v) })
	case dispatch.Uint8:
		map1(out, x, func(v int32) uint8 { return uint8(v) })
	}
}

// mapRows1To is map1 from T to U with a vector loop for contiguous runs:
// rows writes dst from src and reports whether it did (a machine without
// the instructions, a short run), else f runs per element.
func mapRows1To[T, U any](out, x *dispatch.Tensor, rows func(dst []U, src []T) bool, f func(T) U) {
	if !flat(out, x) {
		map1(out, x, f)
		return
	}
	o, a := span[U](out), span[T](x)
	parallelPieces(len(o), 1, func(lo, hi int) {
		if rows(o[lo:hi], a[lo:hi]) {
			return
		}
		for i, v := range a[lo:hi] {
			o[lo+i] = f(v)
		}
	})
}

// uint16s is the bits of a slice of 16-bit floats.
func uint16s[T ~uint16](v []T) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// chunk is about the number of elements that registerElementwise
// converts at a time: four float32 chunks (three arguments and a result)
// stay in a core's L2 cache.
const chunk = 1 << 14

// registerElementwise is registerFor for an op whose every result element
// depends only on the arguments' elements at its own index, broadcast (the
// unary and binary ops). Where some tensor is narrow, the result is
// computed a block of its leading dim at a time, each block of each
// argument widened, computed and rounded while it is in cache, on the
// goroutines that parallel starts; an argument broadcast along that dim (a
// bias) is widened once. dispatch.ViaCompute widened whole tensors into
// temporaries as large as the arguments: a bfloat16 ReLU of
// [32,16,32,32] made three passes over 2 MiB of new memory. A call whose
// tensors are laid out otherwise goes through ViaCompute; the commonest
// ops on dense tensors of one 16-bit dtype go to C whole (fusedHalf).
func registerElementwise[A any](op *dispatch.Op[A], dtypes dispatch.DTypeSet, k dispatch.Kernel[A]) {
	wide := dispatch.ViaCompute(backend{}, convert, k)
	hop, fused := halfOps[op.Name]
	registerNative(op, dispatch.Computable(dtypes), func(out *dispatch.Tensor, in []*dispatch.Tensor, a A) error {
		if fused && fusedHalf(hop, out, in) {
			return nil
		}
		if !chunkable(out, in) {
			return wide(out, in, a)
		}
		return inBlocks(out, in, a, k)
	})
}

// chunkable reports whether registerElementwise computes a call a block at
// a time: some tensor is narrow, out is contiguous, and each argument is
// either contiguous with out's leading dim or broadcast along it.
func chunkable(out *dispatch.Tensor, in []*dispatch.Tensor) bool {
	narrow := dispatch.Narrow(out.DType)
	for _, t := range in {
		narrow = narrow || dispatch.Narrow(t.DType)
	}
	if !narrow || out.Rank() == 0 || out.Numel() == 0 || !out.IsContiguous() {
		return false
	}
	for _, t := range in {
		if !alongLead(t, out) && !acrossLead(t, out) {
			return false
		}
	}
	return true
}

// alongLead reports whether t has out's rank and leading dim and is
// contiguous, so that a block of out's leading dim is a block of t's.
func alongLead(t, out *dispatch.Tensor) bool {
	return t.Rank() == out.Rank() && t.Rank() > 0 && t.Shape[0] == out.Shape[0] && t.IsContiguous()
}

// acrossLead reports whether t is broadcast along out's leading dim: every
// block of out reads all of it.
func acrossLead(t, out *dispatch.Tensor) bool {
	return t.Rank() < out.Rank() || (t.Rank() == out.Rank() && t.Shape[0] == 1 && out.Shape[0] != 1)
}

// inBlocks runs k over blocks of rows of out's leading dim (chunkable
// holds), each narrow argument's block in a scratch of its compute dtype.
func inBlocks[A any](out *dispatch.Tensor, in []*dispatch.Tensor, a A, k dispatch.Kernel[A]) error {
	rows := out.Shape[0]
	per := max(1, chunk/(out.Numel()/rows)) // rows a block
	blocks := (rows + per - 1) / per
	workers, perWorker := split(blocks, per*(out.Numel()/rows))
	all := append([]*dispatch.Tensor{out}, in...)
	var temps []*dispatch.Tensor
	defer func() {
		for _, t := range temps {
			t.Release()
		}
	}()
	// An argument broadcast along the leading dim is widened once;
	// scratch[w][i] is worker w's block of tensor all[i], where that is
	// narrow and blocked.
	whole := make([]*dispatch.Tensor, len(all))
	scratch := make([][]*dispatch.Tensor, workers)
	for w := range scratch {
		scratch[w] = make([]*dispatch.Tensor, len(all))
	}
	for i, t := range all {
		switch {
		case i > 0 && acrossLead(t, out) && dispatch.Narrow(t.DType):
			wt, err := dispatch.Widened(backend{}, convert, t)
			if err != nil {
				return err
			}
			temps = append(temps, wt)
			whole[i] = wt
		case i > 0 && acrossLead(t, out):
			whole[i] = t
		case dispatch.Narrow(t.DType):
			c, n := dispatch.ComputeOf(t.DType), per*(t.Numel()/rows)
			for w := range scratch {
				s := dispatch.NewTensor(out.Device, c, []int{n}, newBuffer(c, n))
				temps = append(temps, s)
				scratch[w][i] = s
			}
		}
	}
	errs := make([]error, workers)
	parallel(blocks, per*(out.Numel()/rows), func(lo, hi int) {
		w := lo / perWorker
		// A worker's views of its blocks are made once per block size
		// (every block but the last has per rows), and moved from block to
		// block: a view is a few allocations, and a step of a model in
		// bfloat16 walks thousands of blocks.
		views := make([]*dispatch.Tensor, len(all))
		viewRows := 0
		release := func() {
			for i, v := range views {
				if whole[i] == nil && v != nil {
					v.Release()
				}
			}
		}
		defer release()
		for b := lo; b < hi && errs[w] == nil; b++ {
			r0, r1 := b*per, min((b+1)*per, rows)
			if r1-r0 != viewRows {
				release()
				viewRows = r1 - r0
				for i, t := range all {
					switch {
					case whole[i] != nil:
						views[i] = whole[i]
					case scratch[w][i] != nil:
						shape := slices.Clone(t.Shape)
						shape[0] = viewRows
						views[i] = scratch[w][i].View(shape, dispatch.ContiguousStrides(shape), 0)
					default:
						shape := slices.Clone(t.Shape)
						shape[0] = viewRows
						views[i] = t.View(shape, dispatch.ContiguousStrides(shape), t.Offset)
					}
				}
			}
			for i, t := range all {
				inner := t.Numel() / rows
				switch {
				case whole[i] != nil:
				case scratch[w][i] != nil:
					if i > 0 {
						s := scratch[w][i]
						convert(t.Device, s.Storage.Buffer, s.DType, 0, t.Storage.Buffer, t.DType, t.Offset+r0*inner, viewRows*inner)
					}
				default:
					views[i].Offset = t.Offset + r0*inner // this worker's own view
				}
			}
			errs[w] = unwound(func() error { return k(views[0], views[1:], a) })
			if s := scratch[w][0]; errs[w] == nil && s != nil {
				inner := out.Numel() / rows
				convert(out.Device, out.Storage.Buffer, out.DType, out.Offset+r0*inner, s.Storage.Buffer, s.DType, 0, viewRows*inner)
			}
		}
	})
	return errors.Join(errs...)
}

// unwound runs f and returns its error, or the refusal of a temporary it
// panicked with (newBuffer), which off the kernel's own goroutine would
// end the process.
func unwound(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			ref, ok := r.(refusal)
			if !ok {
				panic(r)
			}
			err = ref.err
		}
	}()
	return f()
}
