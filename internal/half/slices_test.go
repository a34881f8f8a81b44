package half

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The slice converters give what the scalar functions give, convert
// min(len(dst), len(src)) elements and leave the rest of dst alone.
func TestSlices(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bits := make([]uint16, 1000)
	floats := make([]float32, 1000)
	for i := range bits {
		bits[i] = uint16(r.Uint32())
		floats[i] = math.Float32frombits(r.Uint32())
	}
	widen := []struct {
		name  string
		slice func([]float32, []uint16) int
		one   func(uint16) float32
	}{{"f16", Float16sToFloat32s, Float16ToFloat32}, {"bf16", BFloat16sToFloat32s, BFloat16ToFloat32}}
	narrow := []struct {
		name  string
		slice func([]uint16, []float32) int
		one   func(float32) uint16
	}{{"f16", Float32sToFloat16s, Float16FromFloat32}, {"bf16", Float32sToBFloat16s, BFloat16FromFloat32}}
	lengths := []struct{ dst, src int }{{1000, 1000}, {1200, 1000}, {700, 1000}, {0, 1000}, {5, 0}, {0, 0}}
	const fill = 0x1234 // what dst held, to see what a converter left alone
	for _, c := range widen {
		for _, l := range lengths {
			dst := make([]float32, l.dst)
			for i := range dst {
				dst[i] = fill
			}
			n := c.slice(dst, bits[:l.src])
			if want := min(l.dst, l.src); n != want {
				t.Fatalf("widen/%s dst %d src %d: n = %d, want %d", c.name, l.dst, l.src, n, want)
			}
			for i, x := range dst {
				want := float32(fill)
				if i < n {
					want = c.one(bits[i])
				}
				if math.Float32bits(x) != math.Float32bits(want) {
					t.Fatalf("widen/%s dst %d src %d: dst[%d] = %08x, want %08x", c.name, l.dst, l.src, i, math.Float32bits(x), math.Float32bits(want))
				}
			}
		}
	}
	for _, c := range narrow {
		for _, l := range lengths {
			dst := make([]uint16, l.dst)
			for i := range dst {
				dst[i] = fill
			}
			n := c.slice(dst, floats[:l.src])
			if want := min(l.dst, l.src); n != want {
				t.Fatalf("narrow/%s dst %d src %d: n = %d, want %d", c.name, l.dst, l.src, n, want)
			}
			for i, h := range dst {
				want := uint16(fill)
				if i < n {
					want = c.one(floats[i])
				}
				if h != want {
					t.Fatalf("narrow/%s dst %d src %d: dst[%d] = %04x, want %04x", c.name, l.dst, l.src, i, h, want)
				}
			}
		}
	}
	// nil slices are empty ones.
	if Float16sToFloat32s(nil, bits) != 0 || Float32sToBFloat16s(nil, nil) != 0 {
		t.Fatal("a nil slice converted something")
	}
}

func TestNoAllocs(t *testing.T) {
	src := make([]float32, 256)
	bits := make([]uint16, 256)
	if a := testing.AllocsPerRun(10, func() {
		Float32sToFloat16s(bits, src)
		Float16sToFloat32s(src, bits)
		Float32sToBFloat16s(bits, src)
		BFloat16sToFloat32s(src, bits)
	}); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

// benchN is 2^16 elements: 384 KiB in and out together, so that the
// benchmarks measure the conversion from cache, not memory bandwidth.
const benchN = 1 << 16

// benchInputs are benchN values of the sizes tensors hold (normal, mostly
// within float16's range, some subnormal and some overflowing), as float32s
// and as float16 and bfloat16 bits.
func benchInputs() (f []float32, h16, b16 []uint16) {
	r := rand.New(rand.NewPCG(3, 4))
	f = make([]float32, benchN)
	h16 = make([]uint16, benchN)
	b16 = make([]uint16, benchN)
	for i := range f {
		f[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(40)-20)))
	}
	Float32sToFloat16s(h16, f)
	Float32sToBFloat16s(b16, f)
	return f, h16, b16
}

// reportGBs reports bytes read and written (6 per element) per second.
func reportGBs(b *testing.B) {
	b.ReportMetric(float64(6*benchN)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkFloat32sToFloat16s(b *testing.B) {
	f, h, _ := benchInputs()
	for b.Loop() {
		Float32sToFloat16s(h, f)
	}
	reportGBs(b)
}

func BenchmarkFloat16sToFloat32s(b *testing.B) {
	f, h, _ := benchInputs()
	for b.Loop() {
		Float16sToFloat32s(f, h)
	}
	reportGBs(b)
}

func BenchmarkFloat32sToBFloat16s(b *testing.B) {
	f, _, h := benchInputs()
	for b.Loop() {
		Float32sToBFloat16s(h, f)
	}
	reportGBs(b)
}

func BenchmarkBFloat16sToFloat32s(b *testing.B) {
	f, _, h := benchInputs()
	for b.Loop() {
		BFloat16sToFloat32s(f, h)
	}
	reportGBs(b)
}
