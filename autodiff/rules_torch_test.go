package autodiff_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe"
)

// refCase is a gradient PyTorch 1.13 computed: the leaves hold data (of the
// given shapes), the loss is (f(xs)·w).Sum() (w all ones when nil), and
// want is each leaf's .grad, flattened. The torch expression is in the name
// or beside the case.
type refCase struct {
	name   string
	shapes [][]int
	data   [][]float64
	f      func(xs []*lathe.Tensor) *lathe.Tensor
	w      []float64
	want   [][]float64
}

var nan = math.NaN()

func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

var refCases = []refCase{
	{name: "prod/dims[1]/zeros", shapes: sh(3, 3), data: [][]float64{{2, 0, 3, 0, 0, 4, 0.5, -2, 3}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) }), w: []float64{1, 2, 3},
		want: [][]float64{{0, 6, 0, 0, 0, 0, -18, 4.5, -3}}},
	{name: "prod/all/one-zero", shapes: sh(4), data: [][]float64{{1.5, -2, 0, 0.7}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() }),
		want: [][]float64{{0, 0, -2.0999999999999996, 0}}},
	// torch.max(x): ties share the gradient evenly.
	{name: "max/all/ties", shapes: sh(2, 2), data: [][]float64{{1, 3, 3, 2}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() }),
		want: [][]float64{{0, 0.5, 0.5, 0}}},
	// torch.amax(x, 1): ties share evenly per row.
	{name: "max/dims[1]/ties", shapes: sh(2, 3), data: [][]float64{{1, 3, 3, 2, 2, 2}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(1) }), w: []float64{1, 2},
		want: [][]float64{{0, 0.5, 0.5, 2.0 / 3, 2.0 / 3, 2.0 / 3}}},
	// torch.amin(x, (0, 2), keepdim=True).
	{name: "min/dims[0,2]/keepdim/ties", shapes: sh(2, 2, 2), data: [][]float64{{1, 1, 0, 5, 1, 4, 0, 0}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.MinKeepDim(0, 2) }), w: []float64{1, 2},
		want: [][]float64{{1.0 / 3, 1.0 / 3, 2.0 / 3, 0, 1.0 / 3, 0, 2.0 / 3, 2.0 / 3}}},
	{name: "min/all/ties", shapes: sh(4), data: [][]float64{{2, -1, -1, -1}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Min() }),
		want: [][]float64{{0, 1.0 / 3, 1.0 / 3, 1.0 / 3}}},
	// torch.max(x) sends a NaN maximum's gradient to the NaN ...
	{name: "max/all/nan", shapes: sh(2, 3), data: [][]float64{{1, nan, 3, 2, 2, 1}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() }),
		want: [][]float64{{0, 1, 0, 0, 0, 0}}},
	// ... while torch.amax(x, 1) gives the whole NaN row NaN.
	{name: "max/dims[1]/nan", shapes: sh(2, 3), data: [][]float64{{1, nan, 3, 2, 2, 1}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(1) }),
		want: [][]float64{{nan, nan, nan, 0.5, 0.5, 0}}},
	{name: "var/dims[1]/unbiased", shapes: sh(2, 3), data: [][]float64{{1, 2, 4, 3, 3, 0}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Var(true, 1) }), w: []float64{1, -1},
		want: [][]float64{{-1.3333333333333335, -0.3333333333333335, 1.6666666666666665, -1, -1, 2}}},
	{name: "std/all/biased", shapes: sh(4), data: [][]float64{{1, 2, 4, 7}},
		f:    unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(false) }),
		want: [][]float64{{-0.2727723627949905, -0.1636634176769943, 0.0545544725589981, 0.3818813079129867}}},
	// A zero std gives a zero gradient (std_backward's masked_fill).
	{name: "std/dims[1]/zero-std", shapes: sh(2, 2), data: [][]float64{{2, 2, 1, 3}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(true, 1) }), w: []float64{1, 2},
		want: [][]float64{{0, 0, -1.414213562373095, 1.414213562373095}}},
	{name: "logsumexp/dims[-1]", shapes: sh(2, 3), data: [][]float64{{0, 1, 2, -1, 0, 5}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(-1) }), w: []float64{1, 2},
		want: [][]float64{{0.09003057317038043, 0.24472847105479759, 0.6652409557748217, 0.004912229808901908, 0.013352825026752904, 1.9817349451643456}}},
	{name: "cumsum/dim1", shapes: sh(2, 3), data: [][]float64{{1, 2, 3, 4, 5, 6}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(1) }), w: []float64{1, 2, 3, 4, 5, 6},
		want: [][]float64{{6, 5, 3, 15, 11, 6}}},
	{name: "matmul/[3]x[3]", shapes: [][]int{{3}, {3}}, data: [][]float64{{1, 2, 3}, {4, 5, 6}},
		f: binary(mm), w: []float64{2}, want: [][]float64{{8, 10, 12}, {2, 4, 6}}},
	{name: "matmul/[2]x[2,3]", shapes: [][]int{{2}, {2, 3}}, data: [][]float64{{1, 2}, {1, 2, 3, 4, 5, 6}},
		f: binary(mm), w: []float64{1, -1, 2}, want: [][]float64{{5, 11}, {1, -1, 2, 2, -2, 4}}},
	{name: "matmul/[2,3]x[3]", shapes: [][]int{{2, 3}, {3}}, data: [][]float64{{1, 2, 3, 4, 5, 6}, {1, 0, -1}},
		f: binary(mm), w: []float64{3, 1}, want: [][]float64{{3, 0, -3, 1, 0, -1}, {7, 11, 15}}},
	{name: "matmul/bcast[2,1,2]x[2,3]", shapes: [][]int{{2, 1, 2}, {2, 3}}, data: [][]float64{{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6}},
		f: binary(mm), w: []float64{1, 2, 3, 4, 5, 6}, want: [][]float64{{14, 32, 32, 77}, {13, 17, 21, 18, 24, 30}}},
	{name: "index_select/dim0/dups", shapes: sh(3, 2), data: [][]float64{{1, 2, 3, 4, 5, 6}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.IndexSelect(0, i64([]int{3}, 2, 0, 2)) }),
		w: []float64{1, 2, 3, 4, 5, 6}, want: [][]float64{{3, 4, 0, 0, 6, 8}}},
	{name: "gather/dim1", shapes: sh(2, 3), data: [][]float64{{1, 2, 3, 4, 5, 6}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Gather(1, i64([]int{2, 2}, 0, 0, 2, 1)) }),
		w: []float64{1, 2, 3, 4}, want: [][]float64{{3, 0, 0, 0, 4, 3}}},
	{name: "scatter/dim0", shapes: [][]int{{3, 2}, {2, 2}}, data: [][]float64{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10}},
		f: binary(func(x, s *lathe.Tensor) *lathe.Tensor { return x.Scatter(0, i64([]int{2, 2}, 0, 2, 1, 0), s) }),
		w: []float64{1, 2, 3, 4, 5, 6}, want: [][]float64{{0, 0, 0, 4, 5, 0}, {1, 6, 3, 2}}},
	{name: "scatter_add/dim0/dups", shapes: [][]int{{2, 2}, {3, 2}}, data: [][]float64{{1, 2, 3, 4}, {1, 1, 2, 2, 3, 3}},
		f: binary(func(x, s *lathe.Tensor) *lathe.Tensor { return x.ScatterAdd(0, i64([]int{3, 2}, 0, 1, 0, 1, 1, 0), s) }),
		w: []float64{1, 2, 3, 4}, want: [][]float64{{1, 2, 3, 4}, {1, 4, 1, 4, 3, 2}}},
	// F.pad(x, (-1, 1, 1, -1)).
	{name: "pad/mixed", shapes: sh(3, 4), data: [][]float64{{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Pad([]int{-1, 1, 1, -1}, 0) }),
		w: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, want: [][]float64{{0, 5, 6, 7, 0, 9, 10, 11, 0, 0, 0, 0}}},
	// x[1:7:3].
	{name: "slice/step3", shapes: sh(7), data: [][]float64{{1, 2, 3, 4, 5, 6, 7}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(0, 1, 7, 3) }),
		w: []float64{2, 3}, want: [][]float64{{0, 2, 0, 0, 3, 0, 0}}},
	{name: "flip/dims[0]", shapes: sh(2, 2), data: [][]float64{{1, 2, 3, 4}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Flip(0) }),
		w: []float64{1, 2, 3, 4}, want: [][]float64{{3, 4, 1, 2}}},
	{name: "concat/dim0", shapes: [][]int{{1, 2}, {2, 2}}, data: [][]float64{{1, 2}, {3, 4, 5, 6}},
		f: func(xs []*lathe.Tensor) *lathe.Tensor { return lathe.Concat(xs, 0) },
		w: []float64{1, 2, 3, 4, 5, 6}, want: [][]float64{{1, 2}, {3, 4, 5, 6}}},
}

func TestRulesTorchValues(t *testing.T) {
	for _, c := range refCases {
		t.Run(c.name, func(t *testing.T) {
			xs := leaves(t, c.shapes, c.data, true)
			y := c.f(xs)
			w := c.w
			if w == nil {
				w = ones(y.Numel())
			}
			if err := weighted(y, w).Backward(); err != nil {
				t.Fatal(err)
			}
			for i, x := range xs {
				assertClose(t, "input "+itoa(i), vals(t, x.Grad()), c.want[i], 1e-12)
			}
		})
	}
}

// Second derivatives: with G(xs) = d/dxs (f(xs)²·w).Sum() recorded
// (CreateGraph), the gradient of (G·w2).Sum() must match the central
// differences of that same sum computed from first gradients alone. The
// square makes even the linear ops' second derivatives nonzero, and each
// such check runs the rules of the ops the first backward recorded.
var secondCases = []fdCase{
	{name: "sum/dims[1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Sum(1) })},
	{name: "sum/all/noncontig", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return tr(x).Sum() })},
	{name: "matmul/[2,3,4]x[4,2]", shapes: [][]int{{2, 3, 4}, {4, 2}}, f: binary(mm)},
	{name: "matmul/[4]x[2,4,3]", shapes: [][]int{{4}, {2, 4, 3}}, f: binary(mm)},
	{name: "matmul/[3,4]x[4]", shapes: [][]int{{3, 4}, {4}}, f: binary(mm)},
	{name: "max/dims[-1]", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(-1) })},
	{name: "max/all", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() })},
	{name: "gather/dim1", shapes: sh(3, 4), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.Gather(1, i64([]int{3, 2}, 0, 3, 1, 1, 2, 0))
	})},
	{name: "expand/[3,1]->[2,3,4]", shapes: sh(3, 1), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Expand(2, 3, 4) })},
	{name: "concat/dim0", shapes: [][]int{{1, 3}, {2, 3}}, f: func(xs []*lathe.Tensor) *lathe.Tensor {
		return lathe.Concat([]*lathe.Tensor{xs[0], xs[1].Mul(xs[1])}, 0)
	}},
	{name: "prod/dims[1]", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) })},
	// prod + 1, so that the square keeps prod's own second derivative.
	{name: "prod/dims[1]/one-zero", shapes: sh(2, 3), data: [][]float64{{0, 0.5, -1.5, 2, 0.3, 0.7}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1).AddScalar(1) })},
	{name: "prod/dims[1]/two-zeros", shapes: sh(2, 4), data: [][]float64{{0, 0.5, 0, -1.5, 2, 0, 0.7, 0}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1).AddScalar(1) })},
	{name: "prod/all/three-zeros", shapes: sh(5), data: [][]float64{{0, 0.5, 0, -1.5, 0}},
		f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod().AddScalar(1) })},
	{name: "prod/dims[0]/no-zero", shapes: sh(3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(0).AddScalar(1) })},
	{name: "var/dims[0]", shapes: sh(3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Var(true, 0) })},
	{name: "std/all", shapes: sh(4), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(true) })},
	{name: "logsumexp/dims[1]", shapes: sh(2, 3), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(1) })},
	{name: "cumsum/dim0", shapes: sh(3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(0) })},
	{name: "index_select/dups", shapes: sh(3, 2), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.IndexSelect(0, i64([]int{3}, 2, 0, 2))
	})},
	{name: "scatter_add/dim0", shapes: [][]int{{3, 2}, {2, 2}}, f: binary(func(x, s *lathe.Tensor) *lathe.Tensor {
		return x.ScatterAdd(0, i64([]int{2, 2}, 0, 2, 0, 0), s.Mul(x.Narrow(0, 0, 2)))
	})},
	{name: "slice/step2+pad+flip+permute", shapes: sh(2, 5), f: unary(func(x *lathe.Tensor) *lathe.Tensor {
		return x.Slice(1, 0, 5, 2).Pad([]int{1, -1}, 0).Flip(0).Permute(1, 0)
	})},
}

func TestRulesSecondDerivatives(t *testing.T) {
	for _, c := range secondCases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(2, uint64(len(c.name))))
			data := caseData(c, r)
			var w, w2 [][]float64
			// s is (G·w2).Sum(), with G recorded when create is set.
			s := func(xs []*lathe.Tensor, create bool) *lathe.Tensor {
				y := c.f(xs)
				if w == nil {
					w = [][]float64{randData(r, y.Numel())}
				}
				var opts []lathe.GradOption
				if create {
					opts = append(opts, lathe.CreateGraph())
				}
				gs, err := lathe.Grad(weighted(y.Mul(y), w[0]), xs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				if w2 == nil {
					for _, g := range gs {
						w2 = append(w2, randData(r, g.Numel()))
					}
				}
				total := weighted(gs[0], w2[0])
				for i := 1; i < len(gs); i++ {
					total = total.Add(weighted(gs[i], w2[i]))
				}
				return total
			}
			xs := leaves(t, c.shapes, data, true)
			hs, err := lathe.Grad(s(xs, true), xs)
			if err != nil {
				t.Fatal(err)
			}
			loss := func(d [][]float64) float64 {
				v, err := s(leaves(t, c.shapes, d, true), false).Item()
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for i := range xs {
				assertClose(t, "input "+itoa(i), vals(t, hs[i]), fdGrad(data, i, loss), 1e-5)
			}
		})
	}
}

// TestRulesTorchSecondOrder compares gradients of gradients with PyTorch
// 1.13: h = grad((grad(f(x).sum(), x, create_graph=True)·w2).sum(), x).
func TestRulesTorchSecondOrder(t *testing.T) {
	cases := []struct {
		name         string
		shape        []int
		data, w2     []float64
		f            func(x *lathe.Tensor) *lathe.Tensor
		wantG, wantH []float64
	}{
		// torch: x.reshape(1, 4).prod(1); lathe's full reduction matches it
		// (torch 1.13's x.prod() returns a gradient with no graph when two
		// elements are zero, so its second derivative fails there).
		{name: "prod/two-zeros", shape: []int{4}, data: []float64{0, 2, 0, 3}, w2: []float64{1, 2, 3, 4},
			f: func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() }, wantG: []float64{0, 0, 0, 0}, wantH: []float64{18, 0, 6, 0}},
		{name: "logsumexp/dims[1]", shape: []int{2, 3}, data: []float64{0, 1, 2, 1, -1, 0.5}, w2: []float64{1, 2, 3, 4, 5, 6},
			f:     func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(1) },
			wantH: []float64{-0.14181709360981207, -0.1407703574696299, 0.2825874510794426, -0.4444144729102124, 0.017550620582817034, 0.4268638523273962}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := lathe.FromSlice(lathe.CPU, c.data, c.shape...).RequireGrad()
			gs, err := lathe.Grad(c.f(x).Sum(), []*lathe.Tensor{x}, lathe.CreateGraph())
			if err != nil {
				t.Fatal(err)
			}
			if c.wantG != nil {
				assertClose(t, "grad", vals(t, gs[0]), c.wantG, 1e-12)
			}
			hs, err := lathe.Grad(weighted(gs[0], c.w2), []*lathe.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "grad of grad", vals(t, hs[0]), c.wantH, 1e-12)
		})
	}
}
