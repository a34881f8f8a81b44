package alloc

import (
	"math"
	"slices"
)

// Giving memory back to the device: blocks leave the cache under the
// pool's lock, so no allocation can hand them out again, and go back to the
// device after the lock is released and the queued work is done (Drain).
// Releasing a tensor meanwhile only ever waits for the lock.

// EmptyCache gives every cached block that is a whole allocation, and every
// slab with no slot in use, back to the device, once the work queued on the
// device is done (PyTorch's torch.cuda.empty_cache). A failed Drain (a
// kernel's fault) is returned, and then nothing is given back.
func (p *Pool[H]) EmptyCache() error {
	return p.giveBack(math.MaxInt64)
}

// giveBack gives at least want cached bytes back to the device where the
// cache holds them (oldest first of the largest classes, then idle
// slabs), or all it can.
func (p *Pool[H]) giveBack(want int64) error {
	p.mu.Lock()
	r := p.take(want)
	p.mu.Unlock()
	if r.bytes == 0 {
		return nil
	}
	if !p.cfg.Heap {
		if err := p.mem.Drain(); err != nil {
			p.restore(r)
			return err
		}
	}
	var first error
	for _, h := range r.handles {
		if err := p.mem.Free(h); err != nil && first == nil {
			first = err
		}
	}
	p.mu.Lock()
	p.st.Reserved -= r.bytes
	p.st.Segments -= len(r.handles)
	p.mu.Unlock()
	return first
}

// leaving is what giveBack took out of the cache.
type leaving[H any] struct {
	blocks  []Block[H] // the cached blocks taken, slab slots included
	slabs   []*segment[H]
	handles []H   // the allocations to give back
	bytes   int64 // their size
}

// take takes blocks worth at least want bytes out of the cache. p.mu is
// held.
func (p *Pool[H]) take(want int64) leaving[H] {
	var r leaving[H]
	classes := make([]int64, 0, len(p.free))
	for class, list := range p.free {
		if len(*list) > 0 {
			classes = append(classes, class)
		}
	}
	slices.Sort(classes)
	slices.Reverse(classes)
	for _, class := range classes {
		if r.bytes >= want {
			break
		}
		if p.slabbed(class) {
			continue
		}
		l := p.free[class]
		list := *l
		i := 0
		for ; i < len(list) && r.bytes < want; i++ {
			r.blocks = append(r.blocks, list[i])
			r.handles = append(r.handles, list[i].Handle)
			r.bytes += class
		}
		*l = append(list[:0], list[i:]...)
		clear(list[len(list)-i:])
		p.st.Cached -= int64(i) * class
		p.cfg.Cap.add(-int64(i) * class)
	}
	// Slabs whose slots are all cached.
	for _, class := range classes {
		if r.bytes >= want || !p.slabbed(class) {
			continue
		}
		l := p.free[class]
		for _, b := range *l {
			if s := b.seg; s.used == 0 && !s.leaving && r.bytes < want {
				s.leaving = true
				r.slabs = append(r.slabs, s)
				r.handles = append(r.handles, s.handle)
				r.bytes += s.size
			}
		}
		list := *l
		kept := list[:0]
		for _, b := range list {
			if b.seg.leaving {
				r.blocks = append(r.blocks, b)
				p.st.Cached -= class
				p.cfg.Cap.add(-class)
			} else {
				kept = append(kept, b)
			}
		}
		clear(list[len(kept):])
		*l = kept
	}
	return r
}

// restore puts back in the cache what take took, when the device could
// not drain.
func (p *Pool[H]) restore(r leaving[H]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range r.slabs {
		s.leaving = false
	}
	for _, b := range r.blocks {
		l := p.list(b.Size)
		*l = append(*l, b)
		p.st.Cached += b.Size
		p.cfg.Cap.add(b.Size)
	}
}
