//go:build cgo

package cuda

import (
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// fakeConvProducts runs convolution's three products (ops_conv.go) through
// batchedProduct on dev, in float32 and float64, with their strides as
// convForward, convInputBackward and convWeightBackward pass them for the
// second of two groups (so batch strides span both groups and the
// addresses start past the first): cuBLAS where the device has it, the
// PTX kernel for layouts it cannot read. C's storage starts as a sentinel;
// C's elements must be the reference sums and every other element left
// alone.
func fakeConvProducts(t *testing.T, dev dispatch.Device) {
	const n, groups, og, ck, l = 3, 2, 3, 4, 5 // images, groups, outputs, taps·channels, positions per group
	o, cols := groups*og, groups*ck            // channels out, rows of an image's column matrix
	per := o * ck
	type operand struct {
		size    int      // elements of the storage
		off     int      // the second group's first element
		strides [3]int64 // between images, rows, columns
	}
	cases := []struct {
		name    string
		m, k, c int // C is m×c, the sum over k
		a, b, x operand
		viaBLAS bool
	}{
		{"forward", og, ck, l,
			operand{o * ck, og * ck, [3]int64{0, ck, 1}},
			operand{n * cols * l, ck * l, [3]int64{int64(cols * l), l, 1}},
			operand{n * o * l, og * l, [3]int64{int64(o * l), l, 1}}, true},
		{"input backward (W transposed)", ck, og, l,
			operand{o * ck, og * ck, [3]int64{0, 1, ck}},
			operand{n * o * l, og * l, [3]int64{int64(o * l), l, 1}},
			operand{n * cols * l, ck * l, [3]int64{int64(cols * l), l, 1}}, true},
		{"weight backward (col transposed)", og, l, ck,
			operand{n * o * l, og * l, [3]int64{int64(o * l), l, 1}},
			operand{n * cols * l, ck * l, [3]int64{int64(cols * l), 1, l}},
			operand{n * per, og * ck, [3]int64{int64(per), ck, 1}}, true},
		{"every other column of W: the PTX kernel", og, ck / 2, l,
			operand{o * ck, og * ck, [3]int64{0, ck, 2}},
			operand{n * cols * l, ck * l, [3]int64{int64(cols * l), l, 1}},
			operand{n * o * l, og * l, [3]int64{int64(o * l), l, 1}}, false},
	}
	seq := func(size int, start float64) []float64 {
		s := make([]float64, size)
		for i := range s {
			s[i] = start + float64(i%9) - 4 + float64(i%4)/4
		}
		return s
	}
	const sentinel = -12345 // exact in float32
	for _, c := range cases {
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				viaBLAS := c.viaBLAS && d0(t).blas != nil
				ha, hb := seq(c.a.size, 0.5), seq(c.b.size, -1)
				hx := make([]float64, c.x.size)
				for i := range hx {
					hx[i] = sentinel
				}
				want := append([]float64(nil), hx...)
				for b := range n {
					for i := range c.m {
						for j := range c.c {
							var acc float64
							for p := range c.k {
								acc += ha[c.a.off+b*int(c.a.strides[0])+i*int(c.a.strides[1])+p*int(c.a.strides[2])] *
									hb[c.b.off+b*int(c.b.strides[0])+p*int(c.b.strides[1])+j*int(c.b.strides[2])]
							}
							want[c.x.off+b*int(c.x.strides[0])+i*int(c.x.strides[1])+j*int(c.x.strides[2])] = acc
						}
					}
				}
				up := func(h []float64) *dispatch.Tensor {
					if dt == dispatch.Float32 {
						return upload(t, dev, toF32(h), dt, len(h))
					}
					return upload(t, dev, h, dt, len(h))
				}
				a, b, x := up(ha), up(hb), up(hx)
				defer a.Release()
				defer b.Release()
				defer x.Release()
				size := int64(dt.Size())
				at := func(t *dispatch.Tensor, off int) uint64 { return devicePtr(t) + uint64(int64(off)*size) }
				s := cMatmulStrides{A: c.a.strides, B: c.b.strides, C: c.x.strides}
				if err := cudaBackend.Sync(dev); err != nil { // launches counts from here
					t.Fatal(err)
				}
				if err := batchedProduct(dev, dt, at(a, c.a.off), at(b, c.b.off), at(x, c.x.off), c.m, c.c, c.k, n, s); err != nil {
					t.Fatal(err)
				}
				op, launches := *d0(t).lastOp.Load(), d0(t).launches.Load()
				if blas := strings.HasPrefix(op, "cublas"); blas != viaBLAS || launches != 1 {
					t.Errorf("%d launches, the last %s; want one, by cuBLAS %v", launches, op, viaBLAS)
				}
				var got []float64
				if dt == dispatch.Float32 {
					for _, v := range read[float32](t, x) {
						got = append(got, float64(v))
					}
				} else {
					got = read[float64](t, x)
				}
				for i := range want { // sums of multiples of 1/16: exact in float32
					if got[i] != want[i] {
						t.Fatalf("element %d: %g, want %g\n got %v\nwant %v", i, got[i], want[i], got, want)
					}
				}
			})
		}
	}
}
