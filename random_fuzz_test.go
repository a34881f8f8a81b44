package lathe

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// FuzzRandom draws RandInt, RandPerm and Multinomial calls with any
// dtype (and sometimes one that is none), ranges and sizes at the edges of
// int64, and weights holding NaN, infinities and negatives. The oracle:
// a refusal is a *lathe.Error and leaves the stream exactly as it was; a
// result has the dtype and shape asked for, RandInt's values lie in
// [low, high), RandPerm's are a permutation, and Multinomial's indices
// are categories of positive weight (without replacement: distinct, those
// of positive weight first), and it succeeds exactly when the weights
// that the tensor holds are a distribution by torch's rules.
func FuzzRandom(f *testing.F) {
	f.Add([]byte{0, 5, 3, 7, 2, 2})
	f.Add([]byte{0, 8, 255, 254, 1, 4})
	f.Add([]byte{1, 1, 9})
	f.Add([]byte{1, 2, 250})
	f.Add([]byte{2, 0, 2, 2, 3, 4, 8, 12, 0, 1, 2, 1})
	f.Add([]byte{2, 1, 1, 4, 3, 7, 11, 19, 0, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		rngMu.Lock()
		before := *pcg()
		rngMu.Unlock()
		var out *Tensor
		var label string
		var check func(t *testing.T)
		switch r.intn(3) {
		case 0:
			out, label, check = fzRandInt(r)
		case 1:
			out, label, check = fzRandPerm(r)
		default:
			out, label, check = fzMultinomial(t, r)
		}
		if err := out.Err(); err != nil {
			fzKind(t, label, err)
			rngMu.Lock()
			after := *pcg()
			rngMu.Unlock()
			if after != before {
				t.Fatalf("%s failed (%v) but moved the stream", label, err)
			}
		}
		check(t)
	})
}

// fzRandomDType is any of lathe's dtypes, and one time in 32 a value that
// is none.
func fzRandomDType(r *fzReader) DType {
	if r.intn(32) == 0 {
		return DType(r.intn(256))
	}
	return []DType{Float32, Float64, Float16, BFloat16, Int32, Int64, Int8, Uint8, Bool}[r.intn(9)]
}

// fzBound is a small integer, or one time in four an edge of some dtype's range.
func fzBound(r *fzReader) int64 {
	edges := []int64{math.MinInt64, math.MaxInt64, math.MinInt32, math.MaxInt32 + 1, -129, 128, 256, 257,
		-2048, 2049, 2050, 1 << 24, 1<<24 + 2, 1 << 53, -(1 << 53), 258}
	c := r.byte()
	if c%4 == 3 {
		return edges[int(c/4)%len(edges)]
	}
	return int64(c/4)%9 - 3
}

// fzHugeCounts are counts that every call refuses: negative, or more than
// any host holds (the extremes between, such as 2^31, a host can hold, and
// drawing them takes minutes).
var fzHugeCounts = []int{-1, -2, math.MinInt, math.MaxInt, math.MaxInt - 1, 1 << 40, 1 << 62, -(1 << 62)}

func fzRandInt(r *fzReader) (*Tensor, string, func(*testing.T)) {
	dt, low, high := fzRandomDType(r), fzBound(r), fzBound(r)
	shape := r.shape(3, 64)
	label := fmt.Sprintf("randint(%s, %d, %d, %v)", dt, low, high, shape)
	out := RandInt(CPU, dt, low, high, shape...)
	return out, label, func(t *testing.T) {
		least, most, ok := exactInts(dt)
		valid := ok && low < high && low >= least && high-1 <= most
		if err := out.Err(); err != nil {
			if valid && !slices.ContainsFunc(shape, func(s int) bool { return s < 0 || s > 4 }) {
				t.Fatalf("%s: refused a valid call: %v", label, err)
			}
			return
		}
		if !valid || out.t.DType != dt || !slices.Equal(out.t.Shape, shape) {
			t.Fatalf("%s: gave %s %v for a call it should refuse or shape otherwise", label, out.t.DType, out.t.Shape)
		}
		for _, v := range fzWholes(t, out) {
			if v < low || v >= high {
				t.Fatalf("%s: value %d outside the range", label, v)
			}
		}
	}
}

func fzRandPerm(r *fzReader) (*Tensor, string, func(*testing.T)) {
	dt, n := fzRandomDType(r), r.intn(256)*(1+r.intn(12))
	if r.intn(8) == 0 {
		n = fzHugeCounts[r.intn(len(fzHugeCounts))]
	}
	label := fmt.Sprintf("randperm(%s, %d)", dt, n)
	out := RandPerm(CPU, dt, n)
	return out, label, func(t *testing.T) {
		if out.Err() != nil {
			return
		}
		v := fzWholes(t, out)
		slices.Sort(v)
		for i, x := range v {
			if x != int64(i) {
				t.Fatalf("%s: sorted, element %d is %d: no permutation", label, i, x)
			}
		}
	}
}

func fzMultinomial(t *testing.T, r *fzReader) (*Tensor, string, func(*testing.T)) {
	dt := []DType{Float32, Float64, Float16, BFloat16, Int32, Bool}[r.intn(6)]
	shape := r.shape(3, 24)
	probs := r.tensor(Float64, shape).Cast(dt)
	k := []int{1, 2, 3, 5, 0, -1, fzHugeCounts[r.intn(len(fzHugeCounts))]}[r.intn(7)]
	replacement := r.intn(2) == 0
	label := fmt.Sprintf("multinomial(%s %v, %d, %v)", dt, shape, k, replacement)
	out := Multinomial(probs, k, replacement)
	return out, label, func(t *testing.T) {
		w, err := fzHost(probs)
		if err != nil {
			t.Fatal(err)
		}
		rows, cats := 1, 0
		if len(shape) > 0 {
			cats = shape[len(shape)-1]
		}
		if len(shape) == 2 {
			rows = shape[0]
		}
		valid := (len(shape) == 1 || len(shape) == 2) && dt.IsFloat() && k > 0 && (replacement || k <= cats) &&
			(k < 1<<40 || rows == 0) // no rows: an empty result of any width
		for row := range rows {
			if !valid {
				break
			}
			positive := false
			for _, v := range w[row*cats : (row+1)*cats] {
				valid = valid && v >= 0 && !math.IsInf(v, 1)
				positive = positive || v > 0
			}
			valid = valid && positive
		}
		if err := out.Err(); err != nil {
			if valid {
				t.Fatalf("%s: refused weights %v: %v", label, w, err)
			}
			return
		}
		if !valid || out.t.DType != Int64 || out.t.Numel() != rows*k {
			t.Fatalf("%s: weights %v gave %s %v, want a refusal or Int64 of %d rows of %d", label, w, out.t.DType, out.t.Shape, rows, k)
		}
		idx := fzWholes(t, out)
		for row := range rows {
			ws, got := w[row*cats:(row+1)*cats], idx[row*k:(row+1)*k]
			positive := 0
			for _, v := range ws {
				if v > 0 {
					positive++
				}
			}
			for i, c := range got {
				if c < 0 || int(c) >= cats || (ws[c] == 0 && (replacement || i < positive)) {
					t.Fatalf("%s: weights %v, row %d drew %v", label, ws, row, got)
				}
				if !replacement && slices.Contains(got[:i], c) {
					t.Fatalf("%s: weights %v, row %d drew %d twice without replacement: %v", label, ws, row, c, got)
				}
			}
		}
	}
}

// fzWholes is the whole-number values of a tensor of any dtype as int64s
// (exactly, for Int64).
func fzWholes(t *testing.T, x *Tensor) []int64 {
	data, err := x.host("fuzz")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := data.([]int64); ok {
		return v
	}
	f := asFloat64s(data)
	out := make([]int64, len(f))
	for i, v := range f {
		out[i] = int64(v)
	}
	return out
}
