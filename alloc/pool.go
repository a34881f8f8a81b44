package alloc

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
)

// Memory is what a pool needs of a backend: its device's raw calls. The
// pool calls them without holding its own lock, and may call them from
// any goroutine that allocates, so a backend must never call into its pool
// while it holds a lock that these methods take (that would deadlock).
type Memory[H any] interface {
	// Alloc gets size bytes of new memory from the device. A full device
	// is an error for which errors.Is(err, dispatch.ErrOutOfMemory).
	Alloc(size int64) (H, error)
	// Free gives memory that Alloc got back to the device. On a device
	// with queued work the pool calls it only after Drain, so no queued
	// work can still use the memory.
	Free(h H) error
	// Drain waits until no work queued on the device uses any memory. It
	// is not called for Heap memory, which has no queue.
	Drain() error
	// Info is the device's free and total memory in bytes; 0 for what the
	// device cannot tell.
	Info() (free, total int64, err error)
}

// Config is what differs between the pools of the backends.
type Config struct {
	// Device names the device in errors ("cuda:0").
	Device string
	// Classes is the size-class rule's numbers.
	Classes Classes
	// Slab, when not 0, is the size of the allocations that small
	// classes (at most Classes.Small, which must be at most Slab/2) are cut
	// from: one device allocation serves many small tensors, which are
	// most tensors, so their classes soon cost no device call at all. A
	// slab goes back to the device only when none of its slots is in use.
	Slab int64
	// Cap bounds the bytes kept cached; nil for no bound (as PyTorch's
	// caching allocator has none). Heap memory past the cap goes back at
	// once; device memory past it goes back at the next allocation that
	// needs new memory, after Drain, down to seven eighths of the cap.
	Cap *Cap
	// Pressure is the floor of the live bytes past which an allocation
	// that needs new memory first runs the garbage collector and waits
	// for the cleanups it queues, which hand back the blocks of tensors
	// nobody released. 0 means a sixteenth of the device's total memory,
	// or 1 GiB where the device cannot tell its total (HeapPressure for
	// Heap memory); a negative value turns the collection off (but not at
	// out of memory). After each collection the threshold is the live
	// bytes doubled (as Go's GOGC=100 sets the heap's), at most half the
	// room left on the device, and never below the floor. A Heap pool
	// does not wait: past the threshold it starts a collection beside the
	// caller and goes on (see collectBehind).
	Pressure int64
	// NoCache turns the caching off, for memory checkers such as
	// compute-sanitizer, which see only the device's own allocations (an
	// access past a tensor's end inside a slab or a larger cached block
	// is invisible to them): each Alloc is a device allocation of exactly
	// the bytes asked for, and Free gives it back at once, after Drain
	// (so Free waits for the device). PyTorch's
	// PYTORCH_NO_CUDA_MEMORY_CACHING=1 is the same switch.
	NoCache bool
	// Heap is set for memory that is the Go heap's (the cpu's): no queued
	// work uses it, and the host's memory is the device's. A heap pool
	// gives memory past the cap back at once, collects beside the caller
	// rather than before it (collectBehind), and checks a request only
	// against the device's total.
	Heap bool
	// Untracked is, for Heap memory, the size below which a block nobody
	// frees is the Go collector's, with no cleanup to free it (the cpu
	// gives small buffers none: it would cost more than their ops), so
	// Allocated leaves such blocks out: counted, they would only ever be
	// added, and the live bytes that the collection threshold follows
	// would grow with every small tensor dropped. 0 counts every block.
	Untracked int64
}

// Cap is a bound on the bytes that pools keep cached. Pools of one device
// that differ only in handle type (the cpu's, one per element type) share
// one.
type Cap struct {
	limit, cached atomic.Int64
}

// NewCap returns a cap of limit bytes.
func NewCap(limit int64) *Cap {
	c := &Cap{}
	c.limit.Store(limit)
	return c
}

// SetLimit changes the bound; pools meet it as they free and allocate.
func (c *Cap) SetLimit(limit int64) { c.limit.Store(limit) }

// Limit is the bound in bytes.
func (c *Cap) Limit() int64 { return c.limit.Load() }

// admit counts size more bytes cached, unless that takes the total past
// the limit; it reports whether it did.
func (c *Cap) admit(size int64) bool {
	if c == nil {
		return true
	}
	if c.cached.Add(size) > c.limit.Load() {
		c.cached.Add(-size)
		return false
	}
	return true
}

func (c *Cap) add(size int64) {
	if c != nil {
		c.cached.Add(size)
	}
}

// excess is how many cached bytes to give back: those past seven eighths
// of the limit, once the limit is passed.
func (c *Cap) excess() int64 {
	if c == nil {
		return 0
	}
	cached, limit := c.cached.Load(), c.limit.Load()
	if cached <= limit {
		return 0
	}
	return cached - (limit - limit/8)
}

// Block is a piece of device memory that one buffer holds at a time: its
// size class's bytes at Offset in the allocation Handle (Offset is not 0
// only for a slab's slots). A backend keeps the Block it got from Alloc and
// gives that same value to Free, once; a block of a pool without slabs is
// its Handle and Size alone, so a backend may keep those and give Free a
// Block made of them (the cpu does, to keep its buffers small).
type Block[H any] struct {
	Handle H
	Offset int64
	Size   int64
	seg    *segment[H] // the slab it was cut from; nil for a whole allocation
}

// segment is a slab: one allocation cut into slots of one class.
type segment[H any] struct {
	handle  H
	size    int64
	used    int  // slots handed out
	leaving bool // taken out of the cache to go back to the device
}

// Pool is one device's caching allocator. Its methods are safe to call
// from any goroutine (a buffer is freed by whoever releases its last
// tensor, the garbage collector's cleanup goroutine included), and Free
// never waits for the device (but with Config.NoCache).
type Pool[H any] struct {
	mem   Memory[H]
	cfg   Config
	total atomic.Int64 // the device's total memory; -1 until asked

	mu     sync.Mutex
	free   map[int64]*[]Block[H] // cached blocks by class, most recently freed last
	st     dispatch.MemoryStats  // without Free and Total
	nextGC int64                 // live bytes past which to collect; 0 for never

	collecting atomic.Bool // a Heap pool's collection is running (collectBehind)
	gcSeen     uint64      // a Heap pool's count of Go collections when nextGC was set

	// near holds the free lists of the classes from Align to
	// len(near)×Align, which most tensors' buffers are, by index (class
	// over Align, less one) as well as in free: an array read in place of a
	// hash on every Alloc and Free of a small op.
	near       [64]*[]Block[H]
	alignShift int
}

// New returns a pool over mem.
func New[H any](mem Memory[H], cfg Config) *Pool[H] {
	if cfg.Classes.Align <= 0 {
		panic("alloc: Classes.Align must be positive")
	}
	if cfg.Slab > 0 && (cfg.Classes.Small > cfg.Slab/2 || cfg.Slab%cfg.Classes.Align != 0) {
		panic("alloc: a slab must hold two slots of the largest small class, in whole Align steps")
	}
	if cfg.NoCache {
		cfg.Slab = 0
	}
	if cfg.Classes.Align&(cfg.Classes.Align-1) != 0 {
		panic("alloc: Classes.Align must be a power of two")
	}
	p := &Pool[H]{mem: mem, cfg: cfg, free: map[int64]*[]Block[H]{}, alignShift: bits.TrailingZeros64(uint64(cfg.Classes.Align))}
	p.total.Store(-1)
	return p
}

// Alloc returns a block of at least n bytes: a cached one of n's class if
// there is one, else new memory from the device (see grow for the order
// of what it tries before it reports ErrOutOfMemory).
func (p *Pool[H]) Alloc(n int64) (Block[H], error) {
	if n < 0 {
		return Block[H]{}, &dispatch.Error{Kind: dispatch.ErrValue, Detail: fmt.Sprintf("%s: cannot allocate %d bytes", p.cfg.Device, n)}
	}
	if p.cfg.NoCache {
		return p.grow(n, max(n, 1))
	}
	class := p.cfg.Classes.Class(max(n, 1))
	p.mu.Lock()
	if p.cfg.Heap && p.nextGC > 0 && p.st.Allocated+class > p.nextGC {
		p.collectBehind()
	}
	b, ok := p.cached(class)
	if !ok && p.cfg.Heap && p.cfg.Slab == 0 {
		if class >= p.cfg.Untracked {
			p.retarget()
		}
		// The heap's fast path, for the small ops whose outputs nobody
		// releases: count the new allocation under this same lock, then
		// make it. Past the device's total (or before it is known), the
		// slow path checks.
		if t := p.total.Load(); t == 0 || (t > 0 && class <= t) {
			b = p.record(class, class)
			p.mu.Unlock()
			h, err := p.mem.Alloc(class)
			if err != nil {
				p.mu.Lock()
				p.unrecord(b)
				p.mu.Unlock()
				return Block[H]{}, err
			}
			b.Handle = h
			return b, nil
		}
	}
	p.mu.Unlock()
	if ok {
		return b, nil
	}
	return p.grow(n, class)
}

// Free puts a block back in the cache, or, for heap memory past the cap or
// a pool with Config.NoCache, gives it back at once. A zero Block is
// ignored.
func (p *Pool[H]) Free(b Block[H]) {
	if b.Size == 0 {
		return
	}
	p.mu.Lock()
	p.countLive(-b.Size)
	if p.cfg.NoCache {
		p.st.Reserved -= b.Size
		p.st.Segments--
		p.mu.Unlock()
		// A failed Drain (a kernel's fault) keeps the memory, which queued
		// work may still use; the device is broken by then anyway.
		if p.cfg.Heap || p.mem.Drain() == nil {
			p.mem.Free(b.Handle)
		}
		return
	}
	if b.seg != nil {
		b.seg.used--
	}
	if p.cfg.Heap && b.seg == nil && !p.cfg.Cap.admit(b.Size) {
		p.st.Reserved -= b.Size
		p.st.Segments--
		p.mu.Unlock()
		p.mem.Free(b.Handle) // the garbage collector's now; nothing waits
		return
	}
	if !p.cfg.Heap {
		p.cfg.Cap.add(b.Size) // past the cap until the next allocation trims
	}
	l := p.list(b.Size)
	*l = append(*l, b)
	p.st.Cached += b.Size
	p.mu.Unlock()
}

// Stats returns the pool's figures, with the device's free and total
// memory.
func (p *Pool[H]) Stats() dispatch.MemoryStats {
	p.mu.Lock()
	s := p.st
	p.mu.Unlock()
	if free, total, err := p.mem.Info(); err == nil {
		s.Free, s.Total = free, total
	}
	return s
}

// SetPressure sets Config.Pressure, the floor of the live bytes past which
// the pool collects garbage before it takes new memory.
func (p *Pool[H]) SetPressure(bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cfg.Pressure = bytes
	if t := p.total.Load(); t >= 0 {
		p.nextGC = p.pressureFloor(t)
	}
}

// cached takes a block of class out of the cache and hands it out, or
// reports that there is none. p.mu is held.
func (p *Pool[H]) cached(class int64) (Block[H], bool) {
	b, ok := p.pop(class)
	if !ok {
		if b, ok = p.popLarger(class); !ok {
			return b, false
		}
	}
	p.st.CacheHits++
	p.handOut(&b)
	return b, true
}

// popLarger takes a cached block of the smallest class that may serve a
// large request of class: it walks the classes up to an eighth above,
// or, where there are more of them than classes in the cache (fine steps
// of a huge class), looks through the cache's classes instead.
func (p *Pool[H]) popLarger(class int64) (Block[H], bool) {
	if class <= p.cfg.Classes.Small {
		return Block[H]{}, false
	}
	c := class
	for range len(p.free) {
		if c = p.cfg.Classes.larger(c, class); c == 0 {
			return Block[H]{}, false
		}
		if b, ok := p.pop(c); ok {
			return b, true
		}
	}
	best := int64(0)
	for k, list := range p.free {
		if len(*list) > 0 && k > c && k-class <= class/8 && (best == 0 || k < best) {
			best = k
		}
	}
	if best == 0 {
		return Block[H]{}, false
	}
	return p.pop(best)
}

func (p *Pool[H]) pop(class int64) (b Block[H], ok bool) {
	l := p.lookup(class)
	if l == nil || len(*l) == 0 {
		return b, false
	}
	list := *l
	k := len(list) - 1
	b, list[k] = list[k], Block[H]{}
	*l = list[:k]
	p.st.Cached -= b.Size
	p.cfg.Cap.add(-b.Size)
	return b, true
}

// list is the free list of class, made on first use. p.mu is held.
func (p *Pool[H]) list(class int64) *[]Block[H] {
	l := p.lookup(class)
	if l == nil {
		l = new([]Block[H])
		p.free[class] = l
		if i, ok := p.nearIndex(class); ok {
			p.near[i] = l
		}
	}
	return l
}

// lookup is the free list of class, or nil before its first use. p.mu is
// held.
func (p *Pool[H]) lookup(class int64) *[]Block[H] {
	if i, ok := p.nearIndex(class); ok {
		return p.near[i]
	}
	return p.free[class]
}

// nearIndex is class's place in near, if it has one.
func (p *Pool[H]) nearIndex(class int64) (int, bool) {
	i := int(class>>p.alignShift) - 1
	return i, class&(p.cfg.Classes.Align-1) == 0 && i >= 0 && i < len(p.near)
}

// handOut counts a block given to a buffer. p.mu is held.
func (p *Pool[H]) handOut(b *Block[H]) {
	if b.seg != nil {
		b.seg.used++
	}
	p.st.Allocs++
	p.countLive(b.Size)
}

// countLive adds delta to the bytes that tensors hold, for a block that
// Allocated tracks (see Config.Untracked). p.mu is held.
func (p *Pool[H]) countLive(delta int64) {
	if abs(delta) < p.cfg.Untracked {
		return
	}
	p.st.Allocated += delta
	p.st.PeakAllocated = max(p.st.PeakAllocated, p.st.Allocated)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func (p *Pool[H]) slabbed(class int64) bool {
	return p.cfg.Slab > 0 && class <= p.cfg.Classes.Small
}

// grow serves a request that the cache cannot, in this order:
//
//  1. a request larger than the device's total memory is ErrOutOfMemory
//     at once: nothing could make it fit.
//  2. (device memory) cached bytes past the cap go back to the device,
//     after the queued work that may use them.
//  3. (device memory) past the pressure threshold, the garbage collector
//     runs and the cleanups of unreachable tensors give their blocks back;
//     one of the class serves the request.
//  4. new memory from the device; a full device makes the pool give back
//     its whole cache and try again, then collect garbage (and take a block
//     from the cache if one of the class came back, else give the cache
//     back once more) and try a last time, before it reports
//     ErrOutOfMemory with the figures that say where memory went.
func (p *Pool[H]) grow(n, class int64) (Block[H], error) {
	size := class
	if p.slabbed(class) {
		size = p.cfg.Slab
	}
	total, err := p.deviceTotal()
	if err != nil {
		return Block[H]{}, err
	}
	if total > 0 && size > total {
		return Block[H]{}, p.outOfMemory(n, class, nil)
	}
	if !p.cfg.Heap {
		if want := p.cfg.Cap.excess(); want > 0 {
			p.giveBack(want) // a failed drain leaves the blocks cached; the request goes on
		}
		if p.pressed(class) {
			if b, ok := p.collect(class); ok {
				return b, nil
			}
		}
	}
	h, err := p.mem.Alloc(size)
	if errors.Is(err, dispatch.ErrOutOfMemory) {
		p.mu.Lock()
		p.st.OOMRetries++
		p.mu.Unlock()
		for try := range 2 {
			if try == 1 {
				if b, ok := p.collect(class); ok {
					return b, nil
				}
			}
			if cerr := p.EmptyCache(); cerr != nil {
				return Block[H]{}, cerr
			}
			if h, err = p.mem.Alloc(size); !errors.Is(err, dispatch.ErrOutOfMemory) {
				break
			}
		}
		if errors.Is(err, dispatch.ErrOutOfMemory) {
			return Block[H]{}, p.outOfMemory(n, class, err)
		}
	}
	if err != nil {
		return Block[H]{}, err
	}
	return p.carve(h, size, class), nil
}

// carve records a new allocation and returns its block: the allocation
// itself, or a slab's first slot (the others go to the cache).
func (p *Pool[H]) carve(h H, size, class int64) Block[H] {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := p.record(size, class)
	b.Handle = h
	if size != class {
		seg := &segment[H]{handle: h, size: size, used: 1}
		b.seg = seg
		// The other slots wait in the cache, lowest address last so that
		// it goes next.
		n := size / class
		l := p.list(class)
		for i := n - 1; i >= 1; i-- {
			*l = append(*l, Block[H]{Handle: h, Offset: i * class, Size: class, seg: seg})
		}
		p.st.Cached += (n - 1) * class
		p.cfg.Cap.add((n - 1) * class)
	}
	return b
}

// record counts a new allocation of size bytes and the block of class
// that it serves, handed out. p.mu is held.
func (p *Pool[H]) record(size, class int64) Block[H] {
	p.st.Segments++
	p.st.Reserved += size
	p.st.PeakReserved = max(p.st.PeakReserved, p.st.Reserved)
	b := Block[H]{Size: class}
	p.st.Allocs++
	p.countLive(class)
	return b
}

// unrecord takes back what record counted, for an allocation the device
// refused. p.mu is held.
func (p *Pool[H]) unrecord(b Block[H]) {
	p.st.Segments--
	p.st.Reserved -= b.Size
	p.st.Allocs--
	p.countLive(-b.Size)
}

// deviceTotal is the device's total memory (0 if it cannot tell), asked
// of the device the first time.
func (p *Pool[H]) deviceTotal() (int64, error) {
	if t := p.total.Load(); t >= 0 {
		return t, nil
	}
	_, total, err := p.mem.Info()
	if err != nil {
		return 0, err
	}
	p.mu.Lock()
	if p.total.Load() < 0 {
		p.total.Store(total)
		p.nextGC = p.pressureFloor(total)
	}
	p.mu.Unlock()
	return total, nil
}

// pressureFloor is the lowest collection threshold (Config.Pressure); 0
// where the pool never collects under pressure.
func (p *Pool[H]) pressureFloor(total int64) int64 {
	switch {
	case p.cfg.Pressure < 0:
		return 0
	case p.cfg.Pressure > 0:
		return p.cfg.Pressure
	case p.cfg.Heap:
		return HeapPressure
	case total > 0:
		return total / 16
	}
	return 1 << 30
}

// pressed reports whether a new block of class would take the live bytes
// past the collection threshold.
func (p *Pool[H]) pressed(class int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nextGC > 0 && p.st.Allocated+class > p.nextGC
}

// collect runs the garbage collector, waits for the cleanups that hand
// back unreachable tensors' blocks, sets the next threshold, and takes a
// block of class from the cache if one came back.
func (p *Pool[H]) collect(class int64) (Block[H], bool) {
	collectGarbage()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.collected()
	return p.cached(class)
}

// collectBehind starts a collection on its own goroutine, unless one is
// running, for a Heap pool past its threshold; the caller goes on with the
// cache and new memory meanwhile. p.mu is held.
//
// A tensor nobody releases comes back from its cleanup only after the Go
// collector has run, and the collector paces itself by the Go heap, in
// which the cached blocks count as live: left to it, a training step's
// dropped tensors (5 MB a step for examples/gpt's small model) took new
// memory for dozens of steps between collections, and the cache, which
// keeps every block that comes back, doubled the heap at each one. New
// memory is the dearest part of a small step: on the 2-vCPU VM that CI
// runs on, each first touch of a page costs about 10 µs, and the GPT step
// took 34 ms in the steps that faulted its 7 MB in, against 17 ms in the
// steps that reused the cache. Collecting at twice the live bytes keeps
// the step's memory in the cache. The caller does not wait for it, as a
// device pool's does, because nothing is short: new memory only costs
// more than reused memory.
func (p *Pool[H]) collectBehind() {
	if !p.collecting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer p.collecting.Store(false)
		collectGarbage()
		p.mu.Lock()
		p.collected()
		p.mu.Unlock()
	}()
}

// collected counts a collection and sets the next threshold. p.mu is held.
func (p *Pool[H]) collected() {
	p.st.Collections++
	if p.cfg.Heap {
		p.gcSeen = goCollections()
	}
	p.setThreshold()
}

// retarget lowers a Heap pool's threshold to what the live bytes give
// when the Go collector has run since it was set: its cleanups bring the
// live bytes down, and a threshold left from a larger working set would
// let a smaller one take new memory for every block until it was reached.
// It never raises it: the cleanups run after the collection, on a
// goroutine of their own, so the live bytes read here may still count
// what the collection found dropped, and raising the threshold from them
// ratcheted it up, each Go collection's to twice the last's garbage. A
// transformer layer's training step that dropped a few MB a step then
// held 700 MB and never collected. Only a collection of the pool's own,
// which waits for the cleanups (collected), raises it. retarget runs only
// before new memory is taken for a block that Allocated tracks (reading
// the count of collections costs more than a small op). p.mu is held.
func (p *Pool[H]) retarget() {
	if p.nextGC == 0 {
		return
	}
	if n := goCollections(); n != p.gcSeen {
		p.gcSeen = n
		was := p.nextGC
		p.setThreshold()
		p.nextGC = min(p.nextGC, was)
	}
}

// setThreshold sets the next collection's threshold from the live bytes:
// twice them, within half the room left on the device, and at least the
// floor. p.mu is held.
func (p *Pool[H]) setThreshold() {
	if floor := p.pressureFloor(max(p.total.Load(), 0)); floor > 0 {
		live := p.st.Allocated
		more := live
		if t := p.total.Load(); t > 0 {
			more = min(live, max(t-live, 0)/2)
		}
		p.nextGC = max(floor, live+more)
	}
}

// outOfMemory is ErrOutOfMemory with the figures that say where memory
// went.
func (p *Pool[H]) outOfMemory(asked, class int64, cause error) error {
	detail := p.cfg.Device + ": out of memory: asked for " + FormatBytes(asked)
	if class != asked {
		detail += " (a block of " + FormatBytes(class) + ")"
	}
	p.mu.Lock()
	st := p.st
	p.mu.Unlock()
	detail += "; tensors hold " + FormatBytes(st.Allocated) + " and lathe reserves " + FormatBytes(st.Reserved) + " in all"
	if free, total, err := p.mem.Info(); err == nil && total > 0 {
		detail += "; the device has " + FormatBytes(free) + " free of " + FormatBytes(total)
	}
	var e *dispatch.Error
	if errors.As(cause, &e) && e.Err != nil {
		cause = e.Err
	}
	return &dispatch.Error{Kind: dispatch.ErrOutOfMemory, Detail: detail, Err: cause,
		Fix: "release tensors that are no longer needed (Release), use a smaller batch, or free memory that other programs hold"}
}

// FormatBytes writes a byte count for people: 512 B, 3.0 MiB, 1.50 GiB,
// 4.00 TiB.
func FormatBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n < 1<<40:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.2f TiB", float64(n)/(1<<40))
}
