package lathe_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/half"
)

// The narrow dtypes through the root API: names, making and reading
// tensors, printing, gradients in the dtype, and the devices that refuse
// them. Their op results are checked against PyTorch in the conformance
// suite (testdata/conformance/narrow.json).

func TestNarrowDTypeTable(t *testing.T) {
	for _, c := range []struct {
		dt                     lathe.DType
		name                   string
		size                   int
		float, integer, signed bool
	}{
		{lathe.Float16, "float16", 2, true, false, true},
		{lathe.BFloat16, "bfloat16", 2, true, false, true},
		{lathe.Int8, "int8", 1, false, true, true},
		{lathe.Uint8, "uint8", 1, false, true, false},
		{lathe.Float32, "float32", 4, true, false, true},
		{lathe.Int64, "int64", 8, false, true, true},
		{lathe.Bool, "bool", 1, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.dt.String(); got != c.name {
				t.Errorf("String() = %q", got)
			}
			if !c.dt.Valid() || c.dt.Size() != c.size || c.dt.IsFloat() != c.float || c.dt.IsInt() != c.integer || c.dt.IsSigned() != c.signed {
				t.Errorf("Valid %v Size %d IsFloat %v IsInt %v IsSigned %v, want true %d %v %v %v",
					c.dt.Valid(), c.dt.Size(), c.dt.IsFloat(), c.dt.IsInt(), c.dt.IsSigned(), c.size, c.float, c.integer, c.signed)
			}
		})
	}
}

func TestNarrowMakeAndRead(t *testing.T) {
	i8, err := lathe.FromSlice(lathe.CPU, []int8{-128, 127, 3}).Add(lathe.FromSlice(lathe.CPU, []int8{-1, 1, 4})).Int8s()
	if err != nil || !slices.Equal(i8, []int8{127, -128, 7}) {
		t.Errorf("int8 add = %v, %v; want the wrapped [127 -128 7]", i8, err)
	}
	u8, err := lathe.FromSlice(lathe.CPU, []uint8{0, 255}).Sub(lathe.FromSlice(lathe.CPU, []uint8{1, 255})).Uint8s()
	if err != nil || !slices.Equal(u8, []uint8{255, 0}) {
		t.Errorf("uint8 sub = %v, %v; want [255 0]", u8, err)
	}
	h := lathe.FromSlice(lathe.CPU, []float32{0.1, 65519, 65520, -1e-8}).Cast(lathe.Float16)
	got, err := h.Float32s()
	want := []float32{half.Float16(half.Float16FromFloat32(0.1)).Float32(), 65504, float32(math.Inf(1)), float32(math.Copysign(0, -1))}
	if err != nil || len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != 0 || !math.Signbit(float64(got[3])) {
		t.Errorf("float16 Float32s = %v, %v; want %v", got, err, want)
	}
	if v, err := lathe.Full(lathe.CPU, lathe.BFloat16, 1.0/3, 2, 2).Sum().Item(); err != nil || v != 4*float64(half.BFloat16(half.BFloat16FromFloat32(1.0/3)).Float32()) {
		t.Errorf("sum of bfloat16 thirds = %v, %v", v, err)
	}
	if _, err := h.Int8s(); !errors.Is(err, lathe.ErrDType) {
		t.Errorf("Int8s of a float16 tensor: %v, want ErrDType", err)
	}
	if s := h.String(); !strings.Contains(s, "dtype=float16") || !strings.Contains(s, "inf") {
		t.Errorf("String() = %s", s)
	}
	for _, c := range []struct {
		dt lathe.DType
		v  float64
	}{{lathe.Float16, 65505}, {lathe.Int8, 128}, {lathe.Uint8, -1}, {lathe.BFloat16, 3.4e38}} {
		if err := lathe.Full(lathe.CPU, c.dt, c.v, 2).Err(); !errors.Is(err, lathe.ErrValue) {
			t.Errorf("Full(%s, %g): %v, want ErrValue", c.dt, c.v, err)
		}
	}
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16} {
		r, err := lathe.Rand(lathe.CPU, dt, 4096).Float32s()
		if err != nil || slices.Max(r) >= 1 || slices.Min(r) < 0 {
			t.Errorf("Rand(%s): %v, range [%v, %v], want [0, 1)", dt, err, slices.Min(r), slices.Max(r))
		}
	}
	big := lathe.Zeros(lathe.CPU, lathe.Float16, 200, 200) // filled on the device: expand and contiguous
	if s, err := big.AddScalar(1).Sum().Item(); err != nil || s != 40000 {
		t.Errorf("sum of 40000 float16 ones = %v, %v; want 40000 (summed in float32, rounded once; a float16 sum stops at 2048)", s, err)
	}
}

// TestNarrowViews checks that views, broadcasting and strided reads of a
// 16-bit tensor reach the kernels widened from the right elements.
func TestNarrowViews(t *testing.T) {
	x := lathe.Arange(lathe.CPU, lathe.Float16, 0, 12, 1).Reshape(3, 4)
	y := x.Transpose(0, 1).Slice(0, 1, 4, 2) // rows 1 and 3 of x's transpose
	got, err := y.Mul(lathe.Full(lathe.CPU, lathe.Float16, 2, 1, 3)).Float32s()
	if want := []float32{2, 10, 18, 6, 14, 22}; err != nil || !slices.Equal(got, want) {
		t.Errorf("strided float16 mul = %v, %v; want %v", got, err, want)
	}
}

func TestNarrowGrad(t *testing.T) {
	for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			xs := []float32{0.5, -1.25, 2, 0.75, -0.5, 1.5}
			ws := []float32{1, 2, -1, 0.5, 0.25, -2}
			x := lathe.FromSlice(lathe.CPU, xs, 2, 3).Cast(dt).RequireGrad()
			w := lathe.FromSlice(lathe.CPU, ws, 3, 2).Cast(dt).RequireGrad()
			// loss = sum(softmax(x @ w) * 3 + x·x) + sum(cast(x, f32))
			y := x.MatMul(w).Softmax(-1).MulScalar(3).Sum().Add(x.Mul(x).Sum()).Cast(lathe.Float32).Add(x.Cast(lathe.Float32).Sum())
			if err := y.Backward(); err != nil {
				t.Fatal(err)
			}
			// The same in float32: the 16-bit gradients are it rounded, to a
			// few 16-bit ulps (each op rounds).
			x32 := lathe.FromSlice(lathe.CPU, xs, 2, 3).RequireGrad()
			w32 := lathe.FromSlice(lathe.CPU, ws, 3, 2).RequireGrad()
			y32 := x32.MatMul(w32).Softmax(-1).MulScalar(3).Sum().Add(x32.Mul(x32).Sum()).Add(x32.Sum())
			if err := y32.Backward(); err != nil {
				t.Fatal(err)
			}
			tol := 4.0 / 1024
			if dt == lathe.BFloat16 {
				tol = 4.0 / 128
			}
			for _, p := range [][2]*lathe.Tensor{{x, x32}, {w, w32}} {
				g := p[0].Grad()
				if g.DType() != dt {
					t.Fatalf("gradient dtype %s, want %s", g.DType(), dt)
				}
				got, err := g.Float32s()
				want, err2 := p[1].Grad().Float32s()
				if err != nil || err2 != nil {
					t.Fatal(err, err2)
				}
				for i := range want {
					if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
						t.Errorf("grad[%d] = %v, float32's %v", i, got[i], want[i])
					}
				}
			}
		})
	}
}

// TestNarrowOnEveryDevice checks each device's narrow dtypes through the
// root API: making, casting and moving a tensor gives the cpu's elements,
// bit for bit. Every device holds them: wgpu:0 packed in 32-bit words
// (backends/wgpu/narrow_test.go checks its conversions), cuda in 16 and 8
// bits (internal/cudaemu/narrow_test.go checks its conversions).
func TestNarrowOnEveryDevice(t *testing.T) {
	for _, info := range lathe.DeviceStatus() {
		if info.Device == lathe.CPU {
			continue
		}
		t.Run(info.Device.String(), func(t *testing.T) {
			if !info.Available {
				t.Skipf("%s is unavailable: %s", info.Device, info.Detail)
			}
			dev := info.Device
			vals := []float32{1, -2.5, 300.7, 1e-6}
			for _, dt := range []lathe.DType{lathe.Float16, lathe.BFloat16, lathe.Int8, lathe.Uint8} {
				for what, build := range map[string]func(lathe.Device) *lathe.Tensor{
					"zeros": func(d lathe.Device) *lathe.Tensor { return lathe.Zeros(d, dt, 3) },
					"cast":  func(d lathe.Device) *lathe.Tensor { return lathe.FromSlice(d, vals).Cast(dt) },
					"to":    func(d lathe.Device) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, vals).Cast(dt).To(d) },
				} {
					got, err := build(dev).Cast(lathe.Float32).Float32s()
					want, werr := build(lathe.CPU).Cast(lathe.Float32).Float32s()
					if err != nil || werr != nil || !slices.Equal(got, want) {
						t.Errorf("%s of %s: %v, %v; want the cpu's %v, %v", what, dt, got, err, want, werr)
					}
				}
			}
		})
	}
}
