// Package alloc is lathe's one caching allocator, shared by every backend.
//
// A training loop asks for the same sizes every step, and getting memory
// from a device is slow (cuMemAlloc takes microseconds to milliseconds, a
// Dawn buffer as long, a large Go slice costs the garbage collector), so a
// Pool keeps freed blocks by size class and hands them out again, as
// PyTorch's caching allocator does. A backend supplies only the raw calls
// of its device, a Memory: allocate, free, wait for the queued work
// (Drain), and the device's free and total memory. The pool does the rest
// the same way for every device: size classes (Classes), slabs that small
// classes are cut from, the cap on cached bytes (Cap), the statistics that
// lathe.MemoryStats reports (dispatch.MemoryStats), the check of every
// request against what the device holds, and the retries before it reports
// ErrOutOfMemory.
//
// The pool is generic over the backend's handle: a device address (uint64)
// for cuda, a Dawn buffer for wgpu, the cpu's own slice buffer.
//
// Freed blocks are stream-ordered: a block goes back to the cache when its
// last tensor is released, even while work queued earlier still reads it.
// That is safe because each device runs its work in the order it was
// queued, and every later use of the block is queued after it. Only giving
// memory back to the device (Memory.Free) waits for the queued work first
// (Memory.Drain), and the pool never does that inside Free: Free only takes
// the pool's own short lock, so releasing a tensor (which the garbage
// collector's cleanup goroutine also does) never waits for the device. (The
// cpu's memory, Config.Heap, has no queue: what its Free gives back goes to
// the garbage collector at once.)
//
// In the layers of DESIGN.md, alloc sits beside layout under dispatch: it
// imports dispatch (for its error and statistics types) and is imported
// only by backends.
package alloc
