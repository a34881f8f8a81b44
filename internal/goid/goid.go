// Package goid reads the calling goroutine's id, which is how lathe keeps
// per-goroutine modes (autodiff's NoGrad, the root package's Autocast) as
// PyTorch keeps them per thread: Go has no goroutine-local storage, so a
// mode is a map from this id, consulted only while some goroutine is in it.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Current returns the calling goroutine's id. Where this architecture's
// assembly gives the goroutine's runtime record (getg) and the id's place
// in it was found at start-up (offset), it reads the id from there, in a
// few nanoseconds; elsewhere it reads it from the stack header, which walks
// the whole stack and costs a microsecond or more. A backward pass runs
// under NoGrad, so every op it runs asked for the id: the header cost more
// than the ops of a small model.
func Current() uint64 {
	if off := offset(); off >= 0 {
		return *(*uint64)(unsafe.Add(getg(), off))
	}
	return fromStack()
}

// fromStack reads the id from the stack header ("goroutine 17 [running]:").
func fromStack() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// offset is where the id lies in the runtime's goroutine record, or -1.
// The record's layout is the runtime's own and changes between Go
// releases, so it is not written down here: it is found by looking for the
// id that the stack header gives, at each 8-byte place of the record's
// first recordScan bytes, and kept only if one place holds the id of
// every one of several goroutines (a place that held the id by chance in
// one would not in the others).
var offset = sync.OnceValue(findOffset)

// findOffset is offset's search. The race detector's pointer checks would
// stop a read past the record's end (its size is the runtime's too), which
// recordScan keeps the search from reaching.
func findOffset() int {
	if getg() == nil {
		return -1 // no assembly for this architecture
	}
	const goroutines = 4
	type sample struct {
		g  unsafe.Pointer
		id uint64
	}
	var samples [goroutines]sample
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range samples {
		wg.Add(1)
		go func() {
			samples[i] = sample{getg(), fromStack()}
			wg.Done()
			<-done // alive, so that no two samples share a record
		}()
	}
	wg.Wait()
	defer close(done)
	found := -1
	for off := 0; off < recordScan; off += 8 {
		all := true
		for _, s := range samples {
			if s.id == 0 || *(*uint64)(unsafe.Add(s.g, off)) != s.id {
				all = false
				break
			}
		}
		if all {
			if found >= 0 {
				return -1 // two places fit: trust neither
			}
			found = off
		}
	}
	return found
}

// recordScan is how much of the goroutine record offset searches: the
// record is over 300 bytes long, and the id lies in its first 200 in every
// Go release so far.
const recordScan = 256
