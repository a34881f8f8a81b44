package dispatch

// The narrow dtypes, float16, bfloat16, int8 and uint8, are storage types:
// a kernel loads them into a compute dtype (float32 for the 16-bit floats,
// int32 for the 8-bit integers), computes as it does for that dtype and
// stores its result rounded once, as PyTorch's kernels do with their opmath
// type. One wrapper, ViaCompute, gives every backend's wide kernels the
// narrow dtypes (and ViaBits the kernels that only move elements), so no
// kernel has a copy per narrow dtype and a backend brings only its storage
// and one conversion (a Converter):
//
//   - Widening is exact, so comparisons, max/min, argmax, indexing and
//     copies see the values themselves.
//   - A float result rounds to the nearest float16 or bfloat16, ties to
//     even; a sum, a product, a mean's sum, a matmul, a softmax or a
//     convolution accumulates in float32 and rounds once at the end, as
//     at::sum and at::mm do for torch.half on the cpu.
//   - An integer result keeps its low 8 bits, two's complement: int8's
//     127 + 1 is -128 and uint8's 0 - 1 is 255, PyTorch's wrapping. That
//     is exact for every op that the integer kernels have (add, sub, mul,
//     pow, sums, products and matmul are ring operations, whose low 8 bits
//     depend only on their operands' low 8 bits; max, min, abs, sign, clamp
//     and the comparisons keep the values).

// Narrow reports whether dt is a storage type computed in a wider one.
func Narrow(dt DType) bool { return (Halves | Bytes).Has(dt) }

// ComputeOf is the dtype that a kernel computes dt in: float32 for the
// 16-bit floats, int32 for the 8-bit integers, dt itself otherwise.
func ComputeOf(dt DType) DType {
	switch {
	case Halves.Has(dt):
		return Float32
	case Bytes.Has(dt):
		return Int32
	}
	return dt
}

// Computable is the part of set that a kernel written for set's wide
// dtypes computes through ViaCompute: the wide dtypes of set, and the
// narrow ones whose compute dtype set has.
func Computable(set DTypeSet) DTypeSet {
	out := set & Wide
	if set.Has(Float32) {
		out |= set & Halves
	}
	if set.Has(Int32) {
		out |= set & Bytes
	}
	return out
}

// An Allocator makes the temporaries that ViaCompute and Widened need: a
// Backend is one, and a backend may pass a smaller type of its own.
type Allocator interface {
	Alloc(dev Device, dt DType, n int) (Buffer, error)
}

// A Converter copies n consecutive elements of src, of dtype from, starting
// at element srcOff, into n consecutive elements of dst, of dtype to,
// starting at dstOff, on dev: exactly from a narrow dtype to its compute
// dtype, and back by rounding to nearest even (the 16-bit floats, NaN kept
// a NaN) or by keeping the low 8 bits (the 8-bit integers). It may only
// queue the work, as any kernel may.
type Converter func(dev Device, dst Buffer, to DType, dstOff int, src Buffer, from DType, srcOff, n int) error

// ViaCompute runs k, a kernel for the wide dtypes, on arguments and a
// result of any dtype: each narrow argument widened to its compute dtype
// (the span of storage it addresses, so a broadcast view stays small), and
// a narrow result computed into a temporary of its compute dtype, then
// rounded into out (contiguous, as dispatch allocates it) once. b allocates the temporaries and convert moves
// elements between the dtypes. A call with no narrow tensor goes straight
// to k; one whose temporary b refuses returns the refusal.
func ViaCompute[A any](b Allocator, convert Converter, k Kernel[A]) Kernel[A] {
	return via(b, convert, ComputeOf, k)
}

// ViaBits is ViaCompute for a kernel that moves elements without computing
// on them (a copy, a gather, a flip, a pad): a 16-bit float reaches it as
// the int32 of its bits and comes back as their low 16, so every pattern,
// a signalling NaN's too, moves as it is, where a float32 carrier quiets
// it. convert moves those bits between a 16-bit float and int32 (it is
// called with those dtypes); the 8-bit integers go as ViaCompute's.
func ViaBits[A any](b Allocator, convert Converter, k Kernel[A]) Kernel[A] {
	return via(b, convert, BitsOf, k)
}

// BitsOf is the dtype that ViaBits carries dt in: int32 for a narrow dtype,
// dt itself otherwise.
func BitsOf(dt DType) DType {
	if Narrow(dt) {
		return Int32
	}
	return dt
}

// via is ViaCompute with carrier the dtype each narrow dtype is carried in.
func via[A any](b Allocator, convert Converter, carrier func(DType) DType, k Kernel[A]) Kernel[A] {
	return func(out *Tensor, in []*Tensor, a A) error {
		some := Narrow(out.DType)
		for _, t := range in {
			some = some || Narrow(t.DType)
		}
		if !some {
			return k(out, in, a)
		}
		return viaCarrier(b, convert, carrier, k, out, in, a)
	}
}

// viaCarrier is via's call with some narrow tensor: a function of its own,
// so that the common call, with none, pays nothing for its deferred
// releases.
func viaCarrier[A any](b Allocator, convert Converter, carrier func(DType) DType, k Kernel[A], out *Tensor, in []*Tensor, a A) error {
	wide := make([]*Tensor, len(in))
	for i, t := range in {
		wide[i] = t
		if !Narrow(t.DType) {
			continue
		}
		w, err := widenedAs(b, convert, t, carrier(t.DType))
		if err != nil {
			return err
		}
		defer w.Release()
		wide[i] = w
	}
	o := out
	if Narrow(out.DType) {
		n := out.Numel()
		c := carrier(out.DType)
		buf, err := b.Alloc(out.Device, c, n)
		if err != nil {
			return err
		}
		o = NewTensor(out.Device, c, out.Shape, buf)
		defer o.Release()
	}
	if err := k(o, wide, a); err != nil {
		return err
	}
	if o == out {
		return nil
	}
	return convert(out.Device, out.Storage.Buffer, out.DType, out.Offset, o.Storage.Buffer, o.DType, 0, out.Numel())
}

// Widened is t (of a narrow dtype) in its compute dtype, exactly, with t's
// shape and strides over a new buffer that holds the span of t's storage
// that t addresses. The caller releases it.
func Widened(b Allocator, convert Converter, t *Tensor) (*Tensor, error) {
	return widenedAs(b, convert, t, ComputeOf(t.DType))
}

// widenedAs is Widened into dtype c.
func widenedAs(b Allocator, convert Converter, t *Tensor, c DType) (*Tensor, error) {
	lo, hi := t.Offset, t.Offset+1
	for d, s := range t.Shape {
		if s == 0 {
			lo, hi = t.Offset, t.Offset
			break
		}
		if st := t.Strides[d]; st < 0 {
			lo += (s - 1) * st
		} else {
			hi += (s - 1) * st
		}
	}
	n := hi - lo
	buf, err := b.Alloc(t.Device, c, n)
	if err != nil {
		return nil, err
	}
	w := NewTensor(t.Device, c, []int{n}, buf)
	defer w.Release()
	if err := convert(t.Device, buf, c, 0, t.Storage.Buffer, t.DType, lo, n); err != nil {
		return nil, err
	}
	return w.View(t.Shape, t.Strides, t.Offset-lo), nil
}
