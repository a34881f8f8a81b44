package lathe

import (
	"math"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
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
// A failed tensor prints its error.
func (x *Tensor) String() string {
	if err := x.check("string"); err != nil {
		return "tensor(<failed: " + err.Error() + ">)"
	}
	data, err := x.host("string")
	if err != nil {
		return "tensor(<failed: " + err.Error() + ">)"
	}
	vals := asFloat64s(data)
	shape := x.t.Shape
	summarise := len(vals) > printThreshold
	fmtv := elementFormat(x.t.DType, shownValues(vals, shape, summarise))
	width := 0
	for _, v := range shownValues(vals, shape, summarise) {
		width = max(width, len(fmtv(v)))
	}
	var b strings.Builder
	b.WriteString("tensor(")
	writeNested(&b, vals, shape, dispatch.ContiguousStrides(shape), 0, 0, len("tensor("), summarise,
		func(v float64) string { s := fmtv(v); return strings.Repeat(" ", width-len(s)) + s })
	if len(vals) == 0 && len(shape) > 1 {
		b.WriteString(", size=" + strings.ReplaceAll(dispatch.FormatShape(shape), " ", ""))
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

func writeNested(b *strings.Builder, vals []float64, shape, strides []int, dim, off, indent int, summarise bool, f func(float64) string) {
	if len(shape) == 0 {
		b.WriteString(f(vals[0]))
		return
	}
	b.WriteByte('[')
	n := shape[dim]
	for i := 0; i < n; i++ {
		if summarise && n > 2*printEdge && i == printEdge {
			if dim == len(shape)-1 {
				b.WriteString("..., ")
			} else {
				b.WriteString("...,\n" + strings.Repeat(" ", indent+dim+1))
			}
			i = n - printEdge
		}
		if dim == len(shape)-1 {
			b.WriteString(f(vals[off+i*strides[dim]]))
		} else {
			writeNested(b, vals, shape, strides, dim+1, off+i*strides[dim], indent, summarise, f)
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

// shownValues lists the elements that will be printed, so that widths and
// the number format depend only on them, as in torch.
func shownValues(vals []float64, shape []int, summarise bool) []float64 {
	if !summarise {
		return vals
	}
	var out []float64
	var walk func(dim, off int)
	strides := dispatch.ContiguousStrides(shape)
	walk = func(dim, off int) {
		if dim == len(shape) {
			out = append(out, vals[off])
			return
		}
		for i := 0; i < shape[dim]; i++ {
			if shape[dim] > 2*printEdge && i == printEdge {
				i = shape[dim] - printEdge
			}
			walk(dim+1, off+i*strides[dim])
		}
	}
	walk(0, 0)
	return out
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
