package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // registers png
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart geometry: each workload is a group of bars, one per series.
const (
	plotWidth = 9 * vg.Inch
	barWidth  = vg.Length(11)
	groupGap  = vg.Length(10)
	chartPad  = vg.Length(80) // title and value axis around the bars
	margin    = vg.Length(12) // around each chart and the legend
	// labelRoom is the share of the value axis past the longest bar or
	// error bar, where its value label goes.
	labelRoom = 1.25
)

// plotFormat is the image format that path's extension names, or "".
func plotFormat(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:]
	}
	return ""
}

// newCanvas is an image of w×h in format. An SVG carries its fonts: the
// layout is measured with gonum's Liberation fonts, and a viewer that lacks
// them draws the row labels in a wider font, over the bars.
func newCanvas(w, h vg.Length, format string) (vg.CanvasWriterTo, error) {
	if format == "svg" {
		return vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true)), nil
	}
	return draw.NewFormattedCanvas(w, h, format)
}

// series is one set of bars: lathe or PyTorch on one device. Its color is
// the same in every chart, so one legend serves them all.
type series struct {
	name   string
	device string
	torch  bool
	color  color.Color
}

// side is the series' measurement in r, or nil.
func (s series) side(r row) *measurement {
	m := r.Lathe
	if s.torch {
		m = r.Torch
	}
	if r.Device != s.device || m == nil || len(m.Samples) == 0 {
		return nil
	}
	return m
}

// allSeries lists lathe and PyTorch on each device that has a measured
// row, in the rows' order, each with its color.
func allSeries(rows []row) []series {
	var ss []series
	for _, r := range rows {
		for _, s := range []series{{name: "lathe " + r.Device, device: r.Device}, {name: "torch " + r.Device, device: r.Device, torch: true}} {
			known := slices.ContainsFunc(ss, func(o series) bool { return o.name == s.name })
			if !known && s.side(r) != nil {
				s.color = plotutil.Color(len(ss))
				ss = append(ss, s)
			}
		}
	}
	return ss
}

// writePlot draws one horizontal grouped bar chart per workload family,
// stacked in one image under one legend: lathe's bars beside PyTorch's for
// each workload, the rate at the median time with the rates at the
// quartiles as an error bar.
func writePlot(path string, rep *report) error {
	ss := allSeries(rep.Rows)
	if len(ss) == 0 {
		return fmt.Errorf("plot: no measured rows to draw")
	}
	legend := plot.NewLegend()
	legend.Top = true
	for _, s := range ss {
		legend.Add(s.name, swatch{s.color})
	}
	lr := legend.Rectangle(draw.Canvas{})
	legendHeight := lr.Max.Y - lr.Min.Y + 2*margin

	var charts []*plot.Plot
	var heights []vg.Length
	for _, f := range families {
		var rows []row
		for _, r := range rep.Rows {
			if r.Family == f.Name {
				rows = append(rows, r)
			}
		}
		p, h, err := familyChart(f.Title, rows, ss)
		if err != nil {
			return fmt.Errorf("plot %s: %w", f.Name, err)
		}
		if p != nil {
			charts = append(charts, p)
			heights = append(heights, h)
		}
	}
	if len(charts) == 0 {
		return fmt.Errorf("plot: no measured row is in a family")
	}
	total := legendHeight
	for _, h := range heights {
		total += h
	}
	c, err := newCanvas(plotWidth, total, plotFormat(path))
	if err != nil {
		return err
	}
	// A chart with narrower row labels is inset by the difference, so that
	// every chart's value axis starts at the same x. (Padding the labels
	// with spaces would not do: an SVG viewer drops leading spaces.)
	widths := make([]vg.Length, len(charts))
	for i, p := range charts {
		widths[i] = rowLabelWidth(p)
	}
	widest := slices.Max(widths)

	dc := draw.New(c)
	top := total
	band := dc
	band.Min.Y = top - legendHeight
	legend.Draw(draw.Crop(band, margin, -margin, margin, -margin))
	top -= legendHeight
	for i, p := range charts {
		sub := dc
		sub.Min.Y, sub.Max.Y = top-heights[i], top
		// A margin, so that the last tick label stays inside.
		p.Draw(draw.Crop(sub, margin+widest-widths[i], -2*margin, margin, -margin))
		top -= heights[i]
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// familyChart draws the rows of one family, a bar for each series that
// measured any of them, and returns the chart and the height it needs; a
// nil chart when no row was measured.
func familyChart(title string, rows []row, all []series) (*plot.Plot, vg.Length, error) {
	var names []string
	var ss []series
	for _, r := range rows {
		for _, s := range all {
			if s.side(r) == nil {
				continue
			}
			if !slices.Contains(names, r.Workload) {
				names = append(names, r.Workload)
			}
			if !slices.ContainsFunc(ss, func(o series) bool { return o.name == s.name }) {
				ss = append(ss, s)
			}
		}
	}
	if len(names) == 0 {
		return nil, 0, nil
	}
	// Bars in the order of the legend, and the first workload at the top:
	// NominalY puts index 0 at the bottom.
	slices.SortStableFunc(ss, func(a, b series) int {
		return slices.IndexFunc(all, func(o series) bool { return o.name == a.name }) -
			slices.IndexFunc(all, func(o series) bool { return o.name == b.name })
	})
	slices.Reverse(names)
	at := func(name string) int { return slices.Index(names, name) }

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: %s, higher is better", title, rows[0].Unit)
	p.X.Label.Text = rows[0].Unit + " (bar: at the median time; whisker: at the quartiles)"
	p.X.Min = 0
	p.X.Tick.Marker = shortTicks{}
	p.NominalY(names...)
	// One unit of the category axis per workload, so that a group's bars
	// stay within it (and clear of the title and the value axis).
	p.Y.Min, p.Y.Max = -0.5, float64(len(names))-0.5
	p.Y.Padding = 0
	p.Add(plotter.NewGrid())

	xmax := 0.0
	for i, s := range ss {
		vals := make(plotter.Values, len(names))
		whiskers := spreadBars{color: s.color}
		var xys plotter.XYs
		var labels []string
		for _, r := range rows {
			m := s.side(r)
			if m == nil {
				continue
			}
			y := at(r.Workload)
			vals[y] = m.Rate
			lo, hi := min(m.RateAtQ1, m.RateAtQ3), max(m.RateAtQ1, m.RateAtQ3)
			whiskers.y = append(whiskers.y, float64(y))
			whiskers.lo = append(whiskers.lo, lo)
			whiskers.hi = append(whiskers.hi, hi)
			right := max(m.Rate, hi)
			xys = append(xys, plotter.XY{X: right, Y: float64(y)})
			labels = append(labels, shortNumber(m.Rate))
			xmax = max(xmax, right)
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return nil, 0, err
		}
		bars.Horizontal = true
		bars.Color = s.color
		bars.LineStyle.Width = 0
		// Bars of a group sit side by side, series 0 on top.
		bars.Offset = (vg.Length(len(ss)-1)/2 - vg.Length(i)) * barWidth
		whiskers.offset = bars.Offset
		p.Add(bars, whiskers)
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return nil, 0, err
		}
		for j := range l.TextStyle {
			l.TextStyle[j].Font.Size = vg.Points(8)
			l.TextStyle[j].YAlign = text.YCenter
		}
		l.Offset = vg.Point{X: 4, Y: bars.Offset}
		p.Add(l)
	}
	p.X.Max = labelRoom * xmax
	h := chartPad + vg.Length(len(names))*(vg.Length(len(ss))*barWidth+groupGap)
	return p, h, nil
}

// rowLabelWidth is the width of p's widest row label.
func rowLabelWidth(p *plot.Plot) vg.Length {
	var w vg.Length
	for _, t := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		w = max(w, p.Y.Tick.Label.Width(t.Label))
	}
	return w
}

// spreadBars are the whiskers over one series' bars: from the rate at
// one quartile of the time to the rate at the other, at the bars' offset
// (which plotter.XErrorBars has no way to take).
type spreadBars struct {
	y, lo, hi []float64
	offset    vg.Length
	color     color.Color
}

func (b spreadBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	// Dark over the bar, so that a whisker inside the bar shows.
	style := draw.LineStyle{Color: color.Gray{Y: 40}, Width: vg.Points(1)}
	capHalf := barWidth / 3
	for i, y := range b.y {
		yy := trY(y) + b.offset
		x0, x1 := trX(b.lo[i]), trX(b.hi[i])
		c.StrokeLine2(style, x0, yy, x1, yy)
		c.StrokeLine2(style, x0, yy-capHalf, x0, yy+capHalf)
		c.StrokeLine2(style, x1, yy-capHalf, x1, yy+capHalf)
	}
}

// swatch is a legend entry's thumbnail: a square of the series' color.
type swatch struct{ color color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(s.color, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}

// shortTicks are gonum's default ticks on the value axis, labelled as
// shortNumber writes them (25k, not 25000.00).
type shortTicks struct{}

func (shortTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = shortNumber(ts[i].Value)
		}
	}
	return ts
}
