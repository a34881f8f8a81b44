package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/cudaemu"
)

// TestValueChecksOnTheEmulation queues value checks through CheckValues on
// the host emulation and drains them as a read-back does: a bad index is
// the next report's error (Sync's), with the op and the first bad value in
// row-major order; a check that finds nothing leaves none; a drain resets the slots
// it read; a full log drains itself; and nothing but a drain reads the
// slots (on a device, the only wait).
func TestValueChecksOnTheEmulation(t *testing.T) {
	q := emulate(t)
	mem := q.mem.(*emuSlots)
	b, _ := dispatch.BackendFor(kind)
	vc, ok := b.(dispatch.ValueChecker)
	if !ok {
		t.Fatalf("the cuda backend (%T) checks no values", b)
	}
	// index_select along dim 0 of a [5, 2] x: indices in [0, 4].
	x := tensor(dispatch.Float32, []int{5, 2})
	checkOf := func(idx *dispatch.Tensor) *dispatch.ValueCheck {
		c := ops.IndexSelect.Checks([]*dispatch.Tensor{x, idx}, ops.IndexDim{Dim: 0})[0]
		c.Op = ops.IndexSelect.Name
		return &c
	}
	check := func(t *testing.T, idx *dispatch.Tensor) error {
		t.Helper()
		reads := mem.reads
		err := vc.CheckValues(idx, checkOf(idx))
		if mem.reads != reads {
			t.Errorf("CheckValues read the slots back: a wait")
		}
		return err
	}
	// A [3, 4] view of a transposed storage: row-major its values are
	// 0 1 2 3 / 4 9 1 -2 / 3 7 0 1, so the first bad one is 9, where the
	// storage's first is 7 and its smallest -2.
	rows := [][]int64{{0, 1, 2, 3}, {4, 9, 1, -2}, {3, 7, 0, 1}}
	bad := func(dt dispatch.DType) *dispatch.Tensor {
		storage := make([]int64, 12)
		for r, row := range rows {
			for c, v := range row {
				storage[c*3+r] = v
			}
		}
		return emuTensor(t, dt, storage, []int{3, 4}, []int{1, 3})
	}
	clean := func(dt dispatch.DType) *dispatch.Tensor {
		return emuTensor(t, dt, []int64{4, 0, 3, 1, 2, 0}, []int{2, 3}, nil)
	}
	for _, dt := range []dispatch.DType{dispatch.Int32, dispatch.Int64} {
		t.Run("bad/"+dt.String(), func(t *testing.T) {
			if err := check(t, clean(dt)); err != nil {
				t.Fatal(err)
			}
			if err := check(t, bad(dt)); err != nil {
				t.Fatalf("CheckValues returned %v, which the drain should", err)
			}
			err := q.report()
			if !errors.Is(err, dispatch.ErrIndex) || !strings.Contains(err.Error(), "lathe: index_select:") ||
				!strings.Contains(err.Error(), "holds 9, out of range for dim 0 of size 5") {
				t.Fatalf("drain: %v, want index_select's error for the value 9", err)
			}
			// The slots were reset: the same slots, clean this time.
			if err := check(t, clean(dt)); err != nil {
				t.Fatal(err)
			}
			if err := q.report(); err != nil {
				t.Errorf("a drain after the reset: %v", err)
			}
			if err := q.report(); err != nil || q.log.Len() != 0 {
				t.Errorf("an empty drain: %v, %d checks left", err, q.log.Len())
			}
		})
		t.Run("clean/"+dt.String(), func(t *testing.T) {
			for range 3 {
				if err := check(t, clean(dt)); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.report(); err != nil {
				t.Errorf("three checks that found nothing: %v", err)
			}
		})
	}
	t.Run("ignored", func(t *testing.T) {
		// nll_loss-style: -100 is allowed besides [0, 4].
		idx := emuTensor(t, dispatch.Int64, []int64{1, -100, 4}, []int{3}, nil)
		c := dispatch.ValueCheck{Arg: 0, Max: 4, Ignore: -100, Ignoring: true, Op: "nll_loss",
			Fail: func(v int64) *dispatch.Error { return &dispatch.Error{Kind: dispatch.ErrIndex, Found: "?"} }}
		if err := vc.CheckValues(idx, &c); err != nil {
			t.Fatal(err)
		}
		if err := q.report(); err != nil {
			t.Errorf("the ignored value was reported: %v", err)
		}
	})
	t.Run("zero-divisor", func(t *testing.T) {
		// remainder's check (Outside [0, 0]): the first zero, with the
		// cpu's text; a divisor without one passes.
		for _, dt := range []dispatch.DType{dispatch.Int32, dispatch.Int64} {
			for _, c := range []struct {
				values []int64
				bad    bool
			}{{[]int64{3, -1, 0, 2}, true}, {[]int64{3, -1, 5, 2}, false}} {
				y := emuTensor(t, dt, c.values, []int{2, 2}, nil)
				vcs := ops.Remainder.Checks([]*dispatch.Tensor{y, y}, dispatch.None{})
				if len(vcs) != 1 {
					t.Fatalf("%s remainder declares %d checks, want 1", dt, len(vcs))
				}
				vcs[0].Op = ops.Remainder.Name
				if err := vc.CheckValues(y, &vcs[0]); err != nil {
					t.Fatal(err)
				}
				err := q.report()
				want := `lathe: remainder: argument "rhs" is zero, and an integer cannot be divided by zero`
				if c.bad && (!errors.Is(err, dispatch.ErrValue) || !strings.Contains(err.Error(), want)) {
					t.Errorf("%s %v: drain: %v, want %q", dt, c.values, err, want)
				}
				if !c.bad && err != nil {
					t.Errorf("%s %v: drain: %v, want none", dt, c.values, err)
				}
			}
		}
	})
	t.Run("10 dims", func(t *testing.T) {
		// Dims that do not merge: the check walks a contiguous copy. Bad
		// values at row-major positions 700 (8) and 300 (7), and 100 in a
		// gap of the storage, which the view does not hold.
		idx := deepView(dispatch.Int64)
		storage := make([]int64, 29525)
		offset := func(i int) int { // i's bits as base-3 digits
			o := 0
			for d, s := 0, 1; d < 10; d, s = d+1, s*3 {
				o += (i >> d & 1) * s
			}
			return o
		}
		storage[offset(700)], storage[offset(300)], storage[2] = 8, 7, 100
		idx.Storage = emuTensor(t, dispatch.Int64, storage, []int{len(storage)}, nil).Storage
		if err := check(t, idx); err != nil {
			t.Fatal(err)
		}
		if err := q.report(); err == nil || !strings.Contains(err.Error(), "holds 7,") {
			t.Errorf("drain: %v, want the error for the value 7", err)
		}
	})
	t.Run("full", func(t *testing.T) {
		small := newCheckQueue(mem, 3)
		prev := checksOn
		checksOn = func(dispatch.Device) (*checkQueue, error) { return small, nil }
		t.Cleanup(func() { checksOn = prev })
		// Three checks fill it, the second bad; the fourth drains it first
		// (settling the three) and is queued; the report has the second's
		// error.
		for _, idx := range []*dispatch.Tensor{clean(dispatch.Int64), bad(dispatch.Int64), clean(dispatch.Int64)} {
			if err := check(t, idx); err != nil {
				t.Fatal(err)
			}
		}
		reads := mem.reads
		fourth := clean(dispatch.Int64)
		if err := vc.CheckValues(fourth, checkOf(fourth)); err != nil {
			t.Fatalf("the check past a full log: %v, want it queued", err)
		}
		if mem.reads != reads+1 || small.log.Len() != 1 {
			t.Errorf("the full log: %d reads, %d checks left; want 1 read, the fourth left", mem.reads-reads, small.log.Len())
		}
		if err := small.report(); err == nil || !strings.Contains(err.Error(), "holds 9") {
			t.Fatalf("the report after a full log: %v, want the second check's error", err)
		}
		// Full of clean checks: the next one drains them and is queued.
		for range 4 {
			idx := clean(dispatch.Int32)
			if err := vc.CheckValues(idx, checkOf(idx)); err != nil {
				t.Fatal(err)
			}
		}
		if small.log.Len() != 1 {
			t.Errorf("%d checks logged after a drain of 3 and one more, want 1", small.log.Len())
		}
	})
}

// emuTensor is a tensor of dtype dt (int32 or int64) in the emulation's
// memory: a storage holding vals, viewed through shape and strides
// (contiguous where nil).
func emuTensor(t *testing.T, dt dispatch.DType, vals []int64, shape, strides []int) *dispatch.Tensor {
	t.Helper()
	var raw []byte
	switch dt {
	case dispatch.Int64:
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 8*len(vals))
	case dispatch.Int32:
		v32 := make([]int32, len(vals))
		for i, v := range vals {
			v32[i] = int32(v)
		}
		raw = unsafe.Slice((*byte)(unsafe.Pointer(&v32[0])), 4*len(vals))
	default:
		t.Fatalf("emuTensor of %s", dt)
	}
	p := cudaemu.Alloc(len(raw))
	t.Cleanup(func() { cudaemu.Free(p) })
	cudaemu.Write(p, raw)
	x := tensor(dt, shape, strides...)
	x.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(vals))
	return x
}
