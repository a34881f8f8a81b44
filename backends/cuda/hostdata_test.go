package cuda

import (
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/internal/half"
)

func TestHostData(t *testing.T) {
	raw, dt, n, err := hostBytes([]float64{1, -2})
	if err != nil || dt != dispatch.Float64 || n != 2 || len(raw) != 16 || raw[15] != 0xc0 {
		t.Fatalf("float64: % x %v %d %v", raw, dt, n, err)
	}
	raw, dt, n, _ = hostBytes([]bool{true, false, true})
	if dt != dispatch.Bool || n != 3 || !slices.Equal(raw, []byte{1, 0, 1}) {
		t.Fatalf("bool: % x %v %d", raw, dt, n)
	}
	if _, _, _, err := hostBytes([]uint16{1}); err == nil {
		t.Fatal("[]uint16 accepted")
	}
	// The narrow dtypes travel as their bytes: a float16's bits, an
	// int8's two's complement.
	raw, dt, n, _ = hostBytes([]half.Float16{0x3c00, 0xfbff})
	if dt != dispatch.Float16 || n != 2 || !slices.Equal(raw, []byte{0x00, 0x3c, 0xff, 0xfb}) {
		t.Fatalf("float16: % x %v %d", raw, dt, n)
	}
	raw, dt, n, _ = hostBytes([]int8{-1, 5})
	if dt != dispatch.Int8 || n != 2 || !slices.Equal(raw, []byte{0xff, 5}) {
		t.Fatalf("int8: % x %v %d", raw, dt, n)
	}
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16, dispatch.Int8, dispatch.Uint8} {
		out, fill, finish, err := hostSlice(dt, 2)
		if err != nil {
			t.Fatal(err)
		}
		copy(fill, []byte{0x80, 0x3f, 0x01, 0xc0})
		finish()
		if raw, back, _, _ := hostBytes(out); back != dt || !slices.Equal(raw, []byte{0x80, 0x3f, 0x01, 0xc0}[:len(raw)]) || len(raw) != 2*mustSize(t, dt) {
			t.Errorf("%s: read back as % x (%v)", dt, raw, back)
		}
	}
	// A kernel's nonzero byte reads back as true.
	out, fill, finish, _ := hostSlice(dispatch.Bool, 3)
	copy(fill, []byte{2, 0, 1})
	finish()
	if got := out.([]bool); !slices.Equal(got, []bool{true, false, true}) {
		t.Fatalf("bools read back as %v", got)
	}
	out, fill, finish, _ = hostSlice(dispatch.Int32, 2)
	copy(fill, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	finish()
	if got := out.([]int32); !slices.Equal(got, []int32{1, -1}) {
		t.Fatalf("int32s read back as %v", got)
	}
	for dt, want := range map[dispatch.DType]int{dispatch.Float32: 4, dispatch.Float64: 8, dispatch.Int32: 4, dispatch.Int64: 8, dispatch.Bool: 1,
		dispatch.Float16: 2, dispatch.BFloat16: 2, dispatch.Int8: 1, dispatch.Uint8: 1} {
		if got, ok := elemSize(dt); !ok || got != want {
			t.Errorf("elemSize(%v) = %d", dt, got)
		}
	}
}

func mustSize(t *testing.T, dt dispatch.DType) int {
	t.Helper()
	n, ok := elemSize(dt)
	if !ok {
		t.Fatalf("no element size for %s", dt)
	}
	return n
}
