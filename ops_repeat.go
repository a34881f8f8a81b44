package lathe

import (
	"strconv"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Triangles and repeats: composites of ops every backend already has, so
// that each runs on every device and dtype that those ops do, and autodiff
// differentiates them, to any order, with the rules of those ops.
//
// Tril and Triu are a where over a mask made on the device from two aranges
// (rows+diagonal as a column, the column indices as a row) and one
// comparison: the host uploads rows+cols small integers, never an L×L mask,
// and the one where keeps x's dtype (ints and bool too) and routes the
// gradient through the same mask, which is torch's tril_backward
// (derivatives.yaml: grad.tril(diagonal)). A dedicated kernel would save
// the mask's one bool per element at the cost of a kernel per backend.
//
// Repeat, Tile and RepeatInterleave insert size-1 dims, expand them (a view,
// stride 0) and reshape: the copy happens once, in the reshape, and the
// gradient is expand's, a sum over the repeats, as torch's repeat_backward.

// triAttrs are the attributes of tril and triu.
type triAttrs struct {
	diagonal int
	upper    bool
}

var (
	opTril = composite("tril", []string{"x"}, func(in []*Tensor, a triAttrs) *Tensor { return triangle(in[0], a) })
	opTriu = composite("triu", []string{"x"}, func(in []*Tensor, a triAttrs) *Tensor { return triangle(in[0], a) })
)

// Tril keeps the lower triangle of the matrices in x's last two dims,
// elements (i, j) with j ≤ i+diagonal, and zeroes the rest, as torch.tril:
// diagonal 0 is the main diagonal, a positive one is above it and a
// negative one below; one past the matrix keeps all or nothing. Leading
// dims are a batch. x keeps its dtype (integers and bool too); the gradient
// is the same triangle of the output's gradient. x of rank below 2 is an
// ErrShape error.
func (x *Tensor) Tril(diagonal int) *Tensor {
	return x.tri("tril", opTril, triAttrs{diagonal: diagonal})
}

// Triu keeps the upper triangle of the matrices in x's last two dims,
// elements (i, j) with j ≥ i+diagonal, and zeroes the rest, as torch.triu;
// otherwise as Tril.
func (x *Tensor) Triu(diagonal int) *Tensor {
	return x.tri("triu", opTriu, triAttrs{diagonal: diagonal, upper: true})
}

func (x *Tensor) tri(op string, o *dispatch.Op[triAttrs], a triAttrs) *Tensor {
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if r := x.t.Rank(); r < 2 {
		return failed(errorf(op, ErrShape, "x", "has shape "+dispatch.FormatShape(x.t.Shape)+" (rank "+strconv.Itoa(r)+
			") but the op takes the matrices of the last two dims", "give a tensor of rank 2 or more, e.g. with Unsqueeze"))
	}
	return apply(o, a, x)
}

// triangle is the body of tril and triu: where(mask, x, 0), the mask
// [rows, cols] broadcast over the batch.
func triangle(x *Tensor, a triAttrs) *Tensor {
	op := "tril"
	if a.upper {
		op = "triu"
	}
	rows, cols := x.t.Shape[x.t.Rank()-2], x.t.Shape[x.t.Rank()-1]
	// A diagonal past either edge keeps all or nothing; clamping it keeps
	// rows+diagonal inside int32 for any matrix that fits in memory.
	k := min(max(a.diagonal, -rows-1), cols+1)
	idt := Int32
	if rows+cols+2 >= 1<<31 {
		idt = Int64
	}
	dev := x.t.Device
	// The aranges join the body's intermediates, and with them what is
	// made from them (the mask): left to the collector, each call kept
	// two device buffers until a collection.
	r := x.joined(Arange(dev, idt, float64(k), float64(k+rows), 1)).Unsqueeze(1) // i+diagonal as a column
	c := x.joined(Arange(dev, idt, 0, float64(cols), 1))
	var mask *Tensor
	if a.upper {
		mask = c.Ge(r) // j ≥ i+diagonal
	} else {
		mask = c.Le(r) // j ≤ i+diagonal
	}
	if mask.err != nil {
		return relabel(mask, op)
	}
	return Where(mask, x, x.scalarLike(op, 0))
}

// repeatAttrs are the attributes of repeat: the count of each dim, as many
// as x's rank or more (the leading ones new dims).
type repeatAttrs struct{ reps []int }

var opRepeat = composite("repeat", []string{"x"}, func(in []*Tensor, a repeatAttrs) *Tensor {
	x, reps := in[0], a.reps
	lead := len(reps) - x.t.Rank()
	// [1, s0, 1, s1, ...] (a view: only size-1 dims added), expanded to
	// [r0, s0, r1, s1, ...] (stride 0), then one copy into [r0·s0, ...].
	inter := make([]int, 0, 2*len(reps))
	wide := make([]int, 0, 2*len(reps))
	out := make([]int, len(reps))
	for i, r := range reps {
		s := 1
		if i >= lead {
			s = x.t.Shape[i-lead]
		}
		inter = append(inter, 1, s)
		wide = append(wide, r, s)
		out[i] = r * s
	}
	return x.Reshape(inter...).Expand(wide...).Reshape(out...)
})

// Repeat tiles x reps[i] times along each dim, as torch.Tensor.repeat:
// x of shape [2, 3] repeated (2, 1) is [4, 3], x then x again. reps may be
// longer than x's rank (the leading counts repeat new dims of size 1), not
// shorter (ErrValue, as torch; Tile pads them instead); a count of 0 gives
// an empty dim, a negative count is an ErrValue (even for an empty dim,
// which torch takes, checking only the product). The result is one new
// copy of x's elements in x's dtype (a view of x where every count is 1,
// which is the same to a caller, tensors being immutable); the gradient
// sums the copies.
func (x *Tensor) Repeat(reps ...int) *Tensor {
	const op = "repeat"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if len(reps) < x.t.Rank() {
		return failed(errorf(op, ErrValue, "reps", "has "+strconv.Itoa(len(reps))+" counts but x has rank "+
			strconv.Itoa(x.t.Rank()), "give a count for every dim of x (and more to add leading dims), or use Tile"))
	}
	return x.repeat(op, reps)
}

// Tile is Repeat with reps shorter than x's rank padded with 1s in front,
// as torch.tile: x of shape [2, 3, 4] tiled (2) is [2, 3, 8].
func (x *Tensor) Tile(reps ...int) *Tensor {
	const op = "tile"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if pad := x.t.Rank() - len(reps); pad > 0 {
		reps = append(make([]int, pad), reps...)
		for i := range pad {
			reps[i] = 1
		}
	}
	return x.repeat(op, reps)
}

func (x *Tensor) repeat(op string, reps []int) *Tensor {
	lead := len(reps) - x.t.Rank()
	out := make([]int, len(reps))
	for i, r := range reps {
		if r < 0 {
			return failed(errorf(op, ErrValue, "reps", "has count "+strconv.Itoa(r)+" for dim "+strconv.Itoa(i),
				"use counts ≥ 0"))
		}
		s := 1
		if i >= lead {
			s = x.t.Shape[i-lead]
		}
		n, ok := dispatch.CheckedMul(r, s)
		if !ok {
			return failed(errorf(op, ErrShape, "reps", "repeats dim "+strconv.Itoa(i)+" of size "+strconv.Itoa(s)+" "+
				strconv.Itoa(r)+" times, more elements than an int counts", "use smaller counts"))
		}
		out[i] = n
	}
	if _, ok := dispatch.CheckedNumel(out); !ok {
		return failed(located(dispatch.ShapeError("", out), op))
	}
	return relabel(apply(opRepeat, repeatAttrs{reps: append([]int(nil), reps...)}, x), op)
}

// interleaveAttrs are the attributes of repeat_interleave: the count and a
// dim in [0, rank).
type interleaveAttrs struct{ repeats, dim int }

var opRepeatInterleave = composite("repeat_interleave", []string{"x"}, func(in []*Tensor, a interleaveAttrs) *Tensor {
	x, d := in[0], a.dim
	wide := append([]int(nil), x.t.Shape[:d+1]...)
	wide = append(append(wide, a.repeats), x.t.Shape[d+1:]...)
	out := append([]int(nil), x.t.Shape...)
	out[d] *= a.repeats
	return x.Unsqueeze(d + 1).Expand(wide...).Reshape(out...)
})

// RepeatInterleave repeats each element of x along dim repeats times in a
// row, as torch.repeat_interleave(x, repeats, dim) with an int count:
// [a, b] gives [a, a, b, b] for 2. Grouped-query attention uses it to share
// each key head among a group of query heads. dim may be negative (from
// the end); x must have a dim (a 0-d x is ErrIndex, as torch). A count of 0
// gives an empty dim, a negative one is an ErrValue. The gradient sums
// the repeats.
func (x *Tensor) RepeatInterleave(repeats, dim int) *Tensor {
	const op = "repeat_interleave"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	if repeats < 0 {
		return failed(errorf(op, ErrValue, "repeats", "is "+strconv.Itoa(repeats), "use a count ≥ 0"))
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+" but x is 0-d",
			"give x a dim first, e.g. with Reshape(1)"))
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return failed(located(err, op))
	}
	if _, ok := dispatch.CheckedMul(x.t.Shape[d], repeats); !ok {
		return failed(errorf(op, ErrShape, "repeats", "repeats dim "+strconv.Itoa(d)+" of size "+strconv.Itoa(x.t.Shape[d])+" "+
			strconv.Itoa(repeats)+" times, more elements than an int counts", "use a smaller count"))
	}
	out := append([]int(nil), x.t.Shape...)
	out[d] *= repeats
	if _, ok := dispatch.CheckedNumel(out); !ok {
		return failed(located(dispatch.ShapeError("", out), op))
	}
	return apply(opRepeatInterleave, interleaveAttrs{repeats: repeats, dim: d}, x)
}

// RepeatInterleaveCounts repeats element i of x along dim counts[i] times
// in a row, as torch.repeat_interleave(x, repeats, dim) with a tensor of
// counts: [a, b, c] with counts [2, 0, 1] gives [a, a, c]. counts is an
// int32 or int64 tensor on x's device holding one count per element of dim,
// or one count for all of them (shape [1], or 0-d, as torch); a negative
// count is an ErrValue naming its position. The result's size along dim is
// the counts' sum, so the counts are read back to the host first, as torch
// reads them without an output_size. torch's form without a dim is
// x.Reshape(-1).RepeatInterleaveCounts(counts, 0). The gradient sums the
// repeats (IndexSelect's rule); counts has none.
func (x *Tensor) RepeatInterleaveCounts(counts *Tensor, dim int) *Tensor {
	return apply(opRepeatInterleaveCounts, dim, x, counts)
}

var opRepeatInterleaveCounts = compositeVariant("repeat_interleave", "counts", []string{"x", "counts"}, func(in []*Tensor, dim int) *Tensor {
	const op = "repeat_interleave"
	x, counts := in[0], in[1]
	if !counts.t.DType.IsInt() || counts.t.DType.Size() < 4 {
		return failed(errorf(op, ErrDType, "counts", "is "+counts.t.DType.String()+" but counts are int32 or int64",
			"cast them with .Cast(lathe.Int64)"))
	}
	if x.t.Rank() == 0 {
		return failed(errorf(op, ErrIndex, "dim", "is "+strconv.Itoa(dim)+" but x is 0-d",
			"give x a dim first, e.g. with Reshape(1)"))
	}
	d, err := ops.NormDim(dim, x.t.Rank(), "dim")
	if err != nil {
		return failed(located(err, op))
	}
	n := x.t.Shape[d]
	if c := counts.t.Numel(); counts.t.Rank() > 1 || counts.t.Rank() == 1 && c != n && c != 1 {
		return failed(errorf(op, ErrShape, "counts", "has shape "+dispatch.FormatShape(counts.t.Shape)+" for dim "+strconv.Itoa(d)+
			" of x, of size "+strconv.Itoa(n), "give one count per element of the dim, ["+strconv.Itoa(n)+"], or one for all, [1]"))
	}
	wide := counts.Cast(Int64)
	each, err := wide.Int64s()
	if err != nil {
		return failed(err)
	}
	total := 0
	for i := range n {
		c := each[min(i, len(each)-1)]
		if c < 0 {
			return failed(errorf(op, ErrValue, "counts", "holds "+strconv.FormatInt(c, 10)+" at "+strconv.Itoa(min(i, len(each)-1)),
				"use counts ≥ 0"))
		}
		sum, ok := dispatch.CheckedAdd(total, int(c))
		if !ok || int64(int(c)) != c {
			return failed(errorf(op, ErrShape, "counts", "sum to more elements than an int counts", "use smaller counts"))
		}
		total = sum
	}
	out := append([]int(nil), x.t.Shape...)
	out[d] = total
	numel, ok := dispatch.CheckedNumel(out)
	if !ok {
		return failed(located(dispatch.ShapeError("", out), op))
	}
	if numel == 0 {
		// No element to gather (another dim is empty, or every count is
		// 0): no index either, which could be as long as an int.
		return x.Narrow(d, 0, 0).Reshape(out...)
	}
	// The source index of each position along dim, made in the cpu pool
	// (so that a sum too large for memory is an error, not a crash).
	lent, host, err := emptyLent(op, CPU, Int64, []int{total})
	if err != nil {
		return failed(err)
	}
	index, at := host.([]int64), 0
	for i := range n {
		for range each[min(i, len(each)-1)] {
			index[at] = int64(i)
			at++
		}
	}
	idx := wrap(lent)
	if x.t.Device != CPU {
		idx = idx.To(x.t.Device)
	}
	return x.IndexSelect(d, idx)
})
