package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestPackParams(t *testing.T) {
	strides := packInt64s(1, -2, 3)
	image, offsets, sizes, err := packParams([]any{uint64(0xdead_beef_0000), int32(-7), float64(0.5), float32(1.5), uint32(9), strides, int64(-1)})
	if err != nil {
		t.Fatal(err)
	}
	// int32 at 8, float64 aligned up to 16, float32 at 24, uint32 at 28,
	// the struct 8-aligned at 32, int64 after its 24 bytes.
	if want := []uint32{0, 8, 16, 24, 28, 32, 56}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	if want := []uint32{8, 4, 8, 4, 4, 24, 8}; !slices.Equal(sizes, want) {
		t.Fatalf("sizes %v, want %v", sizes, want)
	}
	le := binary.LittleEndian
	if le.Uint64(image[0:]) != 0xdead_beef_0000 || int32(le.Uint32(image[8:])) != -7 ||
		math.Float64frombits(le.Uint64(image[16:])) != 0.5 || math.Float32frombits(le.Uint32(image[24:])) != 1.5 ||
		le.Uint32(image[28:]) != 9 || int64(le.Uint64(image[40:])) != -2 || int64(le.Uint64(image[56:])) != -1 || len(image) != 64 {
		t.Fatalf("image % x", image)
	}
	for _, bad := range []any{7, uintptr(1), "x", []byte{}, []int64{1}} {
		if _, _, _, err := packParams([]any{bad}); !errors.Is(err, dispatch.ErrValue) {
			t.Errorf("a %T parameter: %v, want ErrValue", bad, err)
		}
	}
	if _, _, _, err := packParams(make([]any, maxParams+1)); !errors.Is(err, dispatch.ErrValue) {
		t.Errorf("%d parameters: %v, want ErrValue", maxParams+1, err)
	}
}

func TestCheckGeometry(t *testing.T) {
	ok := [][2][3]uint32{
		{{1, 1, 1}, {1, 1, 1}},
		{{maxGridX, maxGridYZ, maxGridYZ}, {1024, 1, 1}},
		{{1, 1, 1}, {32, 32, 1}},
		{{1, 1, 1}, {16, 1, 64}},
	}
	for _, g := range ok {
		if err := checkGeometry("k", g[0], g[1]); err != nil {
			t.Errorf("grid %v block %v: %v", g[0], g[1], err)
		}
	}
	bad := [][2][3]uint32{
		{{0, 1, 1}, {1, 1, 1}},
		{{1, 1, 1}, {1, 0, 1}},
		{{1 << 31, 1, 1}, {1, 1, 1}},
		{{1, 65536, 1}, {1, 1, 1}},
		{{1, 1, 65536}, {1, 1, 1}},
		{{1, 1, 1}, {1025, 1, 1}},
		{{1, 1, 1}, {1, 1, 65}},
		{{1, 1, 1}, {64, 32, 1}},
	}
	for _, g := range bad {
		if err := checkGeometry("k", g[0], g[1]); !errors.Is(err, dispatch.ErrValue) {
			t.Errorf("grid %v block %v: %v, want ErrValue", g[0], g[1], err)
		}
	}
}

func TestCheckParams(t *testing.T) {
	if err := checkParams("m.k", nil, []uint32{8}); err != nil {
		t.Errorf("unknown sizes: %v", err)
	}
	if err := checkParams("m.k", []int{8, 4, 72}, []uint32{8, 4, 72}); err != nil {
		t.Errorf("matching sizes: %v", err)
	}
	for _, got := range [][]uint32{{8, 4}, {8, 8, 72}, {8, 4, 72, 8}} {
		if err := checkParams("m.k", []int{8, 4, 72}, got); !errors.Is(err, dispatch.ErrValue) {
			t.Errorf("sizes %v against [8 4 72]: %v, want ErrValue", got, err)
		}
	}
}
