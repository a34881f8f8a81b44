// Package faultinject fails a chosen raw allocation of a backend's pool,
// for the hooks that internal/faulttest drives (its Allocs). The hooks live
// in the backends' export_test.go files, which cannot import faulttest
// (it imports lathe, which imports them); this package imports neither.
package faultinject

import (
	"sync"

	"github.com/lathe-ml/lathe/alloc"
	"github.com/lathe-ml/lathe/dispatch"
)

// Counter counts raw allocations and picks the one to fail
// (faulttest.Allocs).
type Counter struct {
	mu        sync.Mutex
	n, failAt int
}

// Fail makes the n-th raw allocation from now (counting from 1) fail,
// once; n = 0 fails none.
func (c *Counter) Fail(n int) {
	c.mu.Lock()
	c.n, c.failAt = 0, n
	c.mu.Unlock()
}

// Count is how many raw allocations have been asked for since the last
// Fail.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Next counts an allocation and reports whether it is the one to fail.
func (c *Counter) Next() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n == c.failAt
}

// Memory is a device's memory whose allocation that C picks says the
// device is full, as the device would (Refusal says how it says so).
type Memory[H any] struct {
	alloc.Memory[H]
	C       *Counter
	Refusal string
}

// Alloc fails where C says to, else allocates.
func (m Memory[H]) Alloc(size int64) (H, error) {
	if m.C.Next() {
		var none H
		return none, &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: m.Refusal + " (an injected failure)"}
	}
	return m.Memory.Alloc(size)
}
