//go:build !unix

package lathe

// maxRSS is 0 where the system has no getrusage.
func maxRSS() int64 { return 0 }
