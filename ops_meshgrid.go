package lathe

import (
	"math/big"
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
)

// Grids of coordinates and the indices of a matrix's triangles:
// meshgrid (views: each result is one of the inputs reshaped and
// expanded, so its gradient is the sum over the expanded dims),
// cartesian_prod (meshgrid's results flattened and stacked), tril_indices
// and triu_indices (computed on the host and uploaded), and argwhere
// (nonzero's other name).

// Meshgrid expands tensors (each 1-D or 0-d, one dtype and device) to
// their common grid, as torch.meshgrid(*tensors, indexing): with
// indexing "ij" the grid's dim i runs along tensors[i]; with "xy" the
// first two dims are swapped, as numpy's (and torch's) Cartesian
// indexing. Each result is a view of its input, expanded, so its elements
// share memory as torch's do. No tensors, or one of rank 2 or more, is
// ErrShape; mixed dtypes ErrDType, as in torch; another indexing ErrValue.
func Meshgrid(tensors []*Tensor, indexing string) ([]*Tensor, error) {
	const op = "meshgrid"
	shape, err := checkGrid(op, tensors, true)
	if err != nil {
		return nil, err
	}
	switch indexing {
	case "ij":
	case "xy":
		if len(shape) >= 2 {
			shape[0], shape[1] = shape[1], shape[0]
		}
	default:
		return nil, errorf(op, ErrValue, "indexing", "is "+strconv.Quote(indexing), `use "ij" (matrix indexing) or "xy" (Cartesian)`)
	}
	out := make([]*Tensor, len(tensors))
	for i, t := range tensors {
		r := t.Reshape(gridLine(len(tensors), i, indexing)...)
		out[i] = relabel(r.Expand(shape...), op)
		// The reshape goes with the view's graph: its node holds it.
		ReleaseWithGraph(out[i], r)
		if err := out[i].Err(); err != nil {
			releaseAll(out[:i])
			return nil, err
		}
	}
	return out, nil
}

// gridLine is the shape that tensors[i] of k takes in a grid of rank k:
// its elements along its own dim, ones elsewhere.
func gridLine(k, i int, indexing string) []int {
	if indexing == "xy" && k >= 2 && i < 2 {
		i = 1 - i
	}
	line := make([]int, k)
	for j := range line {
		line[j] = 1
	}
	line[i] = -1
	return line
}

// checkGrid refuses tensors that meshgrid (zeroD: 0-d ones are taken) or
// cartesian_prod does not take, and gives the grid's shape.
func checkGrid(op string, tensors []*Tensor, zeroD bool) ([]int, error) {
	if len(tensors) == 0 {
		return nil, errorf(op, ErrShape, "tensors", "is empty", "give one tensor or more, as torch requires")
	}
	shape := make([]int, len(tensors))
	for i, t := range tensors {
		arg := "tensors[" + strconv.Itoa(i) + "]"
		if err := t.CheckArg(op, arg); err != nil {
			return nil, err
		}
		r := t.t.Rank()
		if r > 1 || (r == 0 && !zeroD) {
			want := "0-d or 1-D"
			if !zeroD {
				want = "1-D"
			}
			return nil, errorf(op, ErrShape, arg, "has shape "+dispatch.FormatShape(t.t.Shape)+" but must be "+want+", as torch's",
				"flatten it with .Reshape(-1)")
		}
		shape[i] = t.t.Numel()
		if i == 0 {
			continue
		}
		first := tensors[0].t
		switch {
		case t.t.DType != first.DType:
			return nil, errorf(op, ErrDType, arg, "is "+t.t.DType.String()+" but tensors[0] is "+first.DType.String()+
				" ("+op+" does not promote, as torch's)", "cast it with .Cast("+first.DType.GoString()+")")
		case t.t.Device != first.Device:
			return nil, errorf(op, ErrDevice, arg, "is on "+t.t.Device.String()+" but tensors[0] is on "+first.Device.String(),
				"move it with .To("+first.Device.String()+")")
		}
	}
	if _, ok := dispatch.CheckedNumel(shape); !ok {
		return nil, errorf(op, ErrShape, "tensors", "make a grid of shape "+dispatch.FormatShape(shape)+", more elements than an int counts",
			"give shorter tensors")
	}
	return shape, nil
}

// CartesianProd is the Cartesian product of tensors (each 1-D, one dtype
// and device), as torch.cartesian_prod: [n0·n1·…, k] for k tensors, row
// by row in the order of nested loops, the last tensor's fastest; one
// tensor gives itself (in a handle of its own), as torch's. Its gradient
// is the sum over the rows each element appears in. A 0-d tensor is
// ErrShape, mixed dtypes ErrDType, as in torch.
func CartesianProd(tensors ...*Tensor) *Tensor {
	const op = "cartesian_prod"
	shape, err := checkGrid(op, tensors, false)
	if err != nil {
		return failed(err)
	}
	if len(tensors) == 1 {
		return tensors[0].alias()
	}
	return relabel(Compose(func(ts []*Tensor) *Tensor {
		cols := make([]*Tensor, len(ts))
		for i, t := range ts {
			cols[i] = t.Reshape(gridLine(len(ts), i, "ij")...).Expand(shape...).Reshape(-1)
		}
		return Stack(cols, 1)
	}, tensors...), op)
}

// TrilIndices is the coordinates of the lower triangle of a row × col
// matrix, as torch.tril_indices(row, col, offset): Int64 [2, n], rows
// then columns, in row-major order, of the elements (i, j) with j ≤ i +
// offset (offset 0 is the main diagonal, positive above it). A negative
// row or col is ErrValue.
func TrilIndices(dev Device, row, col, offset int) *Tensor {
	return triIndices("tril_indices", dev, row, col, offset, true)
}

// TriuIndices is TrilIndices for the upper triangle, as
// torch.triu_indices(row, col, offset): the elements with j ≥ i + offset.
func TriuIndices(dev Device, row, col, offset int) *Tensor {
	return triIndices("triu_indices", dev, row, col, offset, false)
}

func triIndices(op string, dev Device, row, col, offset int, lower bool) *Tensor {
	for _, a := range []struct {
		name string
		v    int
	}{{"row", row}, {"col", col}} {
		if a.v < 0 {
			return failed(errorf(op, ErrValue, a.name, "is "+strconv.Itoa(a.v)+" but must be at least 0, as torch's", "give a nonnegative size"))
		}
	}
	// The elements of row i in the triangle: [0, i+offset] of [0, col)
	// for the lower, [i+offset, col) for the upper.
	// offset beyond [-row, col] means what those do (all or nothing), and
	// clamped i+offset+1 cannot overflow.
	offset = min(col, max(-row, offset))
	span := func(i int) (lo, hi int) {
		if lower {
			return 0, min(col, max(0, i+offset+1))
		}
		return min(col, max(0, i+offset)), col
	}
	// How many, in closed form (a loop over the rows would take as long as
	// row is, however few elements there are), in big integers, which no
	// product of sizes overflows.
	var total *big.Int
	if lower {
		total = clampSum(row, col, new(big.Int).Add(big.NewInt(int64(offset)), big.NewInt(1)))
	} else {
		total = new(big.Int).Mul(big.NewInt(int64(row)), big.NewInt(int64(col)))
		total.Sub(total, clampSum(row, col, big.NewInt(int64(offset))))
	}
	if total.Cmp(big.NewInt(1<<40)) > 0 {
		return failed(errorf(op, ErrOutOfMemory, "row", "and col ("+strconv.Itoa(row)+" × "+strconv.Itoa(col)+
			") have more than 2^40 elements in the triangle", "ask for a smaller matrix"))
	}
	n := int(total.Int64())
	data := make([]int64, 2*n)
	k := 0
	first := 0 // the first row with elements: the lower triangle's starts at -offset
	if lower {
		first = min(row, max(0, -offset))
	}
	for i := first; i < row && k < n; i++ {
		lo, hi := span(i)
		for j := lo; j < hi; j++ {
			data[k], data[n+k] = int64(i), int64(j)
			k++
		}
	}
	return upload(op, dev, data, Int64, []int{2, n})
}

// Argwhere is the coordinates of x's nonzero elements, Int64 [n, rank of
// x], as torch.argwhere(x): Nonzero under torch's other name (it syncs
// once).
func (x *Tensor) Argwhere() *Tensor {
	if err := x.check("argwhere"); err != nil {
		return failed(err)
	}
	return relabel(x.Nonzero(), "argwhere")
}

// clampSum is the sum of clamp(i+c, 0, col) over the rows i in [0,
// row), in big integers: c (an offset plus one) and the sizes may be near
// the ints' ends.
func clampSum(row, col int, c *big.Int) *big.Int {
	R, C := big.NewInt(int64(row)), big.NewInt(int64(col))
	clamp := func(v, lo, hi *big.Int) *big.Int {
		switch {
		case v.Cmp(lo) < 0:
			return new(big.Int).Set(lo)
		case v.Cmp(hi) > 0:
			return new(big.Int).Set(hi)
		}
		return v
	}
	a := clamp(new(big.Int).Neg(c), big.NewInt(0), R) // rows before a are empty
	b := clamp(new(big.Int).Sub(C, c), a, R)          // rows from b on are full
	// (b-a)·(a+b-1+2c)/2 + (row-b)·col; exact: one of the two factors is
	// even, and the product is not negative.
	ramp := new(big.Int).Add(a, b)
	ramp.Sub(ramp, big.NewInt(1))
	ramp.Add(ramp, new(big.Int).Lsh(c, 1))
	ramp.Mul(ramp, new(big.Int).Sub(b, a))
	ramp.Rsh(ramp, 1)
	full := new(big.Int).Mul(new(big.Int).Sub(R, b), C)
	return ramp.Add(ramp, full)
}
