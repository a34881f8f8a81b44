package autodiff_test

import (
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe"
)

// refCase is a gradient checked against PyTorch 1.13's: the loss is
// (f(xs)·w).Sum(), and torchGrads (written by build/torchref/literals.py
// from the same torch expression, by name) holds the leaves' data, w and
// each leaf's .grad.
type refCase struct {
	name string
	f    func(xs []*lathe.Tensor) *lathe.Tensor
}

func ones(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 1
	}
	return w
}

var refCases = []refCase{
	{"prod/dims[1]/zeros", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod(1) })},
	{"prod/all/one-zero", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() })},
	{"max/all/ties", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() })},
	{"max/dims[1]/ties", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(1) })},
	{"min/dims[0,2]/keepdim/ties", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.MinKeepDim(0, 2) })},
	{"min/all/ties", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Min() })},
	{"max/all/nan", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max() })},
	{"max/dims[1]/nan", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Max(1) })},
	{"var/dims[1]/unbiased", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Var(true, 1) })},
	{"std/all/biased", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(false) })},
	{"std/dims[1]/zero-std", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Std(true, 1) })},
	{"logsumexp/dims[-1]", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(-1) })},
	{"cumsum/dim1", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.CumSum(1) })},
	{"matmul/[3]x[3]", binary(mm)},
	{"matmul/[2]x[2,3]", binary(mm)},
	{"matmul/[2,3]x[3]", binary(mm)},
	{"matmul/bcast[2,1,2]x[2,3]", binary(mm)},
	{"index_select/dim0/dups", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.IndexSelect(0, i64([]int{3}, 2, 0, 2)) })},
	{"gather/dim1", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Gather(1, i64([]int{2, 2}, 0, 0, 2, 1)) })},
	{"scatter/dim0", binary(func(x, s *lathe.Tensor) *lathe.Tensor { return x.Scatter(0, i64([]int{2, 2}, 0, 2, 1, 0), s) })},
	{"scatter_add/dim0/dups", binary(func(x, s *lathe.Tensor) *lathe.Tensor {
		return x.ScatterAdd(0, i64([]int{3, 2}, 0, 1, 0, 1, 1, 0), s)
	})},
	{"pad/mixed", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Pad([]int{-1, 1, 1, -1}, 0) })},
	{"slice/step3", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Slice(0, 1, 7, 3) })},
	{"flip/dims[0]", unary(func(x *lathe.Tensor) *lathe.Tensor { return x.Flip(0) })},
	{"concat/dim0", func(xs []*lathe.Tensor) *lathe.Tensor { return lathe.Concat(xs, 0) }},
}

// TestTorchRefsUsed: every reference literals.py wrote has its case, and
// every case its reference.
func TestTorchRefsUsed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range refCases {
		names[c.name] = true
		if _, ok := torchGrads[c.name]; !ok {
			t.Errorf("case %q has no torch reference: add it to build/torchref/literals.py and run make refs", c.name)
		}
	}
	for _, c := range secondOrderCases {
		names["second/"+c.name] = true
	}
	for name := range torchGrads {
		if !names[name] {
			t.Errorf("torch reference %q has no case", name)
		}
	}
	for name := range torchSeconds {
		if !names["second/"+name] {
			t.Errorf("torch second-order reference %q has no case", name)
		}
	}
}

func TestRulesTorchValues(t *testing.T) {
	for _, c := range refCases {
		t.Run(c.name, func(t *testing.T) {
			ref := torchGrads[c.name]
			xs := leaves(t, ref.Shapes, ref.Data, true)
			y := c.f(xs)
			w := ref.W
			if w == nil {
				w = ones(y.Numel())
			}
			if err := weighted(y, w).Backward(); err != nil {
				t.Fatal(err)
			}
			for i, x := range xs {
				assertClose(t, "input "+itoa(i), vals(t, x.Grad()), ref.Want[i], 1e-12)
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

// secondOrderCases are gradients of gradients checked against PyTorch
// 1.13's (torchSeconds): h = grad((grad(f(x).sum(), x,
// create_graph=True)·w2).sum(), x).
var secondOrderCases = []struct {
	name string
	f    func(x *lathe.Tensor) *lathe.Tensor
}{
	// torch's is x.reshape(1, 4).prod(1), which lathe's full reduction
	// matches (torch 1.13's x.prod() returns a gradient with no graph when
	// two elements are zero, so its second derivative fails there).
	{"prod/two-zeros", func(x *lathe.Tensor) *lathe.Tensor { return x.Prod() }},
	{"logsumexp/dims[1]", func(x *lathe.Tensor) *lathe.Tensor { return x.LogSumExp(1) }},
}

func TestRulesTorchSecondOrder(t *testing.T) {
	for _, c := range secondOrderCases {
		t.Run(c.name, func(t *testing.T) {
			ref, ok := torchSeconds[c.name]
			if !ok {
				t.Fatalf("no torch reference: add it to build/torchref/literals.py and run make refs")
			}
			x := lathe.FromSlice(lathe.CPU, ref.Data, ref.Shape...).RequireGrad()
			gs, err := lathe.Grad(c.f(x).Sum(), []*lathe.Tensor{x}, lathe.CreateGraph())
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "grad", vals(t, gs[0]), ref.WantG, 1e-12)
			hs, err := lathe.Grad(weighted(gs[0], ref.W2), []*lathe.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "grad of grad", vals(t, hs[0]), ref.WantH, 1e-12)
		})
	}
}
