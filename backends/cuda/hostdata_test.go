package cuda

import (
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
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
	if _, _, _, err := hostBytes([]uint8{1}); err == nil {
		t.Fatal("[]uint8 accepted")
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
	for dt, want := range map[dispatch.DType]int{dispatch.Float32: 4, dispatch.Float64: 8, dispatch.Int32: 4, dispatch.Int64: 8, dispatch.Bool: 1} {
		if got, ok := elemSize(dt); !ok || got != want {
			t.Errorf("elemSize(%v) = %d", dt, got)
		}
	}
}
