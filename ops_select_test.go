package lathe_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe"
)

// The selection ops against a direct transcription of torch's rule, on
// random data larger than the conformance cases (testdata/conformance/
// select.json checks them against torch itself), on the cpu and wgpu:0;
// then their errors, duplicates without accumulate, and many goroutines.

// selRand is n float32s with many zeros and ties (halves in [-2, 2]).
func selRand(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(9)-4) / 2
	}
	return v
}

func selMask(rng *rand.Rand, n int, p float64) []bool {
	m := make([]bool, n)
	for i := range m {
		m[i] = rng.Float64() < p
	}
	return m
}

func mustF32(t *testing.T, x *lathe.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustI64(t *testing.T, x *lathe.Tensor) []int64 {
	t.Helper()
	v, err := x.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNonzeroAndMaskedSelectRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	for _, dev := range sortDevices(t) {
		for _, p := range []float64{0, 0.03, 0.5, 1} {
			t.Run(fmt.Sprintf("%s/p%v", dev, p), func(t *testing.T) {
				const rows, cols = 70, 90
				data := selRand(rng, rows*cols)
				mask := selMask(rng, cols, p) // broadcast over the rows
				var wantSel []float32
				var wantIdx []int64
				for r := range rows {
					for c := range cols {
						if mask[c] {
							wantSel = append(wantSel, data[r*cols+c])
						}
						if data[r*cols+c] != 0 {
							wantIdx = append(wantIdx, int64(r), int64(c))
						}
					}
				}
				x := lathe.FromSlice(dev, data, rows, cols)
				got := x.MaskedSelect(lathe.FromSlice(dev, mask, cols))
				if g := mustF32(t, got); !slices.Equal(g, wantSel) || !slices.Equal(got.Shape(), []int{len(wantSel)}) {
					t.Errorf("masked_select: %d values, want %d", len(g), len(wantSel))
				}
				nz := x.Nonzero()
				if g := mustI64(t, nz); !slices.Equal(g, wantIdx) || !slices.Equal(nz.Shape(), []int{len(wantIdx) / 2, 2}) {
					t.Errorf("nonzero: shape %v, want [%d 2]", nz.Shape(), len(wantIdx)/2)
				}
			})
		}
	}
}

func TestUniqueRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	for _, dev := range sortDevices(t) {
		for _, n := range []int{1, 17, 3000} {
			t.Run(fmt.Sprintf("%s/n%d", dev, n), func(t *testing.T) {
				data := selRand(rng, n)
				for i := range data {
					if rng.IntN(50) == 0 {
						data[i] = float32(math.NaN())
					}
				}
				values, inverse, counts := lathe.FromSlice(dev, data, n).Unique(true, true, true)
				v, inv, c := mustF32(t, values), mustI64(t, inverse), mustI64(t, counts)
				// The rule: distinct numbers ascending, then each NaN alone.
				var want []float32
				for _, x := range data {
					if !math.IsNaN(float64(x)) && !slices.Contains(want, x) {
						want = append(want, x)
					}
				}
				slices.Sort(want)
				nans := 0
				for _, x := range data {
					if math.IsNaN(float64(x)) {
						nans++
						want = append(want, x)
					}
				}
				if len(v) != len(want) {
					t.Fatalf("%d values, want %d", len(v), len(want))
				}
				for i := range want {
					if v[i] != want[i] && !(math.IsNaN(float64(v[i])) && math.IsNaN(float64(want[i]))) {
						t.Fatalf("value %d is %v, want %v", i, v[i], want[i])
					}
				}
				seen := make([]int64, len(v))
				for i, x := range data {
					j := inv[i]
					seen[j]++
					if got := v[j]; got != x && !(math.IsNaN(float64(x)) && math.IsNaN(float64(got))) {
						t.Fatalf("inverse[%d] = %d names %v, want %v", i, j, got, x)
					}
				}
				if !slices.Equal(seen, c) {
					t.Errorf("counts %v, want %v", c, seen)
				}
			})
		}
	}
}

// refIndex is x[i0, :, i2]-style indexing of a row-major [a, b, c] array
// by the index lists of the given dims (nil a full slice), all of one
// length n (no broadcasting: the conformance cases cover it), in torch's
// layout.
func refIndex(x []float32, shape [3]int, idx [3][]int64) ([]float32, []int) {
	var dims []int
	n := 0
	for d, ix := range idx {
		if ix != nil {
			dims, n = append(dims, d), len(ix)
		}
	}
	at := func(k, d, j int) int { // the coordinate along d of result row k, full-slice position j
		if idx[d] == nil {
			return j
		}
		v := int(idx[d][k])
		if v < 0 {
			v += shape[d]
		}
		return v
	}
	var rest []int
	for d := range 3 {
		if idx[d] == nil {
			rest = append(rest, d)
		}
	}
	// The result's dims in order: B first when split, else in place.
	split := dims[len(dims)-1]-dims[0] != len(dims)-1
	var order []int // -1 is B
	if split {
		order = append([]int{-1}, rest...)
	} else {
		for d := range 3 {
			if d == dims[0] {
				order = append(order, -1)
			}
			if idx[d] == nil {
				order = append(order, d)
			}
		}
	}
	var outShape []int
	for _, d := range order {
		if d == -1 {
			outShape = append(outShape, n)
		} else {
			outShape = append(outShape, shape[d])
		}
	}
	var out []float32
	pos := make([]int, len(order))
	for {
		var coord [3]int
		k := 0
		for i, d := range order {
			if d == -1 {
				k = pos[i]
			}
		}
		for i, d := range order {
			if d >= 0 {
				coord[d] = pos[i]
			}
		}
		for _, d := range dims {
			coord[d] = at(k, d, 0)
		}
		out = append(out, x[(coord[0]*shape[1]+coord[1])*shape[2]+coord[2]])
		i := len(pos) - 1
		for ; i >= 0; i-- {
			if pos[i]++; pos[i] < outShape[i] {
				break
			}
			pos[i] = 0
		}
		if i < 0 {
			return out, outShape
		}
	}
}

func TestIndexRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 3))
	shape := [3]int{6, 7, 8}
	for _, dev := range sortDevices(t) {
		data := selRand(rng, 6*7*8)
		x := lathe.FromSlice(dev, data, 6, 7, 8)
		for pattern := 1; pattern < 8; pattern++ { // which dims have an index list
			t.Run(fmt.Sprintf("%s/dims%03b", dev, pattern), func(t *testing.T) {
				const n = 500
				var idx [3][]int64
				var args []*lathe.Tensor
				for d := range 3 {
					if pattern&(4>>d) == 0 {
						args = append(args, nil)
						continue
					}
					idx[d] = make([]int64, n)
					for i := range idx[d] {
						idx[d][i] = int64(rng.IntN(2*shape[d]) - shape[d]) // [-size, size)
					}
					args = append(args, lathe.FromSlice(dev, idx[d], n))
				}
				for len(args) > 0 && args[len(args)-1] == nil {
					args = args[:len(args)-1]
				}
				want, wantShape := refIndex(data, shape, idx)
				got := x.Index(args...)
				if g := mustF32(t, got); !slices.Equal(g, want) || !slices.Equal(got.Shape(), wantShape) {
					t.Errorf("shape %v, want %v; values differ: %v", got.Shape(), wantShape, !slices.Equal(g, want))
				}
				// IndexPut with accumulate of ones counts each place's hits.
				hits := make([]float32, len(data))
				for _, c := range refPlaces(shape, idx) {
					hits[c]++
				}
				ones := lathe.Ones(dev, lathe.Float32, wantShape...)
				put := lathe.Zeros(dev, lathe.Float32, 6, 7, 8).IndexPut(args, ones, true)
				if g := mustF32(t, put); !slices.Equal(g, hits) {
					t.Errorf("index_put with accumulate does not count the hits")
				}
			})
		}
	}
}

// refPlaces lists the flat position of every element that refIndex reads.
func refPlaces(shape [3]int, idx [3][]int64) []int {
	pos := make([]float32, shape[0]*shape[1]*shape[2])
	for i := range pos {
		pos[i] = float32(i)
	}
	got, _ := refIndex(pos, shape, idx)
	out := make([]int, len(got))
	for i, v := range got {
		out[i] = int(v)
	}
	return out
}

func TestIndexPutRepeatsWithoutAccumulate(t *testing.T) {
	for _, dev := range sortDevices(t) {
		x := lathe.Zeros(dev, lathe.Float32, 4)
		idx := lathe.FromSlice(dev, []int64{1, 1, 1, 3}, 4)
		got := mustF32(t, x.IndexPut([]*lathe.Tensor{idx}, lathe.FromSlice(dev, []float32{5, 6, 7, 8}, 4), false))
		if got[0] != 0 || got[2] != 0 || got[3] != 8 || !slices.Contains([]float32{5, 6, 7}, got[1]) {
			t.Errorf("%s: %v: want one of the values written at 1, 8 at 3, zeros elsewhere", dev, got)
		}
	}
}

func TestSelectErrors(t *testing.T) {
	for _, dev := range sortDevices(t) {
		x := lathe.Zeros(dev, lathe.Float32, 3, 4)
		i := func(v ...int64) *lathe.Tensor { return lathe.FromSlice(dev, v, len(v)) }
		for _, c := range []struct {
			name string
			out  func() *lathe.Tensor
			kind error
			text string
		}{
			{"past_end", func() *lathe.Tensor { return x.Index(nil, i(0, 4)) }, lathe.ErrIndex, `index: argument "indices[1]" holds 4, out of range for dim 1 of size 4`},
			{"before_start", func() *lathe.Tensor { return x.Index(i(-4)) }, lathe.ErrIndex, `argument "indices[0]" holds -4`},
			{"too_many", func() *lathe.Tensor { return x.Index(i(0), i(0), i(0)) }, lathe.ErrIndex, `argument "indices" has entries for 3 dims but x has shape [3, 4]`},
			{"all_nil", func() *lathe.Tensor { return x.Index(nil, nil) }, lathe.ErrValue, "holds no index tensor"},
			{"none", func() *lathe.Tensor { return x.Index() }, lathe.ErrValue, "holds no index tensor"},
			{"float_index", func() *lathe.Tensor { return x.Index(lathe.Zeros(dev, lathe.Float32, 2)) }, lathe.ErrDType, `argument "indices[0]" is float32`},
			{"index_mask_shape", func() *lathe.Tensor { return x.Index(nil, lathe.Zeros(dev, lathe.Bool, 3)) }, lathe.ErrShape, `argument "indices[1]" is a mask of shape [3], which does not match`},
			{"bcast", func() *lathe.Tensor { return x.Index(i(0, 1), i(0, 1, 2)) }, lathe.ErrShape, `argument "indices[1]" has shape [3]`},
			{"released", func() *lathe.Tensor { return x.Index(released(dev)) }, lathe.ErrReleased, "index"},
			{"values_dtype", func() *lathe.Tensor {
				return x.IndexPut([]*lathe.Tensor{i(0)}, lathe.Zeros(dev, lathe.Int32, 4), false)
			}, lathe.ErrDType, `argument "values" is int32`},
			{"values_shape", func() *lathe.Tensor {
				return x.IndexPut([]*lathe.Tensor{i(0, 1)}, lathe.Zeros(dev, lathe.Float32, 3), true)
			}, lathe.ErrShape, "x[indices]'s [2, 4]"},
			{"values_nil", func() *lathe.Tensor { return x.IndexPut([]*lathe.Tensor{i(0)}, nil, true) }, lathe.ErrValue, `argument "values" is nil`},
			{"mask_dtype", func() *lathe.Tensor { return x.MaskedSelect(x) }, lathe.ErrDType, `masked_select: argument "mask" is float32`},
			{"mask_shape", func() *lathe.Tensor { return x.MaskedSelect(lathe.Zeros(dev, lathe.Bool, 3)) }, lathe.ErrShape, "does not broadcast"},
			{"after_mask", func() *lathe.Tensor {
				return lathe.Zeros(dev, lathe.Float32, 3, 4, 2).Index(lathe.Ones(dev, lathe.Bool, 3, 4), i(5))
			}, lathe.ErrIndex, `argument "indices[1]" holds 5, out of range for dim 2 of size 2`},
			{"nil_x", func() *lathe.Tensor { return (*lathe.Tensor)(nil).Nonzero() }, lathe.ErrValue, "nonzero"},
		} {
			t.Run(dev.String()+"/"+c.name, func(t *testing.T) {
				err := c.out().Err()
				if err == nil {
					err = lathe.Synchronize(dev) // a device reports a bad index at the next sync
				}
				var le *lathe.Error
				if !errors.Is(err, c.kind) || !errors.As(err, &le) || !strings.Contains(err.Error(), c.text) {
					t.Errorf("error %v, want kind %v saying %q", err, c.kind, c.text)
				}
			})
		}
		if other := otherDevice(dev); other != nil {
			err := x.Index(nil, lathe.FromSlice(*other, []int64{0}, 1)).Err()
			if !errors.Is(err, lathe.ErrDevice) || !strings.Contains(err.Error(), `argument "indices[1]" is on`) {
				t.Errorf("%s: foreign index: %v", dev, err)
			}
		}
	}
}

func released(dev lathe.Device) *lathe.Tensor {
	r := lathe.Zeros(dev, lathe.Int64, 1)
	r.Release()
	return r
}

// otherDevice is a device other than dev that opens, or nil.
func otherDevice(dev lathe.Device) *lathe.Device {
	for _, info := range lathe.DeviceStatus() {
		if info.Available && info.Device != dev {
			return &info.Device
		}
	}
	return nil
}

// TestSelectConcurrent runs the ops from many goroutines at once: each
// must get its own answer.
func TestSelectConcurrent(t *testing.T) {
	for _, dev := range sortDevices(t) {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := make([]float32, 64)
				for i := range v {
					v[i] = float32((i + g) % 5)
				}
				x := lathe.FromSlice(dev, v, 8, 8)
				fours := 0
				for _, s := range v {
					fours += boolToInt(s == 4)
				}
				sel, err := x.MaskedSelect(x.GtScalar(3)).Float32s()
				if err == nil && (len(sel) != fours || slices.ContainsFunc(sel, func(s float32) bool { return s != 4 })) {
					err = fmt.Errorf("goroutine %d: selected %v, want %d fours", g, sel, fours)
				}
				u, _, c := x.Unique(true, false, true)
				if uv, e := u.Float32s(); e != nil || len(uv) != 5 {
					err = errors.Join(err, e, fmt.Errorf("goroutine %d: unique %v", g, uv))
				}
				if cv, e := c.Int64s(); e != nil || cv[0]+cv[1]+cv[2]+cv[3]+cv[4] != 64 {
					err = errors.Join(err, e, fmt.Errorf("goroutine %d: counts %v", g, cv))
				}
				row, e := x.Index(lathe.FromSlice(dev, []int64{int64(g % 8)}, 1)).Float32s()
				if e != nil || !slices.Equal(row, v[g%8*8:g%8*8+8]) {
					err = errors.Join(err, e, fmt.Errorf("goroutine %d: row %v", g, row))
				}
				if err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%s: %v", dev, err)
		}
	}
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ExampleTensor_Index() {
	x := lathe.FromSlice(lathe.CPU, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)
	rows := lathe.FromSlice(lathe.CPU, []int64{2, -3}, 2)
	cols := lathe.FromSlice(lathe.CPU, []int64{1, 3}, 2)
	fmt.Println(x.Index(rows, cols)) // x[[2, -3], [1, 3]]
	fmt.Println(x.Index(nil, cols))  // x[:, [1, 3]]
	fmt.Println(x.MaskedSelect(x.GtScalar(8)))
	v, _, counts := lathe.FromSlice(lathe.CPU, []int64{3, 1, 3, 3}, 4).Unique(true, false, true)
	fmt.Println(v, counts)
	// Output:
	// tensor([9., 3.])
	// tensor([[ 1.,  3.],
	//         [ 5.,  7.],
	//         [ 9., 11.]])
	// tensor([ 9., 10., 11.])
	// tensor([1, 3]) tensor([1, 3])
}

// TestSelectHugeIndex gives index and index_put expanded index tensors
// of more elements than any device holds: each is refused at once
// (ErrShape where the count overflows an int, ErrOutOfMemory where no
// device holds it), without walking the elements to check them.
func TestSelectHugeIndex(t *testing.T) {
	const huge = 1 << 20
	for _, dev := range sortDevices(t) {
		x := lathe.Ones(dev, lathe.Float32, 1).Reshape(1, 1).Expand(3, huge)
		over := lathe.Zeros(dev, lathe.Int32, 1, 1, 1).Expand(huge, huge, huge)
		vast := lathe.Zeros(dev, lathe.Int32, 1, 1).Expand(huge, huge)
		for _, c := range []struct {
			name string
			out  *lathe.Tensor
			kind error
		}{
			{"index/overflow", x.Index(over), lathe.ErrShape},
			{"index/vast", x.Index(vast), lathe.ErrOutOfMemory},
			{"index_put/vast", x.IndexPut([]*lathe.Tensor{vast}, lathe.Ones(dev, lathe.Float32), true), lathe.ErrOutOfMemory},
		} {
			if err := c.out.Err(); !errors.Is(err, c.kind) {
				t.Errorf("%s/%s: %v, want kind %v", dev, c.name, err, c.kind)
			}
		}
	}
}
