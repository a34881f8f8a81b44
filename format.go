package lathe

import (
	"math"
	"strconv"
	"strings"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// Printing follows torch 1.13's repr (torch/_tensor_str.py): the number
// format and one width for all elements are chosen from the printed values
// (_Formatter), nested brackets are aligned under each other and rows wrap
// at 80 columns (_tensor_str_with_formatter, _vector_str), past 1000
// elements each dim keeps its first and last three entries around "..."
// (get_summarized_data), and a suffix that would pass 80 columns goes on a
// line of its own (_add_suffixes). Only the suffixes are lathe's own:
// dtype=float64 for torch's dtype=torch.float64, its device names, and
// the dtype before the device (torch puts the device first).

const (
	printThreshold = 1000 // more elements than this are summarised
	printEdge      = 3    // entries kept at each end of a summarised dim
	printWidth     = 80   // torch's linewidth
	printIndent    = len("tensor(")
)

// String prints x as PyTorch does, e.g. tensor([1.0000e+00, 2.0000e+03]),
// rows wrapped at 80 columns, followed by its dtype where not float32,
// int64 or bool (any but float32 when x is empty, whose elements cannot
// show it) and its device where not the cpu. A failed tensor prints its error. Past 1000 elements only
// the summary is read from the device (the first and last three of each
// long dim), so printing a huge tensor, even an expanded one that no
// memory could hold whole, costs no more than printing a small one; an
// empty tensor prints as tensor([], size=(2, 0)), whatever its sizes.
func (x *Tensor) String() string {
	if err := x.check("string"); err != nil {
		return "tensor(<failed: " + err.Error() + ">)"
	}
	dt := x.t.DType
	var data string
	var suffixes []string
	if x.t.Numel() == 0 {
		data = "[]"
		if len(x.t.Shape) != 1 {
			suffixes = append(suffixes, "size="+shapeTuple(x.t.Shape))
		}
		if dt != Float32 {
			suffixes = append(suffixes, "dtype="+dt.String())
		}
	} else {
		var err error
		if data, err = x.dataString(); err != nil {
			return "tensor(<failed: " + err.Error() + ">)"
		}
		if dt != Float32 && dt != Int64 && dt != Bool {
			suffixes = append(suffixes, "dtype="+dt.String())
		}
	}
	if x.t.Device != CPU {
		suffixes = append(suffixes, "device='"+x.t.Device.String()+"'")
	}
	return withSuffixes("tensor("+data, suffixes)
}

// shapeTuple is shape as Python writes a tuple of two or more ints.
func shapeTuple(shape []int) string {
	s := make([]string, len(shape))
	for i, n := range shape {
		s[i] = strconv.Itoa(n)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// withSuffixes closes s with the suffixes, as torch's _add_suffixes: each
// goes after ", " unless the line would then pass printWidth, when it
// starts a new line under the first element.
func withSuffixes(s string, suffixes []string) string {
	var b strings.Builder
	b.WriteString(s)
	// torch counts the last line as 2 longer than it is (and a string of
	// one line as 2 longer too: its rfind gives -1); the same count puts a
	// suffix on a new line exactly where torch does.
	line := len(s) - strings.LastIndexByte(s, '\n') + 1
	for _, suffix := range suffixes {
		if line+len(suffix)+2 > printWidth {
			b.WriteString(",\n" + strings.Repeat(" ", printIndent) + suffix)
			line = printIndent + len(suffix)
		} else {
			b.WriteString(", " + suffix)
			line += len(suffix) + 2
		}
	}
	b.WriteString(")")
	return b.String()
}

// dataString is x's elements as torch prints them between "tensor(" and
// the suffixes. The width and number format are chosen from the summary
// alone, as torch's are.
func (x *Tensor) dataString() (string, error) {
	shown, err := x.summary(x.t.Numel() > printThreshold)
	if err != nil {
		return "", err
	}
	data, err := shown.host("string")
	shape := shown.t.Shape
	shown.Release()
	if err != nil {
		return "", err
	}
	p := printLayout{shape: shape, strides: dispatch.ContiguousStrides(shape), cut: make([]bool, len(shape))}
	for d, n := range x.t.Shape {
		p.cut[d] = x.t.Numel() > printThreshold && n > 2*printEdge
	}
	p.cells, p.width = elementStrings(data)
	return p.block(0, 0, printIndent), nil
}

// summary is x itself, or with summarise, x with each dim longer than
// 2·printEdge cut to its first and last printEdge entries, taken on the
// device (torch's get_summarized_data), so that only what is printed is
// read back. The caller releases the result.
func (x *Tensor) summary(summarise bool) (*Tensor, error) {
	var t *dispatch.Tensor
	var err error
	if summarise {
		t, err = summarised(x.t, 0)
	} else {
		t, err = x.t.CheckedView(x.t.Shape, x.t.Strides, x.t.Offset)
	}
	if err != nil {
		// Released by another goroutine since String checked x.
		if e := x.check("string"); e != nil {
			return nil, e
		}
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
		// t may be x itself, which another goroutine may release.
		return t.CheckedView(t.Shape, t.Strides, t.Offset)
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

// printLayout places the printed elements of a summary (row-major, of shape
// and strides) in brackets; cut marks the dims that the summary shortened,
// where "..." stands for their middle entries.
type printLayout struct {
	shape, strides []int
	cut            []bool
	cells          []string // the elements, each padded to width
	width          int
}

// block is the part of the summary from dim on, at offset off, whose
// first line starts at column indent, as torch's
// _tensor_str_with_formatter prints it: sub-blocks one column further in,
// separated by as many newlines as they have dims, less one.
func (p *printLayout) block(dim, off, indent int) string {
	switch dim {
	case len(p.shape): // a 0-d tensor
		return p.cells[off]
	case len(p.shape) - 1:
		return p.row(off, indent)
	}
	var parts []string
	for i := range p.shape[dim] {
		if p.cut[dim] && i == printEdge {
			parts = append(parts, "...")
		}
		parts = append(parts, p.block(dim+1, off+i*p.strides[dim], indent+1))
	}
	sep := "," + strings.Repeat("\n", len(p.shape)-dim-1) + strings.Repeat(" ", indent+1)
	return "[" + strings.Join(parts, sep) + "]"
}

// row is the last dim's entries at offset off, as torch's _vector_str
// prints them: as many to a line as fit in printWidth at width+2 columns
// each (at least one), later lines under the first entry. torch counts the
// " ..." of a summarised row as an entry, so it does here too.
func (p *printLayout) row(off, indent int) string {
	dim := len(p.shape) - 1
	var items []string
	for i := range p.shape[dim] {
		if p.cut[dim] && i == printEdge {
			items = append(items, " ...")
		}
		items = append(items, p.cells[off+i*p.strides[dim]])
	}
	perLine := max(1, (printWidth-indent)/(p.width+2))
	var lines []string
	for len(items) > 0 {
		n := min(perLine, len(items))
		lines = append(lines, strings.Join(items[:n], ", "))
		items = items[n:]
	}
	return "[" + strings.Join(lines, ",\n"+strings.Repeat(" ", indent+1)) + "]"
}

// elementStrings is each element of host data as String
// prints it, padded on the left to the width it returns. An int64 is
// printed from its own value, not widened to float64, which rounds one
// past 2⁵³ (2⁵³+1 printed as 2⁵³, 2⁶³-1 as -2⁶³).
func elementStrings(data any) ([]string, int) {
	var cells []string
	counts := func(int) bool { return true }
	switch d := data.(type) {
	case []int64:
		cells = convertEach(d, func(v int64) string { return strconv.FormatInt(v, 10) })
	case []bool:
		cells = convertEach(d, func(v bool) string {
			if v {
				return "True"
			}
			return "False"
		})
	case []int32, []int8, []uint8:
		cells = convertEach(asFloat64s(d), func(v float64) string { return strconv.FormatInt(int64(v), 10) })
	default:
		vals := asFloat64s(data)
		cells = convertEach(vals, chooseFloatFormat(vals).format)
		// torch's width counts the finite nonzero values alone: nan,
		// inf and 0 may stick out of it or fall short of it.
		counts = func(i int) bool { return isFiniteNonzero(vals[i]) }
	}
	width := 1
	for i, c := range cells {
		if counts(i) {
			width = max(width, len(c))
		}
	}
	for i, c := range cells {
		cells[i] = strings.Repeat(" ", max(0, width-len(c))) + c
	}
	return cells, width
}

func isFiniteNonzero(v float64) bool { return v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0) }

// floatFormat is how torch's _Formatter writes the values of a float
// tensor: as whole numbers with a point ("2."), with 4 decimals, or in
// scientific notation with 4.
type floatFormat struct{ whole, sci bool }

// chooseFloatFormat picks the format from the finite nonzero values, as
// torch's _Formatter does (a float16 or bfloat16 tensor's widened to
// float32 first, which changes none): whole numbers stay whole unless
// their magnitudes span more than 1000 times or one passes 1e8, when they
// are scientific; others are scientific past those or with a magnitude
// under 1e-4. A tensor of no such value prints whole ("0.", "nan").
func chooseFloatFormat(vals []float64) floatFormat {
	whole, lo, hi := true, math.Inf(1), 0.0
	for _, v := range vals {
		if !isFiniteNonzero(v) {
			continue
		}
		whole = whole && v == math.Ceil(v)
		lo, hi = min(lo, math.Abs(v)), max(hi, math.Abs(v))
	}
	if hi == 0 {
		return floatFormat{whole: true}
	}
	wide := hi/lo > 1000 || hi > 1e8
	if whole {
		return floatFormat{whole: true, sci: wide}
	}
	return floatFormat{sci: wide || lo < 1e-4}
}

// format writes v as Python's "{:.4e}", "{:.0f}." or "{:.4f}" would, but
// for nan and ±inf, which no format changes (and which get no point).
func (f floatFormat) format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case f.sci:
		return strconv.FormatFloat(v, 'e', 4, 64)
	case f.whole:
		return strconv.FormatFloat(v, 'f', 0, 64) + "."
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
