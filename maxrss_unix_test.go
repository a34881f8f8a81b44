//go:build unix

package lathe

import "syscall"

// maxRSS is the process's maximum resident set so far, in bytes (0 where
// getrusage fails).
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss) * 1024 // kilobytes on Linux
}
