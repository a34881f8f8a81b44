package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestShortNumber checks the labels of the table's rates, the bars and the
// plot's ticks.
func TestShortNumber(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 0.01: "0.01", 0.267: "0.267", 2.5: "2.5", 99: "99", 126.4: "126",
		999.7: "1k", 2500: "2.5k", 19056: "19.1k", 25000: "25k", 3.18e6: "3.18M", 4.2e9: "4.2G", -2500: "-2.5k",
	} {
		if got := shortNumber(v); got != want {
			t.Errorf("shortNumber(%g) = %q, want %q", v, got, want)
		}
	}
}

// TestRateIsWorkOverTime checks that every row's rate is its work over
// its time (one step for rows whose work is the step), so that higher is
// better in every column and chart, and that the rates at the quartiles
// bracket the rate at the median.
func TestRateIsWorkOverTime(t *testing.T) {
	const secs = 2e-3
	for _, w := range table(false) {
		work := w.Work
		switch w.Unit {
		case flops, memBytes:
			work /= 1e9
		case perStep:
			work = 1
		}
		if got := w.rate(secs) * secs; math.Abs(got-work) > 1e-9*work {
			t.Errorf("%s: rate·time = %g, want the work %g (%s)", w.Name, got, work, w.unitName())
		}
		m := summarise(w, 1, []float64{1e-3, 2e-3, 3e-3, 9e-3})
		if !(m.RateAtQ1 > m.Rate && m.Rate > m.RateAtQ3 && m.RateAtQ3 > 0) {
			t.Errorf("%s: rates at Q1, median, Q3: %g %g %g, want decreasing", w.Name, m.RateAtQ1, m.Rate, m.RateAtQ3)
		}
	}
}

// fakeRow is a measured row with a lathe time of secs per step and, when
// torchSecs > 0, PyTorch's.
func fakeRow(name, family, device string, secs, torchSecs float64) row {
	w := workload{Name: name, Family: family, Unit: perStep}
	r := row{Workload: name, Family: family, Device: device, Unit: w.unitName(),
		Lathe: summarise(w, 1, []float64{secs * 0.9, secs, secs * 1.2})}
	if torchSecs > 0 {
		r.Torch = summarise(w, 1, []float64{torchSecs, torchSecs * 1.1, torchSecs * 0.95})
		r.TimeRatio = r.Lathe.Median / r.Torch.Median
	}
	return r
}

// TestTableColumns checks the header, that the rate column is the work
// over the time, and that rows sharing a reason share one note.
func TestTableColumns(t *testing.T) {
	rep := &report{Config: config{VsTorch: true}}
	rep.Rows = []row{
		fakeRow("step a", "mlp", "cpu", 2e-3, 1e-3),
		fakeRow("step b", "mlp", "cpu", 4e-3, 0),
		fakeRow("step c", "mlp", "cpu", 1e-3, 0),
		fakeRow("step d", "mlp", "cpu", 1e-3, 0),
		{Workload: "step e", Family: "mlp", Device: "wgpu:0", Skipped: "no float64"},
		{Workload: "step f", Family: "mlp", Device: "wgpu:0", Skipped: "no float64"},
	}
	rep.Rows[1].NoTorch = "torch: no such op"
	rep.Rows[2].NoTorch = "torch: no such op"
	rep.Rows[3].NoTorch = "torch: another reason"
	var out bytes.Buffer
	printTable(&out, rep)
	text := out.String()
	lines := strings.Split(text, "\n")
	header := lines[2]
	for _, col := range []string{"lathe time/step", "IQR", "lathe rate", "torch time/step", "torch rate", "lathe/torch time"} {
		if !strings.Contains(header, col) {
			t.Errorf("the header has no %q column:\n%s", col, header)
		}
	}
	// 2 ms a step is 500 steps a second; PyTorch's 1 ms, 1k.
	if !strings.Contains(lines[3], "2 ms") || !strings.Contains(lines[3], "500 steps/s") || !strings.Contains(lines[3], "1k steps/s") {
		t.Errorf("row a does not read 2 ms, 500 steps/s beside 1k steps/s:\n%s", lines[3])
	}
	for _, want := range []string{
		"no torch figures (2 rows: step b on cpu, step c on cpu): torch: no such op\n",
		"no torch figures: step d on cpu: torch: another reason\n",
		"skipped (2 rows: step e on wgpu:0, step f on wgpu:0): no float64\n",
	} {
		if strings.Count(text, want) != 1 {
			t.Errorf("the notes lack one line %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "no torch figures"); n != 2 {
		t.Errorf("%d lines of no torch figures, want 2 (one per reason):\n%s", n, text)
	}
}
