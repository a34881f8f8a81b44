//go:build amd64 || arm64

package goid

import "unsafe"

// getg returns the calling goroutine's runtime record (getg_*.s).
func getg() unsafe.Pointer
