package main

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/lathe-ml/lathe"
)

// sampler times one side of a row: each call runs a fixed number of steps
// and returns the time per step in seconds. lathe and PyTorch both
// implement it, so that their samples can alternate.
type sampler interface {
	sample() (float64, error)
}

// latheSampler times a prepared workload on a lathe device.
type latheSampler struct {
	p    *prepared
	dev  lathe.Device
	reps int // steps per sample, from calibrate
}

// timeSteps runs n steps between two device syncs, so that queued device
// work is neither counted from before nor left out at the end.
func (s *latheSampler) timeSteps(n int) (time.Duration, error) {
	if err := lathe.Synchronize(s.dev); err != nil {
		return 0, err
	}
	start := time.Now()
	for range n {
		if err := s.p.step(); err != nil {
			return 0, err
		}
	}
	if err := lathe.Synchronize(s.dev); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// prepareSampler builds w on dev, warms it up and calibrates it: a row's
// lathe side, in this process or in the side's.
func prepareSampler(w workload, dev lathe.Device, warmup int, target time.Duration) (*latheSampler, error) {
	p, err := prepare(w, dev)
	if err != nil {
		return nil, err
	}
	s := &latheSampler{p: p, dev: dev}
	if err := s.calibrate(warmup, target); err != nil {
		p.release()
		return nil, err
	}
	return s, nil
}

// calibrate warms up (warmUp) and picks the steps per sample so that a
// sample lasts about target: one step for slow workloads, thousands for a
// 1-element add, where one step is below the clock's grain.
func (s *latheSampler) calibrate(warmup int, target time.Duration) error {
	if err := warmUp(s.timeSteps, warmup, target); err != nil {
		return err
	}
	reps, err := calibrateReps(s.timeSteps, target)
	s.reps = reps
	return err
}

// warmUp runs warmup steps (at least one), then more until the steps have
// taken warmSamples samples' time. A row's first fraction of a second
// runs in what the rows before it left: after the ResNet block's row, a
// 1-element add took 1.0-1.2 µs for its first 0.1-0.2 s and 0.3-0.5 µs
// after (Go's heap, sized by that row, grows into pages that fault), so
// that a row of ten samples read 1.34 µs. bench_torch.py warms up alike.
func warmUp(timeSteps func(int) (time.Duration, error), warmup int, target time.Duration) error {
	warm, err := timeSteps(max(warmup, 1))
	for err == nil && warm < warmSamples*target {
		var d time.Duration
		d, err = timeSteps(1)
		warm += d
	}
	return err
}

// warmSamples is how many samples' time a row warms up for, at least.
const warmSamples = 10

// settle leaves the process as a fresh one would be for the next row: dev's
// pool emptied, this row's garbage collected and the memory given back.
// The pool's cached buffers are Go memory, so a row that left large ones
// cached left the collector a goal of twice their size, and the next
// row's small allocations ran through that much fresh heap, faulting in
// its pages: a 1-element add took 780-880 ns a step, with 265,000 page
// faults in 2 million steps, after 256 MB tensors had been cached,
// against 390-510 ns and 5,000 faults without.
func settle(dev lathe.Device) {
	lathe.EmptyCache(dev) // a device fault it meets is the next row's to report
	runtime.GC()
	debug.FreeOSMemory()
}

// calibrateReps doubles the steps until they take a quarter of target,
// then scales to target. bench_torch.py does the same.
func calibrateReps(timeSteps func(int) (time.Duration, error), target time.Duration) (int, error) {
	n := 1
	for {
		d, err := timeSteps(n)
		if err != nil {
			return 0, err
		}
		if d >= target/4 || n >= 1<<24 {
			return max(1, int(math.Ceil(float64(n)*float64(target)/float64(max(d, 1))))), nil
		}
		n *= 2
	}
}

func (s *latheSampler) sample() (float64, error) {
	d, err := s.timeSteps(s.reps)
	return d.Seconds() / float64(s.reps), err
}

// ownProcess is a sampler whose samples run in a child process.
type ownProcess interface {
	process() *child
}

// alternate takes n samples from each sampler, round-robin, starting with
// a different one each round, so that drift of the machine (clock, other
// load) falls on all of them alike, and with every other sampler's process
// stopped (side.go says why). A sampler that fails is dropped and its
// error kept; the others go on.
func alternate(ss []sampler, n int, progress func(round int)) ([][]float64, []error) {
	out := make([][]float64, len(ss))
	errs := make([]error, len(ss))
	for round := range n {
		progress(round)
		for j := range ss {
			i := (j + round) % len(ss)
			if errs[i] != nil {
				continue
			}
			for k, other := range ss {
				if p, ok := other.(ownProcess); ok && k != i {
					p.process().freeze()
				}
			}
			v, err := ss[i].sample()
			if err != nil {
				errs[i] = err
				continue
			}
			out[i] = append(out[i], v)
		}
	}
	return out, errs
}

// measurement is one side's figures for a row, in seconds per step.
type measurement struct {
	Reps    int       `json:"steps_per_sample"`
	Samples []float64 `json:"samples_s"`
	Median  float64   `json:"median_s"`
	Min     float64   `json:"min_s"`
	Max     float64   `json:"max_s"`
	Q1      float64   `json:"q1_s"`
	Q3      float64   `json:"q3_s"`
	Rate    float64   `json:"rate"` // the row's unit, at the median
	// The rate at the quartiles of the time: the rate's spread, as the
	// plot's whiskers show it (RateAtQ1 is the higher).
	RateAtQ1 float64 `json:"rate_at_q1"`
	RateAtQ3 float64 `json:"rate_at_q3"`
	Err      string  `json:"error,omitempty"`
}

// summarise fills the order statistics and the rate from samples.
func summarise(w workload, reps int, samples []float64) *measurement {
	m := &measurement{Reps: reps, Samples: samples}
	if len(samples) == 0 {
		return m
	}
	s := slices.Sorted(slices.Values(samples))
	m.Min, m.Max = s[0], s[len(s)-1]
	m.Median, m.Q1, m.Q3 = quantile(s, 0.5), quantile(s, 0.25), quantile(s, 0.75)
	m.Rate, m.RateAtQ1, m.RateAtQ3 = w.rate(m.Median), w.rate(m.Q1), w.rate(m.Q3)
	return m
}

// quantile interpolates linearly between the order statistics of sorted s
// (numpy's default, "linear").
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	f := pos - float64(i)
	return s[i]*(1-f) + s[i+1]*f
}

// spread is the interquartile range over the median, the relative noise.
func (m *measurement) spread() float64 {
	if m.Median == 0 {
		return 0
	}
	return (m.Q3 - m.Q1) / m.Median
}
