package lathe

import (
	"bytes"
	"os"
	"strconv"
)

// resetPeakRSS starts a new measure of the process's peak resident set:
// it writes 5 to /proc/self/clear_refs, which sets the high-water mark
// VmHWM to the resident set now, and returns that. getrusage's maxrss
// would not do: Linux carries it across exec, so a child that the test
// binary starts begins with its parent's peak.
func resetPeakRSS() int64 {
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // where refused, the peak since start
	return procStatus("VmHWM:")
}

// peakRSS is the process's peak resident set in bytes (VmHWM), or 0 where
// /proc cannot say.
func peakRSS() int64 { return procStatus("VmHWM:") }

// procStatus reads a "kB" field of /proc/self/status in bytes, 0 if absent.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	_, after, ok := bytes.Cut(b, []byte(field))
	if !ok {
		return 0
	}
	f := bytes.Fields(after)
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(string(f[0]), 10, 64)
	return kb * 1024
}
