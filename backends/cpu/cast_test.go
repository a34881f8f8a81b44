package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestConvertVector: shim.c's conversions give Go's bits (the loops that
// run where they do not), on runs long enough to take them and with a
// tail past the last full vector, over the values a conversion can get
// wrong: NaN, ±Inf, ±0, subnormals, halves (ties), values past int32 and
// at its ends, and int32s that float32 must round.
func TestConvertVector(t *testing.T) {
	if !haveAVX2 {
		t.Skip("the C conversions need AVX2, which this cpu lacks")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 0x1p-149, -0x1p-1074, 0x1p-1030,
		2.5, -2.5, 0.5, -0.999, 2147483647, 2147483647.5, 2147483648, -2147483648, -2147483648.9, -2147483649, 3e9, -1e20,
		16777217, 1e300, 3.4028235677973366e38}
	const n = 1000 + 3
	f64 := make([]float64, n)
	i32 := make([]int32, n)
	for i := range f64 {
		if i%3 == 0 {
			f64[i] = special[(i/3)%len(special)]
		} else {
			f64[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)))
		}
		i32[i] = int32(rng.Uint32())
	}
	i32[1], i32[2] = math.MaxInt32, math.MinInt32
	f32 := make([]float32, n)
	for i, v := range f64 {
		f32[i] = float32(v)
	}
	bits32 := func(v float32) uint64 { return uint64(math.Float32bits(v)) }
	bits64 := math.Float64bits
	ints := func(v int32) uint64 { return uint64(uint32(v)) }
	convertsAsGo(t, "float32 to float64", f32, func(v float32) float64 { return float64(v) }, bits64)
	convertsAsGo(t, "float64 to float32", f64, func(v float64) float32 { return float32(v) }, bits32)
	convertsAsGo(t, "int32 to float32", i32, func(v int32) float32 { return float32(v) }, bits32)
	convertsAsGo(t, "int32 to float64", i32, func(v int32) float64 { return float64(v) }, bits64)
	convertsAsGo(t, "float32 to int32", f32, func(v float32) int32 { return floatToInt32(float64(v)) }, ints)
	convertsAsGo(t, "float64 to int32", f64, floatToInt32, ints)
	if convertVector(make([]float64, vectorMin-1), make([]float32, vectorMin-1)) {
		t.Error("convertVector took a run shorter than vectorMin")
	}
	if convertVector(make([]int64, n), make([]float32, n)) {
		t.Error("convertVector took float32 to int64, which shim.c has no loop for")
	}
}

// convertsAsGo checks that convertVector converts src as conv does, bit
// for bit (bits gives a value's).
func convertsAsGo[S, D any](t *testing.T, name string, src []S, conv func(S) D, bits func(D) uint64) {
	t.Helper()
	got := make([]D, len(src))
	if !convertVector(got, src) {
		t.Fatalf("%s: convertVector refused a run of %d", name, len(src))
	}
	for i, v := range src {
		if w := conv(v); bits(got[i]) != bits(w) {
			t.Errorf("%s: element %d: got bits %#x, want %#x", name, i, bits(got[i]), bits(w))
			return
		}
	}
}

// TestCopyExpandedRuns: a copy whose source repeats one value along the
// last dim (an expanded gradient made contiguous) fills each run, and a
// single long run is shared between the cores: the rows of a [5, 1000]
// view of five values, and one value over 2^19 + 3 elements.
func TestCopyExpandedRuns(t *testing.T) {
	base := tensorOf(dispatch.Float32, []float32{1, -2, 3.5, float32(math.Copysign(0, -1)), 7}, 5)
	for _, c := range []struct {
		shape, strides []int
		at             func(i int) float32
	}{
		{[]int{5, 1000}, []int{1, 0}, func(i int) float32 { return span[float32](base)[i/1000] }},
		{[]int{1<<19 + 3}, []int{0}, func(int) float32 { return 3.5 }},
	} {
		off := 0
		if len(c.shape) == 1 {
			off = 2
		}
		got := span[float32](contiguous(base.View(c.shape, c.strides, off)))
		for i, v := range got {
			if want := c.at(i); math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("%v: [%d] = %v, want %v", c.shape, i, v, want)
			}
		}
	}
}

// TestTransposeCopy: a copy whose last dim walks across the input's rows
// (transposeCopy's 8 × 8 tiles) gives every element where an index walk
// puts it, bit for bit (NaN payloads too): x.T of a large and an odd-sized
// matrix, a batch of them, NHWC to NCHW (whose H and W collapse into one
// dim), a transposed narrow at an offset inside a wider storage, int32,
// and matrices under 8 × 8 and rows of stride 1, which go the other way.
func TestTransposeCopy(t *testing.T) {
	const n = 1 << 20
	bits := make([]uint32, n)
	for i := range bits {
		bits[i] = uint32(i)*2654435761 | 0x7f800001 // NaNs of every payload, and others
		if i%3 == 0 {
			bits[i] = math.Float32bits(float32(i))
		}
	}
	for _, c := range []struct {
		name           string
		shape, strides []int
		offset         int
	}{
		{"[1024,1024].T", []int{1024, 1024}, []int{1, 1024}, 0},
		{"[13,29].T", []int{29, 13}, []int{1, 29}, 0},
		{"[3,70,20] dims 1,2 swapped", []int{3, 20, 70}, []int{1400, 1, 20}, 0},
		{"NHWC [2,5,6,16] as NCHW", []int{2, 16, 5, 6}, []int{480, 1, 96, 16}, 0},
		{"narrow [40,30] of [50,100] at 7, .T", []int{30, 40}, []int{1, 100}, 7},
		{"[7,5].T", []int{5, 7}, []int{1, 5}, 0},
		{"[8,100] rows", []int{8, 100}, []int{100, 1}, 3},
	} {
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Int32} {
			var base *dispatch.Tensor
			if dt == dispatch.Float32 {
				f := make([]float32, n)
				for i, b := range bits {
					f[i] = math.Float32frombits(b)
				}
				base = tensorOf(dt, f, n)
			} else {
				v := make([]int32, n)
				for i, b := range bits {
					v[i] = int32(b)
				}
				base = tensorOf(dt, v, n)
			}
			x := base.View(c.shape, c.strides, c.offset)
			got := contiguous(x)
			g, src := bitsOf[uint32](got), bitsOf[uint32](base)
			idx := make([]int, len(c.shape))
			for i := range g {
				off := c.offset
				for d := range idx {
					off += idx[d] * c.strides[d]
				}
				if g[i] != src[off] {
					t.Fatalf("%s %v: [%d] (index %v) has bits %#x, want %#x", c.name, dt, i, idx, g[i], src[off])
				}
				for d := len(idx) - 1; d >= 0; d-- {
					if idx[d]++; idx[d] < c.shape[d] {
						break
					}
					idx[d] = 0
				}
			}
			got.Release()
		}
	}
}

// TestPadBorder: pad writes x's surviving part and the value everywhere
// else, the border filled slab by slab (fillBorder) rather than over the
// whole output: every element against an index walk, for random ranks 1
// to 4, pads and crops of -3 to 3 on up to every dim, strided and offset
// inputs, and a value of -0 (whose sign a fill must keep).
func TestPadBorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	ran := 0
	for trial := range 300 {
		r := 1 + rng.IntN(4)
		shape := make([]int, r)
		for d := range shape {
			shape[d] = 1 + rng.IntN(6)
		}
		pads := make([]int, 2*(1+rng.IntN(r)))
		for i := range pads {
			pads[i] = rng.IntN(7) - 3
		}
		base := make([]float32, 2*dispatch.Numel(shape)+3)
		for i := range base {
			base[i] = float32(i + 1)
		}
		// x reads every other element of base from 3 on.
		strides := dispatch.ContiguousStrides(shape)
		for d := range strides {
			strides[d] *= 2
		}
		x := tensorOf(dispatch.Float32, base, len(base)).View(shape, strides, 3)
		v := math.Copysign(0, -1)
		if trial%2 == 0 {
			v = 2.5
		}
		a := ops.Padding{Pads: pads, Value: v}
		out, err := dispatch.Call(ops.Pad, a, x)
		if err != nil {
			continue // a crop past a dim's size: the op's error, not this test's
		}
		got := span[float32](out)
		idx := make([]int, r)
		for i, g := range got {
			want, inside := float32(v), true
			off := 3
			for d := range r {
				left := 0
				if k := r - 1 - d; 2*k+1 < len(pads) {
					left = pads[2*k]
				}
				j := idx[d] - left // the index into x along d
				if j < 0 || j >= shape[d] {
					inside = false
				}
				off += j * strides[d]
			}
			if inside {
				want = base[off]
			}
			if math.Float32bits(g) != math.Float32bits(want) {
				t.Fatalf("trial %d: x %v pads %v value %v: [%d] (index %v) = %v, want %v", trial, shape, pads, v, i, idx, g, want)
			}
			for d := r - 1; d >= 0; d-- {
				if idx[d]++; idx[d] < out.Shape[d] {
					break
				}
				idx[d] = 0
			}
		}
		out.Release()
		ran++
	}
	if ran < 200 {
		t.Fatalf("only %d of 300 random pads ran", ran)
	}
}
