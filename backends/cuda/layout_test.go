package cuda

import (
	"encoding/binary"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/layout"
)

// cStructs are the Go mirrors of the kernels' by-value structs, the file
// whose comment states the C layout, and the byte offsets it states.
var cStructs = []struct {
	name    string
	value   any
	file    string
	size    int
	offsets map[string]int // C field name: offset
	fields  []string       // C field names of the Go fields, in order
}{
	{"Layout", cLayout{}, "lathe.cuh", 360,
		map[string]int{"rank": 0, "shape": 8, "stride": 72, "offset": 328},
		[]string{"rank", "shape", "stride", "offset"}},
	{"Layout32", cLayout32{}, "dense.cuh", 228,
		map[string]int{"rank": 0, "shape": 4, "magic": 36, "shift": 68, "stride": 100},
		[]string{"rank", "shape", "magic", "shift", "stride"}},
	{"Rows", cRows{}, "lathe.cuh", 416,
		map[string]int{"outer_rank": 0, "inner_rank": 8, "outer_shape": 16, "outer_stride": 80, "inner_shape": 208, "inner_stride": 272, "offset": 400},
		[]string{"outer_rank", "inner_rank", "outer_shape", "outer_stride", "inner_shape", "inner_stride", "offset"}},
	{"PoolGeom", cPoolGeom{}, "window.cuh", 192,
		map[string]int{"dims": 0, "in": 8, "out": 32, "kernel": 56, "stride": 80, "padding": 104, "dilation": 128,
			"adaptive": 152, "exclude": 160, "divisor": 168, "in_plane": 176, "out_plane": 184},
		[]string{"dims", "in", "out", "kernel", "stride", "padding", "dilation", "adaptive", "exclude", "divisor", "in_plane", "out_plane"}},
	{"MatmulStrides", cMatmulStrides{}, "matmul.cu", 72,
		map[string]int{"a": 0, "b": 24, "c": 48},
		[]string{"a", "b", "c"}},
}

// TestCStructLayout checks each Go mirror against the offsets and size that
// the C source states (and asserts with static_assert), and that cBytes
// gives exactly those bytes.
func TestCStructLayout(t *testing.T) {
	for _, s := range cStructs {
		t.Run(s.name, func(t *testing.T) {
			src, err := os.ReadFile("../../kernels/cuda/" + s.file)
			if err != nil {
				t.Fatal(err)
			}
			typ := reflect.TypeOf(s.value)
			if int(typ.Size()) != s.size || binary.Size(s.value) != s.size {
				t.Errorf("Go size %d, binary size %d; the C struct is %d bytes", typ.Size(), binary.Size(s.value), s.size)
			}
			if !regexp.MustCompile(`sizeof\(` + s.name + `\) == ` + strconv.Itoa(s.size)).Match(src) {
				t.Errorf("%s does not static_assert sizeof(%s) == %d", s.file, s.name, s.size)
			}
			if typ.NumField() != len(s.fields) {
				t.Fatalf("%d Go fields, %d C fields", typ.NumField(), len(s.fields))
			}
			for i, cname := range s.fields {
				f := typ.Field(i)
				want := s.offsets[cname]
				if int(f.Offset) != want {
					t.Errorf("Go field %s at %d, C field %s at %d", f.Name, f.Offset, cname, want)
				}
				if s.file != "matmul.cu" { // matmul.cu states them in one line
					// The comment's table: "//   <field>  <offset>".
					re := regexp.MustCompile(`(?m)^//\s+` + cname + `\s+` + strconv.Itoa(want) + `\b`)
					if !re.Match(src) {
						t.Errorf("%s's comment does not state %s at %d", s.file, cname, want)
					}
				}
			}
		})
	}
}

func TestCBytes(t *testing.T) {
	var l cLayout
	l.Rank = 3
	l.Shape[2] = 7
	l.Stride[1][4] = -5
	l.Offset[3] = 9
	b := cBytes(&l)
	if len(b) != 360 {
		t.Fatalf("%d bytes, want 360", len(b))
	}
	at := func(off int) int64 { return int64(binary.LittleEndian.Uint64(b[off:])) }
	// shape[2] at 8+2*8; stride[1][4] at 72+(1*8+4)*8; offset[3] at 328+3*8.
	for _, c := range []struct{ off, want int }{{0, 3}, {24, 7}, {72 + 12*8, -5}, {328 + 24, 9}} {
		if got := at(c.off); got != int64(c.want) {
			t.Errorf("bytes at %d hold %d, want %d", c.off, got, c.want)
		}
	}
	m := cMatmulStrides{A: [3]int64{1, 2, 3}, C: [3]int64{0, 0, 4}}
	mb := cBytes(&m)
	if got := int64(binary.LittleEndian.Uint64(mb[64:])); len(mb) != 72 || got != 4 {
		t.Errorf("c[2] at 64 = %d (len %d), want 4 (72)", got, len(mb))
	}
}

// cLayoutOf is the cLayout of an already collapsed walk, by hand.
func cLayoutOf(w layout.Walk) cLayout {
	l := cLayout{Rank: int64(len(w.Shape))}
	for d, s := range w.Shape {
		l.Shape[d] = int64(s)
		for j := range w.Strides {
			l.Stride[j][d] = int64(w.Strides[j][d])
		}
	}
	return l
}

// TestLayoutCollapse checks that a walk is written as the cLayout of its
// collapsed form: contiguous runs merged, size-1 dims dropped, one element
// as one dim of size 1 (the kernels read rank 0 alike) and an empty walk as
// a dim of size 0.
func TestLayoutCollapse(t *testing.T) {
	type walk = layout.Walk
	for _, c := range []struct {
		name    string
		in, out walk
	}{
		{"contiguous", walk{Shape: []int{2, 3, 4}, Strides: [][]int{{12, 4, 1}, {12, 4, 1}}}, walk{Shape: []int{24}, Strides: [][]int{{1}, {1}}}},
		{"transposed", walk{Shape: []int{3, 2}, Strides: [][]int{{2, 1}, {1, 3}}}, walk{Shape: []int{3, 2}, Strides: [][]int{{2, 1}, {1, 3}}}},
		{"broadcast row", walk{Shape: []int{2, 3}, Strides: [][]int{{3, 1}, {0, 1}}}, walk{Shape: []int{2, 3}, Strides: [][]int{{3, 1}, {0, 1}}}},
		{"broadcast scalar", walk{Shape: []int{2, 3}, Strides: [][]int{{3, 1}, {0, 0}}}, walk{Shape: []int{6}, Strides: [][]int{{1}, {0}}}},
		{"size-1 dims", walk{Shape: []int{1, 4, 1}, Strides: [][]int{{4, 1, 1}, {9, 2, 7}}}, walk{Shape: []int{4}, Strides: [][]int{{1}, {2}}}},
		{"flipped", walk{Shape: []int{2, 3}, Strides: [][]int{{3, 1}, {-3, -1}}}, walk{Shape: []int{6}, Strides: [][]int{{1}, {-1}}}},
		{"0-d", walk{Shape: []int{}, Strides: [][]int{{}, {}}}, walk{Shape: []int{1}, Strides: [][]int{{0}, {0}}}},
		{"one element", walk{Shape: []int{1, 1}, Strides: [][]int{{1, 1}, {5, 7}}}, walk{Shape: []int{1}, Strides: [][]int{{0}, {0}}}},
		{"empty", walk{Shape: []int{3, 0}, Strides: [][]int{{0, 1}, {0, 1}}}, walk{Shape: []int{0}, Strides: [][]int{{0}, {0}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := layoutOf(c.in)
			if want := cLayoutOf(c.out); err != nil || got != want {
				t.Errorf("layoutOf(%v) = %+v, %v; want %+v", c.in, got, err, want)
			}
		})
	}
}

// TestRows checks a cRows's outer and inner walks, each collapsed on its
// own: a 0-d tensor is one row of one element.
func TestRows(t *testing.T) {
	type walk = layout.Walk
	for _, c := range []struct {
		name         string
		outer, inner walk
		want         cRows
	}{
		{"0-d", walk{Strides: [][]int{{}, {}}}, walk{Strides: [][]int{{}, {}}},
			cRows{OuterRank: 1, InnerRank: 1, OuterShape: [maxRank]int64{1}, InnerShape: [maxRank]int64{1}}},
		{"rows of a [4,2,3] over its last two dims", walk{Shape: []int{4}, Strides: [][]int{{1}, {6}}}, walk{Shape: []int{2, 3}, Strides: [][]int{{0, 0}, {3, 1}}},
			cRows{OuterRank: 1, InnerRank: 1, OuterShape: [maxRank]int64{4}, OuterStride: [2][maxRank]int64{{1}, {6}},
				InnerShape: [maxRank]int64{6}, InnerStride: [2][maxRank]int64{{0}, {1}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got, err := rows(c.outer, c.inner); err != nil || got != c.want {
				t.Errorf("rows = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestLayoutRank checks that a walk the kernels cannot take is an error,
// not a silent truncation.
func TestLayoutRank(t *testing.T) {
	w := layout.Walk{Shape: make([]int, 9), Strides: [][]int{make([]int, 9)}}
	for d := range w.Shape {
		w.Shape[d] = 2
		w.Strides[0][d] = 3 << d // never mergeable
	}
	if _, err := layoutOf(w); err == nil {
		t.Fatal("a 9-dim walk gave a layout")
	}
	if _, err := rows(w, layout.Walk{Strides: [][]int{nil}}); err == nil {
		t.Fatal("a 9-dim walk gave rows")
	}
	w.Shape, w.Strides[0] = w.Shape[:8], w.Strides[0][:8]
	l, err := layoutOf(w)
	if err != nil || l.Rank != 8 || l.Stride[0][7] != 3<<7 {
		t.Fatalf("8 dims: %+v, %v", l, err)
	}
}

func TestViewMoved(t *testing.T) {
	v := view{ptr: 1 << 20, dtype: 2 /* float64 */}
	if got := v.moved(-3).ptr; got != 1<<20-24 {
		t.Errorf("moved(-3) = %#x, want %#x", got, 1<<20-24)
	}
}

func TestGeometry(t *testing.T) {
	for _, c := range []struct{ n, blocks int }{{0, 1}, {1, 1}, {256, 1}, {257, 2}, {1 << 30, maxBlocks}} {
		g, b := grid1(c.n)
		if int(g[0]) != c.blocks || b[0] != blockThreads || g[1] != 1 || b[1] != 1 {
			t.Errorf("grid1(%d) = %v %v, want %d blocks of %d", c.n, g, b, c.blocks, blockThreads)
		}
	}
	for _, c := range []struct{ tasks, n, blocks, threads int }{{10, 1, 10, 32}, {10, 33, 10, 64}, {1 << 20, 5000, maxBlocks, 256}} {
		g, b := gridRows(c.tasks, c.n)
		if int(g[0]) != c.blocks || int(b[0]) != c.threads {
			t.Errorf("gridRows(%d, %d) = %v %v, want %d x %d", c.tasks, c.n, g, b, c.blocks, c.threads)
		}
	}
}

func TestPlanReduce(t *testing.T) {
	for _, c := range []struct {
		nrows, n int
		want     reducePlan
	}{
		{1000, 10, reducePlan{nrows: 1000, n: 10, thread: true, splits: 1}},
		{1000, 0, reducePlan{nrows: 1000, n: 0, thread: true, splits: 1}},
		{4096, 1000, reducePlan{nrows: 4096, n: 1000, splits: 1}},
		{1, 1 << 24, reducePlan{nrows: 1, n: 1 << 24, splits: 1024}},
		{1, 100000, reducePlan{nrows: 1, n: 100000, splits: 7}},
		{64, 1 << 20, reducePlan{nrows: 64, n: 1 << 20, splits: 16}},
	} {
		if got := planReduce(c.nrows, c.n); got != c.want {
			t.Errorf("planReduce(%d, %d) = %+v, want %+v", c.nrows, c.n, got, c.want)
		}
	}
}
