package lathe

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

var vwDTypes = []struct {
	name string
	dt   DType
}{{"f32", Float32}, {"f64", Float64}, {"i32", Int32}, {"i64", Int64}, {"bool", Bool}}

// vwAs is want in dtype dt's terms: a Bool tensor holds v != 0.
func vwAs(dt DType, want []float64) []float64 {
	if dt != Bool {
		return want
	}
	out := make([]float64, len(want))
	for i, v := range want {
		if v != 0 {
			out[i] = 1
		}
	}
	return out
}

func TestCopiesEveryDType(t *testing.T) {
	for _, d := range vwDTypes {
		x := vwSeq(d.dt, 2, 3)
		var cases []vwCase
		add := func(name string, got *Tensor, shape []int, want []float64) {
			cases = append(cases, vwCase{name + "/" + d.name, got, shape, vwAs(d.dt, want)})
		}
		add("flip/dim1", x.Flip(1), []int{2, 3}, []float64{2, 1, 0, 5, 4, 3})
		add("flip/dims[0,-1]", x.Flip(0, -1), []int{2, 3}, []float64{5, 4, 3, 2, 1, 0})
		add("flip/transposed", x.MT().Flip(0), []int{3, 2}, []float64{2, 5, 1, 4, 0, 3})
		add("concat/dim0", Concat([]*Tensor{x, x.Narrow(0, 1, 1)}, 0), []int{3, 3}, []float64{0, 1, 2, 3, 4, 5, 3, 4, 5})
		add("concat/dim-1/transposed", Concat([]*Tensor{x, x.MT().Flip(0).MT()}, -1), []int{2, 6},
			[]float64{0, 1, 2, 2, 1, 0, 3, 4, 5, 5, 4, 3})
		add("stack/dim1", Stack([]*Tensor{x, x.Flip(0)}, 1), []int{2, 2, 3}, []float64{0, 1, 2, 3, 4, 5, 3, 4, 5, 0, 1, 2})
		fill := 9.0
		add("pad/last", x.Pad([]int{1, 0}, fill), []int{2, 4}, []float64{9, 0, 1, 2, 9, 3, 4, 5})
		add("pad/crop", x.Pad([]int{-1, 2, 1, -1}, fill), []int{2, 4}, []float64{9, 9, 9, 9, 1, 2, 9, 9})
		add("pad/reflect", x.Pad([]int{1, 1}, 0, PadMode("reflect")), []int{2, 5}, []float64{1, 0, 1, 2, 1, 4, 3, 4, 5, 4})
		add("pad/replicate", x.Pad([]int{1, 1}, 0, PadMode("replicate")), []int{2, 5}, []float64{0, 0, 1, 2, 2, 3, 3, 4, 5, 5})
		add("pad/circular", x.Pad([]int{1, 1}, 0, PadMode("circular")), []int{2, 5}, []float64{2, 0, 1, 2, 0, 5, 3, 4, 5, 3})
		add("index_select/dim1", x.IndexSelect(1, FromSlice(CPU, []int64{2, 0, 2})), []int{2, 3}, []float64{2, 0, 2, 5, 3, 5})
		add("gather/dim0", x.Gather(0, FromSlice(CPU, []int32{1, 0, 1}, 1, 3)), []int{1, 3}, []float64{3, 1, 5})
		add("scatter/dim1", Zeros(CPU, d.dt, 2, 3).Scatter(1, FromSlice(CPU, []int64{2, 0}, 2, 1), x), []int{2, 3},
			[]float64{0, 0, 0, 3, 0, 0})
		add("scatter_add/dim0", Ones(CPU, d.dt, 2, 3).ScatterAdd(0, FromSlice(CPU, []int64{1, 1, 1}, 1, 3), x), []int{2, 3},
			[]float64{1, 1, 1, 1, 2, 3})
		add("masked_fill", x.MaskedFill(FromSlice(CPU, []bool{true, false, true}), 1), []int{2, 3}, []float64{1, 1, 1, 1, 4, 1})
		if d.dt == Bool { // scatter_add on bool is logical or
			cases[len(cases)-2].want = []float64{1, 1, 1, 1, 1, 1}
		}
		vwRun(t, cases)
	}
}

func TestFlip(t *testing.T) {
	x := vwSeq(Int64, 2, 3, 4)
	vwRun(t, []vwCase{
		{"flip/i64/dims[0,-1]", x.Flip(0, -1).Narrow(0, 1, 1), []int{1, 3, 4}, []float64{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}},
		{"flip/i64/none", x.Flip().Narrow(0, 0, 1).Narrow(1, 0, 1), []int{1, 1, 4}, []float64{0, 1, 2, 3}},
		{"flip/i64/all", vwSeq(Int64, 2, 2).Flip(0, 1), []int{2, 2}, []float64{3, 2, 1, 0}},
		{"flip/f32/0d", Scalar(CPU, float32(5)).Flip(0), []int{}, []float64{5}},
		{"flip/f32/empty", Zeros(CPU, Float32, 0, 3).Flip(0, 1), []int{0, 3}, nil},
		{"flip/f32/expanded", vwSeq(Float32, 3).Expand(2, 3).Flip(1), []int{2, 3}, []float64{2, 1, 0, 2, 1, 0}},
		{"flip/f32/strided-slice", vwSeq(Float32, 7).Slice(0, 1, 7, 2).Flip(0), []int{3}, []float64{5, 3, 1}},
	})
	if y := vwSeq(Float32, 3); vwSameStorage(y, y.Flip(0)) {
		t.Error("flip must copy")
	}
}

func TestConcatStack(t *testing.T) {
	a := vwSeq(Float32, 2, 2)
	b := vwSeq(Float32, 2, 3).AddScalar(10)
	vwRun(t, []vwCase{
		{"concat/f32/dim1", Concat([]*Tensor{a, b}, 1), []int{2, 5}, []float64{0, 1, 10, 11, 12, 2, 3, 13, 14, 15}},
		{"concat/f32/one", Concat([]*Tensor{a}, 0), []int{2, 2}, []float64{0, 1, 2, 3}},
		{"concat/f32/empty-piece", Concat([]*Tensor{Zeros(CPU, Float32, 2, 0), a}, 1), []int{2, 2}, []float64{0, 1, 2, 3}},
		{"concat/f32/all-empty", Concat([]*Tensor{Zeros(CPU, Float32, 0, 2), Zeros(CPU, Float32, 0, 2)}, 0), []int{0, 2}, nil},
		{"concat/f32/transposed+expanded", Concat([]*Tensor{a.MT(), vwSeq(Float32, 1, 2).Expand(2, 2)}, 0), []int{4, 2},
			[]float64{0, 2, 1, 3, 0, 1, 0, 1}},
		{"concat/f32/three-dim-1", Concat([]*Tensor{a, a, a}, -1), []int{2, 6}, []float64{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3}},
		{"stack/f32/dim0", Stack([]*Tensor{a, a.MulScalar(2)}, 0), []int{2, 2, 2}, []float64{0, 1, 2, 3, 0, 2, 4, 6}},
		{"stack/f32/dim-1", Stack([]*Tensor{a, a.MulScalar(2)}, -1), []int{2, 2, 2}, []float64{0, 0, 1, 2, 2, 4, 3, 6}},
		{"stack/f32/0d", Stack([]*Tensor{Scalar(CPU, float32(1)), Scalar(CPU, float32(2))}, -1), []int{2}, []float64{1, 2}},
		{"stack/f32/empty", Stack([]*Tensor{Zeros(CPU, Float32, 0), Zeros(CPU, Float32, 0)}, 1), []int{0, 2}, nil},
	})
	i32 := vwSeq(Int32, 2, 2)
	vwRunErr(t, []vwErrCase{
		{"concat/none", Concat(nil, 0).Err(), ErrValue},
		{"concat/dtype", Concat([]*Tensor{a, i32}, 0).Err(), ErrDType},
		{"concat/rank", Concat([]*Tensor{a, vwSeq(Float32, 4)}, 0).Err(), ErrShape},
		{"concat/shape", Concat([]*Tensor{a, b}, 0).Err(), ErrShape},
		{"concat/dim", Concat([]*Tensor{a, a}, 2).Err(), ErrIndex},
		{"concat/0d", Concat([]*Tensor{Scalar(CPU, float32(1))}, 0).Err(), ErrShape},
		{"concat/nil", Concat([]*Tensor{a, nil}, 0).Err(), ErrValue},
		{"stack/shape", Stack([]*Tensor{a, b}, 0).Err(), ErrShape},
		{"stack/dim", Stack([]*Tensor{a, a}, 3).Err(), ErrIndex},
		{"stack/dtype", Stack([]*Tensor{a, i32}, 0).Err(), ErrDType},
	})
	t.Run("concat/device", func(t *testing.T) {
		// A handle that claims another device: dispatch refuses it before
		// any backend sees it.
		other := wrap(&dispatch.Tensor{Shape: []int{2, 2}, Strides: []int{2, 1}, DType: Float32,
			Device: CUDA(0), Storage: a.t.Storage})
		err := Concat([]*Tensor{a, a, other}, 0).Err()
		var e *Error
		if !errors.Is(err, ErrDevice) || !errors.As(err, &e) || e.Arg != "tensors[2]" {
			t.Fatalf("error %v, want ErrDevice naming tensors[2]", err)
		}
		if err := Stack([]*Tensor{a, other}, 0).Err(); !errors.Is(err, ErrDevice) {
			t.Fatalf("stack: error %v, want ErrDevice", err)
		}
	})
	t.Run("concat/dtype/names-arg", func(t *testing.T) {
		e, _ := Concat([]*Tensor{a, a, i32}, 0).Err().(*Error)
		if e == nil || e.Arg != "tensors[2]" || e.Op != "concat" {
			t.Fatalf("error %v, want op concat, argument tensors[2]", e)
		}
	})
}

func TestSplitChunk(t *testing.T) {
	x := vwSeq(Float32, 5, 2)
	shapes := func(ts []*Tensor) string {
		s := ""
		for _, p := range ts {
			s += strconv.Itoa(p.Dim(0)) + ","
		}
		return s
	}
	for _, c := range []struct {
		name   string
		pieces func() ([]*Tensor, error)
		sizes  string
	}{
		{"split/2/dim0", func() ([]*Tensor, error) { return x.Split(2, 0) }, "2,2,1,"},
		{"split/5/dim0", func() ([]*Tensor, error) { return x.Split(5, 0) }, "5,"},
		{"split/7/dim0", func() ([]*Tensor, error) { return x.Split(7, 0) }, "5,"},
		{"split/1/dim-1", func() ([]*Tensor, error) { return x.Split(1, -1) }, "5,5,"},
		{"split/empty", func() ([]*Tensor, error) { return Zeros(CPU, Float32, 0).Split(2, 0) }, "0,"},
		{"split/0/empty", func() ([]*Tensor, error) { return Zeros(CPU, Float32, 0).Split(0, 0) }, "0,"},
		{"chunk/3", func() ([]*Tensor, error) { return x.Chunk(3, 0) }, "2,2,1,"},
		{"chunk/4(gives3)", func() ([]*Tensor, error) { return x.Chunk(4, 0) }, "2,2,1,"},
		{"chunk/6(gives5)", func() ([]*Tensor, error) { return x.Chunk(6, 0) }, "1,1,1,1,1,"},
		{"chunk/1", func() ([]*Tensor, error) { return x.Chunk(1, 0) }, "5,"},
		{"chunk/empty", func() ([]*Tensor, error) { return Zeros(CPU, Float32, 0).Chunk(3, 0) }, "0,0,0,"},
		// n+size-1 overflowed: the step was 0 and Chunk looped for ever.
		{"chunk/maxint", func() ([]*Tensor, error) { return x.Chunk(math.MaxInt, 0) }, "1,1,1,1,1,"},
		{"chunk/maxint-1", func() ([]*Tensor, error) { return x.Chunk(math.MaxInt-1, 0) }, "1,1,1,1,1,"},
		{"split/maxint", func() ([]*Tensor, error) { return x.Split(math.MaxInt, 0) }, "5,"},
		{"split/3/expanded-maxint", func() ([]*Tensor, error) {
			return Ones(CPU, Float32, 1).Expand(math.MaxInt).Split(1<<62, 0)
		}, "4611686018427387904,4611686018427387903,"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps, err := c.pieces()
			if err != nil {
				t.Fatal(err)
			}
			if got := shapes(ps); got != c.sizes {
				t.Fatalf("sizes %s, want %s", got, c.sizes)
			}
		})
	}
	t.Run("split/values+views", func(t *testing.T) {
		ps, err := x.Split(2, 0)
		if err != nil {
			t.Fatal(err)
		}
		vwExpect(t, ps[2], []int{1, 2}, []float64{8, 9})
		vwExpect(t, ps[1], []int{2, 2}, []float64{4, 5, 6, 7})
		if !vwSameStorage(x, ps[1]) {
			t.Fatal("split pieces must be views")
		}
	})
	t.Run("chunk/transposed/values", func(t *testing.T) {
		ps, err := x.MT().Chunk(2, 1)
		if err != nil {
			t.Fatal(err)
		}
		vwExpect(t, ps[1], []int{2, 2}, []float64{6, 8, 7, 9})
	})
	errOf := func(_ []*Tensor, err error) error { return err }
	vwRunErr(t, []vwErrCase{
		{"split/size0", errOf(x.Split(0, 0)), ErrValue},
		{"split/neg", errOf(x.Split(-1, 0)), ErrValue},
		{"split/dim", errOf(x.Split(1, 2)), ErrIndex},
		{"split/0d", errOf(Scalar(CPU, float32(1)).Split(1, 0)), ErrShape},
		{"chunk/n0", errOf(x.Chunk(0, 0)), ErrValue},
		{"chunk/dim", errOf(x.Chunk(2, -3)), ErrIndex},
		// More pieces than memory holds: each is a tensor of its own.
		{"chunk/empty/maxint", errOf(Zeros(CPU, Float32, 0).Chunk(math.MaxInt, 0)), ErrOutOfMemory},
		{"split/1/expanded-2^40", errOf(Ones(CPU, Float32, 1).Expand(1<<40).Split(1, 0)), ErrOutOfMemory},
	})
	if _, err := x.Reshape(7).Split(1, 0); !errors.Is(err, ErrShape) {
		t.Errorf("split of a failed tensor: %v, want its error", err)
	}
}

func TestPad(t *testing.T) {
	x := vwSeq(Float32, 2, 3)
	vwRun(t, []vwCase{
		{"pad/f32/last[1,0]", x.Pad([]int{1, 0}, 0), []int{2, 4}, []float64{0, 0, 1, 2, 0, 3, 4, 5}},
		{"pad/f32/two-dims/transposed", x.MT().Pad([]int{0, 1, 1, 0}, -1), []int{4, 3},
			[]float64{-1, -1, -1, 0, 3, -1, 1, 4, -1, 2, 5, -1}},
		{"pad/f32/crop[-1,2,1,-1]", x.Pad([]int{-1, 2, 1, -1}, 9), []int{2, 4}, []float64{9, 9, 9, 9, 1, 2, 9, 9}},
		{"pad/f32/crop-all", vwSeq(Float32, 3).Pad([]int{-2, -1}, 0), []int{0}, nil},
		{"pad/f32/none", x.Pad(nil, 1), []int{2, 3}, seqF(6)},
		{"pad/f32/empty-rows", Zeros(CPU, Float32, 0, 2).Pad([]int{1, 1}, 3), []int{0, 4}, nil},
		{"pad/f32/empty-cols", Zeros(CPU, Float32, 2, 0).Pad([]int{1, 1}, 3), []int{2, 2}, []float64{3, 3, 3, 3}},
		{"pad/i32/value", vwSeq(Int32, 3).Pad([]int{1, 1}, -2), []int{5}, []float64{-2, 0, 1, 2, -2}},
		{"pad/bool/value", FromSlice(CPU, []bool{true, false}).Pad([]int{1, 1}, 1), []int{4}, []float64{1, 1, 0, 1}},
		// 3 + (MaxInt-1) passes an int on the way, but the padded size,
		// MaxInt-1, fits: torch gives [0, 9223372036854775806] too.
		{"pad/f32/empty/grow-past-int-then-crop", Zeros(CPU, Float32, 0, 3).Pad([]int{math.MaxInt - 1, -3}, 0), []int{0, math.MaxInt - 1}, nil},
	})
	vwRunErr(t, []vwErrCase{
		{"pad/odd", x.Pad([]int{1}, 0).Err(), ErrValue},
		{"pad/too-many", x.Pad([]int{1, 1, 1, 1, 1, 1}, 0).Err(), ErrValue},
		{"pad/negative-size", vwSeq(Float32, 3).Pad([]int{-2, -2}, 0).Err(), ErrShape},
		{"pad/int-fraction", vwSeq(Int32, 3).Pad([]int{1, 1}, 2.5).Err(), ErrDType},
	})
	if got := x.Pad([]int{0, 0}, 0); vwSameStorage(x, got) || !slices.Equal(got.Shape(), []int{2, 3}) {
		t.Error("pad must copy")
	}
}

// TestPadModes checks what the conformance cases (pad.json) do not: the
// mode names, dims that torch 1.13 will not pad, and the refusals' kinds.
func TestPadModes(t *testing.T) {
	x := vwSeq(Float32, 2, 3)
	mode := func(m string) PadOption { return PadMode(m) }
	vwRun(t, []vwCase{
		{"pad/constant", x.Pad([]int{1, 0}, 7, mode("constant")), []int{2, 4}, []float64{7, 0, 1, 2, 7, 3, 4, 5}},
		{"pad/reflect/1-d", vwSeq(Float32, 4).Pad([]int{3, 2}, 0, mode("reflect")), []int{9}, []float64{3, 2, 1, 0, 1, 2, 3, 2, 1}},
		{"pad/reflect/crop", vwSeq(Float32, 4).Pad([]int{-3, 3}, 0, mode("reflect")), []int{4}, []float64{3, 2, 1, 0}},
		{"pad/replicate/both-dims", x.Pad([]int{0, 1, 1, 0}, 0, mode("replicate")), []int{3, 4},
			[]float64{0, 1, 2, 2, 0, 1, 2, 2, 3, 4, 5, 5}},
		{"pad/circular/crop-then-wrap", vwSeq(Float32, 4).Pad([]int{-1, 2}, 0, mode("circular")), []int{5}, []float64{1, 2, 3, 1, 2}},
		{"pad/circular/crop-all", vwSeq(Float32, 4).Pad([]int{-2, -2}, 0, mode("circular")), []int{0}, nil},
		{"pad/reflect/none", x.Pad([]int{0, 0}, 0, mode("reflect")), []int{2, 3}, seqF(6)},
		{"pad/replicate/empty-unpadded", Zeros(CPU, Float32, 2, 0).Pad([]int{0, 0}, 0, mode("replicate")), []int{2, 0}, nil},
	})
	vwRunErr(t, []vwErrCase{
		{"pad/mode-unknown", x.Pad([]int{1, 1}, 0, mode("mirror")).Err(), ErrValue},
		{"pad/reflect/value", x.Pad([]int{1, 1}, 1, mode("reflect")).Err(), ErrValue},
		{"pad/reflect/odd", x.Pad([]int{1}, 0, mode("reflect")).Err(), ErrValue},
		{"pad/reflect/too-many", x.Pad([]int{1, 1, 1, 1, 1, 1}, 0, mode("reflect")).Err(), ErrValue},
		{"pad/reflect/pad=size", x.Pad([]int{0, 3}, 0, mode("reflect")).Err(), ErrShape},
		{"pad/reflect/negative-size", x.Pad([]int{-2, -2}, 0, mode("reflect")).Err(), ErrShape},
		{"pad/replicate/empty", Zeros(CPU, Float32, 2, 0).Pad([]int{1, 0}, 0, mode("replicate")).Err(), ErrShape},
		{"pad/circular/twice-around", x.Pad([]int{4, 0}, 0, mode("circular")).Err(), ErrShape},
		{"pad/circular/crop-all-then-pad", x.Pad([]int{-3, 1}, 0, mode("circular")).Err(), ErrShape},
		{"pad/replicate/host-indices", x.Pad([]int{1 << 50, 0}, 0, mode("replicate")).Err(), ErrOutOfMemory},
		// A pad that reflect or circular mode cannot fill is that, however
		// many host indices it would take: it was an ErrOutOfMemory.
		{"pad/reflect/far-past-size", x.Pad([]int{1 << 62, 0}, 0, mode("reflect")).Err(), ErrShape},
		{"pad/circular/far-past-size", x.Pad([]int{0, 1 << 50}, 0, mode("circular")).Err(), ErrShape},
		{"pad/replicate/overflow", x.Pad([]int{math.MaxInt, 1}, 0, mode("replicate")).Err(), ErrShape},
		// A size that fits, though a partial sum does not: too many host
		// indices, not an overflow.
		{"pad/replicate/grow-past-int-then-crop", x.Pad([]int{math.MaxInt - 1, -3}, 0, mode("replicate")).Err(), ErrOutOfMemory},
		{"pad/failed-input", x.Reshape(7).Pad([]int{1, 1}, 0, mode("mirror")).Err(), ErrShape},
	})
	err := x.Pad([]int{1, 1}, 0, mode("mirror")).Err()
	if err == nil || !strings.HasPrefix(err.Error(), `lathe: pad: argument "mode"`) {
		t.Errorf("unknown mode: %v", err)
	}
	// Reflecting an empty dim is refused as such, not with a fix to pad
	// "by at most -1".
	for _, pads := range [][]int{{1, 1}, {0, 1}} {
		err = Zeros(CPU, Float32, 2, 0).Pad(pads, 0, mode("reflect")).Err()
		if !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), "no element for reflect mode to mirror") || strings.Contains(err.Error(), "-1") {
			t.Errorf("reflect of an empty dim by %v: %v", pads, err)
		}
	}
}

// TestCastStridedViews: a cast of a view whose rows are runs (a narrowed
// column range) and of one whose elements are apart (a transpose) gives the
// bits of the cast of its contiguous copy, for the casts the cpu makes in
// vector loops and for those it makes in Go, NaN, infinities and values
// past int32 among the inputs.
func TestCastStridedViews(t *testing.T) {
	vals := make([]float64, 37*300)
	for i := range vals {
		vals[i] = float64(i%97-48) * 1.37e7
	}
	vals[5], vals[300+7], vals[900] = math.NaN(), math.Inf(1), math.Inf(-1)
	src := map[DType]*Tensor{
		Float64: FromSlice(CPU, vals, 37, 300),
		Float32: FromSlice(CPU, vals, 37, 300).Cast(Float32),
		Int32:   FromSlice(CPU, vals, 37, 300).Cast(Int32),
		Bool:    FromSlice(CPU, vals, 37, 300).Cast(Bool),
	}
	bits := func(x *Tensor) []uint64 {
		t.Helper()
		var out []uint64
		var err error
		switch x.DType() {
		case Float32:
			var v []float32
			v, err = x.Float32s()
			for _, f := range v {
				out = append(out, uint64(math.Float32bits(f)))
			}
		case Float64:
			var v []float64
			v, err = x.Float64s()
			for _, f := range v {
				out = append(out, math.Float64bits(f))
			}
		case Int32:
			var v []int32
			v, err = x.Int32s()
			for _, n := range v {
				out = append(out, uint64(n))
			}
		case Int64:
			var v []int64
			v, err = x.Int64s()
			for _, n := range v {
				out = append(out, uint64(n))
			}
		case Bool:
			var v []bool
			v, err = x.Bools()
			for _, b := range v {
				out = append(out, map[bool]uint64{true: 1}[b])
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for from, x := range src {
		for _, to := range []DType{Float32, Float64, Int32, Int64, Bool} {
			if to == from {
				continue
			}
			for _, v := range []struct {
				name string
				t    *Tensor
			}{{"columns 3..290", x.Narrow(1, 3, 287)}, {"transposed", x.Transpose(0, 1)}} {
				got, want := bits(v.t.Cast(to)), bits(v.t.Contiguous().Cast(to))
				if !slices.Equal(got, want) {
					t.Errorf("%v to %v, %s: the cast differs from its contiguous copy's", from, to, v.name)
				}
			}
		}
	}
}
