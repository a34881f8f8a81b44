//go:build !cgo

package cudaemu

import "errors"

const cgoEnabled = false

// Emulator is unavailable without cgo.
type Emulator struct{}

// Open reports that the emulator needs cgo.
func Open(path string) (*Emulator, error) {
	return nil, errors.New("cudaemu: opening " + path + " needs cgo")
}

// Launch is unreachable without cgo.
func (e *Emulator) Launch(fn string, grid, block [3]uint32, args ...any) error {
	return errors.New("cudaemu: needs cgo")
}

// Alloc is unreachable without cgo.
func Alloc(n int) uint64 { return 0 }

// Free is unreachable without cgo.
func Free(p uint64) {}

// Write is unreachable without cgo.
func Write(p uint64, b []byte) {}

// Read is unreachable without cgo.
func Read(p uint64, n int) []byte { return nil }
