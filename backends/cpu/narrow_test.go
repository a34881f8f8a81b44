package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// TestConvert16 checks the vector 16-bit float conversions against
// internal/half bit for bit: every float16 and bfloat16 widened, and
// float32s narrowed: every bit pattern around each rounding boundary and
// special value, and a million random ones.
func TestConvert16(t *testing.T) {
	if !haveF16C {
		t.Skip("no F16C on this machine or build")
	}
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	got := make([]float32, len(all))
	for _, bf := range []bool{false, true} {
		if !widen16(got[:len(all)-5], all[5:], bf) { // a tail of 3 after the vectors
			t.Fatal("widen16 refused")
		}
		for i, h := range all[5:] {
			want := half.Float16ToFloat32(h)
			if bf {
				want = half.BFloat16ToFloat32(h)
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("bf %v: widen %#04x = %#08x, want %#08x (tail test)", bf, h, math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
		if !widen16(got, all, bf) {
			t.Fatal("widen16 refused")
		}
		for i, h := range all {
			want := half.Float16ToFloat32(h)
			if bf {
				want = half.BFloat16ToFloat32(h)
			}
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Fatalf("bf %v: widen %#04x = %#08x, want %#08x", bf, h, math.Float32bits(got[i]), math.Float32bits(want))
			}
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	var bits []uint32
	for _, base := range []uint32{0, 0x00000001, 0x33000000, 0x33800000, 0x387fc000, 0x38800000, 0x477fe000, 0x477ff000,
		0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0x3f800000, 0x3f808000, 0x3f818000} {
		for d := uint32(0); d < 4096; d++ {
			bits = append(bits, base+d-2048, (base+d-2048)|1<<31)
		}
	}
	for range 1 << 20 {
		bits = append(bits, rng.Uint32())
	}
	src := make([]float32, len(bits))
	for i, b := range bits {
		src[i] = math.Float32frombits(b)
	}
	out := make([]uint16, len(src))
	for _, bf := range []bool{false, true} {
		// Every tail length first (a run's last n mod 8 values go through
		// the one-value path), then the whole.
		for k := range 8 {
			if !narrow16(out[:vectorMin+k], src[len(src)-vectorMin-k:], bf) {
				t.Fatal("narrow16 refused")
			}
			for i, f := range src[len(src)-vectorMin-k:] {
				want := half.Float16FromFloat32(f)
				if bf {
					want = half.BFloat16FromFloat32(f)
				}
				if out[i] != want {
					t.Fatalf("bf %v tail %d: narrow %#08x = %#04x, want %#04x", bf, k, math.Float32bits(f), out[i], want)
				}
			}
		}
		if !narrow16(out, src, bf) {
			t.Fatal("narrow16 refused")
		}
		for i, f := range src {
			want := half.Float16FromFloat32(f)
			if bf {
				want = half.BFloat16FromFloat32(f)
			}
			if out[i] != want {
				t.Fatalf("bf %v: narrow %#08x = %#04x, want %#04x", bf, bits[i], out[i], want)
			}
		}
	}
}

// TestElementwiseInChunks: unary and binary ops on narrow tensors of more
// than a chunk (registerElementwise computes them a block of the leading
// dim at a time, on several goroutines, the last block short), with the
// second operand of out's shape, broadcast inside each row, a bias
// broadcast along the leading dim, of lower rank and 0-d, give the wide
// kernel's results rounded once, bit for bit, as dispatch.ViaCompute's
// whole-tensor path does; a comparison's bool result and an 8-bit integer
// op too. The arithmetic, relu and the activations' gradients with a
// second operand of out's shape, of one element, or of one value per row
// (a bias, a value per image) go through C whole (fusedHalf), and must
// give the same bits.
func TestElementwiseInChunks(t *testing.T) {
	shape := []int{40, 3, 20, 21} // 13 rows a block: 4 blocks
	mk := func(dt dispatch.DType, shape []int, seed int) *dispatch.Tensor {
		n := dispatch.Numel(shape)
		v := randomF64(n + seed)[seed:]
		if dt.IsInt() {
			for i := range v {
				v[i] = math.Round(v[i] * 100)
			}
		}
		x := dispatch.NewTensor(cpu0, dt, shape, newBuffer(dt, n))
		castInto(x, tensorOf(dispatch.Float64, v, shape...))
		// Signalling and quiet NaNs of both signs, infinities, -0 and the
		// largest finite value, scattered: the fused loops skip a quieting
		// step that the blocks take, and must give the same bits.
		specials := map[dispatch.DType][]uint16{
			dispatch.BFloat16: {0x7f81, 0xffa5, 0x7fc3, 0x7f80, 0xff80, 0x8000, 0x7f7f},
			dispatch.Float16:  {0x7c01, 0xfd55, 0x7e03, 0x7c00, 0xfc00, 0x8000, 0x7bff},
		}[dt]
		for i, b := range specials {
			bits16(x.Storage.Buffer)[(i*7919+seed*31)%n] = b
		}
		return x
	}
	wideOf := func(x *dispatch.Tensor) *dispatch.Tensor {
		c := dispatch.ComputeOf(x.DType)
		w := dispatch.NewTensor(cpu0, c, x.Shape, newBuffer(c, x.Numel()))
		castInto(w, x)
		return w
	}
	seconds := map[string][]int{"same": shape, "per row": {40, 1, 20, 21}, "bias": {3, 1, 1}, "per image": {40, 1, 1, 1}, "lower rank": {21}, "0-d": {}}
	for _, dt := range []dispatch.DType{dispatch.BFloat16, dispatch.Float16, dispatch.Int8} {
		x := mk(dt, shape, 0)
		cases := map[string]func(x, y *dispatch.Tensor) (*dispatch.Tensor, error){
			"add": func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) {
				return dispatch.Call(ops.Add, dispatch.None{}, x, y)
			},
			"mul": func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) {
				return dispatch.Call(ops.Mul, dispatch.None{}, x, y)
			},
			"sub": func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) {
				return dispatch.Call(ops.Sub, dispatch.None{}, x, y)
			},
			"gt": func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) {
				return dispatch.Call(ops.Gt, dispatch.None{}, x, y)
			},
		}
		if !dt.IsInt() {
			cases["div"] = func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) {
				return dispatch.Call(ops.Div, dispatch.None{}, x, y)
			}
			cases["exp"] = func(x, _ *dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(ops.Exp, ops.Params{}, x) }
			cases["relu"] = func(x, _ *dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(ops.ReLU, ops.Params{}, x) }
			for _, op := range []*dispatch.Op[dispatch.None]{ops.ReLUBackward, ops.GELUBackward, ops.GELUTanhBackward, ops.SiLUBackward} {
				cases[op.Name] = func(x, y *dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(op, dispatch.None{}, x, y) }
			}
		}
		for sn, ys := range seconds {
			y := mk(dt, ys, 7)
			for name, f := range cases {
				t.Run(dt.String()+"/"+name+"/"+sn, func(t *testing.T) {
					got, err := f(x, y)
					if err != nil {
						t.Fatal(err)
					}
					ref, err := f(wideOf(x), wideOf(y))
					if err != nil {
						t.Fatal(err)
					}
					want := ref
					if got.DType != ref.DType {
						want = dispatch.NewTensor(cpu0, got.DType, ref.Shape, newBuffer(got.DType, ref.Numel()))
						castInto(want, ref)
					}
					if dispatch.Halves.Has(got.DType) { // bit for bit, NaNs' payloads too
						g, w := bits16(got.Storage.Buffer)[got.Offset:], bits16(want.Storage.Buffer)[want.Offset:]
						for i := range got.Numel() {
							if g[i] != w[i] {
								t.Fatalf("element %d = %#04x, want %#04x", i, g[i], w[i])
							}
						}
						return
					}
					g, w := denseF64(got), denseF64(want)
					for i := range g {
						if g[i] != w[i] && !(math.IsNaN(g[i]) && math.IsNaN(w[i])) {
							t.Fatalf("element %d = %v, want %v", i, g[i], w[i])
						}
					}
				})
			}
		}
	}
}

// BenchmarkElementwiseHalf times the ResNet block's elementwise ops on its
// activations ([32,16,32,32]) in float32 and in the 16-bit dtypes: relu,
// relu_backward, an add of two such tensors and a channel's bias.
func BenchmarkElementwiseHalf(b *testing.B) {
	shape := []int{32, 16, 32, 32}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.BFloat16, dispatch.Float16} {
		mk := func(shape ...int) *dispatch.Tensor {
			n := dispatch.Numel(shape)
			x := dispatch.NewTensor(cpu0, dt, shape, newBuffer(dt, n))
			castInto(x, tensorOf(dispatch.Float64, randomF64(n), shape...))
			return x
		}
		x, y, bias := mk(shape...), mk(shape...), mk(16, 1, 1)
		for _, c := range []struct {
			name string
			run  func() (*dispatch.Tensor, error)
		}{
			{"relu", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.ReLU, ops.Params{}, x) }},
			{"relu_backward", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.ReLUBackward, dispatch.None{}, x, y) }},
			{"add", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Add, dispatch.None{}, x, y) }},
			{"add_bias", func() (*dispatch.Tensor, error) { return dispatch.Call(ops.Add, dispatch.None{}, x, bias) }},
		} {
			b.Run(dt.String()+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					out, err := c.run()
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
				}
			})
		}
	}
}
