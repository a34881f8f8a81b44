package cuda

import "github.com/lathe-ml/lathe/dispatch"

// The narrow dtypes (float16, bfloat16, int8, uint8) are stored narrow and
// computed wide through dispatch.ViaCompute, whose comment gives the rules,
// as on the cpu: register wraps every kernel, and this file brings the
// conversions (kernels/cuda/narrow.cu) and the wide temporaries' memory.

// convert is cuda's dispatch.Converter: convert_<from>_<to> of narrow.cu
// over n elements, queued on dev's stream.
func convert(dev dispatch.Device, dst dispatch.Buffer, to dispatch.DType, dstOff int, src dispatch.Buffer, from dispatch.DType, srcOff, n int) error {
	if n == 0 {
		return nil
	}
	out := &dispatch.Tensor{Offset: dstOff, DType: to, Device: dev, Storage: &dispatch.Storage{Buffer: dst, Len: dstOff + n}}
	x := &dispatch.Tensor{Offset: srcOff, DType: from, Device: dev, Storage: &dispatch.Storage{Buffer: src, Len: srcOff + n}}
	o, v := viewOf(out), viewOf(x)
	return forChunks(n, denseChunk(n, nil), func(start, m int) error { // 32-bit index: chunks past 2^31
		g, b := gridDense(dev, m, o, []view{v})
		return enqueue(dev, "narrow", "convert_"+suffix(from)+"_"+suffix(to), g, b, 0, o.moved(start).ptr, v.moved(start).ptr, int64(m))
	})
}

// computing is the dispatch.Allocator that dispatch.ViaCompute and
// dispatch.Widened take their wide temporaries from: cuda's caching
// allocator, through the allocate hook so that the tests can give them
// recorded or emulated memory.
type computing struct{}

func (computing) Alloc(dev dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	return allocate(dev, dt, n)
}

// widened is t in its compute dtype where t is narrow (the caller releases
// it), and t itself otherwise, with a release that does nothing.
func widened(t *dispatch.Tensor) (*dispatch.Tensor, func(), error) {
	if !dispatch.Narrow(t.DType) {
		return t, func() {}, nil
	}
	w, err := dispatch.Widened(computing{}, convert, t)
	if err != nil {
		return nil, func() {}, err
	}
	return w, w.Release, nil
}
