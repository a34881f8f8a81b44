package half

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"sync"
	"testing"
)

// format describes one 16-bit format to the tests, by its bit layout alone.
type format struct {
	name          string
	expBits       int
	sigBits       int
	from          func(float32) uint16
	to            func(uint16) float32
	values        []float64 // refValues: each positive pattern's value, Inf's as the next binade's
	infBits, qbit uint16
}

var formats = []*format{
	{name: "f16", expBits: 5, sigBits: 10, from: Float16FromFloat32, to: Float16ToFloat32, infBits: 0x7c00, qbit: 0x0200},
	{name: "bf16", expBits: 8, sigBits: 7, from: BFloat16FromFloat32, to: BFloat16ToFloat32, infBits: 0x7f80, qbit: 0x0040},
}

func init() {
	for _, f := range formats {
		f.values = make([]float64, f.infBits+1)
		for h := range f.values {
			f.values[h] = f.decode(uint16(h))
		}
	}
}

// decode is the textbook value of a positive pattern h that is not a NaN:
// with bias b, exponent field e and significand field m, m·2^(1-b-p) for
// e = 0 and (2^p + m)·2^(e-b-p) otherwise, in float64, which holds both
// formats exactly. For Inf's pattern it gives 2^(emax+1), the value the
// next binade would start at, which is what rounding compares against.
func (f *format) decode(h uint16) float64 {
	e := int(h) >> f.sigBits
	m := int(h) & (1<<f.sigBits - 1)
	bias := 1<<(f.expBits-1) - 1
	if e == 0 {
		return math.Ldexp(float64(m), 1-bias-f.sigBits)
	}
	return math.Ldexp(float64(1<<f.sigBits+m), e-bias-f.sigBits)
}

func (f *format) isNaN(h uint16) bool { return h&0x7fff > f.infBits }

// round is the slow, obvious rounding of a float32 pattern b: the nearest
// value in the table of every representable magnitude, ties to the even
// pattern, and past the largest finite one to Inf (whose table value is
// 2^(emax+1), so a tie between the largest finite value and it goes to Inf,
// whose pattern is even). A NaN keeps its sign and the top significand bits
// that fit, quiet.
func (f *format) round(b uint32) uint16 {
	sign := uint16(b>>16) & 0x8000
	x := math.Float32frombits(b &^ (1 << 31))
	if x != x {
		return sign | f.infBits | f.qbit | uint16(b>>(23-f.sigBits))&(1<<f.sigBits-1)
	}
	v := float64(x)
	i := sort.SearchFloat64s(f.values, v) // first value ≥ v
	switch {
	case i == len(f.values):
		return sign | f.infBits
	case f.values[i] == v:
		return sign | uint16(i)
	}
	lo, hi := i-1, i
	dlo, dhi := v-f.values[lo], f.values[hi]-v // exact: both fit in float64
	switch {
	case dlo < dhi:
		return sign | uint16(lo)
	case dhi < dlo:
		return sign | uint16(hi)
	case lo%2 == 0:
		return sign | uint16(lo)
	}
	return sign | uint16(hi)
}

// Every 16-bit pattern widens to its textbook value and narrows back to
// itself; a NaN widens to a quiet NaN with its sign and payload, and comes
// back as itself with the quiet bit set.
func TestRoundTripAllPatterns(t *testing.T) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			nans := 0
			for i := range 1 << 16 {
				h := uint16(i)
				x := f.to(h)
				b := math.Float32bits(x)
				if b>>31 != uint32(h>>15) {
					t.Fatalf("%04x widens to %08x, the wrong sign", h, b)
				}
				back := f.from(x)
				if f.isNaN(h) {
					nans++
					if x == x || b&0x00400000 == 0 {
						t.Fatalf("NaN %04x widens to %08x, not a quiet NaN", h, b)
					}
					if back != h|f.qbit {
						t.Fatalf("NaN %04x widens to %08x and comes back as %04x, want %04x", h, b, back, h|f.qbit)
					}
					continue
				}
				if want := f.values[min(h&0x7fff, f.infBits)]; h&0x7fff == f.infBits && !math.IsInf(float64(x), 0) ||
					h&0x7fff < f.infBits && math.Abs(float64(x)) != want {
					t.Fatalf("%04x widens to %v, want magnitude %v", h, x, want)
				}
				if back != h {
					t.Fatalf("%04x widens to %08x and comes back as %04x", h, b, back)
				}
			}
			t.Logf("65536 patterns, %d of them NaNs", nans)
		})
	}
}

// sweep checks f.from against f.round for every float32 pattern that pick
// accepts and for the extra patterns, on every CPU, and reports how many it
// checked.
func sweep(t *testing.T, f *format, step uint64, extra []uint32) int {
	t.Helper()
	workers := runtime.GOMAXPROCS(0)
	var (
		mu    sync.Mutex
		fails []string
		count int
		wg    sync.WaitGroup
	)
	check := func(b uint32, bad *[]string) {
		got, want := f.from(math.Float32frombits(b)), f.round(b)
		if got != want && len(*bad) < 5 {
			*bad = append(*bad, fmt.Sprintf("%08x (%g) rounds to %04x, want %04x", b, math.Float32frombits(b), got, want))
		}
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bad []string
			n := 0
			for p := uint64(w) * step; p < 1<<32; p += uint64(workers) * step {
				check(uint32(p), &bad)
				n++
			}
			for i := w; i < len(extra); i += workers {
				check(extra[i], &bad)
				n++
			}
			mu.Lock()
			fails = append(fails, bad...)
			count += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, s := range fails {
		t.Error(s)
	}
	return count
}

// boundaries are the float32 patterns where rounding to f changes its mind:
// around every representable value and every midpoint between neighbours
// (the Inf entry's included, so the overflow threshold), both signs.
func (f *format) boundaries() []uint32 {
	var out []uint32
	add := func(x float64) {
		b := math.Float32bits(float32(x)) // exact: every value and midpoint fits float32
		for d := -2; d <= 2; d++ {
			if c := int64(b) + int64(d); c >= 0 && c <= 0x7f800000 {
				out = append(out, uint32(c), uint32(c)|1<<31)
			}
		}
	}
	for i, v := range f.values {
		add(v)
		if i+1 < len(f.values) {
			add((v + f.values[i+1]) / 2)
		}
	}
	return out
}

const exhaustiveEnv = "LATHE_HALF_EXHAUSTIVE"

// Float32 → 16 bits against the slow reference: every 257th float32 pattern
// (257 is odd, so the samples' low bits take every value) plus every
// boundary; with LATHE_HALF_EXHAUSTIVE=1 and without -short, all 2^32
// patterns (a few minutes).
func TestNarrowAgainstReference(t *testing.T) {
	step := uint64(257)
	if os.Getenv(exhaustiveEnv) == "1" && !testing.Short() {
		step = 1
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			n := sweep(t, f, step, f.boundaries())
			t.Logf("%d float32 patterns (every %d plus boundaries)", n, step)
		})
	}
}

// The reference itself, on values worked by hand, so that a bug shared by
// it and the code under test has a third opinion to meet.
func TestReferenceByHand(t *testing.T) {
	f16, bf16 := formats[0], formats[1]
	for _, c := range []struct {
		f    *format
		in   uint32
		want uint16
	}{
		{f16, 0x477fe000, 0x7bff},  // 65504, largest finite
		{f16, 0x477fefff, 0x7bff},  // just below 65520
		{f16, 0x477ff000, 0x7c00},  // 65520: tie, to even, which is Inf
		{f16, 0x33000000, 0x0000},  // 2^-25: tie between 0 and 2^-24, to 0
		{f16, 0x33000001, 0x0001},  // just above 2^-25
		{f16, 0x33c00000, 0x0002},  // 3·2^-25: tie between 1 and 2 (·2^-24), to 2
		{f16, 0x387fe000, 0x0400},  // 2^-14 - 2^-25: tie, to 2^-14
		{f16, 0x387fc000, 0x03ff},  // 1023·2^-24, the largest subnormal
		{f16, 0xbf800000, 0xbc00},  // -1
		{f16, 0x80000000, 0x8000},  // -0
		{f16, 0x45001000, 0x6800},  // 2049: tie between 2048 and 2050, to 2048
		{f16, 0x45003000, 0x6802},  // 2051: tie between 2050 and 2052, to 2052
		{f16, 0x7f800001, 0x7e00},  // signalling NaN, quietened
		{f16, 0xffc02000, 0xfe01},  // negative NaN with payload
		{bf16, 0x7f7f8000, 0x7f80}, // midpoint of the largest finite and 2^128: to Inf
		{bf16, 0x7f7f7fff, 0x7f7f}, // just below it
		{bf16, 0x3f808000, 0x3f80}, // tie, kept part even: down
		{bf16, 0x3f818000, 0x3f82}, // tie, kept part odd: up
		{bf16, 0x00008000, 0x0000}, // half the smallest bfloat16 subnormal: to 0
		{bf16, 0x7fffffff, 0x7fff}, // NaN whose rounding add would carry into the sign
		{bf16, 0x7f80ffff, 0x7fc0}, // NaN whose payload is all in the dropped bits
		{bf16, 0xff800001, 0xffc0}, // negative signalling NaN
		{bf16, 0xff800000, 0xff80}, // -Inf
		{bf16, 0x80000001, 0x8000}, // -smallest float32 subnormal: to -0
		{bf16, 0x00018000, 0x0002}, // subnormal tie, odd kept part: up
		{bf16, 0x7f7fffff, 0x7f80}, // float32's largest: Inf
		{bf16, 0x3f800001, 0x3f80}, // 1 + ulp
		{bf16, 0x40490fdb, 0x4049}, // π
		{bf16, 0xc0490fdb, 0xc049}, // -π
		{f16, 0x40490fdb, 0x4248},  // π
		{f16, 0x3dcccccd, 0x2e66},  // 0.1
		{f16, 0x387fffff, 0x0400},  // just below 2^-14: to 2^-14
		{f16, 0x33800000, 0x0001},  // 2^-24
		{f16, 0x34000000, 0x0002},  // 2^-23
		{f16, 0x477fffff, 0x7c00},  // between 65520 and 2^16
		{f16, 0x47800000, 0x7c00},  // 2^16
		{f16, 0x7f7fffff, 0x7c00},  // float32's largest
		{f16, 0x00000001, 0x0000},  // float32's smallest
	} {
		if got := c.f.round(c.in); got != c.want {
			t.Errorf("reference %s(%08x) = %04x, want %04x", c.f.name, c.in, got, c.want)
		}
		if got := c.f.from(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("%s(%08x) = %04x, want %04x", c.f.name, c.in, got, c.want)
		}
	}
}
