package cuda

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/cudaemu"
)

// normCases are the fused layer norm and batch norm cases (ops_norm.go):
// odd and unit D, more rows than a chunk of the column sums (colMinChunk),
// rows and samples of zero size, strided inputs (copied first), every
// float dtype for layer norm and float32 and float64 for batch norm.
func normCases() []kcase {
	var cs []kcase
	ln := ops.LayerNormParams{Eps: 1e-5}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
		for _, x := range []*dispatch.Tensor{
			tensor(dt, []int{3, 5}),             // odd D
			tensor(dt, []int{4, 1}),             // D = 1: x̂ is 0
			tensor(dt, []int{0, 5}),             // no rows
			tensor(dt, []int{2, 3, 300}),        // D past a block
			tensor(dt, []int{130, 7}),           // dw and db over 5 chunks of rows
			tensor(dt, []int{5, 6}),             // rows 16-byte aligned or not: a group of 16 bytes and a tail
			tensor(dt, []int{5, 3}, 1, 5),       // transposed: copied first
			tensor(dt, []int{2, 2, 4}, 0, 4, 1), // rows that repeat (a stride-0 dim)
		} {
			d := x.Shape[x.Rank()-1]
			w, b := tensor(dt, []int{d}), tensor(dt, []int{d}, 2) // b strided
			cs = append(cs, caseOf(ops.LayerNorm, ln, x, w, b),
				caseOf(ops.LayerNormBackward, ln, x, w, tensor(dt, x.Shape)))
			if dispatch.Narrow(dt) {
				break // the 16-bit floats go through the same kernels widened: one case each
			}
		}
	}
	for _, dt := range floatDTypes {
		for _, x := range []*dispatch.Tensor{
			tensor(dt, []int{4, 3, 5}),
			tensor(dt, []int{6, 3}),              // rank 2: S = 1
			tensor(dt, []int{70, 3, 2}),          // 3 chunks of samples
			tensor(dt, []int{2, 3, 300}),         // S past a block
			tensor(dt, []int{4, 3, 5}, 15, 1, 3), // channels-last: copied first
			tensor(dt, []int{0, 3, 4}),           // no samples: NaN moments, zero sums
			tensor(dt, []int{2, 3, 0}),           // no positions
			tensor(dt, []int{2, 0, 4}),           // no channels
		} {
			c := x.Shape[1]
			ch := func() *dispatch.Tensor { return tensor(dt, []int{c}) }
			mean := tensor(dt, []int{c}, 2) // a strided view, as a row of the moments' transpose would be
			cs = append(cs, caseOf(ops.BatchNormMoments, dispatch.None{}, x))
			for _, training := range []bool{false, true} {
				a := ops.BatchNormParams{Eps: 1e-5, Training: training}
				cs = append(cs,
					caseOf(ops.BatchNormApply, a, x, mean, ch(), ch(), ch()),
					caseOf(ops.BatchNormBackward, a, x, mean, ch(), ch(), tensor(dt, x.Shape)))
			}
		}
	}
	return cs
}

// TestNormNaN runs the norm kernels on the emulation with a NaN in x or in
// the gradient and compares with the cpu, NaN for NaN: a NaN spoils its
// row (layer norm), its channel (batch norm) and the column sums it enters,
// and nothing else.
func TestNormNaN(t *testing.T) {
	emulate(t)
	nan := math.NaN()
	x := []float64{1, 2, 3, 4, 5, 6, nan, 8, 9, 10, -1, 0, 2, 7, 3} // [3, 5]: row 1; as [2, 3, 2]: channel 0
	g := []float64{0.5, -1, 2, 0, 1, 3, 1, -2, 0.25, 1, 2, 1, 0, nan, 1}
	w, b := []float64{1, 2, -1, 0.5, 3}, []float64{0, 1, 0, -1, 2}
	ln := ops.LayerNormParams{Eps: 1e-5}
	type arg struct {
		vals  []float64
		shape []int
	}
	x2, x3, g3 := arg{x, []int{3, 5}}, arg{x[:12], []int{2, 3, 2}}, arg{g[:12], []int{2, 3, 2}}
	c3 := func(v ...float64) arg { return arg{v, []int{3}} }
	mean, variance := c3(0.5, 1, -1), c3(2, 0.5, 1)
	for _, c := range []struct {
		name string
		k    func(in []*dispatch.Tensor) kcase
		args []arg
	}{
		{"layer_norm/x", func(in []*dispatch.Tensor) kcase { return caseOf(ops.LayerNorm, ln, in...) }, []arg{x2, {w, []int{5}}, {b, []int{5}}}},
		{"layer_norm_backward/x", func(in []*dispatch.Tensor) kcase { return caseOf(ops.LayerNormBackward, ln, in...) },
			[]arg{x2, {w, []int{5}}, {g, []int{3, 5}}}},
		{"layer_norm_backward/g", func(in []*dispatch.Tensor) kcase { return caseOf(ops.LayerNormBackward, ln, in...) },
			[]arg{{g, []int{3, 5}}, {w, []int{5}}, {g, []int{3, 5}}}},
		{"batch_norm_moments", func(in []*dispatch.Tensor) kcase { return caseOf(ops.BatchNormMoments, dispatch.None{}, in...) }, []arg{x3}},
		{"batch_norm_apply", func(in []*dispatch.Tensor) kcase {
			return caseOf(ops.BatchNormApply, ops.BatchNormParams{Eps: 1e-5}, in...)
		}, []arg{x3, mean, variance, c3(1, 2, 3), c3(0, 1, 0)}},
		{"batch_norm_backward", func(in []*dispatch.Tensor) kcase {
			return caseOf(ops.BatchNormBackward, ops.BatchNormParams{Eps: 1e-5, Training: true}, in...)
		}, []arg{x3, mean, variance, c3(1, 2, 3), g3}},
	} {
		var emuIn, cpuIn []*dispatch.Tensor
		for _, a := range c.args {
			raw := unsafe.Slice((*byte)(unsafe.Pointer(&a.vals[0])), 8*len(a.vals))
			p := cudaemu.Alloc(len(raw))
			t.Cleanup(func() { cudaemu.Free(p) })
			cudaemu.Write(p, raw)
			e := tensor(dispatch.Float64, a.shape)
			e.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(a.vals))
			emuIn = append(emuIn, e)
			ct, err := dispatch.Upload(dispatch.Device{Kind: dispatch.Host}, a.vals, dispatch.Float64, a.shape)
			if err != nil {
				t.Fatal(err)
			}
			cpuIn = append(cpuIn, ct)
		}
		k := c.k(emuIn)
		dt, shape, err := k.infer(emuIn)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := dispatch.Numel(shape)
		p := cudaemu.Alloc(8 * n)
		t.Cleanup(func() { cudaemu.Free(p) })
		out := tensor(dt, shape)
		out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, n)
		if err := k.run(out, emuIn); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := c.k(cpuIn).call(cpuIn)
		if err != nil {
			t.Fatalf("%s: cpu: %v", c.name, err)
		}
		wantData, err := dispatch.ReadHost(want)
		if err != nil {
			t.Fatal(err)
		}
		got := cudaemu.Read(p, 8*n)
		compare(t, c.name, dt, got, wantData, false)
		nans := 0
		for i := range n {
			if math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(got[8*i:]))) {
				nans++
			}
		}
		if nans == 0 || nans == n {
			t.Errorf("%s: %d of %d results are NaN: the case should spoil some and not all", c.name, nans, n)
		}
	}
}

// TestLayerNormAlignment runs the layer norm and its backward on the same
// rows at a 16-byte aligned address (16-byte loads) and one element past
// it (one load per element): the results must be the same bits, since a
// row's statistics are summed in the same order either way, which is what
// lets the backward recompute the forward's statistics from a copy of x.
func TestLayerNormAlignment(t *testing.T) {
	emulate(t)
	const rows, d = 3, 37
	vals := make([]float64, rows*d+1)
	for i := range vals {
		vals[i] = math.Sin(float64(i)*1.7) * math.Pow(10, float64(i%7-3))
	}
	ln := ops.LayerNormParams{Eps: 1e-5}
	results := make([][][]byte, 2)
	for off := range 2 {
		at := func(data []float64, shape []int, offset int) *dispatch.Tensor {
			raw := unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 8*len(data))
			p := cudaemu.Alloc(len(raw)) // calloc: 16-byte aligned
			t.Cleanup(func() { cudaemu.Free(p) })
			cudaemu.Write(p, raw)
			e := tensor(dispatch.Float64, shape)
			e.Offset = offset
			e.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, len(data))
			return e
		}
		shifted := func(v []float64) []float64 { return append(make([]float64, off), v...) }
		x := at(shifted(vals[:rows*d]), []int{rows, d}, off)
		w, b := at(shifted(vals[1:d+1]), []int{d}, off), at(shifted(vals[2:d+2]), []int{d}, off)
		g := at(shifted(vals[1:rows*d+1]), []int{rows, d}, off)
		for _, c := range []kcase{caseOf(ops.LayerNorm, ln, x, w, b), caseOf(ops.LayerNormBackward, ln, x, w, g)} {
			_, shape, err := c.infer(c.in)
			if err != nil {
				t.Fatal(err)
			}
			n := dispatch.Numel(shape)
			p := cudaemu.Alloc(8*n + 8)
			t.Cleanup(func() { cudaemu.Free(p) })
			out := tensor(dispatch.Float64, shape)
			out.Offset = off
			out.Storage = dispatch.NewStorage(emuBuffer{ptr: p}, n+1)
			if err := c.run(out, c.in); err != nil {
				t.Fatal(err)
			}
			results[off] = append(results[off], cudaemu.Read(p+uint64(8*off), 8*n))
		}
	}
	for i, name := range []string{"layer_norm", "layer_norm_backward"} {
		if !slices.Equal(results[0][i], results[1][i]) {
			t.Errorf("%s: the aligned and the unaligned rows give different bits", name)
		}
	}
}
