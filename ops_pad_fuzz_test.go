package lathe

import (
	"math"
	"math/big"
	"slices"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzPad draws Pad in constant mode (with a fill value that may be NaN,
// infinite, a fraction or past the dtype's range), reflect, replicate and
// circular mode, of every dtype and rank, with pads that are mostly small,
// often negative (cropping), sometimes the dim's size or one past it, near
// int's edge, odd in number or more pairs than dims; and Flip with dims
// repeated, negative or out of range. The oracle is the rule (torch's, and
// lathe's where README widens it: every mode pads any dim of any rank) and
// the padding or flip done here element by element, on the cpu and on
// wgpu:0 exactly.
func FuzzPad(f *testing.F) {
	f.Add([]byte{1, 0, 2, 2, 3, 1, 1, 10, 19, 28, 37, 46, 0, 0, 2, 0, 0, 4, 5, 2, 4, 0, 52, 0})
	f.Add([]byte{1, 0, 3, 1, 2, 4, 1, 1, 10, 19, 28, 37, 46, 55, 64, 1, 0, 1, 0, 0, 5, 4, 0})
	f.Add([]byte{1, 2, 2, 2, 3, 1, 2, 11, 20, 29, 38, 47, 2, 0, 2, 0, 0, 2, 6, 5, 3, 0})
	f.Add([]byte{1, 1, 3, 2, 2, 4, 1, 5, 14, 23, 32, 41, 50, 59, 68, 77, 86, 95, 104, 113, 122, 131, 140, 3, 0, 2, 0, 0, 2, 5, 4, 4, 0})
	f.Add([]byte{1, 4, 1, 4, 1, 10, 19, 28, 0, 0, 1, 0, 0, 5, 5, 0, 40, 0})
	f.Add([]byte{1, 5, 2, 2, 2, 1, 7, 16, 25, 34, 0, 0, 1, 0, 0, 4, 4, 0, 3, 0})
	f.Add([]byte{0, 0, 3, 2, 3, 4, 1, 1, 10, 19, 28, 37, 46, 55, 64, 73, 82, 91, 100, 109, 118, 127, 136, 145, 154, 163, 172, 181, 190, 199, 208, 2, 4, 3})
	f.Add([]byte{0, 7, 2, 3, 2, 1, 4, 13, 22, 31, 40, 49, 1, 4})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		if r.intn(4) == 0 {
			fuzzFlip(t, r)
			return
		}
		fuzzPad(t, r)
	})
}

// pad is one pad of a dim of size n: mostly in [-3, 5], sometimes the
// size or a step past it either way, sometimes an extreme.
func (r *fzReader) pad(n int) int {
	c := r.byte()
	switch {
	case c >= 248:
		return fzExtremes[int(c-248)%len(fzExtremes)]
	case c >= 228:
		return []int{n, -n, n - 1, n + 1, -n - 1}[int(c)%5]
	}
	return int(c)%9 - 3
}

func fuzzPad(t *testing.T, r *fzReader) {
	dt := fzCastDTypes[r.intn(len(fzCastDTypes))]
	shape := r.shape(4, 48)
	rank := len(shape)
	x := fzOperand(r, dt, shape)
	mode := []string{"constant", "reflect", "replicate", "circular"}[r.intn(4)]
	if r.rare(32) {
		mode = []string{"", "mirror"}[r.intn(2)]
	}
	constant := mode == "" || mode == "constant"
	pairs := r.intn(rank + 1)
	if r.rare(16) {
		pairs = rank + 1 + r.intn(2)
	}
	pads := make([]int, 2*pairs, 2*pairs+1)
	if r.rare(16) {
		pads = pads[:len(pads)+1] // one pad with no partner
	}
	for i := range pads {
		n := 0
		if d := rank - 1 - i/2; d >= 0 {
			n = shape[d]
		}
		pads[i] = r.pad(n)
	}
	value := 0.0
	if constant && r.intn(2) == 0 || !constant && r.rare(8) {
		value = r.value()
		if r.rare(8) {
			value += 0.25 // a fraction an integer fill cannot hold
		}
	}
	label := "pad/" + mode + "/" + dt.String() + dispatch.FormatShape(shape) + "/pads" + dispatch.FormatShape(pads) +
		"/value" + strconv.FormatFloat(value, 'g', -1, 64)

	// The rule. out is the padded shape; src the place each padded dim's
	// elements are read from.
	var faults []error
	lengthsOK := len(pads)%2 == 0 && len(pads)/2 <= rank
	if mode == "mirror" {
		faults = append(faults, ErrValue)
	} else {
		if !lengthsOK {
			faults = append(faults, ErrValue)
		}
		if k := fzFillKind(dt, value); constant && k != nil {
			faults = append(faults, k)
		}
		if !constant && value != 0 {
			faults = append(faults, ErrValue) // only constant mode fills with a value
		}
	}
	out := slices.Clone(shape)
	src := make([][]int, rank) // nil: the dim is read as it is
	hostHeavy := false         // a padded dim so long that the host may refuse its indices
	if lengthsOK && mode != "mirror" {
		for i := 0; i < len(pads); i += 2 {
			d := rank - 1 - i/2
			n, lo, hi := shape[d], pads[i], pads[i+1]
			size := new(big.Int).Add(big.NewInt(int64(n)), big.NewInt(int64(lo)))
			size.Add(size, big.NewInt(int64(hi)))
			if !size.IsInt64() || size.Sign() < 0 || size.Int64() > math.MaxInt {
				faults = append(faults, ErrShape)
				continue
			}
			out[d] = int(size.Int64())
			if !constant && out[d] >= 1<<17 {
				// Past 1 MiB of int64 indices the host's free memory is
				// asked; past 2^22 of them the test would build and walk
				// gigabytes, so those inputs are left out unless the
				// answer is sure (2^40: 8 TiB).
				if out[d] < 1<<40 && out[d] > 1<<22 {
					t.Skipf("%s: %d indices for dim %d, too many to compute in a fuzz input", label, out[d], d)
				}
				hostHeavy = hostHeavy || out[d] >= 1<<40
			}
			if lo == 0 && hi == 0 {
				continue
			}
			var err error
			if src[d], err = fzPadPlan(mode, n, lo, hi, out[d]); err != nil {
				faults = append(faults, err)
			}
		}
	}
	refuse := fzFault(faults)
	if refuse == nil && fzProdOverflows(out...) {
		refuse = errAny // a result of more elements than an int counts
	}
	if hostHeavy {
		// checkPadHost asks first: such a dim is ErrOutOfMemory, where
		// the rule would take or refuse it.
		refuse = orEither(refuse, ErrOutOfMemory)
	}
	fzSizeBound(t, label, refuse == nil, out)
	before, _ := fzHost(x)
	res := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].Pad(pads, value, PadMode(mode)) }, x)
	fzWant(t, label, res, refuse, out, dt)
	if refuse != nil || res.Err() != nil {
		fzUnchanged(t, label, x, before)
		return
	}
	got, err := fzHost(res)
	if err != nil {
		t.Fatal(err)
	}
	fill, _ := fzCastRef(value, Float64, dt)
	idx := make([]int, rank)
	for i := range dispatch.Numel(out) {
		rest, at, inside := i, 0, true
		for d := rank - 1; d >= 0; d-- {
			idx[d] = rest % out[d]
			rest /= out[d]
		}
		for d := range rank {
			s := idx[d]
			switch {
			case src[d] != nil:
				s = src[d][idx[d]]
			case d >= rank-len(pads)/2:
				s = idx[d] - pads[2*(rank-1-d)] // constant mode, or a pair of 0s
			}
			inside = inside && s >= 0 && s < shape[d]
			at = at*shape[d] + s
		}
		want := fill
		if inside {
			want = before[at]
		}
		if !fzClose(got[i], want, 0) {
			t.Fatalf("%s: element %d (%v) is %v, want %v", label, i, idx, got[i], want)
		}
	}
}

// fzPadPlan is the element of a dim of size n that each of the out
// elements of its padding by (lo, hi) reads in reflect, replicate or
// circular mode (nil in constant mode, or for more than 2^22 elements,
// which the caller does not read), or why the mode refuses the pads.
// Places are counted in the unpadded dim: output element j is place
// j - lo, so a negative pad crops before the rest pads.
func fzPadPlan(mode string, n, lo, hi, out int) ([]int, error) {
	var at func(p int) int
	switch mode {
	case "reflect":
		// torch: "Padding size should be less than the corresponding
		// input dimension"; the edge is not repeated.
		if lo >= n || hi >= n {
			return nil, ErrShape
		}
		at = func(p int) int {
			if p < 0 {
				p = -p
			}
			if p > n-1 {
				p = 2*(n-1) - p
			}
			return p
		}
	case "replicate":
		if n == 0 && out > 0 {
			return nil, ErrShape // no edge to repeat
		}
		at = func(p int) int { return min(max(p, 0), n-1) }
	case "circular":
		// torch: "Padding value causes wrapping around more than once".
		// The elements kept after cropping, [first, end), repeat from the
		// first kept one at place max(lo, 0) of the output.
		if lo > n || hi > n {
			return nil, ErrShape
		}
		first, end := max(-lo, 0), n-max(-hi, 0)
		if end <= first && out > 0 {
			return nil, ErrShape // nothing kept to wrap
		}
		k := end - first
		at = func(p int) int { return first + ((p+lo-max(lo, 0))%k+k)%k }
	}
	if at == nil || out > 1<<22 {
		return nil, nil
	}
	src := make([]int, out)
	for j := range src {
		src[j] = at(j - lo)
	}
	return src, nil
}

// fzFillKind is the kind with which a tensor of dt refuses v as a fill,
// or nil: fzScalarKind's rule, with the 8-bit integers' and the 16-bit
// floats' ranges.
func fzFillKind(dt DType, v float64) error {
	switch dt {
	case Int8, Uint8:
		lo, hi := -128.0, 127.0
		if dt == Uint8 {
			lo, hi = 0, 255
		}
		switch {
		case !(v >= lo && v <= hi):
			return ErrValue
		case v != math.Trunc(v):
			return ErrDType
		}
	case Float16:
		if !math.IsInf(v, 0) && math.Abs(v) > 65504 {
			return ErrValue
		}
	case BFloat16:
		if !math.IsInf(v, 0) && math.Abs(v) > 0x1.fep127 {
			return ErrValue
		}
	}
	return fzScalarKind(dt, v)
}

// fzUnchanged checks that a refused call left x's elements as they were.
func fzUnchanged(t *testing.T, label string, x *Tensor, before []float64) {
	t.Helper()
	after, err := fzHost(x)
	if err != nil || !slices.EqualFunc(before, after, func(a, b float64) bool { return fzClose(a, b, 0) }) {
		t.Fatalf("%s: a refused call changed x: %v, was %v (%v)", label, after, before, err)
	}
}

func fuzzFlip(t *testing.T, r *fzReader) {
	dt := fzCastDTypes[r.intn(len(fzCastDTypes))]
	shape := r.shape(4, 48)
	rank := len(shape)
	x := fzOperand(r, dt, shape)
	dims := make([]int, r.intn(4))
	for i := range dims {
		dims[i] = r.dim(rank)
	}
	label := "flip/" + dt.String() + dispatch.FormatShape(shape) + "/dims" + dispatch.FormatShape(dims)
	// torch checks the dims in order: out of range (a 0-d tensor takes 0
	// and -1) is an IndexError, a dim named twice a RuntimeError.
	var refuse error
	flipped := make([]bool, max(rank, 1))
	for _, d := range dims {
		if d < -max(rank, 1) || d >= max(rank, 1) {
			refuse = ErrIndex
			break
		}
		d = (d + max(rank, 1)) % max(rank, 1)
		if flipped[d] {
			refuse = ErrValue
			break
		}
		flipped[d] = true
	}
	before, _ := fzHost(x)
	res := fzDiff(t, label, 0, func(in []*Tensor) *Tensor { return in[0].Flip(dims...) }, x)
	fzWant(t, label, res, refuse, shape, dt)
	if refuse != nil || res.Err() != nil {
		fzUnchanged(t, label, x, before)
		return
	}
	got, err := fzHost(res)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, rank)
	for i := range got {
		rest, at := i, 0
		for d := rank - 1; d >= 0; d-- {
			idx[d] = rest % shape[d]
			rest /= shape[d]
		}
		for d := range rank {
			s := idx[d]
			if flipped[d] {
				s = shape[d] - 1 - s
			}
			at = at*shape[d] + s
		}
		if !fzClose(got[i], before[at], 0) {
			t.Fatalf("%s: element %d (%v) is %v, want %v", label, i, idx, got[i], before[at])
		}
	}
}
