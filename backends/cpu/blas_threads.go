package cpu

import (
	"sync"

	"gonum.org/v1/gonum/blas"
)

// OpenBLAS's threading. A lone product runs best on OpenBLAS's own threads,
// which share one packed copy of each panel: on the 2-core development
// machine, float32, medians of 15 runs of 20 calls in one process, 256³
// takes 149 µs on two OpenBLAS threads against 237 on one, 512³ 1.00 ms
// against 1.74, 1024³ 6.9 ms against 13.9, as PyTorch's torch.mm (the same
// library, the same threads) takes; cutting C into blocks over goroutines,
// each a one-thread call, gave 250 µs, 1.37 ms and 9.8 ms, since every
// block packs the whole of the other matrix. Products that run side by
// side (a batch of matrices, convolution's images, attention's blocks)
// must each be one thread instead: OpenBLAS serialises its threaded calls
// behind one lock, and lathe-bench's ResNet block went from 27–34 to 45–52
// ms and attention at L512 from 25–32 to 58–62 ms when they were threaded.
//
// The thread count is one setting for the whole library, so gate holds it:
// every call says which it wants (wide: one thread per core; narrow: one),
// calls wanting the setting in force run together, and the setting changes
// only when no call is in flight. A caller waiting for the other setting
// stops new calls of the current one from entering, so neither kind
// starves the other. openblas_set_num_threads takes a few nanoseconds;
// the gate's lock is taken twice per call, which is nothing beside even
// the smallest product that reaches BLAS.
type threadGate struct {
	mu       sync.Mutex
	changed  sync.Cond
	wide     bool   // the setting in force: cores threads, else one
	inFlight int    // calls running under it
	waiting  [2]int // callers waiting for narrow (0) and wide (1)
	cores    int    // threads for a wide call
	set      func(n int) bool
}

func newThreadGate(set func(n int) bool, cores int) *threadGate {
	g := &threadGate{set: set, cores: cores}
	g.changed.L = &g.mu
	return g
}

func index(wide bool) int {
	if wide {
		return 1
	}
	return 0
}

// enter waits until a call wanting wide may run, switching the setting
// first where no call is in flight.
func (g *threadGate) enter(wide bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting[index(wide)]++
	for g.inFlight > 0 && (g.wide != wide || g.waiting[index(!wide)] > 0) {
		g.changed.Wait()
	}
	g.waiting[index(wide)]--
	if g.wide != wide {
		n := 1
		if wide {
			n = g.cores
		}
		g.set(n)
		g.wide = wide
	}
	g.inFlight++
}

// leave ends a call that enter admitted.
func (g *threadGate) leave() {
	g.mu.Lock()
	g.inFlight--
	if g.inFlight == 0 {
		g.changed.Broadcast()
	}
	g.mu.Unlock()
}

// gated is gemm run under the gate with the setting wide asks for.
func gated[T float](g *threadGate, wide bool, gemm gemmFunc[T]) gemmFunc[T] {
	return func(tA, tB blas.Transpose, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
		if wide { // a lone product, on the caller's goroutine
			takeTurn(&callerTurn)
		}
		g.enter(wide)
		defer g.leave()
		if wide {
			// OpenBLAS's threads need the cores the crew spins on.
			wideBLAS.Add(1)
			defer wideBLAS.Add(-1)
		}
		gemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	}
}
