package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// printTable writes the machine's summary and one line per row.
func printTable(out io.Writer, rep *report) {
	m := rep.Machine
	fmt.Fprintf(out, "%s, %d cores, GOMAXPROCS %d, %s, %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.GC, m.Go)
	for _, d := range m.Devices {
		if d.Used {
			fmt.Fprintf(out, "lathe %s: %s\n", d.Device, d.Detail)
		}
	}
	switch {
	case m.Torch != nil:
		fmt.Fprintf(out, "torch %s (%s), %d threads\n", m.Torch.Version, m.Torch.BLAS, m.Torch.Threads)
	case m.NoTorch != "":
		fmt.Fprintf(out, "torch: not measured: %s\n", firstLine(m.NoTorch))
	}
	fmt.Fprintln(out)

	withTorch := rep.Config.VsTorch
	width := 0
	for _, r := range rep.Rows {
		width = max(width, utf8.RuneCountInString(r.Workload))
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	header := []string{pad("workload", width), "device", "lathe time/step", "IQR", "lathe rate"}
	if withTorch {
		header = append(header, "torch time/step", "IQR", "torch rate", "lathe/torch time")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, r := range rep.Rows {
		cells := []string{pad(r.Workload, width), r.Device}
		if r.Skipped != "" {
			cells = append(cells, "skipped", "", "")
			if withTorch {
				cells = append(cells, "", "", "", "")
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
			continue
		}
		cells = append(cells, measurementCells(r.Lathe, r.Unit)...)
		if withTorch {
			switch {
			case r.Torch != nil:
				cells = append(cells, measurementCells(r.Torch, r.Unit)...)
			default:
				cells = append(cells, "-", "", "")
			}
			ratio := "-"
			if r.TimeRatio > 0 {
				ratio = fmt.Sprintf("%.2f", r.TimeRatio)
			}
			cells = append(cells, ratio)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()

	fmt.Fprintln(out)
	fmt.Fprintln(out, "time/step: the median over the samples of the time of one step; IQR: the interquartile range of those times over the median;")
	fmt.Fprintln(out, "rate: the row's work over the median time (GFLOP/s, GB/s, tokens/s; steps/s or ops/s where the work is the step itself).")
	if withTorch {
		fmt.Fprintln(out, "lathe/torch time: lathe's median time over PyTorch's (below 1: lathe is faster).")
	}
	var notes rowNotes
	for _, r := range rep.Rows {
		key := r.Workload + " on " + r.Device
		if r.Skipped != "" {
			notes.add("skipped", r.Skipped, key)
			continue
		}
		if r.Lathe.Err != "" {
			notes.add("lathe failed", r.Lathe.Err, key)
		}
		if r.Torch != nil && r.Torch.Err != "" {
			notes.add("torch failed", firstLine(r.Torch.Err), key)
		}
		if r.NoTorch != "" && m.NoTorch == "" {
			notes.add("no torch figures", firstLine(r.NoTorch), key)
		}
	}
	notes.print(out)
}

// rowNotes gathers what happened to rows (skipped, failed, no torch
// figures), so that rows that share the same reason make one line.
type rowNotes struct {
	notes []rowNote
}

type rowNote struct {
	what, why string
	rows      []string
}

// add notes that row had what happen to it, because of why.
func (n *rowNotes) add(what, why, row string) {
	for i := range n.notes {
		if n.notes[i].what == what && n.notes[i].why == why {
			n.notes[i].rows = append(n.notes[i].rows, row)
			return
		}
	}
	n.notes = append(n.notes, rowNote{what: what, why: why, rows: []string{row}})
}

// print writes one line per reason, in the order the reasons first came:
// "what: row: why", or with several rows "what (n rows: a, b): why".
func (n *rowNotes) print(out io.Writer) {
	for _, e := range n.notes {
		if len(e.rows) == 1 {
			fmt.Fprintf(out, "%s: %s: %s\n", e.what, e.rows[0], e.why)
			continue
		}
		fmt.Fprintf(out, "%s (%d rows: %s): %s\n", e.what, len(e.rows), strings.Join(e.rows, ", "), e.why)
	}
}

// measurementCells are a measurement's median time, its spread and its
// rate.
func measurementCells(m *measurement, unit string) []string {
	if m == nil || len(m.Samples) == 0 {
		return []string{"failed", "", ""}
	}
	return []string{seconds(m.Median), fmt.Sprintf("%.1f%%", 100*m.spread()), shortNumber(m.Rate) + " " + unit}
}

// seconds writes a duration with three significant digits in a unit that
// suits it.
func seconds(s float64) string {
	switch {
	case s >= 1:
		return fmt.Sprintf("%.3g s", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3g ms", s*1e3)
	case s >= 1e-6:
		return fmt.Sprintf("%.3g µs", s*1e6)
	}
	return fmt.Sprintf("%.3g ns", s*1e9)
}

// shortNumber writes v with at most three significant digits and an SI
// suffix past a thousand: 25k, 19.1k, 3.7M, 2.5, 0.01 (for the table's
// rates, the bars' labels and the plot's ticks).
func shortNumber(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	// Round first, so that 999.7 becomes 1k, not 1000.
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	suffix := ""
	for _, s := range []string{"k", "M", "G", "T"} {
		if math.Abs(v) < 1000 {
			break
		}
		v, suffix = v/1000, s
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + suffix
}

// pad left-aligns s in a right-aligned table.
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// writeJSON writes the report, indented, to path.
func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// progress is the line on stderr that says what runs now. On a terminal it
// is rewritten in place; elsewhere (a log, CI) it prints one line per row.
type progress struct {
	w       io.Writer
	tty     bool
	width   int    // of the line on screen, to blank it
	lastKey string // the row last printed, off a terminal
}

// newProgress writes to w, in place if w is a terminal.
func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// update shows key (the row) and detail (how far it is).
func (p *progress) update(key, detail string) {
	if !p.tty {
		if key != p.lastKey {
			fmt.Fprintln(p.w, "lathe-bench:", key)
			p.lastKey = key
		}
		return
	}
	line := key + ": " + detail
	n := utf8.RuneCountInString(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(0, p.width-n)))
	p.width = n
}

// note prints a line that stays (a skipped device, a missing PyTorch).
func (p *progress) note(format string, args ...any) {
	p.done()
	fmt.Fprintf(p.w, "lathe-bench: "+format+"\n", args...)
}

// done blanks the progress line.
func (p *progress) done() {
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}
