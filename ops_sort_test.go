package lathe_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/internal/testenv"
)

// The sort family against a direct transcription of torch's rule
// (a stable sort of the line, NaN largest, ±0 equal), on random data full
// of ties, on the cpu and wgpu:0: every dtype each device has, lines of
// length 1 to 5000 (each of wgpu's paths: an invocation per line up to 16,
// rank counting up to 256, one workgroup up to 1024, merge passes past it),
// every dim, both directions and non-contiguous views. The conformance
// suite (testdata/conformance/sort.json) checks the same ops against
// torch itself.

// sortDevices are the devices to run on: the cpu, and wgpu:0 where it
// opens (skipped by name where it does not: testenv.Without).
func sortDevices(t *testing.T) []lathe.Device {
	t.Helper()
	devs := []lathe.Device{lathe.CPU}
	for _, info := range lathe.DeviceStatus() {
		switch {
		case info.Device != lathe.WGPU(0):
		case info.Available:
			devs = append(devs, info.Device)
		default:
			testenv.Without(t, info.Device.String(), "%s", info.Detail)
		}
	}
	return devs
}

// refKey is torch's sort order of a float64 (NaN largest, -0 = +0).
func refLess(a, b float64) bool {
	switch {
	case math.IsNaN(a):
		return false
	case math.IsNaN(b):
		return true
	}
	return a < b
}

// refArgSort is the stable argsort of each line of a row-major [rows, n]
// array along its last dim.
func refArgSort(v []float64, rows, n int, desc bool) []int64 {
	out := make([]int64, 0, rows*n)
	for r := range rows {
		line := v[r*n : (r+1)*n]
		idx := make([]int64, n)
		for i := range idx {
			idx[i] = int64(i)
		}
		slices.SortStableFunc(idx, func(i, j int64) int {
			if desc {
				return compareRef(line[j], line[i])
			}
			return compareRef(line[i], line[j])
		})
		out = append(out, idx...)
	}
	return out
}

// tieData is n values of few distinct levels (so that ties abound), with
// NaN, ±Inf and -0 among them for floats.
func tieData(rng *rand.Rand, n int, float bool) []float64 {
	v := make([]float64, n)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
	for i := range v {
		v[i] = float64(rng.IntN(23) - 11)
		if float && rng.IntN(9) == 0 {
			v[i] = specials[rng.IntN(len(specials))]
		}
	}
	return v
}

func makeTensor(dev lathe.Device, dt lathe.DType, v []float64, shape ...int) *lathe.Tensor {
	return lathe.FromSlice(dev, v, shape...).Cast(dt)
}

func TestArgSortMatchesStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	for _, dev := range sortDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Int32, lathe.Int64, lathe.Bool,
			lathe.Float16, lathe.BFloat16, lathe.Int8, lathe.Uint8} {
			for _, n := range []int{1, 2, 3, 7, 16, 17, 100, 256, 257, 1000, 1025, 3000, 5000} {
				for _, desc := range []bool{false, true} {
					rows := max(1, min(5, 4000/n))
					name := fmt.Sprintf("%s/%s/[%d,%d]/desc=%v", dev, dt, rows, n, desc)
					t.Run(name, func(t *testing.T) {
						v := tieData(rng, rows*n, dt.IsFloat())
						if dt == lathe.Bool {
							for i := range v {
								v[i] = float64(rng.IntN(2))
							}
						}
						if dt == lathe.Uint8 {
							for i := range v {
								v[i] = math.Abs(v[i])
							}
						}
						// The line along dim 0 of the transposed view: not contiguous.
						x := makeTensor(lathe.CPU, dt, v, rows, n).To(dev)
						if err := x.Err(); err != nil {
							if errors.Is(err, lathe.ErrUnsupported) {
								t.Skipf("%s holds no %s", dev, dt)
							}
							t.Fatal(err)
						}
						got, err := x.MT().ArgSort(0, desc).MT().Int64s()
						if err != nil {
							if errors.Is(err, lathe.ErrUnsupported) {
								t.Skipf("%s", err)
							}
							t.Fatal(err)
						}
						back, err := x.To(lathe.CPU).Cast(lathe.Float64).Float64s()
						if err != nil {
							t.Fatal(err)
						}
						want := refArgSort(back, rows, n, desc)
						if !slices.Equal(got, want) {
							for i := range got {
								if got[i] != want[i] {
									t.Fatalf("first difference at %d: %d, want %d", i, got[i], want[i])
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestTopKMatchesStableSort: TopK's indices are the first k of the stable
// argsort of each line, for k from 0 to the whole line (on the cpu, both
// the heap's selection, k*64 <= n, and the sort), on data full of ties and
// NaNs, on lines in ascending and descending order (each the other
// direction's worst case for a heap) and along a dim whose lines are not
// contiguous. The values are the elements at those indices.
func TestTopKMatchesStableSort(t *testing.T) {
	testenv.HostOnly(t)
	rng := rand.New(rand.NewPCG(9, 21))
	orders := map[string]func(v []float64){
		"ties":       func([]float64) {},
		"ascending":  func(v []float64) { slices.SortFunc(v, compareRef) },
		"descending": func(v []float64) { slices.SortFunc(v, func(a, b float64) int { return compareRef(b, a) }) },
	}
	for _, dev := range sortDevices(t) {
		for _, dt := range []lathe.DType{lathe.Float32, lathe.Float64, lathe.Int32, lathe.Int64, lathe.BFloat16, lathe.Uint8} {
			for _, n := range []int{1, 15, 16, 17, 63, 64, 100, 1000, 5000} {
				ks := []int{0, 1, 3, n / 64, n/64 + 1, n / 2, n - 1, n}
				slices.Sort(ks)
				for _, k := range slices.Compact(ks) {
					if k > n {
						continue
					}
					for order, arrange := range orders {
						largest := rng.IntN(2) == 0
						name := fmt.Sprintf("%s/%s/n=%d/k=%d/%s/largest=%v", dev, dt, n, k, order, largest)
						t.Run(name, func(t *testing.T) {
							rows := 3
							v := tieData(rng, rows*n, dt.IsFloat())
							for r := range rows {
								if dt == lathe.Uint8 {
									for i := range v[r*n : (r+1)*n] {
										v[r*n+i] = math.Abs(v[r*n+i])
									}
								}
								arrange(v[r*n : (r+1)*n])
							}
							x := makeTensor(lathe.CPU, dt, v, rows, n).To(dev)
							if err := x.Err(); err != nil {
								if errors.Is(err, lathe.ErrUnsupported) {
									t.Skipf("%s holds no %s", dev, dt)
								}
								t.Fatal(err)
							}
							back, err := x.To(lathe.CPU).Cast(lathe.Float64).Float64s()
							if err != nil {
								t.Fatal(err)
							}
							all := refArgSort(back, rows, n, largest)
							var want []int64
							var wantV []float64
							for r := range rows {
								for _, i := range all[r*n : r*n+k] {
									want = append(want, i)
									wantV = append(wantV, back[r*n+int(i)])
								}
							}
							// Along dim 1 (contiguous lines) and along dim 0 of
							// the transposed view (lines of stride rows).
							for _, strided := range []bool{false, true} {
								var vals, idx *lathe.Tensor
								if strided {
									vals, idx = x.MT().TopK(k, 0, largest)
									vals, idx = vals.MT(), idx.MT()
								} else {
									vals, idx = x.TopK(k, 1, largest)
								}
								got, err := idx.Int64s()
								if err != nil {
									t.Fatal(err)
								}
								if !slices.Equal(got, want) {
									t.Fatalf("strided=%v: indices %v\nwant    %v", strided, got, want)
								}
								gotV, err := vals.To(lathe.CPU).Cast(lathe.Float64).Float64s()
								if err != nil {
									t.Fatal(err)
								}
								if !slices.EqualFunc(gotV, wantV, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
									t.Fatalf("strided=%v: values %v\nwant   %v", strided, gotV, wantV)
								}
							}
						})
					}
				}
			}
		}
	}
}

// compareRef is refLess as a three-way comparison.
func compareRef(a, b float64) int {
	switch {
	case refLess(a, b):
		return -1
	case refLess(b, a):
		return 1
	}
	return 0
}

func TestTopKAndMaxDim(t *testing.T) {
	for _, dev := range sortDevices(t) {
		x := lathe.FromSlice(dev, []float32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8}, 3, 4)
		v, i := x.TopK(2, -1, true)
		wantV, wantI := []float32{4, 3, 9, 6, 8, 5}, []int64{2, 0, 1, 3, 3, 0}
		gv, _ := v.Float32s()
		gi, err := i.Int64s()
		if err != nil || !slices.Equal(gv, wantV) || !slices.Equal(gi, wantI) {
			t.Errorf("%s: topk = %v %v (%v), want %v %v", dev, gv, gi, err, wantV, wantI)
		}
		v, i = x.TopK(1, 0, false)
		gv, _ = v.Float32s()
		gi, _ = i.Int64s()
		if !slices.Equal(gv, []float32{3, 1, 2, 1}) || !slices.Equal(gi, []int64{0, 0, 1, 0}) {
			t.Errorf("%s: topk smallest = %v %v", dev, gv, gi)
		}
		v, i = x.MaxDim(1, true)
		gv, _ = v.Float32s()
		gi, _ = i.Int64s()
		if !slices.Equal(v.Shape(), []int{3, 1}) || !slices.Equal(gv, []float32{4, 9, 8}) || !slices.Equal(gi, []int64{2, 1, 3}) {
			t.Errorf("%s: max dim = %v %v %v", dev, v.Shape(), gv, gi)
		}
		v, i = x.MinDim(-2, false)
		gv, _ = v.Float32s()
		gi, _ = i.Int64s()
		if !slices.Equal(gv, []float32{3, 1, 2, 1}) || !slices.Equal(gi, []int64{0, 0, 1, 0}) {
			t.Errorf("%s: min dim = %v %v", dev, gv, gi)
		}
	}
}

func TestSortErrors(t *testing.T) {
	x := lathe.FromSlice(lathe.CPU, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	for _, c := range []struct {
		name string
		err  error
		kind error
	}{
		{"topk/k>size", second(x.TopK(4, 1, true)), lathe.ErrValue},
		{"topk/k<0", second(x.TopK(-1, 1, true)), lathe.ErrValue},
		{"topk/dim", second(x.TopK(1, 2, true)), lathe.ErrIndex},
		{"topk/bool", second(lathe.FromSlice(lathe.CPU, []bool{true, false}, 2).TopK(1, 0, true)), lathe.ErrDType},
		{"topk/scalar-k2", second(lathe.Scalar(lathe.CPU, float32(1)).TopK(2, 0, true)), lathe.ErrValue},
		{"sort/dim", second(x.Sort(-3, false)), lathe.ErrIndex},
		{"argsort/dim", x.ArgSort(2, false).Err(), lathe.ErrIndex},
		{"maxdim/empty", second(lathe.Zeros(lathe.CPU, lathe.Float32, 0, 3).MaxDim(0, false)), lathe.ErrShape},
		{"mindim/dim", second(x.MinDim(5, false)), lathe.ErrIndex},
		{"sort/nil", second((*lathe.Tensor)(nil).Sort(0, false)), lathe.ErrValue},
	} {
		if !errors.Is(c.err, c.kind) {
			t.Errorf("%s: err = %v, want %v", c.name, c.err, c.kind)
		}
	}
	// An empty dim sorts to nothing, and topk takes k = 0 there.
	e := lathe.Zeros(lathe.CPU, lathe.Float32, 0, 3)
	if v, i := e.Sort(0, true); v.Err() != nil || i.Err() != nil || !slices.Equal(i.Shape(), []int{0, 3}) {
		t.Errorf("sort of [0,3]: %v %v", v, i)
	}
	if v, _ := e.TopK(0, 0, true); v.Err() != nil || !slices.Equal(v.Shape(), []int{0, 3}) {
		t.Errorf("topk 0 of [0,3]: %v", v)
	}
	if _, i := x.TopK(0, 1, true); i.Err() != nil || !slices.Equal(i.Shape(), []int{2, 0}) {
		t.Errorf("topk 0 of [2,3] along 1: %v", i)
	}
}

func second(_, b *lathe.Tensor) error { return b.Err() }

// TestSortFamilyOnBadTensors: nil, released and failed tensors give errors
// from every function of the family, never a panic.
func TestSortFamilyOnBadTensors(t *testing.T) {
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 3)
	released.Release()
	bad := lathe.Zeros(lathe.CPU, lathe.Float32, 3).Reshape(4)
	calls := map[string]func(x *lathe.Tensor) error{
		"argsort": func(x *lathe.Tensor) error { return x.ArgSort(0, false).Err() },
		"sort":    func(x *lathe.Tensor) error { v, i := x.Sort(0, false); return errors.Join(v.Err(), i.Err()) },
		"topk":    func(x *lathe.Tensor) error { v, i := x.TopK(1, 0, true); return errors.Join(v.Err(), i.Err()) },
		"maxdim":  func(x *lathe.Tensor) error { v, i := x.MaxDim(0, false); return errors.Join(v.Err(), i.Err()) },
		"mindim":  func(x *lathe.Tensor) error { v, i := x.MinDim(0, true); return errors.Join(v.Err(), i.Err()) },
	}
	for name, f := range calls {
		for what, x := range map[string]*lathe.Tensor{"nil": nil, "zero": {}, "released": released, "failed": bad} {
			var le *lathe.Error
			if err := f(x); !errors.As(err, &le) {
				t.Errorf("%s on a %s tensor: err = %v, want a *lathe.Error", name, what, err)
			}
		}
	}
}

// TestReleasedIndicesKeepTheBackward: the caller may release the indices
// that Sort, TopK, MaxDim and MinDim return before the backward pass
// through the values, as torch keeps them alive for it; the backward
// failed with "argument "index" of gather was released".
func TestReleasedIndicesKeepTheBackward(t *testing.T) {
	for _, dev := range sortDevices(t) {
		for name, f := range map[string]func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor){
			"sort":         func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return x.Sort(0, false) },
			"topk":         func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return x.TopK(2, 0, true) },
			"max_dim keep": func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return x.MaxDim(0, true) },
			"min_dim":      func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return x.MinDim(0, false) },
			"sort no grad": func(x *lathe.Tensor) (*lathe.Tensor, *lathe.Tensor) { return x.Detach().Sort(0, true) },
		} {
			t.Run(dev.String()+"/"+name, func(t *testing.T) {
				x := lathe.FromSlice(lathe.CPU, []float32{3, 1, 2}, 3).To(dev).RequireGrad()
				values, indices := f(x)
				got, err := indices.Int64s()
				if err != nil {
					t.Fatal(err)
				}
				indices.Release()
				if !values.RequiresGrad() {
					if _, err := values.Float32s(); err != nil {
						t.Fatalf("the values after the indices' release: %v", err)
					}
					return
				}
				if err := values.Sum().Backward(); err != nil {
					t.Fatalf("backward after the indices' release: %v", err)
				}
				g, err := x.Grad().Float32s()
				if err != nil {
					t.Fatal(err)
				}
				want := make([]float32, 3)
				for _, i := range got {
					want[i] = 1
				}
				if !slices.Equal(g, want) {
					t.Errorf("gradient %v, want %v", g, want)
				}
			})
		}
	}
}
