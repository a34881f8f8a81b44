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
// every device. Rand, RandN, RandInt, RandPerm and Multinomial draw their
// values on the host and upload them; Dropout draws one key, from which
// the device makes its mask itself (ops.Dropout, internal/philox), with
// the same bits on every device.
var (
	rngMu   sync.Mutex
	mainPCG = rand.NewPCG(0x6c617468, 0x65)
	mainRNG = rand.New(mainPCG) // math/rand/v2's Rand keeps no state of its own: the PCG is the whole stream
)

// A checkpoint's recomputation draws its numbers again from a copy of the
// stream where its first run drew them (withStream), on its goroutine
// alone: putting the process's stream back there instead made every other
// goroutine's draws in the meantime (another recomputation's, a forward
// pass's dropout) come from, and shift, the replayed numbers, so that
// concurrent checkpointed passes got gradients of masks they never drew.
// The copies are kept by goroutine id, as Autocast's dtypes are, and
// looked up only while one exists.
var (
	replayActive atomic.Int64
	replayMu     sync.Mutex
	replays      = map[uint64]*replay{}
)

type replay struct {
	pcg *rand.PCG
	rng *rand.Rand
}

// pcg is the stream the calling goroutine draws from: its replay's, or
// the process's. rngMu must be held (a replay is its goroutine's alone,
// but the process's stream is shared).
func pcg() *rand.PCG {
	if r := replayOf(); r != nil {
		return r.pcg
	}
	return mainPCG
}

// rng is pcg's Rand.
func rng() *rand.Rand {
	if r := replayOf(); r != nil {
		return r.rng
	}
	return mainRNG
}

func replayOf() *replay {
	if replayActive.Load() == 0 {
		return nil
	}
	id := goid.Current()
	replayMu.Lock()
	defer replayMu.Unlock()
	return replays[id]
}

// withStream runs f with the calling goroutine drawing from a copy of the
// stream at s (Checkpoint's recomputation), leaving the process's stream
// and other goroutines' draws alone. Goroutines that f starts draw from
// the process's stream.
func withStream(s rand.PCG, f func()) {
	id := goid.Current()
	p := new(rand.PCG)
	*p = s
	replayMu.Lock()
	prev := replays[id]
	replays[id] = &replay{pcg: p, rng: rand.New(p)}
	replayMu.Unlock()
	replayActive.Add(1)
	defer func() {
		replayActive.Add(-1)
		replayMu.Lock()
		if prev == nil {
			delete(replays, id)
		} else {
			replays[id] = prev
		}
		replayMu.Unlock()
	}()
	f()
}

// Seed resets the random stream that Rand, RandN, Dropout, RandInt,
// RandPerm and Multinomial draw from (inside a checkpoint's
// recomputation, the copy it draws from, as Seed reset the stream in the
// checkpoint's first run).
func Seed(seed uint64) {
	rngMu.Lock()
	pcg().Seed(seed, 0x65)
	rngMu.Unlock()
}

// rngState is the position of the stream the calling goroutine draws
// from, for Checkpoint to draw the same numbers again (withStream).
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
		return failed(errorf(op, ErrValue, "high", "gives the range ["+itoa64(low)+", "+itoa64(high)+"), but "+dt.String()+
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
