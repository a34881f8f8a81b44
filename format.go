package lathe

import (
	"math"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Printing follows torch's repr: nested brackets aligned under each other,
// one width for all elements, "1." for integral floats, 4 decimals otherwise,
// scientific notation for wide ranges, and "..." past 1000 elements, keeping
// the first and last three of each dimension.

const (
	printThreshold = 1000
	printEdge      = 3
)

// String prints x as PyTorch does, e.g. tensor([[1., 2.], [3., 4.]]).
// A failed tensor prints its error. Past 1000 elements only the summary
// is read from the device (the first and last three of each long dim), so
// printing a huge tensor, even an expanded one that no memory could hold
// whole, costs no more than printing a small one; an empty tensor prints
// as tensor([], size=(2, 0)), whatever its sizes.
func (x *Tensor) String() string {
	if err := x.check("string"); err != nil {
		return "tensor(<failed: " + err.Error() + ">)"
	}
	shape := x.t.Shape
	var b strings.Builder
	b.WriteString("tensor(")
	if x.t.Numel() == 0 {
		b.WriteString("[]")
		if len(shape) > 1 {
			b.WriteString(", size=(")
			for i, n := range shape {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(n))
			}
			b.WriteString(")")
		}
	} else {
		summarise := x.t.Numel() > printThreshold
		shown, err := x.summary(summarise)
		if err != nil {
			return "tensor(<failed: " + err.Error() + ">)"
		}
		data, err := shown.host("string")
		shown.Release()
		if err != nil {
			return "tensor(<failed: " + err.Error() + ">)"
		}
		cells := elementStrings(x.t.DType, data)
		width := 0
		for _, c := range cells {
			width = max(width, len(c))
		}
		cut := make([]bool, len(shape))
		for d, n := range shape {
			cut[d] = summarise && n > 2*printEdge
		}
		sshape := shown.t.Shape
		writeNested(&b, sshape, dispatch.ContiguousStrides(sshape), cut, 0, 0, len("tensor("),
			func(i int) string { return strings.Repeat(" ", width-len(cells[i])) + cells[i] })
	}
	if dt := x.t.DType; dt != Float32 && dt != Int64 && dt != Bool {
		b.WriteString(", dtype=" + dt.String())
	}
	if x.t.Device != CPU {
		b.WriteString(", device='" + x.t.Device.String() + "'")
	}
	b.WriteString(")")
	return b.String()
}

// summary is x itself, or with summarise, x with each dim longer than
// 2·printEdge cut to its first and last printEdge entries, taken on the
// device (torch's get_summarized_data), so that only what is printed is
// read back. The caller releases the result.
func (x *Tensor) summary(summarise bool) (*Tensor, error) {
	if !summarise {
		return wrap(x.t.View(x.t.Shape, x.t.Strides, x.t.Offset)), nil
	}
	t, err := summarised(x.t, 0)
	if err != nil {
		return nil, located(err, "string")
	}
	return wrap(t), nil
}

// summarised is t with its dims from d on each cut to its first and last
// printEdge entries where longer than 2·printEdge; the caller releases
// it. It cuts every dim before it joins the parts, as torch's
// get_summarized_data does: a part is joined only once it is cut in every
// dim, so that a copy holds at most (2·printEdge)^rank elements, where
// joining the head and tail of the first dim first copied whole rows (of
// 2³⁰ elements in an expanded tensor, which no memory held).
func summarised(t *dispatch.Tensor, d int) (*dispatch.Tensor, error) {
	if d == len(t.Shape) {
		return t.View(t.Shape, t.Strides, t.Offset), nil
	}
	n := t.Shape[d]
	if n <= 2*printEdge {
		return summarised(t, d+1)
	}
	var parts [2]*dispatch.Tensor
	defer func() {
		for _, p := range parts {
			if p != nil {
				p.Release()
			}
		}
	}()
	for i, start := range [2]int{0, n - printEdge} {
		edge, err := dispatch.Call(ops.Narrow, ops.NarrowRange{Dim: d, Start: start, Length: printEdge}, t)
		if err != nil {
			return nil, err
		}
		parts[i], err = summarised(edge, d+1)
		edge.Release()
		if err != nil {
			return nil, err
		}
	}
	return dispatch.Call(ops.Concat, ops.ConcatDim{Dim: d}, parts[0], parts[1])
}

// writeNested writes the elements of shape (f gives the one at a
// row-major offset, with strides) in nested brackets; where cut[dim] is
// set, "..." stands between the first and last printEdge entries of that
// dim.
func writeNested(b *strings.Builder, shape, strides []int, cut []bool, dim, off, indent int, f func(int) string) {
	if len(shape) == 0 {
		b.WriteString(f(0))
		return
	}
	b.WriteByte('[')
	n := shape[dim]
	for i := 0; i < n; i++ {
		if cut[dim] && i == printEdge {
			if dim == len(shape)-1 {
				b.WriteString("..., ")
			} else {
				b.WriteString("...," + strings.Repeat("\n", len(shape)-dim-1) + strings.Repeat(" ", indent+dim+1))
			}
		}
		if dim == len(shape)-1 {
			b.WriteString(f(off + i*strides[dim]))
		} else {
			writeNested(b, shape, strides, cut, dim+1, off+i*strides[dim], indent, f)
		}
		if i < n-1 {
			b.WriteByte(',')
			if dim == len(shape)-1 {
				b.WriteByte(' ')
			} else {
				b.WriteString(strings.Repeat("\n", len(shape)-dim-1) + strings.Repeat(" ", indent+dim+1))
			}
		}
	}
	b.WriteByte(']')
}

// elementStrings is each element of host data (of dtype dt) as String
// prints it, unpadded. An int64 is printed from its own value, not
// widened to float64, which rounds one past 2⁵³ (2⁵³+1 printed as 2⁵³,
// 2⁶³-1 as -2⁶³).
func elementStrings(dt DType, data any) []string {
	if d, ok := data.([]int64); ok {
		return convertEach(d, func(v int64) string { return strconv.FormatInt(v, 10) })
	}
	vals := asFloat64s(data)
	return convertEach(vals, elementFormat(dt, vals))
}

func elementFormat(dt DType, vals []float64) func(float64) string {
	switch {
	case dt == Bool:
		return func(v float64) string {
			if v != 0 {
				return "True"
			}
			return "False"
		}
	case dt.IsInt():
		return func(v float64) string { return strconv.FormatInt(int64(v), 10) }
	}
	integral, lo, hi := true, math.Inf(1), 0.0
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		a := math.Abs(v)
		integral = integral && v == math.Trunc(v)
		if a != 0 {
			lo = min(lo, a)
		}
		hi = max(hi, a)
	}
	special := func(v float64) (string, bool) {
		switch {
		case math.IsNaN(v):
			return "nan", true
		case math.IsInf(v, 1):
			return "inf", true
		case math.IsInf(v, -1):
			return "-inf", true
		}
		return "", false
	}
	sci := hi >= 1e8 || (lo != math.Inf(1) && (lo < 1e-4 || hi/lo > 1000) && !integral)
	return func(v float64) string {
		if s, ok := special(v); ok {
			return s
		}
		switch {
		case sci:
			return strconv.FormatFloat(v, 'e', 4, 64)
		case integral:
			return strconv.FormatFloat(v, 'f', 0, 64) + "."
		}
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
