//go:build !linux

package cudaemu

// lock does nothing here: processes that load at once each build, and the
// first rename wins.
func lock(path string) (unlock func()) { return func() {} }
