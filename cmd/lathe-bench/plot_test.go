package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestShortTicks checks the value axis's labels.
func TestShortTicks(t *testing.T) {
	// gonum's own labels read 25000.00 and 2500.00: no trailing zeros.
	trailingZero := regexp.MustCompile(`\.\d*0[kMGT]?$`)
	for _, hi := range []float64{25000, 5400, 3.3, 0.05, 4.2e6} {
		for _, tk := range (shortTicks{}).Ticks(0, hi) {
			if trailingZero.MatchString(tk.Label) {
				t.Errorf("ticks to %g: %g is labelled %q", hi, tk.Value, tk.Label)
			}
		}
	}
}

// TestPlotSeveralDevices draws rows of two devices, some without PyTorch
// and some skipped, as png and svg: every measured series gets one color in
// every chart, and the svg carries its fonts.
func TestPlotSeveralDevices(t *testing.T) {
	rep := &report{Rows: []row{
		fakeRow("step a", "mlp", "cpu", 2e-3, 1e-3),
		fakeRow("step a", "mlp", "wgpu:0", 3e-3, 0),
		fakeRow("add 1 element", "dispatch", "cpu", 3e-7, 1e-6),
		{Workload: "add 1 element", Family: "dispatch", Device: "wgpu:0", Skipped: "not here"},
	}}
	ss := allSeries(rep.Rows)
	var names []string
	for _, s := range ss {
		names = append(names, s.name)
	}
	if got := strings.Join(names, ", "); got != "lathe cpu, torch cpu, lathe wgpu:0" {
		t.Errorf("series %s, want lathe cpu, torch cpu, lathe wgpu:0", got)
	}
	dir := t.TempDir()
	for _, name := range []string{"bench.png", "bench.svg"} {
		path := filepath.Join(dir, name)
		if err := writePlot(path, rep); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %d bytes, %v", name, len(b), err)
		}
		if strings.HasSuffix(name, ".svg") && !bytes.Contains(b, []byte("@font-face")) {
			t.Errorf("the svg does not embed its font")
		}
	}
	if err := writePlot(filepath.Join(dir, "none.png"), &report{Rows: rep.Rows[3:]}); err == nil {
		t.Errorf("a plot of no measured row: no error")
	}
}
