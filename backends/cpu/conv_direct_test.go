package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// TestConvDirect holds the direct float32 convolution and its two
// gradients to the float64 im2col path on the same values, over random
// shapes that reach every remainder of the kernel's blocks: 4 to 13
// output channels (six or twelve a block), output rows of 16 to 74 (16 or
// 32 a block), groups,
// 1-d and 2-d windows, padding, dilation, and windows past a small input.
func TestConvDirect(t *testing.T) { eachWidth(t, testConvDirect) }

func testConvDirect(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ran, weightGrads := 0, 0
	for trial := range 300 {
		// Shapes the direct kernels take (pays): 4 output channels or
		// more, rows of 16 outputs or more.
		groups := 1 + r.IntN(3)
		cg, og, n := 1+r.IntN(6), 4+r.IntN(10), 1+r.IntN(3)
		oneD := r.IntN(5) == 0
		kh, kw := 1+r.IntN(4), 1+r.IntN(5)
		dh, dw := 1+r.IntN(2), 1+r.IntN(2)
		ph, pw := r.IntN(3), r.IntN(3)
		h, w := 1+r.IntN(12), 16+(kw-1)*dw+r.IntN(55)
		if oneD {
			h, kh, dh, ph = 1, 1, 1, 0
		}
		if h+2*ph < (kh-1)*dh+1 || w+2*pw < (kw-1)*dw+1 || kh*kw == 1 && ph+pw == 0 {
			continue // the window does not fit, or is pointwise (the GEMM's)
		}
		win := layout.Window{Stride: []int{1, 1}, Padding: []int{ph, pw}, Dilation: []int{dh, dw}}
		xShape, wShape := []int{n, groups * cg, h, w}, []int{groups * og, cg, kh, kw}
		if oneD {
			win = layout.Window{Stride: []int{1}, Padding: []int{pw}, Dilation: []int{dw}}
			xShape, wShape = []int{n, groups * cg, w}, []int{groups * og, cg, kw}
		}
		a := ops.ConvParams{Window: win, Groups: groups, InputSize: xShape[2:]}
		yShape := append([]int{n, groups * og}, outSpatial(xShape[2:], wShape[2:], win)...)
		shapes := newConvShapes(xShape, yShape, a.WindowFor(wShape), groups)
		_, forward := directForward(&shapes)
		_, backward := directInputGrad(&shapes)
		if !forward {
			t.Fatalf("trial %d: the direct kernel declined x %v w %v %+v", trial, xShape, wShape, win)
		}
		name := fmt.Sprintf("trial %d: x %v w %v %+v groups %d", trial, xShape, wShape, win, groups)
		x, wt := randomHalves(r, dispatch.Numel(xShape)), randomHalves(r, dispatch.Numel(wShape))
		g := randomHalves(r, dispatch.Numel(yShape))
		aw := a
		aw.Window = a.WindowFor(wShape)
		results := map[string][2][]float64{"forward": convCall(t, name, ops.Conv, a, x, xShape, wt, wShape)}
		if _, ok := directWeightGrad(&shapes); ok {
			results["weight gradient"] = convCall(t, name+" weight gradient", ops.ConvWeightBackward, aw, x, xShape, g, yShape)
			weightGrads++
		}
		if backward { // a padding past the window's reach crops: im2col's
			results["input gradient"] = convCall(t, name+" input gradient", ops.ConvInputBackward, a, g, yShape, wt, wShape)
		}
		for pass, pair := range results {
			for j := range pair[0] {
				if got, want := pair[0][j], pair[1][j]; math.Abs(got-want) > 1e-5*max(1, math.Abs(want)) {
					t.Fatalf("%s (%s): element %d is %v, want %v", name, pass, j, got, want)
				}
			}
		}
		ran++
	}
	if ran < 150 || weightGrads < 50 {
		t.Fatalf("only %d of 300 random shapes fit, %d of them with the direct weight gradient", ran, weightGrads)
	}
}

// TestConvDirectDeclines: the shapes where im2col and the GEMM are faster
// (pays) keep them: many channels per window, few output channels, short
// rows.
func TestConvDirectDeclines(t *testing.T) {
	for _, c := range []struct {
		name         string
		x, y         []int
		kernel, pads int
	}{
		{"64 channels of 3x3", []int{2, 64, 16, 16}, []int{2, 64, 16, 16}, 3, 1},
		{"3 output channels", []int{2, 16, 32, 32}, []int{2, 3, 32, 32}, 3, 1},
		{"rows of 8", []int{2, 16, 8, 8}, []int{2, 16, 8, 8}, 3, 1},
	} {
		win := layout.Window{Kernel: []int{c.kernel, c.kernel}, Stride: []int{1, 1}, Padding: []int{c.pads, c.pads}, Dilation: []int{1, 1}}
		s := newConvShapes(c.x, c.y, win, 1)
		if _, ok := directForward(&s); ok && haveAVX2 {
			t.Errorf("%s: the direct kernels took it", c.name)
		}
	}
}

// convCall runs op on (x, w) in float32 by the direct kernel and in
// float64 by im2col, and returns both results as float64s.
func convCall(t *testing.T, name string, op *dispatch.Op[ops.ConvParams], a ops.ConvParams, x []float64, xShape []int, w []float64, wShape []int) [2][]float64 {
	t.Helper()
	var out [2][]float64
	for i, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
		directConvOn = dt == dispatch.Float32
		y, err := dispatch.Call(op, a, floatTensor(dt, x, xShape), floatTensor(dt, w, wShape))
		directConvOn = true
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[i] = make([]float64, y.Numel())
		for j := range out[i] {
			if dt == dispatch.Float32 {
				out[i][j] = float64(span[float32](y)[j])
			} else {
				out[i][j] = span[float64](y)[j]
			}
		}
	}
	return out
}

// randomHalves is n values in [-1, 1) that float32 holds exactly.
func randomHalves(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Round((r.Float64()*2-1)*256) / 256
	}
	return v
}

func floatTensor(dt dispatch.DType, v []float64, shape []int) *dispatch.Tensor {
	if dt == dispatch.Float64 {
		return tensorOf(dt, append([]float64(nil), v...), shape...)
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensorOf(dt, f, shape...)
}

// outSpatial is a stride-1 convolution's output size per spatial dim.
func outSpatial(in, kernel []int, w layout.Window) []int {
	out := make([]int, len(in))
	for i := range in {
		out[i] = in[i] + 2*w.Padding[i] - w.Dilation[i]*(kernel[i]-1)
	}
	return out
}

// BenchmarkConvDirect is the ResNet block's 16→16 3×3 convolution of 32
// images of 32×32, forward and both gradients, by the direct kernel and
// by im2col and the GEMM.
func BenchmarkConvDirect(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := floatTensor(dispatch.Float32, randomHalves(r, 32*16*32*32), []int{32, 16, 32, 32})
	w := floatTensor(dispatch.Float32, randomHalves(r, 16*16*9), []int{16, 16, 3, 3})
	a := ops.ConvParams{Window: layout.Window{Stride: []int{1, 1}, Padding: []int{1, 1}, Dilation: []int{1, 1}}, Groups: 1, InputSize: []int{32, 32}}
	for _, direct := range []bool{true, false} {
		for _, op := range []*dispatch.Op[ops.ConvParams]{ops.Conv, ops.ConvInputBackward, ops.ConvWeightBackward} {
			b.Run(fmt.Sprintf("%s/direct=%v", op.Name, direct), func(b *testing.B) {
				directConvOn = direct
				defer func() { directConvOn = true }()
				for b.Loop() {
					args, params := []*dispatch.Tensor{x, w}, a
					if op == ops.ConvWeightBackward {
						args, params = []*dispatch.Tensor{x, x}, ops.ConvParams{Window: a.WindowFor(w.Shape), Groups: 1}
					}
					y, err := dispatch.Call(op, params, args...)
					if err != nil {
						b.Fatal(err)
					}
					y.Release()
				}
			})
		}
	}
}

// TestConvDirectHalf: a float16 or bfloat16 convolution whose shape the
// direct kernels take runs them on its bits (convForwardHalf, ...),
// widening as they read and rounding once as they write: bit for bit the
// float32 direct kernels on widened copies, rounded once, for the forward
// and both gradients, in each width, over windows of 3×3, 2×2 and 1×5,
// dilated or not. A bfloat16 forward and input gradient take the dot
// products (runDot) where the CPU has AVX512-BF16, which sum in another
// order; on these values (multiples of 1/256 in [-1, 1]) every product and
// sum is exact in float32 either way, so the bits agree there too, and any
// misplaced channel pair or window element shows.
func TestConvDirectHalf(t *testing.T) {
	eachWidth(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(8, 9))
		for trial := range 20 {
			dt := []dispatch.DType{dispatch.Float16, dispatch.BFloat16}[trial%2]
			groups, cg, og, n := 1+r.IntN(2), 1+r.IntN(6), 4+r.IntN(10), 1+r.IntN(3)
			h, w := 2+r.IntN(6), 32+r.IntN(40)
			kh, kw := [][2]int{{3, 3}, {2, 2}, {1, 5}}[trial%3][0], [][2]int{{3, 3}, {2, 2}, {1, 5}}[trial%3][1]
			d := 1 + trial/10%2
			xShape, wShape := []int{n, groups * cg, h, w}, []int{groups * og, cg, kh, kw}
			win := layout.Window{Stride: []int{1, 1}, Padding: []int{(kh - 1) * d / 2, (kw - 1) * d / 2}, Dilation: []int{d, d}}
			a := ops.ConvParams{Window: win, Groups: groups, InputSize: xShape[2:]}
			yShape := append([]int{n, groups * og}, outSpatial(xShape[2:], wShape[2:], win)...)
			aw := a
			aw.Window = a.WindowFor(wShape)
			x, wt, g := randomHalves(r, dispatch.Numel(xShape)), randomHalves(r, dispatch.Numel(wShape)), randomHalves(r, dispatch.Numel(yShape))
			for _, c := range []struct {
				name     string
				op       *dispatch.Op[ops.ConvParams]
				params   ops.ConvParams
				lhs, rhs []float64
				lsh, rsh []int
			}{
				{"forward", ops.Conv, a, x, wt, xShape, wShape},
				{"input gradient", ops.ConvInputBackward, a, g, wt, yShape, wShape},
				{"weight gradient", ops.ConvWeightBackward, aw, x, g, xShape, yShape},
			} {
				got := halfCall(t, dt, c.op, c.params, c.lhs, c.lsh, c.rhs, c.rsh, false)
				want := halfCall(t, dt, c.op, c.params, c.lhs, c.lsh, c.rhs, c.rsh, true)
				if !slices.Equal(got, want) {
					t.Fatalf("trial %d %v %s, x %v w %v groups %d: %04x, through float32 %04x", trial, dt, c.name, xShape, wShape, groups, got[:8], want[:8])
				}
			}
		}
	})
}

// halfCall runs op on arguments of the 16-bit dtype dt holding lhs and
// rhs and returns the result's bits: directly, or (viaFloat32) on float32
// copies with the float32 result rounded once to dt.
func halfCall(t *testing.T, dt dispatch.DType, op *dispatch.Op[ops.ConvParams], a ops.ConvParams, lhs []float64, lsh []int, rhs []float64, rsh []int, viaFloat32 bool) []uint16 {
	t.Helper()
	cast := func(x *dispatch.Tensor, dt dispatch.DType) *dispatch.Tensor {
		y, err := dispatch.Call(ops.Cast, ops.CastTo{DType: dt}, x)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	l := cast(floatTensor(dispatch.Float32, lhs, lsh), dt)
	r := cast(floatTensor(dispatch.Float32, rhs, rsh), dt)
	if viaFloat32 {
		l, r = cast(l, dispatch.Float32), cast(r, dispatch.Float32)
	}
	y, err := dispatch.Call(op, a, l, r)
	if err != nil {
		t.Fatal(err)
	}
	if viaFloat32 {
		y = cast(y, dt)
	}
	return append([]uint16(nil), bits16(y.Storage.Buffer)[y.Offset:y.Offset+y.Numel()]...)
}
