package cuda

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestElementwiseForms checks which form of its kernel an elementwise op
// launches (ops_elementwise.go's mapKernel), with which periods and grid.
func TestElementwiseForms(t *testing.T) {
	log := recordLaunches(t)
	f32 := dispatch.Float32
	for _, c := range []struct {
		name    string
		in      []*dispatch.Tensor
		fn      string
		periods []int64 // the dense form's, after n
	}{
		{"same-shape", []*dispatch.Tensor{tensor(f32, []int{2, 3}), tensor(f32, []int{2, 3})}, "add_f32", []int64{6, 6}},
		{"bias-row", []*dispatch.Tensor{tensor(f32, []int{4, 8}), tensor(f32, []int{8})}, "add_f32", []int64{32, 8}},
		{"row-with-leading-1s", []*dispatch.Tensor{tensor(f32, []int{1, 1, 8}), tensor(f32, []int{3, 4, 8})}, "add_f32", []int64{8, 96}},
		{"scalar", []*dispatch.Tensor{tensor(f32, []int{5, 7}), tensor(f32, []int{})}, "add_f32", []int64{35, 1}},
		{"scalar-of-any-strides", []*dispatch.Tensor{tensor(f32, []int{1, 1}, 9, 4), tensor(f32, []int{5})}, "add_f32", []int64{1, 5}},
		{"misaligned-still-dense", []*dispatch.Tensor{offsetView(f32, []int{5}, 1), tensor(f32, []int{5})}, "add_f32", []int64{5, 5}},
		{"column", []*dispatch.Tensor{tensor(f32, []int{4, 8}), tensor(f32, []int{4, 1})}, "add_strided32_f32", nil},
		{"transposed", []*dispatch.Tensor{tensor(f32, []int{3, 2}, 1, 3), tensor(f32, []int{3, 2})}, "add_strided32_f32", nil},
		{"row-not-contiguous", []*dispatch.Tensor{tensor(f32, []int{4, 8}), tensor(f32, []int{8}, 2)}, "add_strided32_f32", nil},
	} {
		*log = (*log)[:0]
		k := kernels[&ops.Add.Schema].(dispatch.Kernel[dispatch.None])
		_, shape, err := ops.Add.Infer(c.in, dispatch.None{})
		if err != nil {
			t.Fatal(err)
		}
		if err := k(tensor(f32, shape), c.in, dispatch.None{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(*log) != 1 || (*log)[0].fn != c.fn {
			t.Errorf("%s: launched %v, want one %s", c.name, *log, c.fn)
			continue
		}
		l := (*log)[0]
		if c.periods != nil {
			if got := fmt.Sprint(l.args[3:]); got != fmt.Sprint(append([]int64{int64(dispatch.Numel(shape))}, c.periods...)) {
				t.Errorf("%s: n and periods %s, want %v", c.name, got, c.periods)
			}
		}
	}

	// A unary op and a cast of a non-contiguous view take the strided32
	// form, and the 64-bit one where the walk does not fit 31 bits.
	*log = (*log)[:0]
	x := tensor(f32, []int{3, 2}, 1, 3)
	if err := kernels[&ops.Exp.Schema].(dispatch.Kernel[ops.Params])(tensor(f32, []int{3, 2}), []*dispatch.Tensor{x}, ops.Params{}); err != nil {
		t.Fatal(err)
	}
	old := fits32
	spread := tensor(f32, []int{3, 2}, 1, 10) // 6 elements, the farthest at 2·1 + 1·10
	fits32 = 12
	err := kernels[&ops.Contiguous.Schema].(dispatch.Kernel[dispatch.None])(tensor(f32, []int{3, 2}), []*dispatch.Tensor{spread}, dispatch.None{})
	fits32 = 11 // n fits, the farthest offset does not
	err2 := kernels[&ops.Contiguous.Schema].(dispatch.Kernel[dispatch.None])(tensor(f32, []int{3, 2}), []*dispatch.Tensor{spread}, dispatch.None{})
	fits32 = old
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	var fns []string
	for _, l := range *log {
		fns = append(fns, l.fn)
	}
	if want := "[exp_strided32_f32 cast_strided32_f32_f32 cast_strided_f32_f32]"; fmt.Sprint(fns) != want {
		t.Errorf("launched %v, want %s", fns, want)
	}
}

// TestDenseChunks checks the launches of a dense op past the kernels'
// 32-bit index (fits32, lowered here): chunks of a multiple of 16 and of
// every period below n, the inputs of out's shape moved with out, a
// periodic one not; and the strided form where no such multiple fits.
func TestDenseChunks(t *testing.T) {
	log := recordLaunches(t)
	old := fits32
	fits32 = 40
	t.Cleanup(func() { fits32 = old })
	f32 := dispatch.Float32
	add := kernels[&ops.Add.Schema].(dispatch.Kernel[dispatch.None])
	x, bias := tensor(f32, []int{3, 16}), tensor(f32, []int{16})
	if err := add(tensor(f32, []int{3, 16}), []*dispatch.Tensor{x, bias}, dispatch.None{}); err != nil {
		t.Fatal(err)
	}
	base, b := uint64(1<<32), uint64(1<<32) // recordLaunches' addresses: every tensor at 1<<32
	want := []string{
		fmt.Sprint("add_f32", []any{base, base, b, int64(32), int64(32), int64(16)}),
		fmt.Sprint("add_f32", []any{base + 128, base + 128, b, int64(16), int64(16), int64(16)}),
	}
	var got []string
	for _, l := range *log {
		got = append(got, fmt.Sprint(l.fn, l.args))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("[3,16] + [16] past 40 elements launched\n%v\nwant\n%v", got, want)
	}
	*log = (*log)[:0]
	// A period of 24 and vectors of 16: their least common multiple, 48,
	// is past 40.
	if err := add(tensor(f32, []int{3, 24}), []*dispatch.Tensor{tensor(f32, []int{3, 24}), tensor(f32, []int{24})}, dispatch.None{}); err != nil {
		t.Fatal(err)
	}
	if len(*log) != 1 || (*log)[0].fn != "add_strided_f32" {
		t.Errorf("[3,24] + [24] past 40 elements launched %v, want one add_strided_f32", *log)
	}
	// At the real limit: 2^40 elements, a scalar and a row of 3072.
	fits32 = old
	if got, want := denseChunk(1<<40, []int{1 << 40, 1, 3 * 1024}), (1<<31-1)/3072*3072; got != want {
		t.Errorf("denseChunk(2^40, rows of 3072) = %d, want %d", got, want)
	}
	if got := denseChunk(100, []int{100, 1}); got != 100 {
		t.Errorf("denseChunk(100) = %d, want 100 (one launch)", got)
	}
}

// TestForChunksEnds checks that a chunk below 1 (denseChunk's 0 under a
// test's fits32 below 16) walks [0, n) one element at a time instead of
// looping forever.
func TestForChunksEnds(t *testing.T) {
	var starts []int
	if err := forChunks(3, 0, func(start, m int) error {
		if m != 1 {
			t.Errorf("chunk at %d of %d elements, want 1", start, m)
		}
		starts = append(starts, start)
		return nil
	}); err != nil || !slices.Equal(starts, []int{0, 1, 2}) {
		t.Errorf("chunks at %v (%v), want [0 1 2]", starts, err)
	}
}

// TestGridDense checks the dense grid: a thread per 16-byte vector of the
// widest operand, capped at denseWaves rounds of full multiprocessors.
func TestGridDense(t *testing.T) {
	recordLaunches(t) // no device: defaultSMs
	f32, f64, b := view{dtype: dispatch.Float32}, view{dtype: dispatch.Float64}, view{dtype: dispatch.Bool}
	cap := uint32(defaultSMs * 2048 / blockThreads * denseWaves)
	for _, c := range []struct {
		n       int
		out     view
		in      []view
		want    uint32
		comment string
	}{
		{1, f32, nil, 1, "one element"},
		{1024, f32, []view{f32}, 1, "256 vectors of 4"},
		{1025, f32, []view{f32}, 2, "a tail past one block"},
		{1024, b, []view{f64}, 2, "compare of float64: vectors of 2"},
		{16 << 20, f32, []view{f32, f32}, cap, "a+b 16M: capped, about 4 vectors a thread"},
		{4 << 20, f32, []view{f32, f32}, 4096, "4M: one vector a thread, under the cap"},
	} {
		g, blk := gridDense(dispatch.Device{Kind: kind}, c.n, c.out, c.in)
		if g[0] != c.want || blk[0] != blockThreads {
			t.Errorf("%s: grid %v block %v, want %d blocks of %d", c.comment, g, blk, c.want, blockThreads)
		}
	}
}

// TestDivisor32 checks the strided32 kernels' division by multiplication
// (dense.cuh's offsets32_of) against integer division, for small, square,
// power-of-two and large divisors, at the dividends where it is most
// likely to be off: multiples of d and their neighbours, and the top of
// the range (2^31 - 1).
func TestDivisor32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds := []uint32{1, 2, 3, 5, 6, 7, 9, 10, 12, 25, 100, 641, 1000, 1 << 15, 1<<16 + 1, 65535, 1<<20 - 3, 1<<30 + 1, 1<<31 - 1}
	for range 200 {
		ds = append(ds, 1+rng.Uint32N(1<<31-1), 1+rng.Uint32N(1<<12))
	}
	for _, d := range ds {
		magic, shift := divisor32(d)
		is := []uint32{0, 1, d - 1, d, d + 1, 1<<31 - 1, 1<<31 - 2, (1<<31 - 1) / d * d, (1<<31-1)/d*d - 1}
		for range 50 {
			is = append(is, rng.Uint32N(1<<31))
		}
		for _, i := range is {
			if i >= 1<<31 {
				continue
			}
			hi := uint32(uint64(i) * uint64(magic) >> 32)
			if q := (hi + i) >> shift; q != i/d {
				t.Fatalf("%d / %d: magic %d shift %d gives %d, want %d", i, d, magic, shift, q, i/d)
			}
		}
	}
}
