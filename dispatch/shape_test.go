package dispatch_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

func TestCheckedNumel(t *testing.T) {
	for _, c := range []struct {
		shape []int
		n     int
		ok    bool
	}{
		{[]int{}, 1, true},
		{[]int{2, 3, 4}, 24, true},
		{[]int{math.MaxInt}, math.MaxInt, true},
		{[]int{1 << 31, 1 << 31}, 1 << 62, true},
		{[]int{1 << 32, 1 << 32}, 0, false},   // wrapped to 0 before
		{[]int{1 << 32, 1 << 31}, 0, false},   // to MinInt
		{[]int{3, 1 << 62}, 0, false},         // past MaxInt, below 2⁶⁴
		{[]int{1 << 32, 1 << 32, 0}, 0, true}, // empty whatever the rest
		{[]int{0, math.MaxInt, math.MaxInt}, 0, true},
		{[]int{2, -3}, 0, false},
		{[]int{0, -1}, 0, false},
		{[]int{math.MinInt, -1}, 0, false},
	} {
		if n, ok := dispatch.CheckedNumel(c.shape); n != c.n || ok != c.ok {
			t.Errorf("CheckedNumel(%v) = %d, %v; want %d, %v", c.shape, n, ok, c.n, c.ok)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	for _, c := range []struct {
		a, b  int
		mul   int
		mulOK bool
		sum   int
		sumOK bool
	}{
		{3, 4, 12, true, 7, true},
		{-3, 4, -12, true, 1, true},
		{math.MaxInt, 1, math.MaxInt, true, 0, false},
		{math.MaxInt, -1, -math.MaxInt, true, math.MaxInt - 1, true},
		{math.MinInt, 1, math.MinInt, true, math.MinInt + 1, true},
		{math.MinInt, -1, 0, false, 0, false},
		{1 << 62, 2, 0, false, 1<<62 + 2, true},
		{-(1 << 62), 2, math.MinInt, true, -(1 << 62) + 2, true},
		{1 << 32, 1 << 32, 0, false, 1 << 33, true},
		{0, math.MinInt, 0, true, math.MinInt, true},
		{math.MinInt, math.MinInt, 0, false, 0, false},
	} {
		if p, ok := dispatch.CheckedMul(c.a, c.b); p != c.mul || ok != c.mulOK {
			t.Errorf("CheckedMul(%d, %d) = %d, %v; want %d, %v", c.a, c.b, p, ok, c.mul, c.mulOK)
		}
		if s, ok := dispatch.CheckedAdd(c.a, c.b); s != c.sum || ok != c.sumOK {
			t.Errorf("CheckedAdd(%d, %d) = %d, %v; want %d, %v", c.a, c.b, s, ok, c.sum, c.sumOK)
		}
	}
}

// TestViewsStayInStorage: no layout that reaches outside the storage, or
// whose sizes overflow, becomes a view; View, for lathe's own layouts,
// panics rather than make one.
func TestViewsStayInStorage(t *testing.T) {
	cpu := dispatch.Device{}
	x := host(t, cpu, 0, 1, 2, 3, 4, 5) // a storage of 6
	for _, c := range []struct {
		name    string
		shape   []int
		strides []int
		offset  int
		ok      bool
	}{
		{"whole", []int{2, 3}, []int{3, 1}, 0, true},
		{"transposed", []int{3, 2}, []int{1, 3}, 0, true},
		{"expanded", []int{1 << 30, 6}, []int{0, 1}, 0, true},
		{"reversed", []int{6}, []int{-1}, 5, true},
		{"empty/at_end", []int{0}, []int{1}, 6, true},
		{"empty/huge", []int{1 << 40, 1 << 40, 0}, []int{0, 0, 1}, 0, true},
		{"one_past_end", []int{7}, []int{1}, 0, false},
		{"offset_past_end", []int{1}, []int{1}, 6, false},
		{"negative_offset", []int{1}, []int{1}, -1, false},
		{"reversed_past_start", []int{6}, []int{-1}, 4, false},
		{"stride_overflow", []int{3}, []int{math.MaxInt}, 0, false},
		{"offset_plus_span_overflow", []int{2}, []int{math.MaxInt}, 1, false},
		{"numel_overflow", []int{1 << 32, 1 << 32}, []int{0, 0}, 0, false},
		{"negative_size", []int{-1}, []int{1}, 0, false},
		{"rank_mismatch", []int{2, 3}, []int{1}, 0, false},
		{"empty/offset_past_end", []int{0}, []int{1}, 7, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := x.CheckedView(c.shape, c.strides, c.offset)
			if c.ok != (err == nil) {
				t.Fatalf("CheckedView: %v, want ok %v", err, c.ok)
			}
			if err != nil {
				if !errors.Is(err, dispatch.ErrShape) {
					t.Fatalf("error %v, want an ErrShape", err)
				}
				defer func() {
					if r := recover(); r == nil || !strings.Contains(r.(string), "dispatch:") {
						t.Fatalf("View of a bad layout: recovered %v, want dispatch's panic", r)
					}
				}()
				x.View(c.shape, c.strides, c.offset)
				return
			}
			v.Release()
		})
	}
}

// countBuf counts its Frees.
type countBuf struct{ frees int }

func (b *countBuf) Free() { b.frees++ }

// TestViewOfReleasedStorage: once every tensor on a storage is released
// (another goroutine's Release, after the caller checked its tensor), no
// view may count itself on it again: its buffer has gone back to the pool
// for the next tensor, and the view's Release would free it a second time
// (the pool then gives it to two tensors). CheckedView is an ErrReleased.
func TestViewOfReleasedStorage(t *testing.T) {
	b := &countBuf{}
	x := dispatch.NewTensor(dispatch.Device{}, dispatch.Float64, []int{2}, b)
	x.Release()
	v, err := x.CheckedView([]int{2}, []int{1}, 0)
	if v != nil {
		v.Release()
	}
	if !errors.Is(err, dispatch.ErrReleased) {
		t.Errorf("CheckedView of a released storage: %v, want an ErrReleased", err)
	}
	if b.frees != 1 {
		t.Errorf("the buffer was freed %d times, want once", b.frees)
	}
}

// TestEmptyCountsShape: an op result or an Empty whose sizes overflow is an
// ErrShape error before anything is allocated.
func TestEmptyCountsShape(t *testing.T) {
	for _, shape := range [][]int{{1 << 32, 1 << 32}, {-1}, {3, 1 << 62}} {
		if _, err := dispatch.Empty(dispatch.Device{}, dispatch.Float64, shape); !errors.Is(err, dispatch.ErrShape) {
			t.Errorf("Empty(%v): %v, want an ErrShape", shape, err)
		}
		if _, err := dispatch.Upload(dispatch.Device{}, []float64{}, dispatch.Float64, shape); !errors.Is(err, dispatch.ErrShape) {
			t.Errorf("Upload(%v): %v, want an ErrShape", shape, err)
		}
	}
}
