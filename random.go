package lathe

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/goid"
)

// Every random value lathe makes comes from one seeded stream per process,
// so that a program that calls Seed gets the same numbers every run, on
// every device. Rand, RandN, RandInt, RandPerm, Multinomial and the
// samplers of random_sampling.go and random_dists.go (Bernoulli, Poisson,
// Normal, Exponential, ...) draw their values on the host and upload them; Dropout draws one key, from which
// the device makes its mask itself (ops.Dropout, internal/philox), with
// the same bits on every device.
var (
	rngMu   sync.Mutex
	mainPCG = rand.NewPCG(0x6c617468, 0x65)
	mainRNG = rand.New(mainPCG) // math/rand/v2's Rand keeps no state of its own: the PCG is the whole stream
)

// A checkpoint's recomputation draws its numbers again from where its
// first run drew them, on its goroutine alone. The first run records,
// for each draw it makes, the position of the stream the draw began at
// (recordDraws), and the recomputation draws each of its draws from a
// copy of the stream put at the next recorded position (replayDraws).
// Keeping only the position where the first run began, and drawing on
// from it, gave the recomputation the numbers that another goroutine drew
// in between (a forward pass's dropout, which drew after the checkpoint
// began and before its own dropout did): its gradients were those of
// masks it never drew. Putting the process's stream back there instead
// made every other goroutine's draws come from, and shift, the replayed
// numbers. The records are kept by goroutine id, as Autocast's dtypes
// are, and looked up only while one exists.
var (
	replayActive atomic.Int64
	replayMu     sync.Mutex
	replays      = map[uint64]*replay{}
)

// A replay is a goroutine's record of a checkpoint's first run (pcg nil)
// or the copy of the stream its recomputation draws from. parent is what
// the goroutine drew from outside it: a checkpoint inside another's first
// run records into both, and one inside a recomputation records the
// positions of the outer replay's copy.
type replay struct {
	pcg    *rand.PCG // the recomputation's copy; nil while recording
	rng    *rand.Rand
	parent *replay
	log    []rand.PCG // recording: where each draw began; replaying: where each is to begin
	next   int        // replaying: log's next entry
}

// source is the stream that draws under r come from. rngMu must be held.
func (r *replay) source() (*rand.PCG, *rand.Rand) {
	switch {
	case r == nil:
		return mainPCG, mainRNG
	case r.pcg == nil:
		return r.parent.source()
	}
	return r.pcg, r.rng
}

// begin marks the start of one draw under r: a recording notes where
// the draw begins, a replay puts its copy where the first run's draw
// began. rngMu must be held.
func (r *replay) begin() {
	switch {
	case r == nil:
	case r.pcg == nil:
		r.parent.begin()
		p, _ := r.parent.source()
		r.log = append(r.log, *p)
	case r.next < len(r.log):
		*r.pcg = r.log[r.next]
		r.next++
	}
}

// pcg is the stream the calling goroutine draws from: its replay's copy,
// or the process's. rngMu must be held (a replay is its goroutine's alone,
// but the process's stream is shared).
func pcg() *rand.PCG {
	p, _ := replayOf().source()
	return p
}

// rng is pcg's Rand.
func rng() *rand.Rand {
	_, r := replayOf().source()
	return r
}

// beginDraw marks the start of one draw (one call's values, taken with
// rngMu held from first to last) for a checkpoint of the calling goroutine
// that records or replays. rngMu must be held.
func beginDraw() { replayOf().begin() }

func replayOf() *replay {
	if replayActive.Load() == 0 {
		return nil
	}
	id := goid.Current()
	replayMu.Lock()
	defer replayMu.Unlock()
	return replays[id]
}

// recordDraws runs f and returns where each of the calling goroutine's
// draws in it began, for replayDraws. Goroutines that f starts draw as
// usual, unrecorded.
func recordDraws(f func()) []rand.PCG {
	r := &replay{}
	withReplay(r, f)
	return r.log
}

// replayDraws runs f with the calling goroutine's draws coming from a copy
// of the stream put, for each draw in turn, where log says (a checkpoint's
// first run's draws, recordDraws), and from start where f draws before
// Seed or more than the log holds. The process's stream and other
// goroutines' draws are left alone. Goroutines that f starts draw from
// the process's stream.
func replayDraws(start rand.PCG, log []rand.PCG, f func()) {
	p := new(rand.PCG)
	*p = start
	withReplay(&replay{pcg: p, rng: rand.New(p), log: log}, f)
}

// withReplay runs f with r as the calling goroutine's replay.
func withReplay(r *replay, f func()) {
	id := goid.Current()
	replayMu.Lock()
	r.parent = replays[id]
	replays[id] = r
	replayMu.Unlock()
	replayActive.Add(1)
	defer func() {
		replayActive.Add(-1)
		replayMu.Lock()
		if r.parent == nil {
			delete(replays, id)
		} else {
			replays[id] = r.parent
		}
		replayMu.Unlock()
	}()
	f()
}

// Seed resets the random stream that Rand, RandN, Dropout, RandInt,
// RandPerm, Multinomial, Bernoulli, Poisson, Normal, Exponential,
// Geometric, LogNormal and Cauchy draw from (inside a checkpoint's
// recomputation, the copy it draws from, as Seed reset the stream in the
// checkpoint's first run).
func Seed(seed uint64) {
	rngMu.Lock()
	pcg().Seed(seed, 0x65)
	rngMu.Unlock()
}

// rngState is the position of the stream the calling goroutine draws
// from, for Checkpoint to draw the same numbers again (replayDraws starts there).
func rngState() rand.PCG {
	rngMu.Lock()
	defer rngMu.Unlock()
	return *pcg()
}

// setRNGState puts the stream the calling goroutine draws from at s.
func setRNGState(s rand.PCG) {
	rngMu.Lock()
	*pcg() = s
	rngMu.Unlock()
}

// drawAndUpload is the one way a random tensor is made: draw makes the
// host data of dtype dt from the stream, which is locked from the first
// draw to the end of the upload, so that a call's values are one unbroken
// run of the stream however many goroutines draw. If the upload fails
// (the device cannot open, lacks dt, is out of memory or lost), the stream
// is put back as it was: a failed call draws nothing, and a retried one
// draws the values the failed one would have given.
func drawAndUpload(op string, dev Device, dt DType, shape []int, draw func(r *rand.Rand) any) *Tensor {
	rngMu.Lock()
	defer rngMu.Unlock()
	beginDraw()
	p := pcg()
	saved := *p
	t, err := dispatch.Upload(dev, draw(rng()), dt, shape)
	if err != nil {
		*p = saved
		return failed(located(err, op))
	}
	return wrap(t)
}

// keyed runs op with a key drawn from the stream, for the ops whose
// devices make their random values from one (ops.Dropout). The stream is
// locked for the draw only, so that goroutines' ops (a cpu kernel of
// milliseconds) run side by side; where op fails, the stream is put back
// as drawAndUpload puts it, unless another draw has followed, which a
// put-back would hand the same words again.
func keyed(op func(key uint64) *Tensor) *Tensor {
	rngMu.Lock()
	beginDraw()
	p := pcg()
	saved := *p
	key := p.Uint64()
	drawn := *p
	rngMu.Unlock()
	out := op(key)
	if out.err != nil {
		rngMu.Lock()
		if *p == drawn {
			*p = saved
		}
		rngMu.Unlock()
	}
	return out
}

// drawFloats is drawAndUpload for draws of the dtype they are made in
// (float32 or float64, dt) of n elements: on a device that keeps tensors
// in this process's memory (the cpu) fill draws them straight into the new
// tensor's buffer, with no copy on the Go heap for the collector. A tensor
// that cannot be made draws nothing.
func drawFloats[T float32 | float64](op string, dev Device, dt DType, shape []int, n int, fill func([]T)) *Tensor {
	t, data, err := emptyLent(op, dev, dt, shape)
	switch {
	case err != nil:
		return failed(err) // having drawn nothing
	case t != nil:
		rngMu.Lock()
		beginDraw()
		fill(data.([]T))
		rngMu.Unlock()
		return wrap(t)
	}
	return drawAndUpload(op, dev, dt, shape, func(*rand.Rand) any {
		d := make([]T, n)
		fill(d)
		return d
	})
}

// RandInt makes a tensor of integers drawn uniformly from [low, high), as
// torch.randint(low, high, shape, dtype=dt), in any dtype that holds every
// integer of the range exactly: the integer dtypes within their limits,
// Bool for [0, 2) or a part of it (as torch allows), and the float
// dtypes within ±2^11 (Float16), ±2^8 (BFloat16), ±2^24 (Float32) and
// ±2^53 (Float64), past which torch only warns and rounds. low >= high
// and a range that dt cannot hold are ErrValue. The values are drawn on
// the host from the stream that Seed resets, then uploaded to dev.
func RandInt(dev Device, dt DType, low, high int64, shape ...int) *Tensor {
	return randInt("randint", dev, dt, low, high, shape)
}

// RandIntLike is RandInt with x's shape, dtype and device
// (torch.randint_like).
func RandIntLike(x *Tensor, low, high int64) *Tensor {
	const op = "randint_like"
	if err := x.check(op); err != nil {
		return failed(err)
	}
	return randInt(op, x.Device(), x.DType(), low, high, x.Shape())
}

func randInt(op string, dev Device, dt DType, low, high int64, shape []int) *Tensor {
	if low >= high {
		return failed(errorf(op, ErrValue, "high", "is "+itoa64(high)+" with low "+itoa64(low)+": the range [low, high) is empty",
			"use low < high"))
	}
	least, most, ok := exactInts(dt)
	if !ok {
		return failed(errorf(op, ErrDType, "dtype", "is not a dtype", "use one of lathe's dtypes, such as lathe.Int64"))
	}
	if low < least || high-1 > most {
		arg := "high"
		if low < least {
			arg = "low" // the end at fault, as torch's "from is out of bounds"
		}
		return failed(errorf(op, ErrValue, arg, "gives the range ["+itoa64(low)+", "+itoa64(high)+"), but "+dt.String()+
			" holds only the integers in ["+itoa64(least)+", "+itoa64(most)+"] exactly", "use a narrower range or a wider dtype"))
	}
	s, err := checkShape(op, shape, -1)
	if err != nil {
		return failed(err)
	}
	n := dispatch.Numel(s)
	if err := checkHost(op, "shape", n, 8+dt.Size()); err != nil { // 8: the int64 draws made first
		return failed(err)
	}
	span := uint64(high) - uint64(low) // high - low without overflow: at most 2^64 - 1
	return drawAndUpload(op, dev, dt, s, func(r *rand.Rand) any {
		v := make([]int64, n)
		for i := range v {
			v[i] = low + int64(r.Uint64N(span)) // Uint64N is unbiased; the sum wraps back into [low, high)
		}
		return intData(dt, v)
	})
}

// RandPerm makes a random permutation of 0, 1, ..., n-1 in dtype dt, as
// torch.randperm(n, dtype=dt): every order equally likely. dt must hold
// n-1 exactly: Int8 up to n = 128, Uint8 256, Float16 2049, BFloat16 257
// (torch rounds past it and repeats values; lathe refuses), Float32
// 2^24+1; a larger n is ErrValue, and Bool is ErrDType. The permutation
// is drawn on the host from the stream that Seed resets, then uploaded to
// dev.
func RandPerm(dev Device, dt DType, n int) *Tensor {
	const op = "randperm"
	s, err := checkShape(op, []int{n}, -1)
	if err != nil {
		return failed(err)
	}
	_, most, ok := exactInts(dt)
	switch {
	case !ok || dt == Bool:
		return failed(errorf(op, ErrDType, "dtype", "is "+dt.String()+", which has no permutations (torch has no randperm for bool)",
			"use lathe.Int64 or another numeric dtype"))
	case int64(n)-1 > most:
		return failed(errorf(op, ErrValue, "n", "is "+strconv.Itoa(n)+", but "+dt.String()+" holds the integers only up to "+
			itoa64(most)+" exactly", "use a smaller n or a wider dtype"))
	}
	if err := checkHost(op, "n", n, 8); err != nil { // 8: the widest of the slices made, int64 or float64
		return failed(err)
	}
	return drawAndUpload(op, dev, dt, s, func(r *rand.Rand) any {
		// The wide dtypes are shuffled as they are, since n may be 2^24
		// and more; the same draws give the same order in every dtype.
		switch dt {
		case Int64:
			return permutation[int64](r, n)
		case Int32:
			return permutation[int32](r, n)
		case Float32:
			return permutation[float32](r, n)
		case Float64:
			return permutation[float64](r, n)
		}
		return intData(dt, permutation[int64](r, n)) // n ≤ 2049
	})
}

// permutation is 0, 1, ..., n-1 in a random order, every order equally
// likely (math/rand's Fisher–Yates shuffle).
func permutation[T int32 | int64 | float32 | float64](r *rand.Rand, n int) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(i)
	}
	r.Shuffle(n, func(i, j int) { v[i], v[j] = v[j], v[i] })
	return v
}

// exactInts is the range of integers that dt holds, each exactly and all
// those between: a float dtype's is ±2^digits (digits its significand's
// bits, with the implicit one), past which some integers round.
func exactInts(dt DType) (least, most int64, ok bool) {
	switch dt {
	case Bool:
		return 0, 1, true
	case Uint8:
		return 0, 255, true
	case Int8:
		return -128, 127, true
	case Int32:
		return -1 << 31, 1<<31 - 1, true
	case Int64:
		return -1 << 63, 1<<63 - 1, true
	case Float16:
		return -1 << 11, 1 << 11, true
	case BFloat16:
		return -1 << 8, 1 << 8, true
	case Float32:
		return -1 << 24, 1 << 24, true
	case Float64:
		return -1 << 53, 1 << 53, true
	}
	return 0, 0, false
}

// intData is integers as host data of dtype dt; every dtype but Int64
// goes through float64, which holds each value that exactInts allows.
func intData(dt DType, v []int64) any {
	if dt == Int64 {
		return v
	}
	return ops.HostData(dt, widen(v))
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
