package wgpu

// Stats is what a device's buffer pool holds, in bytes, and how its
// allocations were served.
type Stats struct {
	Live, Cached uint64 // bytes of buffers in use, and kept for reuse
	Hits, Misses uint64 // allocations served from the cache, and made anew
}

// Software reports whether wgpu:0 runs on a CPU adapter (lavapipe, which
// runs Vulkan on the CPU): there its speed is a correctness check only,
// and benchmarks say so rather than quote a rate.
func Software() bool { return software() }
