package lathe

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// checkShape refuses negative sizes and sizes whose product passes what an
// int counts, and resolves one -1 against n elements (n < 0: no -1
// allowed).
func checkShape(op string, shape []int, n int) ([]int, error) {
	out := append([]int{}, shape...)
	infer := -1
	for i, s := range out {
		switch {
		case s == -1 && n >= 0 && infer < 0:
			infer = i
		case s < 0:
			fix := "sizes are at least 0"
			if n >= 0 {
				fix += "; one size may be -1 to be inferred from the data's length"
			}
			return nil, errorf(op, ErrShape, "shape", "has size "+strconv.Itoa(s)+" in "+dispatch.FormatShape(shape), fix)
		}
	}
	rest := out
	if infer >= 0 {
		rest = slices.Delete(slices.Clone(out), infer, infer+1)
	}
	known, ok := dispatch.CheckedNumel(rest)
	if !ok {
		return nil, located(dispatch.ShapeError("shape", shape), op)
	}
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, errorf(op, ErrShape, "shape", dispatch.FormatShape(shape)+" cannot hold "+strconv.Itoa(n)+" elements",
				"give sizes whose product divides the data's length")
		}
		out[infer] = n / known
	} else if n >= 0 && known != n {
		return nil, errorf(op, ErrShape, "shape", "is "+dispatch.FormatShape(shape)+", which holds "+strconv.Itoa(known)+
			" elements, but the data has "+strconv.Itoa(n), "give a shape whose sizes multiply to the data's length")
	}
	return out, nil
}

func upload(op string, dev Device, data any, dt DType, shape []int) *Tensor {
	t, err := dispatch.Upload(dev, data, dt, shape)
	if err != nil {
		return failed(located(err, op))
	}
	return wrap(t)
}

// FromSlice makes a tensor on dev from a copy of data. With no shape it is
// 1-D; otherwise the sizes must multiply to len(data), and one may be -1.
func FromSlice[T Element](dev Device, data []T, shape ...int) *Tensor {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	s, err := checkShape("from_slice", shape, len(data))
	if err != nil {
		return failed(err)
	}
	// Into the pool's memory on the cpu, which a released tensor gives
	// back for the next (a batch made each step reuses it).
	t, d, err := emptyLent("from_slice", dev, dtypeOf[T](), s)
	switch {
	case err != nil:
		return failed(err)
	case t != nil:
		copy(d.([]T), data)
		return wrap(t)
	}
	return upload("from_slice", dev, append([]T(nil), data...), dtypeOf[T](), s)
}

// Scalar makes a 0-d tensor holding v.
func Scalar[T Element](dev Device, v T) *Tensor {
	return upload("scalar", dev, []T{v}, dtypeOf[T](), []int{})
}

// Full makes a tensor of the given shape with every element value.
func Full(dev Device, dt DType, value float64, shape ...int) *Tensor {
	return full("full", dev, dt, value, shape)
}

// Zeros makes a tensor of zeros.
func Zeros(dev Device, dt DType, shape ...int) *Tensor { return full("zeros", dev, dt, 0, shape) }

// Ones makes a tensor of ones.
func Ones(dev Device, dt DType, shape ...int) *Tensor { return full("ones", dev, dt, 1, shape) }

// full makes the tensor with ops.Filled, which fills a small one on the
// host and a larger one on the device, after the checks of the dtype and
// the value that name op.
func full(op string, dev Device, dt DType, v float64, shape []int) *Tensor {
	s, err := checkShape(op, shape, -1)
	if err != nil {
		return failed(err)
	}
	if _, err := filled(op, dt, 0, v); err != nil {
		return failed(err)
	}
	t, err := ops.Filled(dev, dt, v, s)
	if err != nil {
		e := *located(err, op)
		e.Op = op // the copy is how zeros works, not what the caller called
		return failed(&e)
	}
	return wrap(t)
}

// filled makes host data of n elements equal to v, refusing a value the
// dtype cannot hold (3e9 in int32, ops.CheckScalar) or hold exactly (1.5 in
// int32) rather than wrapping or rounding it.
func filled(op string, dt DType, n int, v float64) (any, error) {
	if dt.Valid() {
		if err := ops.CheckScalar(dt, v, "value"); err != nil {
			return nil, located(err, op)
		}
	}
	if data := ops.FilledData(dt, n, v); data != nil {
		return data, nil
	}
	return nil, errorf(op, ErrDType, "dtype", "is not a dtype", "use one of lathe's dtypes, such as lathe.Float32")
}

// Arange makes the 1-D tensor start, start+step, ... up to but not including
// stop, with ceil((stop-start)/step) elements, as torch.arange does. For
// an integer dtype start, stop and step are integers (ErrValue
// otherwise); Bool is ErrDType, as in torch.
func Arange(dev Device, dt DType, start, stop, step float64) *Tensor {
	for _, a := range [...]struct {
		name string
		v    float64
	}{{"start", start}, {"stop", stop}, {"step", step}} {
		if math.IsNaN(a.v) || math.IsInf(a.v, 0) {
			return failed(errorf("arange", ErrValue, a.name, "is "+ftoa(a.v), "use a finite start, stop and step"))
		}
	}
	if step == 0 {
		return failed(errorf("arange", ErrValue, "step", "is 0", "use a nonzero step"))
	}
	switch {
	case dt == Bool: // as torch has no arange for bool
		return failed(errorf("arange", ErrDType, "dtype", "is bool, which has no values past false and true", "use a numeric dtype"))
	case dt.IsInt():
		// torch truncates an integer dtype's start, stop and step (and
		// counts int64's elements from them but the others' from the
		// float values): 0.5 by 0.5 would repeat each value, and -0.5
		// from start shift them. As Full refuses 1.5 for an int32, so
		// does Arange.
		for _, a := range [...]struct {
			name string
			v    float64
		}{{"start", start}, {"stop", stop}, {"step", step}} {
			if a.v != math.Trunc(a.v) {
				return failed(errorf("arange", ErrValue, a.name, "is "+ftoa(a.v)+", not an integer, but the dtype is "+dt.String(),
					"use an integral start, stop and step, or a float dtype"))
			}
		}
	}
	count := math.Ceil((stop - start) / step)
	if count < 0 {
		return failed(errorf("arange", ErrValue, "step", "has the wrong sign for the range from start to stop", "swap start and stop or negate step"))
	}
	if count >= math.MaxInt { // 2⁶³ as a float64: int(count) would not fit
		return failed(errorf("arange", ErrShape, "stop", "gives "+strconv.FormatFloat(count, 'g', 3, 64)+" elements from start "+ftoa(start)+
			" by step "+ftoa(step)+", more than an int counts", "use a shorter range or a larger step"))
	}
	n := int(count)
	if err := checkHost("arange", "stop", n, 8+dt.Size()); err != nil { // 8: the float64 values made first
		return failed(err)
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = start + float64(i)*step
	}
	return hostTensor("arange", dev, dt, vals, []int{n})
}

// Eye makes the n×n identity matrix.
func Eye(dev Device, dt DType, n int) *Tensor {
	if n < 0 {
		return failed(errorf("eye", ErrShape, "n", "is "+strconv.Itoa(n), "use n ≥ 0"))
	}
	nn, ok := dispatch.CheckedMul(n, n)
	if !ok {
		return failed(located(dispatch.ShapeError("n", []int{n, n}), "eye"))
	}
	if err := checkHost("eye", "n", nn, 8+dt.Size()); err != nil {
		return failed(err)
	}
	vals := make([]float64, nn)
	for i := range n {
		vals[i*n+i] = 1
	}
	return hostTensor("eye", dev, dt, vals, []int{n, n})
}

// checkHost refuses to make n elements of size bytes each in host memory
// (the values a constructor computes there before the upload) where the
// bytes pass what an int counts or what the machine has available: an
// ErrOutOfMemory error saying how much was asked and what is free, where
// Go would stop the program with its fatal out of memory. arg names the
// argument that gave the size.
func checkHost(op, arg string, n, size int) error {
	bytes, ok := dispatch.CheckedMul(n, size)
	if ok && bytes < 1<<20 {
		return nil // less than reading /proc/meminfo costs to find out
	}
	avail, total := alloc.HostMemory()
	free := ""
	if total > 0 {
		free = "; the machine has " + alloc.FormatBytes(avail) + " available of " + alloc.FormatBytes(total)
	}
	switch {
	case !ok:
		return errorf(op, ErrOutOfMemory, arg, "asks for "+strconv.Itoa(n)+" × "+strconv.Itoa(size)+
			" bytes of host memory, more than an int counts"+free, "use a smaller size")
	case total > 0 && int64(bytes) > avail:
		return errorf(op, ErrOutOfMemory, arg, "asks for "+alloc.FormatBytes(int64(bytes))+" of host memory for the values"+free,
			"use a smaller size, or free memory that other programs hold")
	}
	return nil
}

// hostTensor converts float64 host values to dt and uploads them.
func hostTensor(op string, dev Device, dt DType, vals []float64, shape []int) *Tensor {
	data := ops.HostData(dt, vals)
	if data == nil {
		return failed(errorf(op, ErrDType, "dtype", "is not a dtype", "use one of lathe's dtypes, such as lathe.Float32"))
	}
	return upload(op, dev, data, dt, shape)
}

// Rand makes a float tensor of values uniform on [0, 1).
func Rand(dev Device, dt DType, shape ...int) *Tensor { return randUniform("rand", dev, dt, shape) }

// randUniform is Rand, its errors naming op (rand or rand_like).
func randUniform(op string, dev Device, dt DType, shape []int) *Tensor {
	fill32 := drawUniform[float32]
	if bits := halfDigits[dt]; bits != 0 {
		// A multiple of 2^-bits, as torch draws a half: rounding a float32
		// draw could give 1.
		fill32 = eachDraw(func() float32 { return float32(rng().Uint32()>>(32-bits)) / float32(uint32(1)<<bits) })
	}
	return random(op, dev, dt, shape, drawUniform[float64], fill32)
}

// halfDigits is the significand bits of the 16-bit floats, with the
// implicit one.
var halfDigits = map[DType]int{Float16: 11, BFloat16: 8}

// RandN makes a float tensor of standard normal values: math/rand/v2's
// NormFloat64 drawn one by one from the stream that Seed resets (rounded
// once to float32 and the 16-bit floats), a long tensor's in parallel
// parts with the same values (random_normal.go).
func RandN(dev Device, dt DType, shape ...int) *Tensor { return randNormal("randn", dev, dt, shape) }

// randNormal is RandN, its errors naming op (randn or randn_like).
func randNormal(op string, dev Device, dt DType, shape []int) *Tensor {
	return random(op, dev, dt, shape, drawNormal[float64], drawNormal[float32])
}

// eachDraw fills a slice with draw's values, one by one.
func eachDraw[T float32 | float64](draw func() T) func([]T) {
	return func(d []T) {
		for i := range d {
			d[i] = draw()
		}
	}
}

// random makes a tensor of draws from the stream: fill64 fills float64's,
// fill32 float32's (so that a uniform float32 is drawn as one and never
// rounds up to 1), which a 16-bit float rounds once, as
// torch.rand(dtype=torch.half) does. Both are called with rngMu held.
func random(op string, dev Device, dt DType, shape []int, fill64 func([]float64), fill32 func([]float32)) *Tensor {
	if !dt.IsFloat() {
		return failed(errorf(op, ErrDType, "dtype", "is "+dt.String()+" but random values are float", "use lathe.Float32 or lathe.Float64"))
	}
	s, err := checkShape(op, shape, -1)
	if err != nil {
		return failed(err)
	}
	n := dispatch.Numel(s)
	if err := checkHost(op, "shape", n, dt.Size()); err != nil {
		return failed(err)
	}
	switch dt {
	case Float64:
		return drawFloats(op, dev, dt, s, n, fill64)
	case Float32:
		return drawFloats(op, dev, dt, s, n, fill32)
	}
	return drawAndUpload(op, dev, dt, s, func(*rand.Rand) any {
		d := make([]float32, n)
		fill32(d)
		return ops.HostData(dt, widen(d))
	})
}

// FromHalfBits makes a float16 or bfloat16 tensor (dt) on dev from a copy
// of bits, each element's 16 bits as HalfBits gives them, kept as they are
// (no rounding, NaN payloads included). With no shape it is 1-D;
// otherwise the sizes must multiply to len(bits), and one may be -1.
func FromHalfBits(dev Device, dt DType, bits []uint16, shape ...int) *Tensor {
	const op = "from_half_bits"
	if !dispatch.Halves.Has(dt) {
		return failed(errorf(op, ErrDType, "dt", "is "+dt.String()+", not a 16-bit float dtype", "use lathe.Float16 or lathe.BFloat16"))
	}
	if len(shape) == 0 {
		shape = []int{len(bits)}
	}
	s, err := checkShape(op, shape, len(bits))
	if err != nil {
		return failed(err)
	}
	var data any
	if dt == Float16 {
		data = convertEach(bits, func(b uint16) half.Float16 { return half.Float16(b) })
	} else {
		data = convertEach(bits, func(b uint16) half.BFloat16 { return half.BFloat16(b) })
	}
	return upload(op, dev, data, dt, s)
}
