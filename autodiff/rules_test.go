package autodiff_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/lathe-ml/lathe"
	"github.com/lathe-ml/lathe/autodiff"
	"github.com/lathe-ml/lathe/dispatch"
)

// Gradient rules checked against central finite differences in float64:
// for each case the loss is (f(xs)·w).Sum() with a fixed random w, and the
// gradient Backward gives each leaf is compared with
// (loss(x + eps) - loss(x - eps)) / 2eps per element.

const (
	fdEps = 1e-6
	fdTol = 1e-6
)

// fdCase is a function of leaves of the given shapes. data, when set, fixes
// the leaves' values (else they are uniform in [-1, 1)).
type fdCase struct {
	name   string
	shapes [][]int
	f      func(xs []*lathe.Tensor) *lathe.Tensor
	data   [][]float64
}

func i64(shape []int, v ...int64) *lathe.Tensor { return lathe.FromSlice(lathe.CPU, v, shape...) }

// tr makes a non-contiguous view: x's last two dims swapped.
func tr(x *lathe.Tensor) *lathe.Tensor { return x.Transpose(-2, -1) }

func unary(f func(x *lathe.Tensor) *lathe.Tensor) func([]*lathe.Tensor) *lathe.Tensor {
	return func(xs []*lathe.Tensor) *lathe.Tensor { return f(xs[0]) }
}

func sh(dims ...int) [][]int { return [][]int{dims} }

var reduceCases = []fdCase{
	{name: "sum/all", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Sum() })},
	{name: "sum/dims[0,2]/keepdim", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.SumKeepDim(0, 2) })},
	{name: "sum/dim[-1]/noncontig", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Sum(-1) })},
	{name: "sum/0-d", shapes: sh(), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Sum() })},
	{name: "mean/dims[1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Mean(1) })},
	{name: "prod/all", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() })},
	{name: "prod/dims[1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) })},
	{name: "prod/dims[-1,0]/keepdim/noncontig", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).ProdKeepDim(-1, 0) })},
	{name: "prod/dims[1]/zeros", shapes: sh(3, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) }),
		data: [][]float64{{2, 0, 3, 0, 0, 4, 0.5, -2, 3}}},
	{name: "prod/all/one-zero", shapes: sh(4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() }),
		data: [][]float64{{1.5, -2, 0, 0.7}}},
	{name: "max/all", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() })},
	{name: "max/dims[1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(1) })},
	{name: "max/dims[-1]/keepdim/noncontig", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).MaxKeepDim(-1) })},
	{name: "min/dims[0,2]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Min(0, 2) })},
	{name: "min/all", shapes: sh(5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Min() })},
	{name: "var/dims[1]/unbiased", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Var(true, 1) })},
	{name: "var/all/biased", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Var(false) })},
	{name: "var/dims[0,-1]/keepdim/noncontig", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).VarKeepDim(true, 0, -1) })},
	{name: "std/dims[0]/unbiased", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(true, 0) })},
	{name: "std/all/biased", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(false) })},
	{name: "std/dims[-1]/keepdim", shapes: sh(2, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.StdKeepDim(true, -1) })},
	{name: "logsumexp/dims[-1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(-1) })},
	{name: "logsumexp/all", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp() })},
	{name: "logsumexp/dims[0,1]/keepdim/noncontig", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).LogSumExpKeepDim(0, 1) })},
	{name: "cumsum/dim0", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(0) })},
	{name: "cumsum/dim-1/noncontig", shapes: sh(3, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).CumSum(-1) })},
	{name: "cumsum/0-d", shapes: sh(), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(0) })},
}

func binary(f func(x, y *lathe.Tensor) *lathe.Tensor) func([]*lathe.Tensor) *lathe.Tensor {
	return func(xs []*lathe.Tensor) *lathe.Tensor { return f(xs[0], xs[1]) }
}

func mm(x, y *lathe.Tensor) *lathe.Tensor { return x.MatMul(y) }

var matmulCases = []fdCase{
	{name: "matmul/[3,4]x[4,5]", shapes: [][]int{{3, 4}, {4, 5}}, f: binary(mm)},
	{name: "matmul/[4]x[4,5]", shapes: [][]int{{4}, {4, 5}}, f: binary(mm)},
	{name: "matmul/[3,4]x[4]", shapes: [][]int{{3, 4}, {4}}, f: binary(mm)},
	{name: "matmul/[4]x[4]", shapes: [][]int{{4}, {4}}, f: binary(mm)},
	{name: "matmul/[2,3,4]x[4,5]", shapes: [][]int{{2, 3, 4}, {4, 5}}, f: binary(mm)},
	{name: "matmul/[4]x[2,4,5]", shapes: [][]int{{4}, {2, 4, 5}}, f: binary(mm)},
	{name: "matmul/[2,3,4]x[4]", shapes: [][]int{{2, 3, 4}, {4}}, f: binary(mm)},
	{name: "matmul/bcast[2,1,3,4]x[3,4,2]", shapes: [][]int{{2, 1, 3, 4}, {3, 4, 2}}, f: binary(mm)},
	{name: "matmul/bcast[1,3,4]x[2,1,4,2]", shapes: [][]int{{1, 3, 4}, {2, 1, 4, 2}}, f: binary(mm)},
	{name: "matmul/noncontig[4,3]ᵀx[5,4]ᵀ", shapes: [][]int{{4, 3}, {5, 4}}, f: binary(func(x, y *lathe.Tensor) *lathe.Tensor { return tr(x).MatMul(tr(y)) })},
	{name: "matmul/same-arg", shapes: sh(3, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.MatMul(x) })},
}

var viewCases = []fdCase{
	{name: "view/[2,3,4]->[6,4]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.View(6, 4) })},
	{name: "view/[-1]", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.View(-1) })},
	{name: "reshape/noncontig", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Reshape(2, 6) })},
	{name: "permute/[2,0,1]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Permute(2, 0, 1) })},
	{name: "permute/[-1,0,-2]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Permute(-1, 0, -2) })},
	{name: "transpose/[0,-1]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Transpose(0, -1) })},
	{name: "squeeze/all", shapes: sh(2, 1, 3, 1), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Squeeze() })},
	{name: "squeeze/dim[-1]", shapes: sh(2, 1, 3, 1), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Squeeze(-1) })},
	{name: "unsqueeze/-1", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Unsqueeze(-1) })},
	{name: "unsqueeze/0/noncontig", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Unsqueeze(0) })},
	{name: "expand/[3,1]->[2,3,4]", shapes: sh(3, 1), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Expand(2, 3, 4) })},
	{name: "expand/[1,3]->[-1,4,-1]", shapes: sh(1, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Unsqueeze(1).Expand(-1, 4, -1) })},
	{name: "narrow/dim1", shapes: sh(3, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Narrow(1, 1, 3) })},
	{name: "narrow/dim-2/neg-start", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Narrow(-2, -3, 2) })},
	{name: "narrow/empty", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Narrow(0, 2, 0) })},
	{name: "slice/step1", shapes: sh(3, 6), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(1, 1, 5, 1) })},
	{name: "slice/step2", shapes: sh(3, 7), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(1, 0, 7, 2) })},
	{name: "slice/step3/neg-start", shapes: sh(8, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(0, -7, 100, 3) })},
	{name: "slice/step4/to-end", shapes: sh(2, 9), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(-1, 2, 9, 4) })},
	{name: "slice/step2/noncontig", shapes: sh(5, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Slice(1, 1, 5, 2) })},
	{name: "slice/empty", shapes: sh(5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(0, 3, 1, 2) })},
	{name: "flip/dims[0,2]", shapes: sh(2, 3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Flip(0, 2) })},
	{name: "flip/dims[-1]/noncontig", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Flip(-1) })},
	{name: "concat/dim1/3-inputs", shapes: [][]int{{2, 1}, {2, 3}, {2, 2}}, f: func(xs []*lathe.Tensor) *lathe.Tensor { return lathe.Concat(xs, 1) }},
	{name: "concat/dim-1/same-input-twice", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return lathe.Concat([]*lathe.Tensor{x, x.Square()}, -1)
	})},
	{name: "stack/dim0", shapes: [][]int{{2, 3}, {2, 3}}, f: func(xs []*lathe.Tensor) *lathe.Tensor { return lathe.Stack(xs, 0) }},
	{name: "pad/grow", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Pad([]int{1, 2, 0, 1}, 5) })},
	{name: "pad/crop", shapes: sh(4, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Pad([]int{-1, -2, -1, 0}, 0) })},
	{name: "pad/mixed/noncontig", shapes: sh(4, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Pad([]int{2, -1, -1, 3}, 0) })},
}

// emptyCases check that rules keep shapes right when there is nothing to
// differentiate.
var emptyCases = []fdCase{
	{name: "sum/empty/dims[0]", shapes: sh(0, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Sum(0) })},
	{name: "prod/empty/dims[1]", shapes: sh(2, 0), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) })},
	{name: "logsumexp/empty/dims[1]", shapes: sh(0, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(1) })},
	{name: "cumsum/empty", shapes: sh(0, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(1) })},
	{name: "matmul/k=0", shapes: [][]int{{2, 0}, {0, 3}}, f: binary(mm)},
	{name: "matmul/n=0", shapes: [][]int{{0, 2}, {2, 3}}, f: binary(mm)},
	{name: "concat/empty-part", shapes: [][]int{{0, 2}, {3, 2}}, f: func(xs []*lathe.Tensor) *lathe.Tensor { return lathe.Concat(xs, 0) }},
	{name: "gather/empty-index", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.Gather(1, i64([]int{2, 0}))
	})},
	{name: "index_select/empty-index", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.IndexSelect(0, i64([]int{0}))
	})},
}

var indexCases = []fdCase{
	{name: "index_select/dim0/dups", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.IndexSelect(0, i64([]int{5}, 3, 0, 3, 1, 3))
	})},
	{name: "index_select/dim-1/noncontig", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return tr(x).IndexSelect(-1, i64([]int{2}, 2, 2))
	})},
	{name: "index_select/0-d-index", shapes: sh(2, 3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.IndexSelect(1, i64([]int{}, 1))
	})},
	{name: "index_select/int32", shapes: sh(3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.IndexSelect(0, lathe.FromSlice(lathe.CPU, []int32{2, 0}))
	})},
	{name: "gather/dim1", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.Gather(1, i64([]int{3, 2}, 0, 3, 1, 1, 2, 0))
	})},
	{name: "gather/dim0/dups/longer", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.Gather(0, i64([]int{4, 2}, 0, 1, 1, 1, 0, 0, 1, 0))
	})},
	{name: "gather/dim-1/noncontig", shapes: sh(4, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return tr(x).Gather(-1, i64([]int{2, 2}, 3, 0, 2, 2))
	})},
	{name: "scatter/dim0", shapes: [][]int{{3, 4}, {2, 4}}, f: binary(func(x, src *lathe.Tensor) *lathe.Tensor {
		return x.Scatter(0, i64([]int{2, 4}, 0, 2, 1, 0, 2, 0, 0, 1), src)
	})},
	{name: "scatter/dim1/src-larger", shapes: [][]int{{2, 5}, {3, 3}}, f: binary(func(x, src *lathe.Tensor) *lathe.Tensor {
		return x.Scatter(1, i64([]int{2, 2}, 4, 0, 1, 3), src)
	})},
	{name: "scatter_add/dim0/dups", shapes: [][]int{{3, 2}, {4, 2}}, f: binary(func(x, src *lathe.Tensor) *lathe.Tensor {
		return x.ScatterAdd(0, i64([]int{4, 2}, 0, 2, 0, 2, 1, 2, 0, 0), src)
	})},
	{name: "scatter_add/dim-1/src-larger/noncontig", shapes: [][]int{{3, 2}, {3, 3}}, f: binary(func(x, src *lathe.Tensor) *lathe.Tensor {
		return tr(x).ScatterAdd(-1, i64([]int{2, 2}, 2, 2, 0, 1), src)
	})},
	{name: "embedding", shapes: sh(4, 3), f: unary(func(w *lathe.Tensor) *lathe.Tensor {
		return lathe.Embedding(i64([]int{2, 2}, 3, 1, 3, 0), w)
	})},
}

func TestRulesFiniteDifferences(t *testing.T) {
	for _, group := range [][]fdCase{reduceCases, matmulCases, viewCases, indexCases, emptyCases} {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) { checkFD(t, c) })
		}
	}
}

// leaves makes the case's inputs from data, asking for gradients if grad.
func leaves(t *testing.T, shapes [][]int, data [][]float64, grad bool) []*lathe.Tensor {
	t.Helper()
	xs := make([]*lathe.Tensor, len(shapes))
	for i, s := range shapes {
		if len(s) == 0 {
			xs[i] = lathe.Scalar(lathe.CPU, data[i][0]) // FromSlice with no shape is 1-D
		} else {
			xs[i] = lathe.FromSlice(lathe.CPU, slices.Clone(data[i]), s...)
		}
		if grad {
			xs[i] = xs[i].RequireGrad()
		}
		if err := xs[i].Err(); err != nil {
			t.Fatal(err)
		}
	}
	return xs
}

func caseData(c fdCase, r *rand.Rand) [][]float64 {
	if c.data != nil {
		return c.data
	}
	data := make([][]float64, len(c.shapes))
	for i, s := range c.shapes {
		data[i] = randData(r, dispatch.Numel(s))
	}
	return data
}

func randData(r *rand.Rand, n int) []float64 {
	d := make([]float64, n)
	for i := range d {
		d[i] = 2*r.Float64() - 1
	}
	return d
}

func vals(t *testing.T, x *lathe.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// weighted is (y·w).Sum() with w of y's shape.
func weighted(y *lathe.Tensor, w []float64) *lathe.Tensor {
	if y.Rank() == 0 {
		return y.MulScalar(w[0])
	}
	return y.Mul(lathe.FromSlice(lathe.CPU, w, y.Shape()...)).Sum()
}

func checkFD(t *testing.T, c fdCase) {
	r := rand.New(rand.NewPCG(1, uint64(len(c.name))))
	data := caseData(c, r)
	xs := leaves(t, c.shapes, data, true)
	y := c.f(xs)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	w := randData(r, y.Numel())
	if err := weighted(y, w).Backward(); err != nil {
		t.Fatal(err)
	}
	loss := func(d [][]float64) float64 {
		var v float64
		lathe.NoGrad(func() {
			var err error
			if v, err = weighted(c.f(leaves(t, c.shapes, d, false)), w).Item(); err != nil {
				t.Fatal(err)
			}
		})
		return v
	}
	for i, x := range xs {
		g := x.Grad()
		if g == nil {
			t.Fatalf("input %d: no gradient", i)
		}
		if !slices.Equal(g.Shape(), c.shapes[i]) {
			t.Fatalf("input %d: gradient shape %v, want %v", i, g.Shape(), c.shapes[i])
		}
		got := vals(t, g)
		want := fdGrad(data, i, loss)
		assertClose(t, "input "+itoa(i), got, want, fdTol)
	}
}

// fdGrad is the central difference of loss in each element of input i.
func fdGrad(data [][]float64, i int, loss func([][]float64) float64) []float64 {
	out := make([]float64, len(data[i]))
	for j := range data[i] {
		d := make([][]float64, len(data))
		for k := range data {
			d[k] = slices.Clone(data[k])
		}
		d[i][j] += fdEps
		hi := loss(d)
		d[i][j] -= 2 * fdEps
		lo := loss(d)
		out[j] = (hi - lo) / (2 * fdEps)
	}
	return out
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for j := range got {
		same := got[j] == want[j] || (math.IsNaN(got[j]) && math.IsNaN(want[j]))
		if !same && !(math.Abs(got[j]-want[j]) <= tol*math.Max(1, math.Abs(want[j]))) {
			t.Errorf("%s: element %d = %.10g, want %.10g\n got  %v\n want %v", what, j, got[j], want[j], got, want)
			return
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestEveryOpHasRule fails when an op whose result can be float has no
// gradient rule: composites need none, and the ops listed give only ints or
// bools.
func TestEveryOpHasRule(t *testing.T) {
	noFloat := map[string]bool{
		"one_hot": true, "argmax": true, "argmin": true, "argsort": true, "argtopk": true, "argcumextreme": true,
		"max_pool_indices": true, "adaptive_max_pool_indices": true,
		"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true,
		"logical_and": true, "logical_or": true, "logical_not": true,
		"bitwise_and": true, "bitwise_or": true, "bitwise_xor": true, "bitwise_left_shift": true, "bitwise_right_shift": true,
		"floor_divide": true, "gcd": true,
	}
	var missing []string
	registered := map[string]bool{}
	for _, op := range dispatch.Ops() {
		registered[op.Key()] = true
		if op.Composite() || noFloat[op.Key()] {
			continue
		}
		if !autodiff.HasRule(op) {
			missing = append(missing, op.Key())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("ops with float results but no gradient rule: %v", missing)
	}
	for name := range noFloat {
		if !registered[name] {
			t.Errorf("%s is listed as int/bool-only but is not a registered op", name)
		}
	}
}

// TestRulesFloat32 runs a chain of the rules in float32 and compares with
// the float64 gradient: the rules' scalars and zeros take the input's dtype.
func TestRulesFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	data := randData(r, 24)
	f := func(x *lathe.Tensor) *lathe.Tensor {
		idx := i64([]int{2}, 1, 0)
		y := x.Reshape(2, 3, 4).Permute(0, 2, 1).MatMul(x.View(4, 6).Narrow(1, 0, 3).Slice(0, 0, 3, 1).MT())
		y = y.Max(-1).Add(y.Prod(1).Sum(-1).Unsqueeze(-1)).Add(y.LogSumExp(0).IndexSelect(0, idx).Sum())
		return lathe.Concat([]*lathe.Tensor{y.Var(true, 1), y.Std(false).Unsqueeze(0), y.CumSum(0).Flip(0).Pad([]int{1, 0}, 0).Sum(1)}, 0).Sum()
	}
	x64 := lathe.FromSlice(lathe.CPU, slices.Clone(data), 24).RequireGrad()
	if err := f(x64).Backward(); err != nil {
		t.Fatal(err)
	}
	d32 := make([]float32, len(data))
	for i, v := range data {
		d32[i] = float32(v)
	}
	x32 := lathe.FromSlice(lathe.CPU, d32, 24).RequireGrad()
	if err := f(x32).Backward(); err != nil {
		t.Fatal(err)
	}
	if dt := x32.Grad().DType(); dt != lathe.Float32 {
		t.Fatalf("gradient dtype %v, want float32", dt)
	}
	assertClose(t, "float32", vals(t, x32.Grad().Cast(lathe.Float64)), vals(t, x64.Grad()), 1e-4)
}

// TestMaximumGradientAtNaN: maximum and minimum take the gradient from an
// argument only where it lost, so that where either argument is NaN both
// get it and the NaN stays in the pass; ties split it (torch 1.13's values).
func TestMaximumGradientAtNaN(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name   string
		f      func(x, y *lathe.Tensor) *lathe.Tensor
		gx, gy []float64
	}{
		{"maximum", (*lathe.Tensor).Maximum, []float64{1, 1, 0.5, 1, 0}, []float64{1, 1, 0.5, 0, 1}},
		{"minimum", (*lathe.Tensor).Minimum, []float64{1, 1, 0.5, 0, 1}, []float64{1, 1, 0.5, 1, 0}},
	} {
		x := lathe.FromSlice(lathe.CPU, []float64{nan, 1, 2, 3, 0}).RequireGrad()
		y := lathe.FromSlice(lathe.CPU, []float64{0, nan, 2, 1, 5}).RequireGrad()
		g, err := lathe.Grad(c.f(x, y).Sum(), []*lathe.Tensor{x, y})
		if err != nil {
			t.Fatal(c.name, err)
		}
		assertClose(t, c.name+" x", vals(t, g[0]), c.gx, 0)
		assertClose(t, c.name+" y", vals(t, g[1]), c.gy, 0)
	}
}
