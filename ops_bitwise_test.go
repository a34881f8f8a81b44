package lathe

import (
	"math"
	"math/big"
	"testing"
)

// intEdges are integers where the kernels' paths part: the signs, the
// shift counts at and past each word's width, a word's carry, and the
// least and greatest of int32 and int64.
var intEdges = []int64{
	0, 1, -1, 2, -2, 3, -7, 12, 31, 32, 33, 63, 64, 65, -31, -32, -33, -63, -64, 255, -128,
	1 << 31, -1 << 31, 1<<31 - 1, 1 << 32, -1 << 32, 0xffffffff, 12345678901234, -98765432109876,
	math.MaxInt64, math.MinInt64, math.MinInt64 + 1, 1 << 62, 3 * 1 << 40,
}

// intOracle is each integer kernel as torch 1.13's cpu computes it, in
// int64, written apart from the kernels: math/big for the division, whose
// result wraps to width w where it overflows, and torch's own loop for
// gcd.
var intOracle = map[string]func(x, y int64, w uint) int64{
	"and":   func(x, y int64, _ uint) int64 { return x & y },
	"or":    func(x, y int64, _ uint) int64 { return x | y },
	"xor":   func(x, y int64, _ uint) int64 { return x ^ y },
	"shl":   func(x, y int64, w uint) int64 { return x << (uint64(y) % uint64(w)) },
	"shr":   func(x, y int64, w uint) int64 { return x >> (uint64(y) % uint64(w)) },
	"floor": func(x, y int64, w uint) int64 { return bigWrap(bigFloorDiv(big.NewInt(x), big.NewInt(y)), w) },
	"gcd": func(x, y int64, w uint) int64 {
		if w == 32 {
			return int64(calcGcd(int32(x), int32(y)))
		}
		return calcGcd(x, y)
	},
}

// calcGcd is torch's calc_gcd (ATen's Math.h), line for line: the
// absolute values wrap at the least integer, and C's % keeps the
// dividend's sign, so a least integer can give -1 (torch.gcd(65,
// -2³¹) is -1 in torch 1.13).
func calcGcd[T int32 | int64](a, b T) T {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for a != 0 {
		a, b = b%a, a // Go's % of the least integer by -1 is 0, where C's traps
	}
	return b
}

// bigFloorDiv is x/y rounded down.
func bigFloorDiv(x, y *big.Int) *big.Int {
	q, m := new(big.Int).QuoRem(x, y, new(big.Int))
	if m.Sign() != 0 && m.Sign() != y.Sign() {
		q.Sub(q, big.NewInt(1))
	}
	return q
}

// bigWrap is v's low w bits as a signed integer, as a w-bit machine
// integer wraps.
func bigWrap(v *big.Int, w uint) int64 {
	mod := new(big.Int).Lsh(big.NewInt(1), w)
	r := new(big.Int).Mod(v, mod)
	if r.Cmp(new(big.Int).Rsh(mod, 1)) >= 0 {
		r.Sub(r, mod)
	}
	return r.Int64()
}

// TestIntegerKernels checks the integer kernels (and, or, xor, the
// shifts, floor division, gcd, and lcm from them) on every device against
// the oracle, for every pair of intEdges as int64 and, wrapped, as int32,
// broadcast from a column and a row; int8 and uint8, which compute in
// int32, are the conformance cases'.
func TestIntegerKernels(t *testing.T) {
	calls := map[string]func(x, y *Tensor) *Tensor{
		"and": (*Tensor).BitwiseAnd, "or": (*Tensor).BitwiseOr, "xor": (*Tensor).BitwiseXor,
		"shl": (*Tensor).BitwiseLeftShift, "shr": (*Tensor).BitwiseRightShift,
		"floor": (*Tensor).FloorDivide, "gcd": (*Tensor).Gcd,
	}
	n := len(intEdges)
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			for _, w := range []uint{32, 64} {
				dt := map[uint]DType{32: Int32, 64: Int64}[w]
				x := intsOf(intEdges, w).Reshape(n, 1).To(dev)
				divisors := make([]int64, n) // floor division's: no zeros in w bits
				for i, v := range intEdges {
					if divisors[i] = v; bigWrap(big.NewInt(v), w) == 0 {
						divisors[i] = 5
					}
				}
				for name, call := range calls {
					ys := intEdges
					if name == "floor" {
						ys = divisors
					}
					y := intsOf(ys, w).Reshape(1, n).To(dev)
					// Broadcast, both operands whole and transposed (a
					// strided walk), and each y as a 0-d scalar: the
					// kernels' row, strided and scalar paths.
					xs, yt := x.Expand(n, n).Contiguous(), y.Expand(n, n).Contiguous()
					forms := map[string]*Tensor{"broadcast": call(x, y), "transposed": call(xs.T(), yt.T()).T()}
					for _, form := range []string{"broadcast", "transposed"} {
						got, err := forms[form].Cast(Int64).Int64s()
						if err != nil {
							t.Fatalf("%s %s %v: %v", dev, name, dt, err)
						}
						bad := 0
						for i, a := range intEdges {
							for j, b := range ys {
								a, b := bigWrap(big.NewInt(a), w), bigWrap(big.NewInt(b), w)
								want := bigWrap(big.NewInt(intOracle[name](a, b, w)), w)
								if g := got[i*n+j]; g != want && bad < 5 {
									bad++
									t.Errorf("%s %s %s %v: %d, %d gives %d, want %d", dev, form, name, dt, a, b, g, want)
								}
							}
						}
					}
					for j := range n {
						s := y.Narrow(1, j, 1).Reshape()
						got, err := call(x, s).Reshape(-1).Cast(Int64).Int64s()
						if err != nil {
							t.Fatalf("%s %s %v: %v", dev, name, dt, err)
						}
						b := bigWrap(big.NewInt(ys[j]), w)
						for i, a := range intEdges {
							a := bigWrap(big.NewInt(a), w)
							if want := bigWrap(big.NewInt(intOracle[name](a, b, w)), w); got[i] != want {
								t.Fatalf("%s scalar %s %v: %d, %d gives %d, want %d", dev, name, dt, a, b, got[i], want)
							}
						}
					}
				}
			}
		})
	}
}

// intsOf is vs wrapped to w bits, as an int32 (w = 32) or int64 tensor.
func intsOf(vs []int64, w uint) *Tensor {
	if w == 64 {
		return FromSlice(CPU, vs, len(vs))
	}
	v32 := make([]int32, len(vs))
	for i, v := range vs {
		v32[i] = int32(v)
	}
	return FromSlice(CPU, v32, len(vs))
}

// TestLcmFromKernels checks lcm, the composite of gcd and floor division,
// on every device against the oracle: |x / gcd · y|, 0 where the gcd is
// 0, wrapping as torch's.
func TestLcmFromKernels(t *testing.T) {
	n := len(intEdges)
	for _, dev := range biDevices(t) {
		t.Run(dev.String(), func(t *testing.T) {
			x := FromSlice(CPU, intEdges, n, 1).To(dev)
			y := FromSlice(CPU, intEdges, 1, n).To(dev)
			got, err := x.Lcm(y).Int64s()
			if err != nil {
				t.Fatalf("%s: %v", dev, err)
			}
			bad := 0
			for i, a := range intEdges {
				for j, b := range intEdges {
					g := intOracle["gcd"](a, b, 64)
					want := int64(0)
					if g != 0 {
						want = a / g * b
						if want < 0 {
							want = -want
						}
					}
					if got[i*n+j] != want && bad < 5 {
						bad++
						t.Errorf("%s lcm(%d, %d) = %d, want %d", dev, a, b, got[i*n+j], want)
					}
				}
			}
		})
	}
}
