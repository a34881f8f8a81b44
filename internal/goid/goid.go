// Package goid reads the calling goroutine's id, which is how lathe keeps
// per-goroutine modes (autodiff's NoGrad, the root package's Autocast) as
// PyTorch keeps them per thread: Go has no goroutine-local storage, so a
// mode is a map from this id, consulted only while some goroutine is in it.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// Current returns the calling goroutine's id, read from its stack header
// ("goroutine 17 [running]:"). It costs about a microsecond, so callers
// read it only while a mode is active somewhere.
func Current() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
