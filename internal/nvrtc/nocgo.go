//go:build !cgo

package nvrtc

import "errors"

// Library is an opened NVRTC; without cgo none can be opened.
type Library struct{}

// Open reports that NVRTC needs cgo.
func Open(path string) (*Library, error) {
	return nil, errors.New("nvrtc: opening " + path + " needs cgo (build with CGO_ENABLED=1)")
}

// Version is unreachable without cgo: Open gives no Library.
func (l *Library) Version() (major, minor int, err error) {
	return 0, 0, errors.New("nvrtc: needs cgo")
}

// Compile is unreachable without cgo: Open gives no Library.
func (l *Library) Compile(src, name string, opts []string) ([]byte, error) {
	return nil, errors.New("nvrtc: needs cgo")
}
