package refbackend

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// backend is the ref device: one of it, in host memory.
type backend struct{}

// buffer holds a tensor's elements as Go slices of its dtype.
type buffer struct {
	f32 []float32
	i32 []int32
}

func (*buffer) Free() {}

var kind = dispatch.RegisterBackend("ref", backend{})

func (backend) Open(int) error      { return nil }
func (backend) Describe(int) string { return "a test backend of plain loops on the host" }
func (backend) Count() int          { return 1 }

func (backend) Alloc(_ dispatch.Device, dt dispatch.DType, n int) (dispatch.Buffer, error) {
	switch dt {
	case dispatch.Float32:
		return &buffer{f32: make([]float32, n)}, nil
	case dispatch.Int32:
		return &buffer{i32: make([]int32, n)}, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrUnsupported, Detail: dt.String() + " does not exist on ref"}
}

func (b backend) Upload(dev dispatch.Device, data any) (dispatch.Buffer, error) {
	switch v := data.(type) {
	case []float32:
		return &buffer{f32: v}, nil
	case []int32:
		return &buffer{i32: v}, nil
	}
	return nil, &dispatch.Error{Kind: dispatch.ErrUnsupported, Detail: "ref holds float32 and int32 only"}
}

func (backend) Read(_ dispatch.Device, b dispatch.Buffer, dt dispatch.DType, offset, n int) (any, error) {
	buf := b.(*buffer)
	if dt == dispatch.Float32 {
		return append([]float32(nil), buf.f32[offset:offset+n]...), nil
	}
	return append([]int32(nil), buf.i32[offset:offset+n]...), nil
}

func (backend) Sync(dispatch.Device) error { return nil }

// The kernels: add and neg of float32 (of any layout, through a walk of
// the output), and index_select along dim 0 of a contiguous float32
// matrix, whose indices dispatch checks with no help from this backend.
func init() {
	f32 := dispatch.DTypeSet(1 << dispatch.Float32)
	dispatch.RegisterKernel(kind, ops.Add, f32, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		eachF32(out, func(i int) float32 { return at(in[0], out, i) + at(in[1], out, i) })
		return nil
	})
	dispatch.RegisterKernel(kind, ops.Neg, f32, func(out *dispatch.Tensor, in []*dispatch.Tensor, _ ops.Params) error {
		eachF32(out, func(i int) float32 { return -at(in[0], out, i) })
		return nil
	})
	dispatch.RegisterKernel(kind, ops.IndexSelect, f32, func(out *dispatch.Tensor, in []*dispatch.Tensor, a ops.IndexDim) error {
		x, index := in[0], in[1]
		cols := out.Numel() / max(index.Numel(), 1)
		for r := range index.Numel() {
			row := int(index.Storage.Buffer.(*buffer).i32[index.Offset+r*index.Strides[0]])
			for c := range cols {
				out.Storage.Buffer.(*buffer).f32[r*cols+c] = x.Storage.Buffer.(*buffer).f32[x.Offset+row*x.Strides[0]+c*x.Strides[1]]
			}
		}
		return nil
	})
}

// eachF32 sets element i of the contiguous out to f(i).
func eachF32(out *dispatch.Tensor, f func(i int) float32) {
	o := out.Storage.Buffer.(*buffer).f32
	for i := range out.Numel() {
		o[i] = f(i)
	}
}

// at is the element of t that broadcasts to element i of out.
func at(t, out *dispatch.Tensor, i int) float32 {
	off := t.Offset
	lead := len(out.Shape) - len(t.Shape)
	for d := len(out.Shape) - 1; d >= 0; d-- {
		idx := i % out.Shape[d]
		i /= out.Shape[d]
		if td := d - lead; td >= 0 && t.Shape[td] != 1 {
			off += idx * t.Strides[td]
		}
	}
	return t.Storage.Buffer.(*buffer).f32[off]
}
