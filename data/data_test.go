package data_test

import (
	"errors"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/data"
)

// dataset is a TensorDataset of n examples: x's row i is (i, 10i, 100i),
// y's element i is i.
func dataset(t *testing.T, n int) (*data.TensorDataset, func()) {
	t.Helper()
	xv := make([]float32, 3*n)
	yv := make([]int64, n)
	for i := range n {
		xv[3*i], xv[3*i+1], xv[3*i+2] = float32(i), float32(10*i), float32(100*i)
		yv[i] = int64(i)
	}
	x, y := lathe.FromSlice(lathe.CPU, xv, n, 3), lathe.FromSlice(lathe.CPU, yv)
	ds, err := data.NewTensorDataset(x, y)
	if err != nil {
		t.Fatal(err)
	}
	return ds, func() { x.Release(); y.Release() }
}

// labels walks l for one epoch and returns each batch's labels, checking
// that x's rows match them.
func labels(t *testing.T, l *data.Loader) [][]int64 {
	t.Helper()
	var out [][]int64
	for b, err := range l.All() {
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != 2 {
			t.Fatalf("batch of %d tensors, want 2", len(b))
		}
		y, err := b[1].To(lathe.CPU).Int64s()
		if err != nil {
			t.Fatal(err)
		}
		x, err := b[0].To(lathe.CPU).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if s := b[0].Shape(); !slices.Equal(s, []int{len(y), 3}) {
			t.Fatalf("x's batch has shape %v, want [%d 3]", s, len(y))
		}
		for k, i := range y {
			if x[3*k] != float32(i) || x[3*k+2] != float32(100*i) {
				t.Fatalf("row %d of x is %v, want example %d's", k, x[3*k:3*k+3], i)
			}
		}
		out = append(out, y)
		b.Release()
	}
	return out
}

func flat(b [][]int64) []int64 { return slices.Concat(b...) }

func sizes(b [][]int64) []int {
	var s []int
	for _, v := range b {
		s = append(s, len(v))
	}
	return s
}

// plain hides a dataset's GetBatch, so that the Loader gets and stacks
// example by example.
type plain struct{ data.Dataset }

func TestLoaderBatches(t *testing.T) {
	ds, done := dataset(t, 10)
	defer done()
	for name, d := range map[string]data.Dataset{"batch-getter": ds, "get-and-stack": plain{ds}} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				size     int
				dropLast bool
				want     []int
			}{
				{3, false, []int{3, 3, 3, 1}}, {3, true, []int{3, 3, 3}}, {5, true, []int{5, 5}},
				{0, false, slices.Repeat([]int{1}, 10)}, {20, false, []int{10}}, {20, true, nil},
			} {
				l := &data.Loader{Dataset: d, BatchSize: c.size, DropLast: c.dropLast}
				got := labels(t, l)
				if !slices.Equal(sizes(got), c.want) || l.Len() != len(c.want) {
					t.Errorf("batch size %d, drop last %v: batches of %v (Len %d), want %v", c.size, c.dropLast, sizes(got), l.Len(), c.want)
				}
				if f := flat(got); !c.dropLast && !slices.Equal(f, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
					t.Errorf("batch size %d: examples %v, want 0..9 in order", c.size, f)
				}
			}
		})
	}
}

// TestLoaderShuffle: each epoch is a permutation of the examples, epochs
// differ, every example comes first in some epoch (the orders cover the
// permutations), and the same Seed gives the same epochs whatever
// lathe's stream has drawn.
func TestLoaderShuffle(t *testing.T) {
	ds, done := dataset(t, 12)
	defer done()
	epochs := func(seed uint64) [][]int64 {
		l := &data.Loader{Dataset: ds, BatchSize: 5, Shuffle: true, Seed: seed}
		var out [][]int64
		for range 40 {
			out = append(out, flat(labels(t, l)))
		}
		return out
	}
	a := epochs(3)
	first := map[int64]bool{}
	for e, order := range a {
		s := slices.Sorted(slices.Values(order))
		if !slices.Equal(s, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) {
			t.Fatalf("epoch %d: %v is no permutation of 0..11", e, order)
		}
		first[order[0]] = true
		if e > 0 && slices.Equal(order, a[e-1]) {
			t.Errorf("epochs %d and %d have the same order %v", e-1, e, order)
		}
	}
	if len(first) != 12 {
		t.Errorf("in 40 epochs only %d examples came first, want all 12", len(first))
	}
	lathe.Seed(9)
	lathe.Rand(lathe.CPU, lathe.Float32, 100).Release()
	if b := epochs(3); !slices.EqualFunc(a, b, slices.Equal) {
		t.Errorf("Seed 3 again gave other epochs")
	}
	if b := epochs(4); slices.Equal(a[0], b[0]) && slices.Equal(a[1], b[1]) {
		t.Errorf("Seed 4 gave Seed 3's epochs")
	}
	// drop_last with shuffling: full batches only, distinct examples.
	l := &data.Loader{Dataset: ds, BatchSize: 5, Shuffle: true, Seed: 1, DropLast: true}
	got := labels(t, l)
	if f := flat(got); !slices.Equal(sizes(got), []int{5, 5}) || len(slices.Compact(slices.Sorted(slices.Values(f)))) != 10 {
		t.Errorf("shuffled with drop last: %v, want two batches of 5 distinct examples", got)
	}
}

func TestRandomSplitAndSubset(t *testing.T) {
	ds, done := dataset(t, 10)
	defer done()
	parts, err := data.RandomSplit(ds, 5, 6, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for i, p := range parts {
		if p.Len() != []int{6, 3, 1}[i] {
			t.Errorf("part %d has %d examples", i, p.Len())
		}
		all = append(all, flat(labels(t, &data.Loader{Dataset: p, BatchSize: 4}))...)
	}
	if slices.Sort(all); !slices.Equal(all, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("the parts hold %v, want each example once", all)
	}
	again, _ := data.RandomSplit(ds, 5, 6, 3, 1)
	if !slices.Equal(again[0].Indices, parts[0].Indices) {
		t.Errorf("the same seed split %v, then %v", parts[0].Indices, again[0].Indices)
	}
	fr, err := data.RandomSplitFractions(ds, 5, 0.33, 0.33, 0.34)
	if err != nil || fr[0].Len() != 4 || fr[1].Len() != 3 || fr[2].Len() != 3 {
		t.Errorf("fractions .33 .33 .34 of 10: %v, want lengths 4 3 3 (torch's floor, then the rest round robin)", err)
	}
	sub, err := data.NewSubset(plain{ds}, []int{7, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := flat(labels(t, &data.Loader{Dataset: sub, BatchSize: 2})); !slices.Equal(got, []int64{7, 2, 2}) {
		t.Errorf("subset [7 2 2] of a plain dataset gave %v", got)
	}
}

// failing fails its Get at one index.
type failing struct {
	data.Dataset
	at int
}

var errBroken = errors.New("broken file")

func (f failing) Get(i int) ([]*lathe.Tensor, error) {
	if i == f.at {
		return nil, errBroken
	}
	return f.Dataset.Get(i)
}

func TestDataErrors(t *testing.T) {
	ds, done := dataset(t, 10)
	defer done()
	x := lathe.Zeros(lathe.CPU, lathe.Float32, 4, 2)
	defer x.Release()
	released := lathe.Zeros(lathe.CPU, lathe.Float32, 4)
	released.Release()
	check := func(name string, err, kind error, arg string) {
		t.Helper()
		var e *lathe.Error
		if !errors.As(err, &e) || !errors.Is(err, kind) || e.Arg != arg {
			t.Errorf("%s: %v, want a *lathe.Error of kind %v naming %q", name, err, kind, arg)
		}
	}
	_, err := data.NewTensorDataset()
	check("none", err, lathe.ErrValue, "tensors")
	_, err = data.NewTensorDataset(x, lathe.Zeros(lathe.CPU, lathe.Int64, 5))
	check("first sizes", err, lathe.ErrShape, "tensors[1]")
	_, err = data.NewTensorDataset(lathe.Scalar(lathe.CPU, float32(1)))
	check("0-d", err, lathe.ErrShape, "tensors[0]")
	_, err = data.NewTensorDataset(x, nil)
	check("nil", err, lathe.ErrValue, "tensors[1]")
	_, err = data.NewTensorDataset(released)
	check("released", err, lathe.ErrReleased, "tensors[0]")
	_, err = ds.Get(10)
	check("get 10", err, lathe.ErrIndex, "i")
	_, err = data.NewSubset(ds, []int{0, -1})
	check("subset -1", err, lathe.ErrIndex, "indices")
	_, err = data.RandomSplit(ds, 1, 5, 4)
	check("split sum", err, lathe.ErrValue, "lengths")
	_, err = data.RandomSplitFractions(ds, 1, 0.5, 0.6)
	check("fraction sum", err, lathe.ErrValue, "fractions")
	for name, l := range map[string]*data.Loader{
		"nil dataset":    {},
		"negative batch": {Dataset: ds, BatchSize: -1},
	} {
		n := 0
		for b, err := range l.All() {
			n++
			if b != nil || err == nil {
				t.Errorf("%s: batch %v, error %v; want one error", name, b, err)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d yields, want 1", name, n)
		}
	}
	// A Get that fails stops the loop after the batches before it, with
	// the error wrapped, naming the example.
	for name, l := range map[string]*data.Loader{
		"get":     {Dataset: failing{plain{ds}, 7}, BatchSize: 3},
		"collate": {Dataset: ds, BatchSize: 3, Collate: func([][]*lathe.Tensor) ([]*lathe.Tensor, error) { return nil, errBroken }},
	} {
		good, errs := 0, 0
		for b, err := range l.All() {
			if err != nil {
				errs++
				if !errors.Is(err, errBroken) {
					t.Errorf("%s: %v does not wrap the cause", name, err)
				}
				continue
			}
			good++
			b.Release()
		}
		if want := map[string]int{"get": 2, "collate": 0}[name]; good != want || errs != 1 {
			t.Errorf("%s: %d batches and %d errors, want %d and 1", name, good, errs, want)
		}
	}
	// Examples that do not stack: the stack's error, as the loop's.
	ragged := &data.Loader{Dataset: ragged{}, BatchSize: 2}
	for _, err := range ragged.All() {
		check("ragged", err, lathe.ErrShape, "Dataset")
	}
}

// ragged's examples have different shapes.
type ragged struct{}

func (ragged) Len() int { return 2 }
func (ragged) Get(i int) ([]*lathe.Tensor, error) {
	return []*lathe.Tensor{lathe.Zeros(lathe.CPU, lathe.Float32, i+1)}, nil
}

// TestLoaderLeavesNothing: with the collector off, a dataset made, walked
// (epochs whose batches the caller releases, a loop that breaks, a
// failing Get, a collate, a move to another device) and released takes
// nothing from the pools: no batch, example or view outlives its use,
// holding the dataset's tensors.
func TestLoaderLeavesNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	devs := []lathe.Device{lathe.CPU}
	if lathe.Zeros(lathe.WGPU(0), lathe.Float32, 1).Err() == nil {
		devs = append(devs, lathe.WGPU(0))
	}
	stack := func(e [][]*lathe.Tensor) ([]*lathe.Tensor, error) {
		col := make([]*lathe.Tensor, len(e))
		for i := range e {
			col[i] = e[i][0]
		}
		return []*lathe.Tensor{lathe.Stack(col, 0)}, nil
	}
	for _, dev := range devs {
		for name, loader := range map[string]func(ds *data.TensorDataset) *data.Loader{
			"batch-getter": func(ds *data.TensorDataset) *data.Loader {
				return &data.Loader{Dataset: ds, BatchSize: 3, Shuffle: true, Device: dev}
			},
			"get-and-stack": func(ds *data.TensorDataset) *data.Loader {
				return &data.Loader{Dataset: plain{ds}, BatchSize: 4, Device: dev}
			},
			"failing": func(ds *data.TensorDataset) *data.Loader {
				return &data.Loader{Dataset: failing{plain{ds}, 5}, BatchSize: 4, Device: dev}
			},
			"collate": func(ds *data.TensorDataset) *data.Loader {
				return &data.Loader{Dataset: ds, BatchSize: 4, Device: dev, Collate: stack}
			},
			"split": func(ds *data.TensorDataset) *data.Loader {
				p, _ := data.RandomSplit(ds, 1, 7, 3)
				return &data.Loader{Dataset: p[0], BatchSize: 2, Device: dev}
			},
		} {
			round := func() {
				// Rows of 64 KiB: the pool counts blocks this large
				// (small tensors live on the Go heap).
				x := lathe.Zeros(lathe.CPU, lathe.Float32, 10, 1<<14)
				y := lathe.Arange(lathe.CPU, lathe.Int64, 0, 10, 1)
				ds, err := data.NewTensorDataset(x, y)
				if err != nil {
					t.Fatal(err)
				}
				done := func() { x.Release(); y.Release() }
				l := loader(ds)
				for range 2 {
					for b, err := range l.All() {
						if err == nil {
							b.Release()
						}
					}
				}
				for b, err := range l.All() {
					if err == nil {
						b.Release()
					}
					break
				}
				done()
			}
			round()
			round()
			s0, _ := lathe.MemoryStats(lathe.CPU)
			d0, _ := lathe.MemoryStats(dev)
			round()
			round()
			s1, _ := lathe.MemoryStats(lathe.CPU)
			d1, _ := lathe.MemoryStats(dev)
			if s1.Allocated > s0.Allocated || d1.Allocated > d0.Allocated {
				t.Errorf("%v %s: two rounds took %d bytes on the cpu and %d on %v", dev, name, s1.Allocated-s0.Allocated, d1.Allocated-d0.Allocated, dev)
			}
		}
	}
}
