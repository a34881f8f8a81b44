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

// EmulatedEnv lists the devices (a device's String, comma-separated) that a
// run drives through a stand-in driver on the host emulation of their
// kernels (internal/conformance's TestEmulatedCUDA): the summary names each
// "cuda:0 (host emulation)", so that its cases never count as the device's.
const EmulatedEnv = "LATHE_TEST_EMULATED"

// summaryName is dev as the summary names it.
func summaryName(dev string) string {
	for _, d := range strings.Split(os.Getenv(EmulatedEnv), ",") {
		if strings.TrimSpace(d) == dev {
			return dev + " (host emulation)"
		}
	}
	return dev
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
	if Required(dev) {
		appendLine("unavailable", t.Name(), summaryName(dev), "required", oneLine(reason))
		t.Fatalf("%s is required here (%s=%s) but: %s", dev, RequireEnv, os.Getenv(RequireEnv), reason)
	}
	appendLine("unavailable", t.Name(), summaryName(dev), "skipped", oneLine(reason))
	t.Skip(reason)
}

// Record writes a suite's counts for one device to the summary: cases run
// (passed or failed), skipped, and failed.
func Record(suite, dev string, run, skipped, failed int) {
	appendLine("cases", suite, summaryName(dev), fmt.Sprint(run), fmt.Sprint(skipped), fmt.Sprint(failed))
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
