package cuda

import (
	"reflect"
	"testing"
)

func TestRowMajorLayout(t *testing.T) {
	cases := []struct {
		rows, cols, rs, cs int
		trans              bool
		ld                 int
		ok                 bool
	}{
		{3, 4, 4, 1, false, 4, true},  // row-major
		{3, 4, 8, 1, false, 8, true},  // row-major, padded rows (a slice)
		{3, 4, 1, 3, true, 3, true},   // column-major (a transposed view)
		{3, 4, 2, 6, false, 0, false}, // every other element: no BLAS layout
		{3, 4, 0, 1, false, 0, false}, // an expanded row: no BLAS layout
		{1, 4, 0, 1, false, 4, true},  // a 1-D lhs
		{4, 1, 1, 0, false, 1, true},  // a 1-D rhs
		{1, 4, 0, 3, true, 3, true},   // a strided 1-D lhs
		{1, 1, 0, 0, false, 1, true},
	}
	for _, c := range cases {
		trans, ld, ok := rowMajorLayout(c.rows, c.cols, c.rs, c.cs)
		if ok != c.ok || ok && (trans != c.trans || ld != c.ld) {
			t.Errorf("%dx%d strides (%d,%d): trans %v ld %d ok %v, want %v %d %v", c.rows, c.cols, c.rs, c.cs, trans, ld, ok, c.trans, c.ld, c.ok)
		}
	}
}

func TestPlanBatch(t *testing.T) {
	cases := []struct {
		name    string
		batch   []int
		strides [3][]int
		want    batchPlan
	}{
		{"none", nil, [3][]int{{}, {}, {}}, batchPlan{count: 1}},
		{"contiguous [2,3]", []int{2, 3}, [3][]int{{36, 12}, {60, 20}, {30, 10}},
			batchPlan{count: 6, strides: [3]int{12, 20, 10}}},
		{"rhs broadcast", []int{2, 3}, [3][]int{{36, 12}, {0, 0}, {30, 10}},
			batchPlan{count: 6, strides: [3]int{12, 0, 10}}},
		{"size-1 dims skipped", []int{1, 4, 1}, [3][]int{{0, 12, 0}, {0, 20, 0}, {40, 10, 10}},
			batchPlan{count: 4, strides: [3]int{12, 20, 10}}},
		// lhs [2,1] and rhs [1,3] broadcast to [2,3]: the outer dim is looped.
		{"cross broadcast", []int{2, 3}, [3][]int{{12, 0}, {0, 20}, {30, 10}},
			batchPlan{outer: []int{2}, outerStrides: [3][]int{{12}, {0}, {30}}, count: 3, strides: [3]int{0, 20, 10}}},
	}
	for _, c := range cases {
		if got := planBatch(c.batch, c.strides); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	p := planBatch([]int{2, 3}, [3][]int{{12, 0}, {0, 20}, {30, 10}})
	var offs [][3]int
	p.each(func(a, b, c int) error { offs = append(offs, [3]int{a, b, c}); return nil })
	if want := [][3]int{{0, 0, 0}, {12, 0, 30}}; !reflect.DeepEqual(offs, want) {
		t.Errorf("outer offsets %v, want %v", offs, want)
	}
}
