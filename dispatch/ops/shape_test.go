package ops

import (
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestBroadcastShapes(t *testing.T) {
	cases := []struct{ a, b, want []int }{
		{[]int{3, 1}, []int{1, 4}, []int{3, 4}},
		{[]int{}, []int{2, 3}, []int{2, 3}},
		{[]int{5, 1, 3}, []int{4, 1}, []int{5, 4, 3}},
		{[]int{0}, []int{1}, []int{0}},
		{[]int{2}, []int{3}, nil},
	}
	for _, c := range cases {
		got, ok := BroadcastShapes(c.a, c.b)
		if c.want == nil {
			if ok {
				t.Errorf("BroadcastShapes(%v, %v) = %v, want no broadcast", c.a, c.b, got)
			}
			continue
		}
		if !ok || dispatch.FormatShape(got) != dispatch.FormatShape(c.want) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, %v; want %v", c.a, c.b, got, ok, c.want)
		}
	}
}

// numpyBroadcast is NumPy's rule written out independently of the code
// under test: the result size of each aligned dim is the maximum, and the
// shapes broadcast when every size is that maximum or 1.
func numpyBroadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	pad := func(s []int) []int { return append(make([]int, n-len(s)), s...) }
	pa, pb := pad(a), pad(b)
	out := make([]int, n)
	for i := range n {
		x, y := max(pa[i], 0), max(pb[i], 0)
		if i < n-len(a) {
			x = 1
		}
		if i < n-len(b) {
			y = 1
		}
		switch {
		case x == y:
			out[i] = x
		case x == 1:
			out[i] = y
		case y == 1:
			out[i] = x
		default:
			return nil, false
		}
	}
	return out, true
}

// FuzzBroadcast checks the shape rule on any pair of small shapes: no panic,
// and the result equals NumPy's rule.
func FuzzBroadcast(f *testing.F) {
	f.Add([]byte{3, 1}, []byte{1, 4})
	f.Add([]byte{}, []byte{0, 2})
	f.Add([]byte{5, 1, 3, 1}, []byte{7, 1})
	f.Fuzz(func(t *testing.T, ab, bb []byte) {
		if len(ab) > 8 || len(bb) > 8 {
			return
		}
		shape := func(bs []byte) []int {
			s := make([]int, len(bs))
			for i, v := range bs {
				s[i] = int(v % 6)
			}
			return s
		}
		a, b := shape(ab), shape(bb)
		got, ok := BroadcastShapes(a, b)
		want, wok := numpyBroadcast(a, b)
		if ok != wok || (ok && dispatch.FormatShape(got) != dispatch.FormatShape(want)) {
			t.Fatalf("BroadcastShapes(%v, %v) = %v, %v; NumPy gives %v, %v", a, b, got, ok, want, wok)
		}
		if ok {
			// The rule must also hold through an op's schema, with no panic.
			x := &dispatch.Tensor{Shape: a, Strides: dispatch.ContiguousStrides(a), DType: dispatch.Float32}
			y := &dispatch.Tensor{Shape: b, Strides: dispatch.ContiguousStrides(b), DType: dispatch.Float32}
			_, s, err := Add.Infer([]*dispatch.Tensor{x, y}, dispatch.None{})
			if err != nil || dispatch.FormatShape(s) != dispatch.FormatShape(want) {
				t.Fatalf("add's Infer(%v, %v) = %v, %v; want %v", a, b, s, err, want)
			}
		}
	})
}
