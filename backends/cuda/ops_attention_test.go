package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/cudaemu"
	"github.com/lathe-ml/lathe/internal/half"
)

// attnGEMMCases are the GEMM path's shapes: grouped heads, Lq above and
// below Lk, Ev != E, rows longer than a block of the rows kernel (128) and
// than four, and the shapes that take the fused kernels (Lk = 0, E = 0).
var attnGEMMCases = []struct {
	n, hq, hk, lq, lk, e, ev int
	causal                   bool
	gemm                     bool // whether the GEMM path takes it
}{
	{1, 2, 1, 70, 40, 5, 3, false, true},
	{1, 2, 1, 70, 40, 5, 3, true, true},
	{2, 2, 2, 33, 70, 4, 2, true, true},
	{2, 4, 2, 9, 300, 3, 5, false, true},
	{1, 3, 3, 300, 7, 2, 2, true, true},
	{2, 2, 1, 6, 6, 4, 4, true, true},
	// Rows past four blocks of the rows kernel (128 threads): its unrolled
	// loops, and causal rows that see more than 512 keys but not all.
	{1, 2, 1, 3, 1100, 3, 2, false, true},
	{1, 1, 1, 530, 540, 2, 1, true, true},
	{1, 2, 2, 3, 0, 4, 2, false, false},
	{1, 2, 2, 3, 5, 0, 2, false, false},
}

// emuGEMM is cuBLAS's strided-batched GEMM on the emulation's memory: the
// spans of A, B and C read into one flat memory for runColumnMajor (the
// reference interpreter of cuBLAS's semantics, ops_conv_test.go) and C's
// written back, so that C's elements between its columns (the out's
// logsumexp column) stay as they were. It refuses what cuBLAS refuses (as
// testdata/fakecublas.c does: leading dims below the stored rows) and
// counts its calls.
func emuGEMM(calls *int) func(dispatch.Device, dispatch.DType, gemmArgs) (bool, error) {
	return func(_ dispatch.Device, dt dispatch.DType, g gemmArgs) (bool, error) {
		*calls++
		stored := func(t bool, r, c int) int { return map[bool]int{false: r, true: c}[t] }
		if g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 0 || g.lda < max(1, stored(g.transA, g.m, g.k)) ||
			g.ldb < max(1, stored(g.transB, g.k, g.n)) || g.ldc < max(1, g.m) {
			return true, fmt.Errorf("cublas: invalid value in %+v", g)
		}
		if g.m == 0 || g.n == 0 || g.batch == 0 || g.k == 0 {
			return true, fmt.Errorf("emuGEMM: an empty product %+v, which attention does not make", g)
		}
		cdt := dt
		if g.wideC {
			cdt = dispatch.Float32
		}
		var mem []float64
		// span appends the elements a batch of stored column-major r×c
		// matrices of dtype dt at p covers to mem, and returns where they
		// start.
		span := func(dt dispatch.DType, p uint64, ld int, stride int64, r, c int) (at, n int) {
			size := dt.Size()
			at, n = len(mem), int(stride)*(g.batch-1)+ld*(c-1)+r
			raw := cudaemu.Read(p, n*size)
			for i := range n {
				mem = append(mem, loadFloat(dt, raw[size*i:]))
			}
			return at, n
		}
		ar, ac := g.m, g.k
		if g.transA {
			ar, ac = ac, ar
		}
		br, bc := g.k, g.n
		if g.transB {
			br, bc = bc, br
		}
		flat := g
		aAt, _ := span(dt, g.a, g.lda, g.strideA, ar, ac)
		bAt, _ := span(dt, g.b, g.ldb, g.strideB, br, bc)
		cAt, nc := span(cdt, g.c, g.ldc, g.strideC, g.m, g.n)
		flat.a, flat.b, flat.c = uint64(aAt), uint64(bAt), uint64(cAt)
		runColumnMajor(mem, flat)
		size := cdt.Size()
		raw := make([]byte, nc*size)
		for i, v := range mem[cAt:] {
			storeFloat(cdt, raw[size*i:], v)
		}
		cudaemu.Write(g.c, raw)
		return true, nil
	}
}

// loadFloat is the float of dtype dt whose bytes b starts with.
func loadFloat(dt dispatch.DType, b []byte) float64 {
	switch dt {
	case dispatch.Float16:
		return float64(half.Float16ToFloat32(binary.LittleEndian.Uint16(b)))
	case dispatch.BFloat16:
		return float64(half.BFloat16ToFloat32(binary.LittleEndian.Uint16(b)))
	case dispatch.Float32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b))
}

// storeFloat writes v as dtype dt into b, rounded once to nearest even.
func storeFloat(dt dispatch.DType, b []byte, v float64) {
	switch dt {
	case dispatch.Float16:
		binary.LittleEndian.PutUint16(b, half.Float16FromFloat32(float32(v)))
	case dispatch.BFloat16:
		binary.LittleEndian.PutUint16(b, half.BFloat16FromFloat32(float32(v)))
	case dispatch.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	default:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	}
}

// useEmuGEMM points the cuBLAS hooks at emuGEMM (on is whether the device
// has it) for the rest of the test, and returns the call count.
func useEmuGEMM(t *testing.T, on bool) *int {
	calls := new(int)
	oldG, oldB := gemm, blasOn
	gemm = emuGEMM(calls)
	blasOn = func(dispatch.Device) bool { return on }
	t.Cleanup(func() { gemm, blasOn = oldG, oldB })
	return calls
}

// emuFloats is a contiguous tensor of dt in the emulation's memory.
func emuFloats(t *testing.T, dt dispatch.DType, vals []float64, shape []int) *dispatch.Tensor {
	t.Helper()
	var raw []byte
	for _, v := range vals {
		switch dt {
		case dispatch.Float32:
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(float32(v)))
		case dispatch.Float64:
			raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
		case dispatch.Float16:
			raw = binary.LittleEndian.AppendUint16(raw, half.Float16FromFloat32(float32(v)))
		case dispatch.BFloat16:
			raw = binary.LittleEndian.AppendUint16(raw, half.BFloat16FromFloat32(float32(v)))
		}
	}
	p := cudaemu.Alloc(len(raw))
	t.Cleanup(func() { cudaemu.Free(p) })
	cudaemu.Write(p, raw)
	x := tensor(dt, shape)
	x.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(vals))
	return x
}

// hostFloats is the same values on the cpu.
func hostFloats(t *testing.T, dt dispatch.DType, vals []float64, shape []int) *dispatch.Tensor {
	t.Helper()
	var data any = vals
	switch dt {
	case dispatch.Float32:
		data = convertAll(vals, func(v float64) float32 { return float32(v) })
	case dispatch.Float16:
		data = convertAll(vals, func(v float64) half.Float16 { return half.Float16(half.Float16FromFloat32(float32(v))) })
	case dispatch.BFloat16:
		data = convertAll(vals, func(v float64) half.BFloat16 { return half.BFloat16(half.BFloat16FromFloat32(float32(v))) })
	}
	x, err := dispatch.Upload(dispatch.Device{Kind: dispatch.Host}, data, dt, shape)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func convertAll[T any](vals []float64, f func(float64) T) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = f(v)
	}
	return out
}

// floatsOf is a float slice of the cpu's (ReadHost's) as float64s.
func floatsOf(data any) []float64 {
	switch w := data.(type) {
	case []float32:
		return widen(w, func(v float32) float64 { return float64(v) })
	case []half.Float16:
		return widen(w, func(v half.Float16) float64 { return float64(v.Float32()) })
	case []half.BFloat16:
		return widen(w, func(v half.BFloat16) float64 { return float64(v.Float32()) })
	}
	return data.([]float64)
}

func widen[T any](w []T, f func(T) float64) []float64 {
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = f(v)
	}
	return out
}

// runEmu runs c's kernel on the emulation into a fresh out and returns its
// bytes.
func runEmu(t *testing.T, c kcase, in []*dispatch.Tensor) []byte {
	t.Helper()
	dt, shape, err := c.infer(in)
	if err != nil {
		t.Fatal(err)
	}
	n := dispatch.Numel(shape) * dt.Size()
	p := cudaemu.Alloc(n)
	t.Cleanup(func() { cudaemu.Free(p) })
	cudaemu.Write(p, make([]byte, n)) // the paths must write every element
	out := tensor(dt, shape)
	out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, dispatch.Numel(shape))
	if err := c.run(out, in); err != nil {
		t.Fatal(err)
	}
	return cudaemu.Read(p, n)
}

// TestAttentionGEMMPath runs attention's GEMM path (the rows kernels on the
// emulation, the products on emuGEMM) forward and backward and compares it
// with the fused kernels (the same device without cuBLAS) and the cpu, on
// every case once whole and once in chunks of one (batch, key head) pair,
// and on one case in each 16-bit float.
func TestAttentionGEMMPath(t *testing.T) {
	emulate(t)
	rng := rand.New(rand.NewPCG(3, 4))
	normal := func(n int, sd float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64() * sd
		}
		return v
	}
	// The 16-bit floats compute in float32 (dispatch.ViaCompute), so on
	// the GEMM path too: one grouped case each.
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
		for ci, c := range attnGEMMCases {
			for _, chunked := range []bool{false, true} {
				pairs := c.n * c.hk
				if chunked && pairs == 1 || dispatch.Narrow(dt) && (ci > 0 || chunked) {
					continue // one pair is one chunk; one case of a 16-bit float
				}
				name := fmt.Sprintf("%s/n%d.hq%d.hk%d.lq%d.lk%d.e%d.ev%d.causal=%v/chunked=%v", dt, c.n, c.hq, c.hk, c.lq, c.lk, c.e, c.ev, c.causal, chunked)
				t.Run(name, func(t *testing.T) {
					// room sets the cap, when chunked, to bufs buffers of one
					// pair's scores: chunks of one pair.
					old := attnScratchCap
					t.Cleanup(func() { attnScratchCap = old })
					room := func(bufs int) {
						if chunked {
							attnScratchCap = bufs * c.hq / c.hk * c.lq * c.lk * dt.Size()
						}
					}
					room(1)
					a := ops.AttentionParams{Scale: 0.45, Causal: c.causal}
					shapes := [][]int{{c.n, c.hq, c.lq, c.e}, {c.n, c.hk, c.lk, c.e}, {c.n, c.hk, c.lk, c.ev}}
					var vals [][]float64
					var emuIn, cpuIn []*dispatch.Tensor
					for _, s := range shapes {
						v := normal(dispatch.Numel(s), 0.8)
						vals = append(vals, v)
						emuIn = append(emuIn, emuFloats(t, dt, v, s))
						cpuIn = append(cpuIn, hostFloats(t, dt, v, s))
					}
					fwd := caseOf(ops.Attention, a, emuIn...)
					want, err := dispatch.Call(ops.Attention, a, cpuIn...)
					if err != nil {
						t.Fatal(err)
					}
					wantData, err := dispatch.ReadHost(want)
					if err != nil {
						t.Fatal(err)
					}
					calls := useEmuGEMM(t, true)
					got := runEmu(t, fwd, emuIn)
					if wantCalls := map[bool]int{false: 2, true: 2 * pairs}[chunked]; c.gemm && *calls != wantCalls {
						t.Errorf("forward: %d GEMMs, want %d", *calls, wantCalls)
					} else if !c.gemm && *calls != 0 {
						t.Errorf("forward: %d GEMMs on a shape for the fused kernel", *calls)
					}
					compare(t, "forward vs cpu", ops.AttentionOutDType(dt), got, wantData, false)
					*calls = 0
					blasOn = func(dispatch.Device) bool { return false }
					fused := runEmu(t, fwd, emuIn)
					if *calls != 0 {
						t.Errorf("without cuBLAS the forward made %d GEMMs", *calls)
					}
					compare(t, "forward vs fused", ops.AttentionOutDType(dt), got, decode(fused, ops.AttentionOutDType(dt)), false)

					// The backward at the cpu's forward (a real logsumexp)
					// with a gradient for its every column.
					oShape := []int{c.n, c.hq, c.lq, c.ev + 1}
					o := floatsOf(wantData)
					gr := normal(len(o), 1)
					odt := ops.AttentionOutDType(dt) // the forward result's and its gradient's
					emuB := append(emuIn[:3:3], emuFloats(t, odt, o, oShape), emuFloats(t, odt, gr, oShape))
					cpuB := append(cpuIn[:3:3], hostFloats(t, odt, o, oShape), hostFloats(t, odt, gr, oShape))
					bwd := caseOf(ops.AttentionBackward, a, emuB...)
					wantB, err := dispatch.Call(ops.AttentionBackward, a, cpuB...)
					if err != nil {
						t.Fatal(err)
					}
					wantBData, err := dispatch.ReadHost(wantB)
					if err != nil {
						t.Fatal(err)
					}
					fusedB := runEmu(t, bwd, emuB)
					room(2)
					blasOn = func(dispatch.Device) bool { return true }
					*calls = 0
					gotB := runEmu(t, bwd, emuB)
					if wantCalls := map[bool]int{false: 5, true: 5 * pairs}[chunked]; c.gemm && *calls != wantCalls {
						t.Errorf("backward: %d GEMMs, want %d", *calls, wantCalls)
					} else if !c.gemm && *calls != 0 {
						t.Errorf("backward: %d GEMMs on a shape for the fused kernel", *calls)
					}
					compare(t, "backward vs cpu", dt, gotB, wantBData, false)
					compare(t, "backward vs fused", dt, gotB, decode(fusedB, dt), false)
				})
			}
		}
	}
}

// TestAttentionGEMMRows checks the rows kernels' edge rules on the GEMM
// path: a row whose scores are all -inf (a -inf query against finite
// keys) gets NaN outputs and a logsumexp of -inf, as the cpu's, and a
// NaN score makes its row NaN.
func TestAttentionGEMMRows(t *testing.T) {
	emulate(t)
	useEmuGEMM(t, true)
	for _, dt := range floatDTypes {
		q := []float64{math.Inf(-1), math.NaN(), 0.5, -0.25}
		k := []float64{1, 2, 0.5}
		v := []float64{1, -1, 2}
		qs, ks, vs := []int{1, 1, 4, 1}, []int{1, 1, 3, 1}, []int{1, 1, 3, 1}
		a := ops.AttentionParams{Scale: 1}
		got := runEmu(t, caseOf(ops.Attention, a, emuFloats(t, dt, q, qs), emuFloats(t, dt, k, ks), emuFloats(t, dt, v, vs)),
			[]*dispatch.Tensor{emuFloats(t, dt, q, qs), emuFloats(t, dt, k, ks), emuFloats(t, dt, v, vs)})
		want, err := dispatch.Call(ops.Attention, a, hostFloats(t, dt, q, qs), hostFloats(t, dt, k, ks), hostFloats(t, dt, v, vs))
		if err != nil {
			t.Fatal(err)
		}
		wantData, err := dispatch.ReadHost(want)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, fmt.Sprintf("%s rows", dt), dt, got, wantData, false)
	}
}

// TestAttentionGEMMLaunches records the launches and products of the
// package's attention cases and the masked ones, with cuBLAS (the GEMM
// path) and without (the fused kernels): every launch is one the PTX has,
// with its parameter kinds, and every product keeps cuBLAS's contract.
func TestAttentionGEMMLaunches(t *testing.T) {
	ents := entries(t)
	log := recordLaunches(t)
	var products []gemmArgs
	oldG, oldB := gemm, blasOn
	gemm = func(_ dispatch.Device, _ dispatch.DType, g gemmArgs) (bool, error) {
		products = append(products, g)
		return true, nil
	}
	t.Cleanup(func() { gemm, blasOn = oldG, oldB })
	rows := 0
	for _, blas := range []bool{true, false} {
		blasOn = func(dispatch.Device) bool { return blas }
		for _, dt := range floatDTypes {
			for _, c := range append(attentionCases(dt), maskedAttentionCases(dt)...) {
				dt, shape, err := c.infer(c.in)
				if err != nil {
					t.Fatal(err)
				}
				*log, products = (*log)[:0], products[:0]
				if err := c.run(tensor(dt, shape), c.in); err != nil {
					t.Fatal(err)
				}
				if len(*log) == 0 && dispatch.Numel(shape) > 0 {
					t.Errorf("%s(%s): launched nothing", c.op.Name, describe(c.in))
				}
				for _, l := range *log {
					checkLaunch(t, c.op.Name, ents, l)
					if l.fn == "attention_rows_fwd_"+suffix(dt) || l.fn == "attention_rows_bwd_"+suffix(dt) {
						rows++
					}
				}
				for _, g := range products {
					if g.lda < max(1, map[bool]int{false: g.m, true: g.k}[g.transA]) || g.ldb < max(1, map[bool]int{false: g.k, true: g.n}[g.transB]) || g.ldc < max(1, g.m) {
						t.Errorf("%s: a product cuBLAS refuses: %+v", c.op.Name, g)
					}
				}
				if !blas && len(products) > 0 {
					t.Errorf("%s: %d products without cuBLAS", c.op.Name, len(products))
				}
			}
		}
	}
	if rows == 0 {
		t.Error("no case launched the rows kernels")
	}
}
