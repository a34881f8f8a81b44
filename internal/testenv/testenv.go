package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// RequireEnv names the devices a run requires, comma-separated ("cpu,wgpu:0").
const RequireEnv = "LATHE_REQUIRE_DEVICES"

// SummaryEnv names the file that the run's summary lines are appended to.
const SummaryEnv = "LATHE_TEST_SUMMARY"

// EmulatedEnv lists the devices that a run drives through a stand-in
// driver on the host emulation of their kernels (internal/emucuda),
// comma-separated, each a device's String or dev=how (how has no comma):
// the summary names it "dev (how)", "cuda:0 (host emulation)" where how is
// left out, so that its cases never count as the device's. Such a run
// writes no line about other devices: the run that started it does.
const EmulatedEnv = "LATHE_TEST_EMULATED"

// summaryName is dev as the summary names it; ok is false where the run
// emulates other devices than dev, whose lines the parent run writes.
func summaryName(dev string) (name string, ok bool) {
	list := os.Getenv(EmulatedEnv)
	for _, e := range strings.Split(list, ",") {
		d, how, found := strings.Cut(strings.TrimSpace(e), "=")
		if d == dev {
			if !found {
				how = "host emulation"
			}
			return dev + " (" + how + ")", true
		}
	}
	return dev, list == ""
}

// HostOnly skips t in a run that emulates a device (EmulatedEnv), for a
// test with no case on such a device: the run that started the emulated
// one has run it, and a second run is only time (these children run
// whole packages' tests).
func HostOnly(t testing.TB) {
	t.Helper()
	if os.Getenv(EmulatedEnv) != "" {
		t.Skip("no case on an emulated device: the run that started this one runs it")
	}
}

// ParentRuns reports whether dev's cases belong to another run: in a run
// that emulates devices (EmulatedEnv), every device it does not emulate,
// which the run that started it tests. A test that loops over devices
// leaves those out there, since running them again is only time.
func ParentRuns(dev string) bool {
	list := os.Getenv(EmulatedEnv)
	if list == "" {
		return false
	}
	for _, e := range strings.Split(list, ",") {
		if d, _, _ := strings.Cut(strings.TrimSpace(e), "="); d == dev {
			return false
		}
	}
	return true
}

// SkipParentRuns skips t where ParentRuns(dev), saying so.
func SkipParentRuns(t testing.TB, dev string) {
	t.Helper()
	if ParentRuns(dev) {
		t.Skipf("%s is tested by the run that started this emulated one", dev)
	}
}

// Required reports whether the run requires dev (a device's String, "wgpu:0").
func Required(dev string) bool {
	for _, d := range strings.Split(os.Getenv(RequireEnv), ",") {
		if strings.TrimSpace(d) == dev {
			return true
		}
	}
	return false
}

// SkipDevice skips t because dev cannot be opened, saying why, or fails t
// where the run requires dev. Either way the skip is written to the summary.
func SkipDevice(t testing.TB, dev string, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	Without(t, dev, "%s", reason)
	t.Skip(reason)
}

// Without is SkipDevice for a test that goes on without dev, on the
// devices that open (the cpu, with wgpu:0 left out of a comparison): it
// says so in t's log and the summary, by name, or fails t where the run
// requires dev.
func Without(t testing.TB, dev string, format string, args ...any) {
	t.Helper()
	reason := fmt.Sprintf(format, args...)
	name, ok := summaryName(dev)
	if Required(dev) {
		if ok {
			appendLine("unavailable", t.Name(), name, "required", oneLine(reason))
		}
		t.Fatalf("%s is required here (%s=%s) but: %s", dev, RequireEnv, os.Getenv(RequireEnv), reason)
	}
	if ok {
		appendLine("unavailable", t.Name(), name, "skipped", oneLine(reason))
	}
	t.Logf("%s skipped: %s", dev, reason)
}

// Record writes a suite's counts for one device to the summary: cases run
// (passed or failed), skipped, and failed.
func Record(suite, dev string, run, skipped, failed int) {
	if name, ok := summaryName(dev); ok {
		appendLine("cases", suite, name, fmt.Sprint(run), fmt.Sprint(skipped), fmt.Sprint(failed))
	}
}

// appendLine appends one tab-separated line to the summary file, if the run
// keeps one. Test binaries of several packages run at once: each line is one
// write to a file opened for appending, which the kernel does not interleave.
func appendLine(fields ...string) {
	path := os.Getenv(SummaryEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: summary %s: %v\n", path, err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(fields, "\t") + "\n"); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: summary %s: %v\n", path, err)
	}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Count tallies a suite's cases on one device, for Record.
type Count struct{ Run, Skipped, Failed int }

// Case runs f as the subtest name of t and counts it: skipped, or run (and
// failed, where it failed).
func (c *Count) Case(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		defer func() {
			switch {
			case t.Skipped():
				c.Skipped++
			case t.Failed():
				c.Run++
				c.Failed++
			default:
				c.Run++
			}
		}()
		f(t)
	})
}
