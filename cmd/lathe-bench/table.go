package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// printTable writes the machine's summary and one line per row.
func printTable(out io.Writer, rep *report) {
	m := rep.Machine
	fmt.Fprintf(out, "%s, %d cores, GOMAXPROCS %d, %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.Go)
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
	header := []string{pad("workload", width), "device", "lathe", "spread", "lathe rate"}
	if withTorch {
		header = append(header, "torch", "spread", "torch rate", "time lathe/torch")
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
	fmt.Fprintln(out, "lathe, torch: median time per step; spread: interquartile range over the median; rate at the median.")
	if withTorch {
		fmt.Fprintln(out, "time lathe/torch: lathe's median time over PyTorch's (below 1: lathe is faster).")
	}
	skips := map[string]bool{}
	for _, r := range rep.Rows {
		if r.Skipped != "" {
			if line := r.Device + " skipped rows: " + r.Skipped; !skips[line] {
				skips[line] = true
				fmt.Fprintln(out, line)
			}
			continue
		}
		if r.Lathe.Err != "" {
			fmt.Fprintf(out, "%s on %s: lathe failed: %s\n", r.Workload, r.Device, r.Lathe.Err)
		}
		if r.Torch != nil && r.Torch.Err != "" {
			fmt.Fprintf(out, "%s on %s: torch failed: %s\n", r.Workload, r.Device, firstLine(r.Torch.Err))
		}
		if r.NoTorch != "" && m.NoTorch == "" {
			fmt.Fprintf(out, "%s on %s: no torch figures: %s\n", r.Workload, r.Device, firstLine(r.NoTorch))
		}
	}
}

// measurementCells are a measurement's median, spread and rate.
func measurementCells(m *measurement, unit string) []string {
	if m == nil || len(m.Samples) == 0 {
		return []string{"failed", "", ""}
	}
	rate := fmt.Sprintf("%.1f %s", m.Rate, unit)
	if strings.HasPrefix(unit, "µs") {
		rate = barLabel(m.Rate) + " " + unit
	}
	return []string{seconds(m.Median), fmt.Sprintf("%.1f%%", 100*m.spread()), rate}
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
