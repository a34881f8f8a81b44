//go:build !linux

package lathe

// resetPeakRSS and peakRSS are 0 where there is no /proc/self/status.
func resetPeakRSS() int64 { return 0 }
func peakRSS() int64      { return 0 }
