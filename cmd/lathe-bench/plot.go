package main

import (
	"fmt"
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
	_ "gonum.org/v1/plot/vg/vgsvg" // registers svg
)

// Chart geometry: each workload is a group of bars, one per series.
const (
	plotWidth = 9 * vg.Inch
	barWidth  = vg.Length(11)
	groupGap  = vg.Length(8)
	chartPad  = vg.Length(100) // title, axis and legend around the bars
	margin    = vg.Length(12)  // around each chart
)

// plotFormat is the image format that path's extension names, or "".
func plotFormat(path string) string {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:]
	}
	return ""
}

// series is one set of bars: lathe or PyTorch on one device.
type series struct {
	name   string
	device string
	torch  bool
}

// writePlot draws one horizontal grouped bar chart per workload family,
// stacked in one image: lathe's bars beside PyTorch's for each workload,
// rate for matmul and memory-bound rows, time for the others.
func writePlot(path string, rep *report) error {
	var charts []*plot.Plot
	var heights []vg.Length
	for _, f := range families {
		var rows []row
		for _, r := range rep.Rows {
			if r.Family == f.Name {
				rows = append(rows, r)
			}
		}
		if len(rows) == 0 {
			continue
		}
		p, h, err := familyChart(f.Title, rows)
		if err != nil {
			return fmt.Errorf("plot %s: %w", f.Name, err)
		}
		charts = append(charts, p)
		heights = append(heights, h)
	}
	if len(charts) == 0 {
		return fmt.Errorf("plot: no rows to draw")
	}
	var total vg.Length
	for _, h := range heights {
		total += h
	}
	c, err := draw.NewFormattedCanvas(plotWidth, total, plotFormat(path))
	if err != nil {
		return err
	}
	dc := draw.New(c)
	top := total
	for i, p := range charts {
		sub := dc
		sub.Min.Y, sub.Max.Y = top-heights[i], top
		// A margin, so that the last tick label and the legend stay inside.
		p.Draw(draw.Crop(sub, margin, -2*margin, margin, -margin))
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

// familyChart draws rows of one family and returns the chart and the
// height it needs.
func familyChart(title string, rows []row) (*plot.Plot, vg.Length, error) {
	var names []string
	var ss []series
	for _, r := range rows {
		if !slices.Contains(names, r.Workload) {
			names = append(names, r.Workload)
		}
		for _, s := range []series{{"lathe " + r.Device, r.Device, false}, {"torch " + r.Device, r.Device, true}} {
			if (!s.torch || r.Torch != nil) && !slices.Contains(ss, s) {
				ss = append(ss, s)
			}
		}
	}
	// The first workload at the top: NominalY puts index 0 at the bottom.
	slices.Reverse(names)
	at := func(name string) int { return slices.Index(names, name) }

	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = rows[0].Unit
	p.X.Min = 0
	p.NominalY(names...)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	xmax := 0.0
	for i, s := range ss {
		vals := make(plotter.Values, len(names))
		var xys plotter.XYs
		var labels []string
		for _, r := range rows {
			m := r.Lathe
			if s.torch {
				m = r.Torch
			}
			if r.Device != s.device || m == nil || len(m.Samples) == 0 {
				continue
			}
			y := at(r.Workload)
			vals[y] = m.Rate
			xys = append(xys, plotter.XY{X: m.Rate, Y: float64(y)})
			labels = append(labels, barLabel(m.Rate))
			xmax = max(xmax, m.Rate)
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return nil, 0, err
		}
		bars.Horizontal = true
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		// Bars of a group sit side by side, series 0 on top.
		bars.Offset = (vg.Length(len(ss)-1)/2 - vg.Length(i)) * barWidth
		p.Add(bars)
		p.Legend.Add(s.name, bars)
		if len(xys) > 0 {
			l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
			if err != nil {
				return nil, 0, err
			}
			for j := range l.TextStyle {
				l.TextStyle[j].Font.Size = vg.Points(8)
				l.TextStyle[j].YAlign = text.YCenter
			}
			l.Offset = vg.Point{X: 3, Y: bars.Offset}
			p.Add(l)
		}
	}
	// Room on the right for the value labels and the legend.
	p.X.Max = 1.3 * xmax
	h := chartPad + vg.Length(len(names))*(vg.Length(len(ss))*barWidth+groupGap)
	return p, h, nil
}

// barLabel writes a bar's value with three significant digits.
func barLabel(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
