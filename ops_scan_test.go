package lathe

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"testing"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// Tests of the scan, search and counting ops (ops_scan.go, ops_search.go,
// ops_meshgrid.go) beyond the conformance suite (internal/conformance,
// scan.json, which compares their values and gradients with torch's on
// every device): their rows of the bad-input table, the errors that name
// op and argument, longer lines against plain loops (the doubling scans
// and the binary lifting have a step per power of two), 16-bit dtypes,
// and memory.

// biScanOps are the bad-input rows of the scan, search and counting ops.
func biScanOps() map[string]biOp {
	t := map[string]biOp{}
	t["cumprod"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { return x.CumProd(d) }))
	t["logcumsumexp"] = biReduce(func(x *Tensor, d int) *Tensor { return x.LogCumSumExp(d) })
	t["cummax"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { v, _ := x.CumMax(d); return v }))
	t["cummin"] = biAnyDType(biReduce(func(x *Tensor, d int) *Tensor { _, i := x.CumMin(d); return i }))
	t["diff"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 2, 1)} },
		call: func(a []*Tensor) *Tensor { return a[0].Diff(2, 1, a[1], nil) }, kinds: "aA",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Diff(1, 1, nil, nil) }}
	t["searchsorted"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 3), biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return SearchSorted(a[0], a[1], SearchRight()) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return SearchSorted(biF(dev, 3), biBig(dev, biHuge, biHuge)) }}
	t["searchsorted_sorter"] = biOp{args: func(dev Device) []*Tensor {
		return []*Tensor{biF(dev, 3), biF(dev, 2, 3), FromSlice(CPU, []int64{2, 0, 1}, 3).To(dev)}
	}, call: func(a []*Tensor) *Tensor { return SearchSorted(a[0], a[1], SearchSorter(a[2])) }, kinds: "ffI"}
	t["bucketize"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Bucketize(a[1], false, true) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return biBig(dev, biHuge, biHuge).Bucketize(biF(dev, 3), true, false) }}
	t["bincount"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biIdx(dev, []int32{0, 3, 3, 1}, 4)} },
		call: func(a []*Tensor) *Tensor { return a[0].Bincount(nil, 2) }, kinds: "i",
		huge: func(dev Device) *Tensor { return biIdx(dev, []int32{1}, 1).Bincount(nil, biHuge*biHuge) }}
	t["bincount_weights"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biIdx(dev, []int32{0, 3, 3, 1}, 4), biF(dev, 4)} },
		call: func(a []*Tensor) *Tensor { return a[0].Bincount(a[1], 0) }, kinds: "iA"}
	t["histc"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return a[0].Histc(4, 0, 0) }, kinds: "f",
		huge: func(dev Device) *Tensor { return biF(dev, 2, 3).Histc(biHuge*biHuge, 0, 1) }}
	t["cartesian_prod"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return CartesianProd(a...) }, kinds: "ss",
		huge: func(dev Device) *Tensor { return CartesianProd(biBig(dev, biHuge), biBig(dev, biHuge)) }}
	t["meshgrid"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor {
			g, err := Meshgrid(a, "xy")
			if err != nil {
				return Failed(err)
			}
			return g[1]
		}, kinds: "ss"}
	t["argwhere"] = biAnyDType(biUnary((*Tensor).Argwhere))
	return t
}

func TestScanErrors(t *testing.T) {
	x := FromSlice(CPU, []float32{3, 1, 2, 5, 4, 0}, 2, 3)
	first := func(v, _ *Tensor) error { return v.Err() }
	var nilT *Tensor
	moreOpsErr(t, "cumprod dim 2", x.CumProd(2).Err(), ErrIndex, "cumprod", "dim")
	moreOpsErr(t, "cumprod of nil", nilT.CumProd(0).Err(), ErrValue, "cumprod", "x")
	moreOpsErr(t, "cummax dim -3", first(x.CumMax(-3)), ErrIndex, "cummax", "dim")
	moreOpsErr(t, "cummin of nil", first(nilT.CumMin(0)), ErrValue, "cummin", "x")
	moreOpsErr(t, "logcumsumexp of int32", Ones(CPU, Int32, 2).LogCumSumExp(0).Err(), ErrDType, "logcumsumexp", "x")
	moreOpsErr(t, "diff of a 0-d tensor", Scalar(CPU, float32(1)).Diff(1, 0, nil, nil).Err(), ErrShape, "diff", "x")
	moreOpsErr(t, "diff append of another rank", x.Diff(1, 0, nil, Ones(CPU, Float32, 3)).Err(), ErrShape, "diff", "append")
	moreOpsErr(t, "diff prepend of another size", x.Diff(1, 0, Ones(CPU, Float32, 1, 2), nil).Err(), ErrShape, "diff", "prepend")
	moreOpsErr(t, "diff dim 2", x.Diff(1, 2, nil, nil).Err(), ErrIndex, "diff", "dim")

	seq := FromSlice(CPU, []float32{1, 2, 3}, 3)
	moreOpsErr(t, "searchsorted of a 0-d sequence", SearchSorted(Scalar(CPU, float32(1)), seq).Err(), ErrShape, "searchsorted", "sorted_sequence")
	moreOpsErr(t, "searchsorted values of other lines", SearchSorted(x, Ones(CPU, Float32, 3, 1)).Err(), ErrShape, "searchsorted", "values")
	moreOpsErr(t, "searchsorted of bool", SearchSorted(seq, Ones(CPU, Bool, 1)).Err(), ErrDType, "searchsorted", "values")
	moreOpsErr(t, "searchsorted side", SearchSorted(seq, seq, SearchSide("up")).Err(), ErrValue, "searchsorted", "side")
	moreOpsErr(t, "searchsorted side left and right", SearchSorted(seq, seq, SearchSide("left"), SearchRight()).Err(), ErrValue, "searchsorted", "side")
	moreOpsErr(t, "searchsorted sorter int32", SearchSorted(seq, seq, SearchSorter(Zeros(CPU, Int32, 3))).Err(), ErrDType, "searchsorted", "sorter")
	moreOpsErr(t, "searchsorted sorter shape", SearchSorted(seq, seq, SearchSorter(Zeros(CPU, Int64, 2))).Err(), ErrShape, "searchsorted", "sorter")
	moreOpsErr(t, "searchsorted sorter nil", SearchSorted(seq, seq, SearchSorter(&Tensor{})).Err(), ErrValue, "searchsorted", "sorter")
	moreOpsErr(t, "searchsorted sorter past the sequence", SearchSorted(seq, seq, SearchSorter(FromSlice(CPU, []int64{0, 3, 1}, 3))).Err(),
		ErrIndex, "searchsorted", "sorter")
	// On a GPU the sorter's check settles at the read too, naming the
	// sorter (it named the gather inside), and leaves nothing for a later
	// Synchronize.
	for _, dev := range biDevices(t) {
		s := SearchSorted(seq.To(dev), seq.To(dev), SearchSorter(FromSlice(CPU, []int64{0, -1, 1}, 3).To(dev)))
		_, err := s.Int64s()
		moreOpsErr(t, dev.String()+": searchsorted sorter before the sequence", err, ErrIndex, "searchsorted", "sorter")
		if err := Synchronize(dev); err != nil {
			t.Errorf("%v: Synchronize after the failed searchsorted was read: %v", dev, err)
		}
	}
	moreOpsErr(t, "bucketize of 2-d boundaries", seq.Bucketize(x, false, false).Err(), ErrShape, "bucketize", "boundaries")
	moreOpsErr(t, "bucketize of nil", nilT.Bucketize(seq, false, false).Err(), ErrValue, "bucketize", "x")

	idx := FromSlice(CPU, []int64{0, 2, 2}, 3)
	moreOpsErr(t, "bincount of a negative", FromSlice(CPU, []int32{1, -2}, 2).Bincount(nil, 0).Err(), ErrValue, "bincount", "x")
	moreOpsErr(t, "bincount of float32", seq.Bincount(nil, 0).Err(), ErrDType, "bincount", "x")
	moreOpsErr(t, "bincount of a matrix", idx.Reshape(1, 3).Bincount(nil, 0).Err(), ErrShape, "bincount", "x")
	moreOpsErr(t, "bincount of 2^62", FromSlice(CPU, []int64{1, 1 << 62}, 2).Bincount(nil, 0).Err(), ErrOutOfMemory, "bincount", "x")
	moreOpsErr(t, "bincount of MaxInt64", FromSlice(CPU, []int64{math.MaxInt64}, 1).Bincount(nil, 0).Err(), ErrOutOfMemory, "bincount", "x")
	moreOpsErr(t, "bincount minlength -1", idx.Bincount(nil, -1).Err(), ErrValue, "bincount", "minlength")
	moreOpsErr(t, "bincount weights [2]", idx.Bincount(Ones(CPU, Float32, 2), 0).Err(), ErrShape, "bincount", "weights")
	moreOpsErr(t, "histc of int64", idx.Histc(3, 0, 0).Err(), ErrDType, "histc", "x")
	moreOpsErr(t, "histc of float16", seq.Cast(Float16).Histc(3, 0, 0).Err(), ErrDType, "histc", "x")
	moreOpsErr(t, "histc bins 0", seq.Histc(0, 0, 0).Err(), ErrValue, "histc", "bins")
	moreOpsErr(t, "histc max below min", seq.Histc(3, 2, 1).Err(), ErrValue, "histc", "max")
	moreOpsErr(t, "histc NaN min", seq.Histc(3, math.NaN(), 1).Err(), ErrValue, "histc", "min")
	moreOpsErr(t, "histc of an infinite range", FromSlice(CPU, []float32{1, float32(math.Inf(1))}, 2).Histc(3, 0, 0).Err(),
		ErrValue, "histc", "x")

	_, err := Meshgrid(nil, "ij")
	moreOpsErr(t, "meshgrid of nothing", err, ErrShape, "meshgrid", "tensors")
	_, err = Meshgrid([]*Tensor{seq, idx}, "ij")
	moreOpsErr(t, "meshgrid of mixed dtypes", err, ErrDType, "meshgrid", "tensors[1]")
	_, err = Meshgrid([]*Tensor{seq, x}, "ij")
	moreOpsErr(t, "meshgrid of a matrix", err, ErrShape, "meshgrid", "tensors[1]")
	_, err = Meshgrid([]*Tensor{seq}, "yx")
	moreOpsErr(t, "meshgrid indexing", err, ErrValue, "meshgrid", "indexing")
	moreOpsErr(t, "cartesian_prod of a 0-d tensor", CartesianProd(seq, Scalar(CPU, float32(1))).Err(), ErrShape, "cartesian_prod", "tensors[1]")
	moreOpsErr(t, "tril_indices row -1", TrilIndices(CPU, -1, 2, 0).Err(), ErrValue, "tril_indices", "row")
	moreOpsErr(t, "triu_indices col -1", TriuIndices(CPU, 2, -1, 0).Err(), ErrValue, "triu_indices", "col")
	moreOpsErr(t, "tril_indices past memory", TrilIndices(CPU, 1<<30, 1<<30, 0).Err(), ErrOutOfMemory, "tril_indices", "row")
	moreOpsErr(t, "argwhere of nil", nilT.Argwhere().Err(), ErrValue, "argwhere", "x")
}

// TestScanLongLines checks the doubling scans and the binary lifting on
// lines long enough for many steps (powers of two and one past them)
// against plain loops, on every device: cummax and cummin with ties and
// NaN (their indices exactly), cumprod and logcumsumexp within rounding,
// searchsorted among boundaries with repeats, bincount and histc.
func TestScanLongLines(t *testing.T) {
	r := rand.New(rand.NewPCG(85, 86))
	for _, dev := range biDevices(t) {
		for _, n := range []int{1, 2, 31, 64, 65, 300} {
			v := make([]float32, 2*n)
			for i := range v {
				v[i] = float32(r.IntN(9)-4) / 2 // ties
				if r.IntN(40) == 0 {
					v[i] = float32(math.NaN())
				}
			}
			x := FromSlice(CPU, v, 2, n).To(dev)
			for _, max := range []bool{true, false} {
				var vals, idx *Tensor
				if max {
					vals, idx = x.CumMax(1)
				} else {
					vals, idx = x.CumMin(1)
				}
				got, err1 := idx.Int64s()
				gotV, err2 := vals.Float32s()
				if err1 != nil || err2 != nil {
					t.Fatalf("%v n=%d: %v %v", dev, n, err1, err2)
				}
				for row := 0; row < 2; row++ {
					best := 0
					for i := 0; i < n; i++ {
						e, c := v[row*n+best], v[row*n+i]
						// torch's loop: x >= running (<=), or x NaN.
						if c != c || (max && c >= e) || (!max && c <= e) {
							best = i
						}
						k := row*n + i
						if got[k] != int64(best) || !sameFloat(gotV[k], v[row*n+best]) {
							t.Fatalf("%v n=%d max=%v row %d at %d: %v (%v), want %v (%v)", dev, n, max, row, i, got[k], gotV[k], best, v[row*n+best])
						}
					}
				}
			}
			// cumprod and logcumsumexp of values near 1 and 0 against a
			// float64 loop.
			w := make([]float32, n)
			for i := range w {
				w[i] = 0.9 + 0.2*r.Float32()
			}
			y := FromSlice(CPU, w, n).To(dev)
			prod, err1 := y.CumProd(0).Float32s()
			lse, err2 := y.MulScalar(10).LogCumSumExp(0).Float32s()
			if err1 != nil || err2 != nil {
				t.Fatalf("%v n=%d: %v %v", dev, n, err1, err2)
			}
			p, s := 1.0, math.Inf(-1)
			for i, wi := range w {
				p *= float64(wi)
				a := float64(float32(wi * 10))
				hi, lo := math.Max(s, a), math.Min(s, a)
				s = hi + math.Log1p(math.Exp(lo-hi))
				if math.Abs(float64(prod[i])-p) > 1e-5*math.Abs(p) || math.Abs(float64(lse[i])-s) > 1e-5*math.Abs(s)+1e-5 {
					t.Fatalf("%v n=%d at %d: cumprod %v logcumsumexp %v, want %v %v", dev, n, i, prod[i], lse[i], p, s)
				}
			}
			// searchsorted: n boundaries with repeats, 200 values.
			b := make([]float32, n)
			for i := range b {
				b[i] = float32(r.IntN(20))
			}
			slices.Sort(b)
			q := make([]float32, 200)
			for i := range q {
				q[i] = float32(r.IntN(44)-2) / 2
			}
			for _, right := range []bool{false, true} {
				var opts []SearchOption
				if right {
					opts = append(opts, SearchRight())
				}
				got, err := SearchSorted(FromSlice(CPU, b, n).To(dev), FromSlice(CPU, q, 200).To(dev), opts...).Int64s()
				if err != nil {
					t.Fatalf("%v n=%d: %v", dev, n, err)
				}
				for i, qi := range q {
					want := sort.Search(n, func(j int) bool { return b[j] > qi || (!right && b[j] == qi) })
					if got[i] != int64(want) {
						t.Fatalf("%v n=%d right=%v: %v in %v at %d, want %d", dev, n, right, qi, b, got[i], want)
					}
				}
			}
			// bincount and histc of n values.
			c := make([]int32, n)
			counts := make([]int64, 13)
			hist := make([]float32, 7)
			for i := range c {
				c[i] = int32(r.IntN(10))
				counts[c[i]]++
				hist[min(int(float32(c[i])*7/12), 6)]++ // histc over [0, 12]: (x - 0)·7/12
			}
			gotC, err1 := FromSlice(CPU, c, n).To(dev).Bincount(nil, 13).Int64s()
			gotH, err2 := FromSlice(CPU, c, n).To(dev).Cast(Float32).Histc(7, 0, 12).Float32s()
			if err1 != nil || err2 != nil || !slices.Equal(gotC, counts) || !slices.Equal(gotH, hist) {
				t.Fatalf("%v n=%d: bincount %v %v, want %v; histc %v %v, want %v", dev, n, gotC, err1, counts, gotH, err2, hist)
			}
		}
	}
}

func sameFloat(a, b float32) bool { return a == b || (a != a && b != b) }

// TestScanHalf: cumprod and logcumsumexp of float16 and bfloat16 compute
// in float32 and round once, as torch's cuda kernels: bit for bit the op
// on x widened, rounded to x's dtype.
func TestScanHalf(t *testing.T) {
	vals := make([]float32, 40)
	for i := range vals {
		vals[i] = 0.9 + float32(i%7)*0.037
	}
	for _, dt := range []DType{Float16, BFloat16} {
		x := FromSlice(CPU, vals, 4, 10).Cast(dt)
		for name, f := range map[string]func(*Tensor) *Tensor{
			"cumprod": func(x *Tensor) *Tensor { return x.CumProd(1) }, "logcumsumexp": func(x *Tensor) *Tensor { return x.LogCumSumExp(1) },
		} {
			y := f(x)
			if y.DType() != dt {
				t.Errorf("%v %s: dtype %v", dt, name, y.DType())
			}
			got, err1 := y.Float32s()
			want, err2 := f(x.Cast(Float32)).Cast(dt).Float32s()
			if err1 != nil || err2 != nil || !slices.Equal(got, want) {
				t.Errorf("%v %s: %v %v, want the float32 result rounded once %v %v", dt, name, got, err1, want, err2)
			}
		}
	}
	// Integers and bool multiply in int64, as torch's.
	for _, dt := range []DType{Int32, Bool, Uint8} {
		if got := Ones(CPU, dt, 3).CumProd(0); got.DType() != Int64 {
			t.Errorf("cumprod of %v: %v, want int64", dt, got.DType())
		}
	}
}

// TestScanGradZeros: cumprod's gradient where x holds zeros, and its
// second derivative, against the products written out, on every device:
// torch's cumprod_backward takes care of zeros, and a composite by
// division would give NaN there.
func TestScanGradZeros(t *testing.T) {
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, []float32{2, 0, 3, 0, 5}, 5).To(dev).RequireGrad()
		g, err := Grad(x.CumProd(0).Sum(), []*Tensor{x}, CreateGraph())
		if err != nil {
			t.Fatalf("%v: %v", dev, err)
		}
		// d/dx_k Σ_i Π_{j≤i} x_j.
		want := []float32{1, 2 + 2*3, 0, 0, 0}
		if got, err := g[0].Float32s(); err != nil || !slices.Equal(got, want) {
			t.Errorf("%v: gradient of cumprod's sum at [2 0 3 0 5]: %v %v, want %v", dev, got, err, want)
		}
		// The second derivative along x_1: d/dx_1 of the gradient.
		h, err := Grad(g[0].Narrow(0, 2, 1).Sum(), []*Tensor{x})
		if err != nil {
			t.Fatalf("%v: %v", dev, err)
		}
		// d²/dx_1 dx_2 of Σ: x_0 + x_0·x_3 = 2.
		if got, err := h[0].Float32s(); err != nil || got[1] != 2 {
			t.Errorf("%v: second derivative of cumprod at [2 0 3 0 5]: %v %v, want 2 at 1", dev, got, err)
		}
	}
}

// TestScanLeaveNothing: a training step through each of the scan, search
// and counting ops takes no new memory from the device's pool once warm,
// with the collector off (searchsorted's and histc's results were left to
// the collector in a caller's composite: made from detached handles, they
// did not join its intermediates).
func TestScanLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		// [64, 128]: the cpu's MemoryStats leaves out buffers under 16 KiB.
		x := RandN(CPU, Float32, 64, 128).To(dev).RequireGrad()
		p := RandN(CPU, Float32, 64, 2).To(dev)
		seq := Arange(dev, Float32, -2, 2, 0.5)
		for name, f := range map[string]func(x *Tensor) *Tensor{
			"cumprod":      func(x *Tensor) *Tensor { return x.CumProd(1) },
			"logcumsumexp": func(x *Tensor) *Tensor { return x.LogCumSumExp(0) },
			"cummax": func(x *Tensor) *Tensor {
				v, i := x.CumMax(1)
				i.Release()
				return v
			},
			"cummin0d": func(x *Tensor) *Tensor {
				v, i := x.Sum().CumMin(0)
				i.Release()
				return v
			},
			"diff": func(x *Tensor) *Tensor { return x.Diff(2, 1, p, p) },
			"cartesian": func(x *Tensor) *Tensor {
				return CartesianProd(x.Narrow(0, 0, 1).Reshape(-1), x.Narrow(0, 1, 1).Reshape(-1))
			},
			"meshgrid": func(x *Tensor) *Tensor {
				g, err := Meshgrid([]*Tensor{x.Narrow(0, 0, 1).Reshape(-1), x.Narrow(0, 1, 1).Reshape(-1)}, "xy")
				if err != nil {
					return Failed(err)
				}
				g[1].Release()
				return g[0].Sum().Add(x)
			},
			"searchsorted": func(x *Tensor) *Tensor { return SearchSorted(seq, x).Cast(Float32).Add(x) },
			"bucketize":    func(x *Tensor) *Tensor { return x.Bucketize(seq, true, true).Cast(Float32).Add(x) },
			"bincount": func(x *Tensor) *Tensor {
				return x.Abs().Floor().Cast(Int64).Reshape(-1).Bincount(x.Reshape(-1), 30).Sum().Add(x)
			},
			"histc": func(x *Tensor) *Tensor { return x.Histc(5, 0, 0).Sum().Add(x) },
		} {
			warmStepsTakeNothing(t, dev, name, x, f, true)
		}
	}
}

// TestScanTriIndices checks tril_indices and triu_indices against the
// elements of the matrix for every small size and offset, and sizes and
// offsets near the ints' ends: the count is in closed form, so that a
// matrix of 2^62 rows and no columns is empty at once, not after a loop
// over its rows, and no product of sizes overflows.
func TestScanTriIndices(t *testing.T) {
	for _, lower := range []bool{true, false} {
		f := TriuIndices
		if lower {
			f = TrilIndices
		}
		for row := 0; row < 5; row++ {
			for col := 0; col < 5; col++ {
				for off := -7; off < 7; off++ {
					var want []int64
					for i := 0; i < row; i++ {
						for j := 0; j < col; j++ {
							if (lower && j <= i+off) || (!lower && j >= i+off) {
								want = append(want, int64(i))
							}
						}
					}
					got, err := f(CPU, row, col, off).Int64s()
					if err != nil || !slices.Equal(got[:len(got)/2], want) {
						t.Fatalf("lower=%v %dx%d offset %d: rows %v %v, want %v", lower, row, col, off, got, err, want)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		x    *Tensor
		want int
	}{
		{TrilIndices(CPU, 1<<62, 0, 0), 0}, {TriuIndices(CPU, 1<<62, 3, 5), 0},
		{TrilIndices(CPU, 3, 1<<62, -1), 3}, {TriuIndices(CPU, math.MaxInt, math.MaxInt, math.MaxInt), 0},
		{TrilIndices(CPU, 2, 3, math.MinInt), 0}, {TriuIndices(CPU, 2, 3, math.MaxInt), 0},
		{TrilIndices(CPU, 1<<62, 3, 3-(1<<62)), 6},
	} {
		if err := c.x.Err(); err != nil || c.x.Shape()[1] != c.want {
			t.Errorf("%v %v: want %d elements", c.x.Shape(), err, c.want)
		}
	}
	moreOpsErr(t, "triu_indices of MaxInt²", TriuIndices(CPU, math.MaxInt, math.MaxInt, math.MinInt).Err(), ErrOutOfMemory, "triu_indices", "row")
}

// TestScanMemory: a scan without gradients holds a few tensors of x's
// size at a time, not one per doubling step: along lines of 1024 (ten
// steps) every step's intermediates were kept until the end, 75 times
// x's size for logcumsumexp and 64 for cummax. The pool
// keeps one peak for the process, so each op runs on a larger x than the
// one before, to pass the peak that the one before set; and it runs in a
// process of its own, whose peak no earlier test has set.
func TestScanMemory(t *testing.T) {
	if os.Getenv("LATHE_SCAN_PEAK") == "" {
		testenv.HostOnly(t)
		if out, err := testenv.RunChild("TestScanMemory", "LATHE_SCAN_PEAK=1"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const n = 1024
	for _, c := range []struct {
		name string
		rows int
		most int64 // times x's size
		f    func(x *Tensor) *Tensor
	}{
		{"cumprod", 256, 8, func(x *Tensor) *Tensor { return x.CumProd(1) }},
		{"logcumsumexp", 512, 16, func(x *Tensor) *Tensor { return x.LogCumSumExp(1) }}, // logaddexp's dozen intermediates a step
		{"cummax", 2048, 16, func(x *Tensor) *Tensor { // its state is Int64 indices, twice x's size
			v, i := x.CumMax(1)
			i.Release()
			return v
		}},
	} {
		x := Rand(CPU, Float32, c.rows, n)
		size := int64(4 * c.rows * n)
		s0, _ := MemoryStats(CPU)
		y := c.f(x)
		s1, _ := MemoryStats(CPU)
		if err := y.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		y.Release()
		x.Release()
		if grew := s1.PeakAllocated - s0.Allocated; grew > c.most*size {
			t.Errorf("%s of [%d, %d]: the peak grew by %d bytes, %.1f times x's size; want at most %d",
				c.name, c.rows, n, grew, float64(grew)/float64(size), c.most)
		} else {
			t.Logf("%s of [%d, %d]: the peak grew by %.1f times x's size", c.name, c.rows, n, float64(grew)/float64(size))
		}
	}
}

// TestLogAddExpInfiniteTies: where both arguments are the same infinity
// logaddexp is that infinity with gradient ½ each, and logcumsumexp's
// gradient stays finite through leading -Inf elements (torch's are NaN);
// a NaN argument still gives NaN.
func TestLogAddExpInfiniteTies(t *testing.T) {
	inf := math.Inf(1)
	for _, dev := range biDevices(t) {
		x := FromSlice(CPU, []float32{float32(-inf), float32(inf), 2, float32(math.NaN())}).To(dev).RequireGrad()
		y := FromSlice(CPU, []float32{float32(-inf), float32(inf), 2, 1}).To(dev).RequireGrad()
		z := x.LogAddExp(y)
		v, err := z.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsInf(float64(v[0]), -1) || !math.IsInf(float64(v[1]), 1) || math.Abs(float64(v[2])-(2+math.Ln2)) > 1e-6 || !math.IsNaN(float64(v[3])) {
			t.Errorf("%v: logaddexp = %v, want [-Inf +Inf 2+ln2 NaN]", dev, v)
		}
		g, err := Grad(z.Narrow(0, 0, 3).Sum(), []*Tensor{x, y})
		if err != nil {
			t.Fatal(err)
		}
		for i, gi := range g {
			if got, _ := gi.Float32s(); !slices.Equal(got[:3], []float32{0.5, 0.5, 0.5}) { // [3]: 0·NaN
				t.Errorf("%v: gradient %d at [-Inf, +Inf, 2]: %v, want ½ each", dev, i, got)
			}
		}
		l := FromSlice(CPU, []float32{float32(-inf), float32(-inf), 1, float32(-inf)}).To(dev).RequireGrad()
		gl, err := Grad(l.LogCumSumExp(0).Sum(), []*Tensor{l})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := gl[0].Float32s(); slices.ContainsFunc(got, func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }) {
			t.Errorf("%v: logcumsumexp's gradient at [-Inf -Inf 1 -Inf]: %v, want finite", dev, got)
		}
	}
}
