package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/layout"
)

// TestIm2col checks im2col over random 1-, 2- and 3-d windows (strides
// above the kernel, padding wider than it, dilation) against the
// definition, element by element, and col2im as its adjoint:
// ⟨im2col(x), c⟩ = ⟨x, col2im(c)⟩.
func TestIm2col(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	checked := 0
	for trial := range 300 {
		nd := 1 + trial%3
		w := layout.Window{Kernel: make([]int, nd), Stride: make([]int, nd), Padding: make([]int, nd), Dilation: make([]int, nd)}
		in := make([]int, nd)
		for i := range nd {
			w.Kernel[i], w.Stride[i], w.Padding[i], w.Dilation[i] = 1+r.IntN(3), 1+r.IntN(3), r.IntN(4), 1+r.IntN(2)
			in[i] = 1 + r.IntN(6)
		}
		if w.Check("x", in, false) != nil {
			continue
		}
		checked++
		out := w.OutShape(in)
		g := newGeom(w, in, out)
		c := 1 + r.IntN(2)
		x := make([]float64, c*g.inSize)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		col := make([]float64, c*g.k*g.l)
		im2col(col, x, c, &g)
		// The definition: row (ch, k), column o holds x[ch, o·s - p + k·d].
		for row := range c * g.k {
			ch, kk := row/g.k, row%g.k
			for o := range g.l {
				want, ok := 0.0, true
				idx := 0
				for i, ko, oo := 2, kk, o; i >= 0; i-- {
					pos := (oo%g.out[i])*g.stride[i] - g.pad[i] + (ko%g.kernel[i])*g.dil[i]
					ok = ok && pos >= 0 && pos < g.in[i]
					stride := 1
					for j := i + 1; j < 3; j++ {
						stride *= g.in[j]
					}
					idx += pos * stride
					ko, oo = ko/g.kernel[i], oo/g.out[i]
				}
				if ok {
					want = x[ch*g.inSize+idx]
				}
				if got := col[row*g.l+o]; got != want {
					t.Fatalf("window %+v on %v: col[%d, %d] = %v, want %v", w, in, row, o, got, want)
				}
			}
		}
		cv := make([]float64, len(col))
		for i := range cv {
			cv[i] = r.NormFloat64()
		}
		var lhs float64
		for i := range col {
			lhs += col[i] * cv[i]
		}
		// col2im of a column matrix it must leave alone, and of scratch.
		for _, scratch := range []bool{false, true} {
			back := make([]float64, len(x))
			cs := slices.Clone(cv)
			col2im(back, cs, c, &g, scratch)
			if !scratch && !slices.Equal(cs, cv) {
				t.Fatalf("window %+v on %v: col2im changed its column matrix", w, in)
			}
			var rhs float64
			for i := range x {
				rhs += x[i] * back[i]
			}
			if math.Abs(lhs-rhs) > 1e-12*max(1, math.Abs(lhs)) {
				t.Fatalf("window %+v on %v (scratch %v): ⟨im2col x, c⟩ = %v but ⟨x, col2im c⟩ = %v", w, in, scratch, lhs, rhs)
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d of 300 random windows fit their inputs", checked)
	}
}

// TestConvColumnsPastAnInt: a window whose column matrix (channels ×
// kernel × windows) has more elements than an int counts, over an empty
// batch, gives the empty result (one image is refused, its output being as
// large): the workers' column buffers were made with make from the wrapped
// count, which panicked (makeslice) though no image needed one.
func TestConvColumnsPastAnInt(t *testing.T) {
	const p = 1 << 31 // 2^32 + 2 windows a dim
	a := ops.ConvParams{Window: layout.Window{Stride: []int{1, 1}, Padding: []int{p, p}, Dilation: []int{1, 1}}, Groups: 1}
	w := tensorOf(dispatch.Float32, []float32{1, 2, 3, 4}, 1, 1, 2, 2)
	for _, n := range []int{0, 1} {
		x := tensorOf(dispatch.Float32, make([]float32, n*9), n, 1, 3, 3)
		y, err := dispatch.Call(ops.Conv, a, x, w)
		switch {
		case n == 0 && err != nil:
			t.Errorf("batch 0: %v, want an empty result", err)
		case n == 0 && y.Numel() != 0:
			t.Errorf("batch 0: shape %v, want an empty result", y.Shape)
		case n == 1 && !errors.Is(err, dispatch.ErrShape) && !errors.Is(err, dispatch.ErrOutOfMemory):
			t.Errorf("batch 1: %v, want ErrShape or ErrOutOfMemory", err)
		}
	}
}

// BenchmarkIm2col measures im2col and col2im (over scratch columns, as the
// input gradient runs it) per image, in GB/s of column matrix.
func BenchmarkIm2col(b *testing.B) {
	for _, sh := range []struct{ c, h, k, s, p int }{{16, 32, 3, 1, 1}, {64, 56, 3, 1, 1}, {64, 56, 3, 2, 1}} {
		w := layout.Window{Kernel: []int{sh.k, sh.k}, Stride: []int{sh.s, sh.s}, Padding: []int{sh.p, sh.p}, Dilation: []int{1, 1}}
		in := []int{sh.h, sh.h}
		g := newGeom(w, in, w.OutShape(in))
		x := make([]float32, sh.c*g.inSize)
		for i := range x {
			x[i] = float32(i % 11)
		}
		col := make([]float32, sh.c*g.k*g.l)
		name := fmt.Sprintf("c%d_%dx%d_k%d_s%d", sh.c, sh.h, sh.h, sh.k, sh.s)
		gbs := func(b *testing.B) {
			b.ReportMetric(float64(len(col)*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		}
		b.Run("im2col/"+name, func(b *testing.B) {
			for b.Loop() {
				im2col(col, x, sh.c, &g)
			}
			gbs(b)
		})
		b.Run("col2im/"+name, func(b *testing.B) {
			for b.Loop() {
				col2im(x, col, sh.c, &g, true)
			}
			gbs(b)
		})
	}
}
