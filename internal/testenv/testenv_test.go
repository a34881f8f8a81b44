package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSkipDevice runs a test that skips for an unopened device in a child
// process: with the device required it fails, without it skips, and both
// times the summary names the test, the device and the reason.
func TestSkipDevice(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "1" {
		SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %s", "no Dawn here")
		t.Log("reached past SkipDevice")
		return
	}
	for _, c := range []struct {
		require      string
		fails        bool
		summaryState string
	}{
		{"cpu,wgpu:0", true, "required"},
		{"cpu, wgpu:0 ", true, "required"},
		{"cpu", false, "skipped"},
		{"", false, "skipped"},
		{"wgpu:1", false, "skipped"},
	} {
		summary := filepath.Join(t.TempDir(), "summary.tsv")
		out, err := RunChild("TestSkipDevice", "TESTENV_CHILD=1", RequireEnv+"="+c.require, SummaryEnv+"="+summary)
		if failed := err != nil; failed != c.fails {
			t.Errorf("%s=%q: failed %v, want %v:\n%s", RequireEnv, c.require, failed, c.fails, out)
		}
		if strings.Contains(string(out), "reached past SkipDevice") {
			t.Errorf("%s=%q: the test went on past SkipDevice:\n%s", RequireEnv, c.require, out)
		}
		if !c.fails && !strings.Contains(string(out), "--- SKIP: TestSkipDevice") {
			t.Errorf("%s=%q: the test did not skip:\n%s", RequireEnv, c.require, out)
		}
		b, err := os.ReadFile(summary)
		if err != nil {
			t.Fatalf("%s=%q: %v", RequireEnv, c.require, err)
		}
		want := "unavailable\tTestSkipDevice\twgpu:0\t" + c.summaryState + "\twgpu:0 is unavailable: no Dawn here\n"
		if string(b) != want {
			t.Errorf("%s=%q: summary %q, want %q", RequireEnv, c.require, b, want)
		}
	}
}

func TestCount(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "summary.tsv")
	t.Setenv(SummaryEnv, summary)
	var c Count
	c.Case(t, "runs", func(t *testing.T) {})
	c.Case(t, "skips", func(t *testing.T) { t.Skip("not here") })
	c.Case(t, "runs again", func(t *testing.T) {})
	if c != (Count{Run: 2, Skipped: 1}) {
		t.Errorf("count %+v, want 2 run and 1 skipped", c)
	}
	Record("suite", "cpu", c.Run, c.Skipped, c.Failed)
	b, err := os.ReadFile(summary)
	if err != nil || string(b) != "cases\tsuite\tcpu\t2\t1\t0\n" {
		t.Errorf("summary %q (%v)", b, err)
	}
}

// TestEmulatedNames: the summary names a device that EmulatedEnv lists as
// its host emulation (or as the list says), in the case counts and the
// skips, and such a run writes nothing about the other devices.
func TestEmulatedNames(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "summary.tsv")
	t.Setenv(SummaryEnv, summary)
	t.Setenv(RequireEnv, "") // make test requires wgpu:0, which this test skips
	t.Setenv(EmulatedEnv, "cuda:0")
	Record("conformance", "cuda:0", 3, 1, 0)
	Record("conformance", "cpu", 2, 0, 0)
	t.Run("skip", func(t *testing.T) { SkipDevice(t, "cuda:0", "not here") })
	t.Run("skip another", func(t *testing.T) { SkipDevice(t, "wgpu:0", "not here") })
	t.Setenv(EmulatedEnv, "cuda:1, cuda:0=emulated; with stand-ins")
	Record("gradients", "cuda:0", 4, 0, 0)
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	want := "cases\tconformance\tcuda:0 (host emulation)\t3\t1\t0\n" +
		"unavailable\tTestEmulatedNames/skip\tcuda:0 (host emulation)\tskipped\tnot here\n" +
		"cases\tgradients\tcuda:0 (emulated; with stand-ins)\t4\t0\t0\n"
	if string(b) != want {
		t.Errorf("summary %q, want %q", b, want)
	}
}

// TestParentRuns: a run that emulates devices leaves every other device to
// the run that started it, and a plain run leaves none.
func TestParentRuns(t *testing.T) {
	t.Setenv(EmulatedEnv, "")
	if ParentRuns("cpu") || ParentRuns("cuda:0") {
		t.Error("a plain run leaves a device to a parent")
	}
	t.Setenv(EmulatedEnv, "cuda:1, cuda:0=emulated; with stand-ins")
	for dev, want := range map[string]bool{"cpu": true, "wgpu:0": true, "cuda:0": false, "cuda:1": false, "cuda:2": true} {
		if got := ParentRuns(dev); got != want {
			t.Errorf("ParentRuns(%q) = %v, want %v", dev, got, want)
		}
	}
	t.Run("skips", func(t *testing.T) {
		SkipParentRuns(t, "wgpu:0")
		t.Error("SkipParentRuns let wgpu:0 run in a run that emulates cuda:0")
	})
}
