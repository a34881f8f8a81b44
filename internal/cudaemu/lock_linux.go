package cudaemu

import (
	"os"
	"syscall"
)

// lock takes an exclusive flock on path, waiting for it, and returns its
// release; where the file cannot be opened it returns at once.
func lock(path string) (unlock func()) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return func() {}
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	return func() { f.Close() } // closing releases the lock
}
