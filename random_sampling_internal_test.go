package lathe

import (
	"runtime/debug"
	"testing"
)

// biSampling are the bad-input rows of the samplers whose parameters are
// tensors (random_sampling.go).
func biSampling() map[string]biOp {
	t := map[string]biOp{}
	for name, f := range map[string]func(*Tensor) *Tensor{
		"bernoulli": Bernoulli,
		"poisson":   Poisson,
	} {
		t[name] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3).MulScalar(0.5)} },
			call: func(a []*Tensor) *Tensor { return f(a[0]) }, kinds: "f",
			huge: func(dev Device) *Tensor { return f(biBig(dev, biHuge, biHuge)) }}
	}
	t["bernoulli_like"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3)} },
		call: func(a []*Tensor) *Tensor { return BernoulliLike(a[0], 0.5) }, kinds: "a",
		huge: func(dev Device) *Tensor { return BernoulliLike(biBig(dev, biHuge, biHuge), 0.5) }}
	t["normal"] = biOp{args: func(dev Device) []*Tensor { return []*Tensor{biF(dev, 2, 3), biF(dev, 3)} },
		call: func(a []*Tensor) *Tensor { return Normal(a[0], a[1]) }, kinds: "ff",
		huge: func(dev Device) *Tensor { return Normal(biBig(dev, biHuge, biHuge), biF(dev, 1)) }}
	return t
}

// TestSamplingLeaveNothing: with the collector off, warm calls of each
// sampler, their results released, take nothing from the device's pool,
// nor do refused calls.
func TestSamplingLeaveNothing(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, dev := range biDevices(t) {
		p := Full(dev, Float32, 0.25, 4, 6)
		std := Ones(dev, Float32, 6)
		bad := FromSlice(CPU, []float32{1, -1}).To(dev)
		for name, f := range map[string]func() *Tensor{
			"bernoulli":      func() *Tensor { return Bernoulli(p) },
			"bernoulli_like": func() *Tensor { return BernoulliLike(p, 0.5) },
			"poisson":        func() *Tensor { return Poisson(p) },
			"normal":         func() *Tensor { return Normal(p, std) },
			"exponential":    func() *Tensor { return Exponential(dev, Float32, 2, 4, 6) },
			"geometric":      func() *Tensor { return Geometric(dev, Float32, 0.5, 4, 6) },
			"log_normal":     func() *Tensor { return LogNormal(dev, Float32, 0, 1, 4, 6) },
			"cauchy":         func() *Tensor { return Cauchy(dev, Float32, 0, 1, 4, 6) },
			"logspace":       func() *Tensor { return Logspace(dev, Float32, 0, 2, 24, 10) },
			"refused":        func() *Tensor { return Normal(p, bad) },
			"refused_values": func() *Tensor { return Bernoulli(bad) },
		} {
			step := func() {
				out := f()
				if name[:min(len(name), 7)] != "refused" && out.Err() != nil {
					t.Fatalf("%s %s: %v", dev, name, out.Err())
				}
				out.Release()
			}
			step()
			step()
			s0, _ := MemoryStats(dev)
			step()
			step()
			s1, _ := MemoryStats(dev)
			if s1.Allocated > s0.Allocated || s1.Allocs-s1.CacheHits != s0.Allocs-s0.CacheHits {
				t.Errorf("%s %s: two warm calls took %d bytes and %d new blocks", dev, name, s1.Allocated-s0.Allocated, (s1.Allocs-s1.CacheHits)-(s0.Allocs-s0.CacheHits))
			}
		}
	}
}
