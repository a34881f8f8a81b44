package lathe

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// What the fuzz targets (ops_*_fuzz_test.go, dtype_fuzz_test.go) share: a
// reader that turns the fuzzer's bytes into shapes, dims, dtypes and
// values, and the oracle, which is lathe's own promises rather than a
// second implementation of each op:
//
//   - nothing panics or hangs (the fuzzer reports both);
//   - an error is a *lathe.Error of one of the kinds, naming an op;
//   - a result has the shape and dtype that the op's rule gives;
//   - wgpu:0, where it opens, gives what the cpu gives, within tolerance,
//     or fails with the same kind;
//   - a view never reaches outside its storage.
//
// No input is skipped for a known defect: every class that issue 15 named
// is fixed, and the oracle says what lathe does for it.

// fzReader hands out the fuzzer's bytes as choices; past the end every
// choice is 0.
type fzReader struct {
	b []byte
	i int
}

func (r *fzReader) byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

// intn is a choice in [0, n).
func (r *fzReader) intn(n int) int { return int(r.byte()) % n }

// fzExtremes are sizes, dims and attributes near the edges of int.
var fzExtremes = []int{-1, -2, math.MaxInt, math.MinInt, math.MaxInt - 1, 1 << 31, 1 << 32, 1 << 40, 1 << 62, -(1 << 62), math.MaxInt32, math.MinInt32}

// size is mostly a small size (0 to 4), and one time in 32 an extreme.
func (r *fzReader) size() int {
	c := r.byte()
	if c >= 248 {
		return fzExtremes[int(c-248)%len(fzExtremes)]
	}
	return int(c) % 5
}

// small is a size in [0, n).
func (r *fzReader) small(n int) int { return r.intn(n) }

// dim is a dim of a rank-r tensor, mostly in [-r-1, r], one time in 32 an
// extreme.
func (r *fzReader) dim(rank int) int {
	c := r.byte()
	if c >= 248 {
		return fzExtremes[int(c-248)%len(fzExtremes)]
	}
	return int(c)%(2*rank+3) - rank - 1
}

// shape is a shape of rank at most maxRank with at most maxNumel elements
// (sizes 0 to 4).
func (r *fzReader) shape(maxRank, maxNumel int) []int {
	rank := r.intn(maxRank + 1)
	s := make([]int, rank)
	n := 1
	for i := range s {
		s[i] = r.intn(5)
		if n*max(s[i], 1) > maxNumel {
			s[i] = 1
		}
		n *= max(s[i], 1)
	}
	return s
}

// fzSpecials are the values that break arithmetic.
var fzSpecials = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, -2.5,
	3e38, -3e38, 1e-40, 3e9, -3e9, 1 << 31, 1 << 53, 88.7, -104, 1e4}

// value is a small number, or one time in four a special.
func (r *fzReader) value() float64 {
	c := r.byte()
	if c%4 == 3 {
		return fzSpecials[int(c/4)%len(fzSpecials)]
	}
	return float64(int(c/4)%17-8) / 2
}

// fzDTypes are the dtypes the targets draw from.
var fzDTypes = []DType{Float32, Float64, Int32, Int64, Bool}

// tensor makes a tensor of dt and shape on the cpu from the reader's values.
func (r *fzReader) tensor(dt DType, shape []int) *Tensor {
	n := dispatch.Numel(shape)
	v := make([]float64, n)
	for i := range v {
		v[i] = r.value()
	}
	return fzTensor(v, dt, shape)
}

// fzTensor makes a cpu tensor of dt holding v, converted as a Go
// conversion would (saturated for integers, so that no value is undefined);
// an empty shape is 0-d.
func fzTensor(v []float64, dt DType, shape []int) *Tensor {
	switch dt {
	case Float32:
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = float32(x)
		}
		return FromSlice(CPU, out).Reshape(shape...)
	case Float64:
		return FromSlice(CPU, slices.Clone(v)).Reshape(shape...)
	case Int32:
		out := make([]int32, len(v))
		for i, x := range v {
			out[i] = int32(fzSaturate(x, math.MinInt32, math.MaxInt32))
		}
		return FromSlice(CPU, out).Reshape(shape...)
	case Int64:
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(fzSaturate(x, -1<<62, 1<<62))
		}
		return FromSlice(CPU, out).Reshape(shape...)
	case Int8, Uint8:
		lo, hi := -128.0, 127.0
		if dt == Uint8 {
			lo, hi = 0, 255
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = math.Trunc(fzSaturate(x, lo, hi))
		}
		return FromSlice(CPU, out).Reshape(shape...).Cast(dt)
	case Float16, BFloat16:
		return FromSlice(CPU, slices.Clone(v)).Reshape(shape...).Cast(dt)
	}
	out := make([]bool, len(v))
	for i, x := range v {
		out[i] = x != 0
	}
	return FromSlice(CPU, out).Reshape(shape...)
}

func fzSaturate(x, lo, hi float64) float64 {
	switch {
	case math.IsNaN(x):
		return 0
	case x < lo:
		return lo
	case x > hi:
		return hi
	}
	return math.Trunc(x)
}

// fzScalarKind is the kind with which a tensor of dt refuses the scalar
// v as a fill value or an arithmetic operand, or nil where it takes it
// (ops.CheckScalar, written again): an integer dtype takes only integers
// in its range (ErrValue past it, NaN and ±Inf included, as PyTorch's
// "value cannot be converted to type int without overflow"; ErrDType for
// a fraction, where torch would truncate a fill; an arithmetic operand
// with a fraction promotes instead, and never meets this rule),
// float32 any value but a finite one past its range (ErrValue, as torch),
// float64 and Bool any value.
func fzScalarKind(dt DType, v float64) error {
	switch dt {
	case Int32, Int64:
		lo, end := float64(math.MinInt32), float64(1<<31)
		if dt == Int64 {
			lo, end = math.MinInt64, 1<<63
		}
		switch {
		case !(v >= lo && v <= end-1 && v < end): // 2147483647.5 is out; NaN too
			return ErrValue
		case v != math.Trunc(v):
			return ErrDType
		}
	case Float32:
		if !math.IsInf(v, 0) && math.Abs(v) > math.MaxFloat32 {
			return ErrValue
		}
	}
	return nil
}

// fzGPU is wgpu:0 where it opens, else nil.
func fzGPU() *Device {
	d, _ := fzOpenGPU()
	return d
}

// fzOpenGPU is wgpu:0, or why it does not open.
var fzOpenGPU = sync.OnceValues(func() (*Device, error) {
	d := WGPU(0)
	if err := Ones(d, Float32, 1).Err(); err != nil {
		return nil, err
	}
	return &d, nil
})

// fzGPUFor opens wgpu:0 for a test that compares the cpu with it, or says
// by name that the comparison is left out (testenv.Without). Each fuzz
// target calls it before f.Fuzz, so that a fuzzing worker opens the
// device (a second or two) before it runs inputs, not inside one, where
// the fuzzer's deadline may find it.
func fzGPUFor(t testing.TB) *Device {
	t.Helper()
	d, err := fzOpenGPU()
	if err != nil {
		testenv.Without(t, "wgpu:0", "it does not open here (%v); the cpu runs alone", err)
	}
	return d
}

// fzKinds are the kinds an error may have.
var fzKinds = []error{ErrDevice, ErrShape, ErrDType, ErrReleased, ErrOutOfMemory, ErrUnavailable,
	ErrUnsupported, ErrIndex, ErrValue, ErrGrad}

// fzKind checks that err is a *lathe.Error of a known kind that names an
// op, and returns the kind.
func fzKind(t *testing.T, label string, err error) error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%s: error %v (%T) is not a *lathe.Error", label, err, err)
	}
	if !slices.Contains(fzKinds, e.Kind) {
		t.Fatalf("%s: error %v has kind %v, not one of lathe's", label, err, e.Kind)
	}
	if e.Op == "" {
		t.Fatalf("%s: error %q names no op", label, err)
	}
	return e.Kind
}

// fzHost is x's elements widened to float64, and its shape and dtype.
func fzHost(x *Tensor) ([]float64, error) {
	data, err := x.host("fuzz")
	if err != nil {
		return nil, err
	}
	return asFloat64s(data), nil
}

// fzClose reports whether got is want within tol, relative above 1; NaN
// matches NaN and infinities their own sign.
func fzClose(got, want, tol float64) bool {
	switch {
	case math.IsNaN(want) || math.IsNaN(got):
		return math.IsNaN(want) && math.IsNaN(got)
	case math.IsInf(want, 0) || math.IsInf(got, 0):
		// Past float32's largest finite value one device may round to
		// infinity where another keeps 3.4e38.
		return got == want || math.Abs(got) > 1e38 && math.Abs(want) > 1e38 && math.Signbit(got) == math.Signbit(want)
	}
	return math.Abs(got-want) <= tol*max(1, math.Abs(want))
}

// fzSame checks that a device's result (or error) matches the cpu's:
// the same kind of error, or the same dtype, shape and values within tol.
func fzSame(t *testing.T, label string, cpu, dev *Tensor, tol float64) {
	t.Helper()
	ce, de := cpu.Err(), dev.Err()
	if ce != nil && de == nil {
		// A device checks values where they are and reports at the next
		// read-back.
		_, de = fzHost(dev)
	}
	if ce == nil && de != nil && errors.Is(de, ErrUnsupported) {
		fzKind(t, label, de)
		return // a kernel or dtype the device lacks (wgpu has no float64)
	}
	if ce != nil || de != nil {
		if ce == nil || de == nil {
			t.Fatalf("%s: the cpu gives %v, the device %v", label, ce, de)
		}
		if ck, dk := fzKind(t, label+" (cpu)", ce), fzKind(t, label+" (device)", de); ck != dk && dk != ErrUnsupported {
			t.Fatalf("%s: cpu fails with %v, the device with %v", label, ce, de)
		}
		return
	}
	if !slices.Equal(cpu.Shape(), dev.Shape()) {
		t.Fatalf("%s: cpu shape %v, device shape %v", label, cpu.Shape(), dev.Shape())
	}
	if cd, dd := cpu.DType(), dev.DType(); cd != dd {
		t.Fatalf("%s: cpu dtype %v, device dtype %v", label, cd, dd)
	}
	cv, err := fzHost(cpu)
	if err != nil {
		t.Fatalf("%s: reading the cpu's result: %v", label, err)
	}
	dv, err := fzHost(dev)
	if err != nil {
		fzKind(t, label+" (device read)", err)
		t.Fatalf("%s: reading the device's result: %v", label, err)
	}
	for i := range cv {
		if !fzClose(dv[i], cv[i], tol) {
			t.Fatalf("%s: element %d: device %v, cpu %v (shape %v)", label, i, dv[i], cv[i], cpu.Shape())
		}
	}
}

// fzOnDevice moves the cpu inputs to dev, or reports false where dev lacks
// one's dtype (wgpu has no float64).
func fzOnDevice(dev Device, in ...*Tensor) ([]*Tensor, bool) {
	out := make([]*Tensor, len(in))
	for i, x := range in {
		if x == nil {
			continue
		}
		out[i] = x.To(dev)
		if out[i].Err() != nil {
			return nil, false
		}
	}
	return out, true
}

// fzDiff runs f on the cpu inputs and, where wgpu:0 opens and holds their
// dtypes, on copies there, and checks that the two agree (unless tol is
// negative). It returns the cpu's result.
func fzDiff(t *testing.T, label string, tol float64, f func(in []*Tensor) *Tensor, in ...*Tensor) *Tensor {
	t.Helper()
	out := f(in)
	if err := out.Err(); err != nil {
		fzKind(t, label, err)
	}
	if tol < 0 {
		return out // the caller knows the devices may differ
	}
	if gpu := fzGPU(); gpu != nil {
		if din, ok := fzOnDevice(*gpu, in...); ok {
			fzSame(t, label+" on "+gpu.String(), out, f(din), tol)
		}
	}
	return out
}

// fzWant checks a result against the rule: err says whether the rule
// refuses the call (then the result must fail with that kind, or with
// another where the rule gives any), else its shape and dtype.
func fzWant(t *testing.T, label string, out *Tensor, refuse error, shape []int, dt DType) {
	t.Helper()
	err := out.Err()
	switch {
	case refuse != nil && err == nil:
		t.Fatalf("%s: succeeded with shape %v, but the rule refuses it: %v", label, out.Shape(), refuse)
	case refuse != nil:
		if k := fzKind(t, label, err); refuse != errAny && k != refuse {
			t.Fatalf("%s: error %v, want kind %v", label, err, refuse)
		}
	case err != nil:
		if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrOutOfMemory) {
			return // a kernel the device lacks, or memory the machine lacks
		}
		t.Fatalf("%s: %v, but the rule gives shape %v", label, err, shape)
	default:
		if !slices.Equal(out.Shape(), shape) && !(len(shape) == 0 && len(out.Shape()) == 0) {
			t.Fatalf("%s: shape %v, the rule gives %v", label, out.Shape(), shape)
		}
		if dt != dispatch.InvalidDType && out.DType() != dt {
			t.Fatalf("%s: dtype %v, want %v", label, out.DType(), dt)
		}
	}
}

// errAny is a refusal of any kind, for fzWant.
var errAny = errors.New("any kind")

// fzProdOverflows reports whether a product of sizes passes int's range,
// which lathe refuses (ErrShape) unless a size of 0 makes the shape empty.
func fzProdOverflows(sizes ...int) bool {
	if slices.ContainsFunc(sizes, func(s int) bool { return s <= 0 }) {
		return false
	}
	p := 1
	for _, s := range sizes {
		if p > math.MaxInt/s {
			return true
		}
		p *= s
	}
	return false
}

// fzStorageBound checks that every element of view v lies within its
// storage of n elements.
func fzStorageBound(t *testing.T, label string, v *Tensor, n int) {
	t.Helper()
	x := v.t
	if x.Numel() == 0 {
		return
	}
	lo, hi := x.Offset, x.Offset
	for d, s := range x.Shape {
		step := (s - 1) * x.Strides[d]
		if step < 0 {
			lo += step
		} else {
			hi += step
		}
	}
	if lo < 0 || hi >= n {
		t.Fatalf("%s: view of shape %v, strides %v, offset %d reaches elements [%d, %d] of a storage of %d",
			label, x.Shape, x.Strides, x.Offset, lo, hi, n)
	}
}
