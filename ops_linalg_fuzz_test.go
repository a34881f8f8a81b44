package lathe

import (
	"math"
	"slices"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
)

// FuzzMatMul draws two operands of rank 0 to 4 whose shapes mostly follow
// torch.matmul's rule (a 1-D side gets a size-1 dim for the product and
// loses it after, the dims before the last two broadcast, the inner sizes
// match) and sometimes break it, of one dtype or (rarely) two, contiguous
// or transposed, over values with NaN and infinities. The result must
// follow the rule (torch's shape; ErrShape for a 0-d operand or sizes that
// do not fit, ErrDType for bool or two dtypes), equal a product done here
// in float64 (integers wrapping as int32 and int64 do), and match wgpu:0.
func FuzzMatMul(f *testing.F) {
	f.Add([]byte{0, 2, 3, 2, 2, 2, 0, 0, 1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45})
	f.Add([]byte{1, 1, 2, 3, 4, 1, 0, 0, 2, 6, 10, 14, 18, 22, 26, 30, 34, 38})
	f.Add([]byte{2, 3, 3, 3, 3, 4, 2, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{3, 2, 2, 1, 2, 0, 1, 1, 3, 7, 11})
	f.Add([]byte{0, 0, 2, 2, 3, 3, 3, 2, 2, 5, 9})
	f.Add([]byte{1, 2, 0, 2, 4, 4, 1, 3, 2, 2, 3, 4, 5, 6, 7})
	fzGPUFor(f) // open wgpu:0 in each worker before its first input, not during it
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fzReader{b: data}
		dt := fzDTypes[r.intn(len(fzDTypes))]
		dtB := dt
		if r.intn(8) == 0 {
			dtB = fzDTypes[r.intn(len(fzDTypes))]
		}
		n, k, m := r.intn(4), r.intn(4), r.intn(4)
		rankA, rankB := r.intn(5), r.intn(5)
		batch := make([]int, max(rankA, rankB, 2)-2)
		for i := range batch {
			batch[i] = r.intn(4)
		}
		// Each side's batch dims are the last of the shared ones, some 1.
		sideBatch := func(rank int) []int {
			b := slices.Clone(batch[len(batch)-max(rank-2, 0):])
			for i := range b {
				if r.intn(3) == 0 {
					b[i] = 1
				}
			}
			return b
		}
		shapeA := map[int][]int{0: {}, 1: {k}}[rankA]
		if rankA >= 2 {
			shapeA = append(sideBatch(rankA), n, k)
		}
		kB := k
		if r.intn(8) == 0 {
			kB = r.intn(4) // the inner sizes may not match
		}
		shapeB := map[int][]int{0: {}, 1: {kB}}[rankB]
		if rankB >= 2 {
			shapeB = append(sideBatch(rankB), kB, m)
		}
		a, b := fzOperand(r, dt, shapeA), fzOperand(r, dtB, shapeB)
		label := "matmul/" + dt.String() + dispatch.FormatShape(shapeA) + "·" + dtB.String() + dispatch.FormatShape(shapeB)

		want, shape, refuse := fzMatMulRef(t, a, b)
		if dt != dtB || dt == Bool {
			refuse = ErrDType
		}
		tol := fzMatMulTolerance(a, b)
		out := fzDiff(t, label, tol, func(in []*Tensor) *Tensor { return in[0].MatMul(in[1]) }, a, b)
		fzWant(t, label, out, refuse, shape, dt)
		if refuse != nil || out.Err() != nil || tol < 0 {
			return
		}
		got, err := fzHost(out)
		if err != nil {
			t.Fatalf("%s: reading the result: %v", label, err)
		}
		for i := range want {
			if !fzClose(got[i], want[i], tol) {
				t.Fatalf("%s: element %d is %v, the float64 product %v", label, i, got[i], want[i])
			}
		}
	})
}

// fzMatMulRef is torch.matmul of a and b done here: the result's elements
// in row-major order (integers wrapped to their dtype) and its shape, or
// the kind of error the shapes call for.
func fzMatMulRef(t *testing.T, a, b *Tensor) (vals []float64, shape []int, refuse error) {
	sa, sb := a.Shape(), b.Shape()
	if len(sa) == 0 || len(sb) == 0 {
		return nil, nil, ErrShape
	}
	ma, mb := slices.Clone(sa), slices.Clone(sb)
	if len(sa) == 1 {
		ma = []int{1, sa[0]}
	}
	if len(sb) == 1 {
		mb = []int{sb[0], 1}
	}
	n, k, m := ma[len(ma)-2], ma[len(ma)-1], mb[len(mb)-1]
	if mb[len(mb)-2] != k {
		return nil, nil, ErrShape
	}
	ba, bb := ma[:len(ma)-2], mb[:len(mb)-2]
	batch, ok := fzBroadcast(ba, bb)
	if !ok {
		return nil, nil, ErrShape
	}
	shape = slices.Clone(batch)
	if len(sa) > 1 {
		shape = append(shape, n)
	}
	if len(sb) > 1 {
		shape = append(shape, m)
	}
	if a.DType() != b.DType() || a.DType() == Bool {
		return nil, shape, ErrDType
	}
	va, err := fzHost(a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := fzHost(b)
	if err != nil {
		t.Fatal(err)
	}
	// at is the offset of batch index idx's matrix in an operand of batch
	// dims bs (broadcast from the right) and matrix size rows·cols.
	at := func(idx, bs []int, size int) int {
		o := 0
		for i, s := range bs {
			d := idx[len(idx)-len(bs)+i]
			if s == 1 {
				d = 0
			}
			o = o*s + d
		}
		return o * size
	}
	idx := make([]int, len(batch))
	for range dispatch.Numel(batch) {
		oa, ob := at(idx, ba, n*k), at(idx, bb, k*m)
		for i := range n {
			for j := range m {
				var s float64
				var w int64
				for p := range k {
					x, y := va[oa+i*k+p], vb[ob+p*m+j]
					s += x * y
					w += int64(x) * int64(y)
				}
				switch a.DType() {
				case Int32:
					s = float64(int32(w))
				case Int64:
					s = float64(w)
				}
				vals = append(vals, s)
			}
		}
		for d := len(idx) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < batch[d] {
				break
			}
			idx[d] = 0
		}
	}
	return vals, shape, nil
}

// fzMatMulTolerance is the relative tolerance of a product of a and b:
// float32's rounding over the terms' sizes; -1 (no comparison) where
// values near float32's range may overflow in one order of summation and
// not in another.
func fzMatMulTolerance(a, b *Tensor) float64 {
	spread := 1.0
	for _, x := range []*Tensor{a, b} {
		v, err := fzHost(x)
		if err != nil {
			return -1
		}
		for _, e := range v {
			if math.Abs(e) > 1e18 && !math.IsInf(e, 0) {
				return -1
			}
			if !math.IsNaN(e) && !math.IsInf(e, 0) {
				spread = max(spread, math.Abs(e))
			}
		}
	}
	if a.DType() == Float32 {
		return 1e-5 * spread * spread
	}
	return 1e-12 * spread * spread
}
