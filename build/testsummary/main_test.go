package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = "cases\tconformance\tcpu\t10\t0\t0\n" +
	"cases\tconformance\twgpu:0\t8\t2\t0\n" +
	"cases\tconformance\tcpu\t5\t1\t1\n" +
	"unavailable\tTestConformance/cuda:0\tcuda:0\tskipped\tno driver\n"

func TestReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.tsv")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		require string
		bad     string // "" for a run that passes
		table   []string
	}{
		{"cpu,wgpu:0", "", []string{"cpu     yes       15/1 (1 failed)", "wgpu:0  yes       8/2", "cuda:0  no        -", "cuda:0: 1 tests skipped, as it is not required (TestConformance/cuda:0): no driver"}},
		{"cpu,cuda:0", "cuda:0 is required but 1 tests could not open it", nil},
		{"cpu,wgpu:1", "wgpu:1 is required but no conformance case ran on it", nil},
	} {
		devs, suites, err := read(path)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		bad := report(&out, devs, suites, c.require)
		if got := strings.Join(bad, "; "); got != c.bad {
			t.Errorf("require %s: failures %q, want %q\n%s", c.require, got, c.bad, out.String())
		}
		for _, line := range c.table {
			if !strings.Contains(out.String(), line) {
				t.Errorf("require %s: the summary lacks %q:\n%s", c.require, line, out.String())
			}
		}
	}
}

func TestReadRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"empty": "", "foreign": "ok\tsomething\n", "short": "cases\tconformance\tcpu\t1\n"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := read(path); err == nil {
			t.Errorf("%s: read accepted %q", name, text)
		}
	}
	if _, _, err := read(filepath.Join(dir, "missing")); err == nil {
		t.Error("read accepted a missing summary")
	}
}
