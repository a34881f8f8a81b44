package dist

import (
	"slices"
	"sync"
)

// hostPool keeps host memory given back for the next buffers that fit in
// it: the TCP engine's frames, and the copies that a copying engine's
// calls (MPI's) make. A 64 MB all-reduce that took new memory each call
// cost more in page faults and zeroing than in copies (two ranks, one
// core each: 220 ms a call), and its garbage made the calls around it
// wait for the collector.
type hostPool struct {
	mu   sync.Mutex
	free [][]byte
}

// keepFree is how many buffers a pool keeps: a ring step takes one frame
// and gives it back; a call of MPI's takes two.
const keepFree = 4

// take is n bytes on an 8-byte boundary, with unspecified contents: the
// smallest buffer given back that holds them, or new memory.
func (p *hostPool) take(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = slices.Delete(p.free, best, best+1)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return aligned(n) // outside the lock: zeroing 32 MB takes milliseconds
}

// give hands back b, which take returned, for a later take; where the
// pool is full, the smallest of its buffers and b goes.
func (p *hostPool) give(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cap(b) == 0 {
		return
	}
	if len(p.free) == keepFree {
		i := 0
		for j, f := range p.free {
			if cap(f) < cap(p.free[i]) {
				i = j
			}
		}
		if cap(p.free[i]) >= cap(b) {
			return
		}
		p.free = slices.Delete(p.free, i, i+1)
	}
	p.free = append(p.free, b)
}
