package cuda

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	_ "github.com/lathe-ml/lathe/backends/cpu" // for the coverage check
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/kernels/ptx"
	"github.com/lathe-ml/lathe/layout"
)

// No GPU is needed here: enqueue, addressOf and borrow are replaced by
// recorders, every registered kernel is run on a table of layouts and
// dtypes, and each launch it makes is checked against the PTX it names
// (the module and entry exist, the arguments match the entry's parameters
// in number, type and struct size) and against the launch contracts (grid
// and block shapes).

// launched is one recorded launch.
type launched struct {
	mod, fn     string
	grid, block [3]uint32
	shared      uint32
	args        []any
}

func recordLaunches(t *testing.T) *[]launched {
	t.Helper()
	var log []launched
	oldE, oldA, oldB := enqueue, addressOf, borrow
	enqueue = func(_ dispatch.Device, mod, fn string, grid, block [3]uint32, shared uint32, args ...any) error {
		log = append(log, launched{mod, fn, grid, block, shared, args})
		return nil
	}
	addressOf = func(t *dispatch.Tensor) uint64 { return 1<<32 + uint64(t.Offset*t.DType.Size()) }
	freed := 0
	borrow = func(_ dispatch.Device, n int) (uint64, func(), error) { return 1 << 40, func() { freed++ }, nil }
	q := newCheckQueue(recordedSlots{}, checkSlots)
	oldC, oldM, oldG, oldBL := checksOn, allocate, gemm, blasOn
	checksOn = func(dispatch.Device) (*checkQueue, error) { return q, nil }
	allocate = func(dispatch.Device, dispatch.DType, int) (dispatch.Buffer, error) { return recordedBuffer{}, nil }
	oldS, oldH := multiprocessors, halfGemm
	multiprocessors = func(dispatch.Device) int { return 0 } // defaultSMs: no device is opened
	// The PTX's products are what is checked here, on any machine: no
	// made-up address may reach a real cuBLAS.
	gemm, blasOn, halfGemm = noBLAS, noDevice, noDevice
	oldD, oldDO := dnn, dnnOn
	dnn, dnnOn = noDNN, noDevice
	t.Cleanup(func() {
		enqueue, addressOf, borrow, checksOn, allocate, multiprocessors, gemm, blasOn, halfGemm = oldE, oldA, oldB, oldC, oldM, oldS, oldG, oldBL, oldH
		dnn, dnnOn = oldD, oldDO
	})
	return &log
}

// noBLAS is gemm for a device without cuBLAS: the registrations take their
// PTX paths.
func noBLAS(dispatch.Device, dispatch.DType, gemmArgs) (bool, error) { return false, nil }

// noDevice is blasOn, halfGemm and dnnOn for a device without cuBLAS or
// cuDNN.
func noDevice(dispatch.Device) bool { return false }

// noDNN is dnn for a device without cuDNN: convolution takes its im2col
// path.
func noDNN(dispatch.Device, dnnJob) (bool, error) { return false, nil }

// recordedBuffer is a wide temporary of dispatch.ViaCompute for recorded
// launches, whose addresses addressOf makes up.
type recordedBuffer struct{}

func (recordedBuffer) Free() {}

// recordedSlots is slot memory for recorded launches, which do not run:
// every check reads back as passed.
type recordedSlots struct{}

func (recordedSlots) alloc(int) (uint64, error)    { return 1 << 44, nil }
func (recordedSlots) fill(uint64, byte, int) error { return nil }
func (recordedSlots) read(dst []byte, _ uint64) error {
	for i := range dst {
		dst[i] = 0xff
	}
	return nil
}

// entry is a PTX kernel's parameter list, as kinds: "u64", "u32", "f64",
// "f32", or "b8[N]" for a by-value struct of N bytes.
type entry []string

var paramRE = regexp.MustCompile(`\.param (?:\.align \d+ )?\.(\w+) \w+?(\[\d+\])?[,\n]`)

func entries(t *testing.T) map[string]map[string]entry {
	t.Helper()
	out := map[string]map[string]entry{}
	head := regexp.MustCompile(`(?s)\.visible \.entry (\w+)\((.*?)\)`)
	for _, mod := range ptx.Names() {
		src, _ := ptx.Module(mod)
		out[mod] = map[string]entry{}
		for _, m := range head.FindAllSubmatch(src, -1) {
			var e entry
			for _, p := range paramRE.FindAllSubmatch(append(m[2], '\n'), -1) {
				e = append(e, string(p[1])+string(p[2]))
			}
			out[mod][string(m[1])] = e
		}
	}
	return out
}

// argKind is the PTX parameter kind a launch argument fills.
func argKind(a any) string {
	switch v := a.(type) {
	case uint64, int64:
		return "u64"
	case int32, uint32:
		return "u32"
	case float64:
		return "f64"
	case float32:
		return "f32"
	case []byte:
		return fmt.Sprintf("b8[%d]", len(v))
	}
	return fmt.Sprintf("%T", a)
}

func tensor(dt dispatch.DType, shape []int, strides ...int) *dispatch.Tensor {
	if strides == nil {
		strides = dispatch.ContiguousStrides(shape)
	}
	// A recorded storage of the view's span, which dispatch.Widened reads
	// (the emulation's tests replace it with memory).
	span := 1
	for d, s := range shape {
		span += (s - 1) * strides[d]
	}
	storage := dispatch.NewStorage(recordedBuffer{}, max(span, 0))
	return &dispatch.Tensor{Shape: shape, Strides: strides, DType: dt, Device: dispatch.Device{Kind: kind}, Storage: storage}
}

// kcase is one call of a kernel: the op, its inputs, and the op's Infer,
// this package's value checks and kernel (then a drain of the checks, as
// the next read-back makes), and dispatch.Call, each with the case's
// attributes, on inputs of the case's shapes.
type kcase struct {
	op    *dispatch.Schema
	in    []*dispatch.Tensor
	infer func(in []*dispatch.Tensor) (dispatch.DType, []int, error)
	run   func(out *dispatch.Tensor, in []*dispatch.Tensor) error
	call  func(in []*dispatch.Tensor) (*dispatch.Tensor, error)
}

// caseOf is the case of op with attributes a on in.
func caseOf[A any](op *dispatch.Op[A], a A, in ...*dispatch.Tensor) kcase {
	return kcase{op: &op.Schema, in: in,
		infer: func(in []*dispatch.Tensor) (dispatch.DType, []int, error) { return op.Infer(in, a) },
		run: func(out *dispatch.Tensor, in []*dispatch.Tensor) error {
			k, ok := kernels[&op.Schema].(dispatch.Kernel[A])
			if !ok {
				return fmt.Errorf("%s has no cuda kernel", op.Name)
			}
			b, _ := dispatch.BackendFor(kind)
			if vc, ok := b.(dispatch.ValueChecker); ok && op.Checks != nil {
				for _, c := range op.Checks(in, a) {
					c.Op = op.Name
					if err := vc.CheckValues(in[c.Arg], &c); err != nil {
						return err
					}
				}
			}
			err := k(out, in, a)
			q, qerr := checksOn(out.Device)
			if qerr != nil {
				return qerr
			}
			// A failed check comes first, as the cpu reports it before the op.
			if derr := q.report(); derr != nil {
				return derr
			}
			return err
		},
		call: func(in []*dispatch.Tensor) (*dispatch.Tensor, error) { return dispatch.Call(op, a, in...) },
	}
}

var allDTypes = []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64, dispatch.Bool}

var floatDTypes = []dispatch.DType{dispatch.Float32, dispatch.Float64}

// layouts are the shapes each elementwise case is tried in: contiguous (6
// elements: a 16-byte vector of float32 and a tail), a transposed view, a
// 0-d tensor, and a contiguous view one element into its storage (off a
// 16-byte boundary: the dense kernels' scalar loop).
func layouts(dt dispatch.DType) []*dispatch.Tensor {
	return []*dispatch.Tensor{tensor(dt, []int{2, 3}), tensor(dt, []int{3, 2}, 1, 3), tensor(dt, []int{}), offsetView(dt, []int{7}, 1)}
}

// offsetView is a contiguous view of shape at element offset off of its
// storage.
func offsetView(dt dispatch.DType, shape []int, off int) *dispatch.Tensor {
	t := tensor(dt, shape)
	t.Offset = off
	t.Storage = dispatch.NewStorage(recordedBuffer{}, dispatch.Numel(shape)+off)
	return t
}

// deepView is a 10-dim view whose dims do not merge: each of size 2, with
// strides 3^9 ... 3^0, so its 1024 elements are spread over a storage of
// 29525 with gaps between them.
func deepView(dt dispatch.DType) *dispatch.Tensor {
	shape, strides := make([]int, 10), make([]int, 10)
	for d, s := 9, 1; d >= 0; d, s = d-1, s*3 {
		shape[d], strides[d] = 2, s
	}
	return tensor(dt, shape, strides...)
}

// cases are the calls that the kernels are tested on, by op family.
func cases() []kcase {
	var cs []kcase
	none := dispatch.None{}
	for _, u := range ops.UnaryOps {
		for _, dt := range allDTypes {
			if u.DTypes.Has(dt) {
				for _, x := range layouts(dt) {
					cs = append(cs, caseOf(u.Op, ops.Params{A: 0.5, B: 2}, x))
				}
			}
		}
	}
	for _, b := range ops.BinaryOps {
		for _, dt := range allDTypes {
			if b.DTypes.Has(dt) {
				// The dense form with periods n, a row and one element
				// (whole vectors or not, aligned or not), and the strided
				// form for a transposed x and a broadcast column.
				cs = append(cs,
					caseOf(b.Op, none, tensor(dt, []int{2, 3}), tensor(dt, []int{2, 3})),
					caseOf(b.Op, none, tensor(dt, []int{2, 3}), tensor(dt, []int{3})),
					caseOf(b.Op, none, tensor(dt, []int{3, 2}, 1, 3), tensor(dt, []int{})),
					caseOf(b.Op, none, offsetView(dt, []int{7}, 1), tensor(dt, []int{7})),
					caseOf(b.Op, none, tensor(dt, []int{}), tensor(dt, []int{3, 8})),
					caseOf(b.Op, none, tensor(dt, []int{3, 16}), offsetView(dt, []int{1, 16}, 1)),
					caseOf(b.Op, none, tensor(dt, []int{2, 8}), tensor(dt, []int{2, 1})))
			}
		}
		if b.Op == ops.LogicalAnd || b.Op == ops.LogicalOr {
			cs = append(cs, caseOf(b.Op, none, tensor(dispatch.Float32, []int{2, 3}), tensor(dispatch.Int64, []int{3})))
		}
	}
	for _, r := range ops.ReduceOps {
		for _, dt := range allDTypes {
			if !r.DTypes.Has(dt) {
				continue
			}
			cs = append(cs,
				caseOf(r.Op, ops.Reduce{Dims: []int{1}}, tensor(dt, []int{2, 3})),
				caseOf(r.Op, ops.Reduce{Dims: []int{0}}, tensor(dt, []int{64, 4096})),
				caseOf(r.Op, ops.Reduce{Dims: []int{1}, Correction: 1}, tensor(dt, []int{4096, 64}, 1, 4096)),
				caseOf(r.Op, ops.Reduce{}, tensor(dt, []int{1000, 1000})),
				caseOf(r.Op, ops.Reduce{Dims: []int{1}}, tensor(dt, []int{2, 20000})),   // split in 2 blocks a row
				caseOf(r.Op, ops.Reduce{Dims: []int{0}}, tensor(dt, []int{40, 48})),     // columns (reduce_cols)
				caseOf(r.Op, ops.Reduce{Dims: []int{1}}, tensor(dt, []int{3, 300, 20})), // columns of 3 planes, split
				caseOf(r.Op, ops.Reduce{}, tensor(dt, []int{})))
			if !r.OneDim {
				cs = append(cs, caseOf(r.Op, ops.Reduce{Dims: []int{0, 2}, KeepDim: true}, tensor(dt, []int{3, 4, 5, 6})),
					caseOf(r.Op, ops.Reduce{Dims: []int{0, 2}}, tensor(dt, []int{3, 4, 130}))) // rows of 3 runs (reduce_contig)
			}
		}
	}
	for _, dt := range floatDTypes {
		// The binary ops' layouts: dense with periods n, a row and one
		// element, strided, strided with a broadcast column.
		s := ops.Scale{Alpha: -0.375}
		cs = append(cs,
			caseOf(ops.AddScaled, s, tensor(dt, []int{2, 3}), tensor(dt, []int{2, 3})),
			caseOf(ops.AddScaled, s, tensor(dt, []int{3, 16}), offsetView(dt, []int{1, 16}, 1)),
			caseOf(ops.AddScaled, s, tensor(dt, []int{3, 2}, 1, 3), tensor(dt, []int{})),
			caseOf(ops.AddScaled, s, tensor(dt, []int{}), tensor(dt, []int{3, 8})),
			caseOf(ops.AddScaled, s, tensor(dt, []int{2, 8}), tensor(dt, []int{2, 1})))
	}
	for _, dt := range floatDTypes {
		// The dense and strided forms, and dims that do not merge (copied
		// into out, then dropped in place).
		for _, x := range append(layouts(dt), tensor(dt, []int{9}), deepView(dt)) {
			cs = append(cs, caseOf(ops.Dropout, ops.Mask{P: 0.3, Key: 0x243f6a8885a308d3}, x))
		}
	}
	for _, dt := range allDTypes {
		cs = append(cs,
			caseOf(ops.Where, none, tensor(dispatch.Bool, []int{2, 3}), tensor(dt, []int{2, 3}), tensor(dt, []int{2, 3})),
			caseOf(ops.Where, none, tensor(dispatch.Bool, []int{2, 1}), tensor(dt, []int{3}), tensor(dt, []int{})),
			caseOf(ops.Where, none, tensor(dispatch.Bool, []int{16}), tensor(dt, []int{3, 16}), tensor(dt, []int{})))
		for _, x := range layouts(dt) {
			cs = append(cs, caseOf(ops.LogicalNot, none, x), caseOf(ops.Contiguous, none, x))
			for _, to := range allDTypes {
				cs = append(cs, caseOf(ops.Cast, ops.CastTo{DType: to}, x))
			}
		}
		// Copies take views of any rank, launched once per index of the
		// dims past the kernels' 8 (ops_elementwise.go's copyInto).
		deep := deepView(dt)
		cs = append(cs, caseOf(ops.Contiguous, none, deep), caseOf(ops.Cast, ops.CastTo{DType: dispatch.Float64}, deep))
		cs = append(cs,
			caseOf(ops.Flip, ops.FlipDims{Dims: []int{0}}, tensor(dt, []int{2, 3})),
			caseOf(ops.Flip, ops.FlipDims{Dims: []int{0, 1}}, tensor(dt, []int{3, 2}, 1, 3)),
			caseOf(ops.Concat, ops.ConcatDim{Dim: 1}, tensor(dt, []int{2, 3}), tensor(dt, []int{2, 1}), tensor(dt, []int{2, 0})),
			caseOf(ops.Pad, ops.Padding{Pads: []int{1, -1, 2, 0}, Value: 1}, tensor(dt, []int{2, 3})))
		for _, it := range []dispatch.DType{dispatch.Int32, dispatch.Int64} {
			cs = append(cs,
				caseOf(ops.IndexSelect, ops.IndexDim{Dim: 0}, tensor(dt, []int{4, 3}), tensor(it, []int{2})),
				caseOf(ops.IndexSelect, ops.IndexDim{Dim: 1}, tensor(dt, []int{4, 3}), tensor(it, []int{})))
		}
		cs = append(cs, caseOf(ops.Gather, ops.IndexDim{Dim: 1}, tensor(dt, []int{4, 3}), tensor(dispatch.Int64, []int{2, 3})))
		for _, op := range []*dispatch.Op[ops.IndexDim]{ops.Scatter, ops.ScatterAdd} {
			cs = append(cs,
				caseOf(op, ops.IndexDim{Dim: 0}, tensor(dt, []int{4, 3}), tensor(dispatch.Int32, []int{2, 3}), tensor(dt, []int{2, 3})),
				caseOf(op, ops.IndexDim{Dim: 0}, tensor(dt, []int{}), tensor(dispatch.Int64, []int{}), tensor(dt, []int{})),
				// An index that is the same on every line (scatterSorted),
				// along dims 0 and 1.
				caseOf(op, ops.IndexDim{Dim: 0}, tensor(dt, []int{4, 3}), tensor(dispatch.Int64, []int{40, 3}, 1, 0), tensor(dt, []int{40, 3})),
				caseOf(op, ops.IndexDim{Dim: 1}, tensor(dt, []int{3, 4}), tensor(dispatch.Int32, []int{3, 50}, 0, 1), tensor(dt, []int{3, 50}, 1, 3)))
		}
	}
	// The launches of the root package's tril, triu and repeats, which are
	// composites: the mask (an [rows] int row against a [rows, 1] column),
	// the where of a batch over it with a 0-d zero, and the copy of a
	// repeat's expanded view ([2, 3] as [r0=2 (stride 0), 2, r1=3 (stride
	// 0), 3]) and of repeat_interleave's ([2, 3, 2 (stride 0)]).
	for _, it := range []dispatch.DType{dispatch.Int32, dispatch.Int64} {
		cs = append(cs,
			caseOf(ops.Le, none, tensor(it, []int{5}), tensor(it, []int{4, 1})),
			caseOf(ops.Ge, none, tensor(it, []int{5}), tensor(it, []int{4, 1})))
	}
	for _, dt := range allDTypes {
		cs = append(cs,
			caseOf(ops.Where, none, tensor(dispatch.Bool, []int{4, 5}), tensor(dt, []int{2, 4, 5}), tensor(dt, []int{})),
			caseOf(ops.Contiguous, none, tensor(dt, []int{2, 2, 3, 3}, 0, 3, 0, 1)),
			caseOf(ops.Contiguous, none, tensor(dt, []int{2, 3, 2}, 3, 1, 0)))
	}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
		cs = append(cs,
			caseOf(ops.CumSum, ops.Scan{Dim: 1}, tensor(dt, []int{2, 3})),
			caseOf(ops.CumSum, ops.Scan{Dim: 0}, tensor(dt, []int{3, 2}, 1, 3)),
			caseOf(ops.CumSum, ops.Scan{Dim: 0}, tensor(dt, []int{})),
			// Rows long enough for a block each (cumsumLaunch), and for
			// a block of 256 to take them in two chunks and a part; one
			// read transposed.
			caseOf(ops.CumSum, ops.Scan{Dim: 1}, tensor(dt, []int{2, 2500})),
			caseOf(ops.CumSum, ops.Scan{Dim: 0}, tensor(dt, []int{2100, 2}, 1, 2100)))
	}
	for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64, dispatch.Bool} {
		cs = append(cs,
			caseOf(ops.ArgSort, ops.SortDim{Dim: 1}, tensor(dt, []int{2, 3})),
			caseOf(ops.ArgSort, ops.SortDim{Dim: 0, Descending: true}, tensor(dt, []int{5, 2}, 1, 5)),
			caseOf(ops.ArgSort, ops.SortDim{Dim: -1}, tensor(dt, []int{})),
			// Past one block: the merge passes, through a transposed input.
			caseOf(ops.ArgSort, ops.SortDim{Dim: 0, Descending: true}, tensor(dt, []int{2100, 2}, 1, 2100)))
	}
	cs = append(cs, caseOf(ops.OneHot, ops.OneHotClasses{NumClasses: 5}, tensor(dispatch.Int64, []int{3, 2})))
	cs = append(cs, narrowCases()...)
	cs = append(cs, normCases()...)
	for _, dt := range floatDTypes {
		for _, op := range []*dispatch.Op[ops.Scan]{ops.Softmax, ops.LogSoftmax} {
			cs = append(cs,
				caseOf(op, ops.Scan{Dim: -1}, tensor(dt, []int{2, 300})),
				caseOf(op, ops.Scan{Dim: 1}, tensor(dt, []int{5, 4, 3}, 1, 5, 20)))
		}
		cs = append(cs, attentionCases(dt)...)
		cs = append(cs, maskedAttentionCases(dt)...)
		cs = append(cs, poolCases(dt)...)
		cs = append(cs, convCases(dt)...)
		cs = append(cs, upsampleCases(dt)...)
		cs = append(cs, gridCases(dt)...)
	}
	return cs
}

// gridCases are grid_sampler's cases of one float dtype: every mode and
// padding, 2-d and 3-d (bicubic 2-d), aligned or not, and a transposed
// (copied) x.
func gridCases(dt dispatch.DType) []kcase {
	var cs []kcase
	for mode := range 2 {
		for padding := range 3 {
			a := ops.GridSample{Mode: mode, Padding: padding, AlignCorners: padding == 1}
			cs = append(cs,
				caseOf(ops.GridSampler, a, tensor(dt, []int{2, 3, 4, 5}), tensor(dt, []int{2, 3, 4, 2})),
				caseOf(ops.GridSampler, a, tensor(dt, []int{1, 2, 3, 4, 3}), tensor(dt, []int{1, 2, 2, 3, 3})))
		}
	}
	for padding := range 3 {
		cs = append(cs, caseOf(ops.GridSampler, ops.GridSample{Mode: ops.GridBicubic, Padding: padding, AlignCorners: padding == 2},
			tensor(dt, []int{2, 3, 4, 5}), tensor(dt, []int{2, 3, 4, 2})))
	}
	return append(cs, caseOf(ops.GridSampler, ops.GridSample{Padding: 2}, tensor(dt, []int{2, 3, 5, 4}, 60, 20, 1, 5), tensor(dt, []int{2, 6, 1, 2})))
}

// attentionCases are the fused attention's cases of one float dtype: more
// rows than a block (64) and a tile (32), grouped heads, causal masking
// with Lq above and below Lk, a transposed (copied) query, E = 0, and
// dropout (p) over rows of Lk not a multiple of 4. The dropout is set on a
// case that was there, not on a case more, which would shift the random
// data of every op after attention in TestKernelsMatchCPU.
func attentionCases(dt dispatch.DType) []kcase {
	var cs []kcase
	for _, c := range []struct {
		n, hq, hk, lq, lk, e, ev int
		causal                   bool
		p                        float64
	}{
		{1, 2, 1, 70, 40, 5, 3, false, 0},
		{2, 2, 2, 33, 70, 4, 2, true, 0.3},
		{1, 1, 1, 80, 20, 3, 3, true, 0},
		{1, 2, 2, 3, 5, 0, 2, false, 0},
	} {
		a := ops.AttentionParams{Scale: 0.6, Causal: c.causal, Dropout: ops.Mask{P: c.p, Key: 0x0123456789abcdef}}
		q, k := tensor(dt, []int{c.n, c.hq, c.lq, c.e}), tensor(dt, []int{c.n, c.hk, c.lk, c.e})
		v, o := tensor(dt, []int{c.n, c.hk, c.lk, c.ev}), tensor(dt, []int{c.n, c.hq, c.lq, c.ev + 1})
		cs = append(cs, caseOf(ops.Attention, a, q, k, v), caseOf(ops.AttentionBackward, a, q, k, v, o, o))
	}
	qt := tensor(dt, []int{1, 2, 6, 4}, 48, 1, 2, 12) // a transposed view: copied row-major first
	return append(cs, caseOf(ops.Attention, ops.AttentionParams{Scale: 1}, qt, tensor(dt, []int{1, 1, 5, 4}), tensor(dt, []int{1, 1, 5, 2})))
}

// poolCases are the pooling and unfold/fold cases of one float dtype.
func poolCases(dt dispatch.DType) []kcase {
	w := layout.Window{Kernel: []int{3, 2}, Stride: []int{2, 2}, Padding: []int{1, 0}, Dilation: []int{1, 1}}
	x := tensor(dt, []int{2, 3, 7, 6})
	xt := tensor(dt, []int{2, 3, 7, 6}, 126, 1, 18, 3) // channels-last: copied first
	idx := tensor(dispatch.Int64, []int{2, 3, 4, 3})
	g := tensor(dt, []int{2, 3, 4, 3})
	cs := []kcase{
		caseOf(ops.AvgPool, ops.AvgPoolParams{Window: w, ExcludePadding: true}, x),
		caseOf(ops.AvgPool, ops.AvgPoolParams{Window: w, Divisor: 5}, xt),
		caseOf(ops.AvgPoolBackward, ops.AvgPoolBackwardParams{AvgPoolParams: ops.AvgPoolParams{Window: w}, InSize: []int{7, 6}}, g),
		caseOf(ops.MaxPoolIndices, w, x),
		caseOf(ops.MaxPoolIndices, w, xt),
		caseOf(ops.AdaptiveAvgPoolBackward, ops.AdaptivePoolBackward{InSize: []int{7, 6}}, g),
		caseOf(ops.PoolGather, dispatch.None{}, x, idx),
		caseOf(ops.PoolGather, dispatch.None{}, xt, idx),
		caseOf(ops.MaxPoolBackward, ops.PoolScatter{Size: []int{7, 6}}, g, idx),
		caseOf(ops.MaxUnpool, ops.PoolScatter{Size: []int{7, 6}}, g, idx),
		// Planes of 48 places, each plane's index sorted first
		// (scatterSorted).
		caseOf(ops.MaxPoolBackward, ops.PoolScatter{Size: []int{15, 12}}, tensor(dt, []int{2, 3, 8, 6}), tensor(dispatch.Int64, []int{2, 3, 8, 6})),
		caseOf(ops.MaxUnpool, ops.PoolScatter{Size: []int{15, 12}}, tensor(dt, []int{2, 3, 8, 6}), tensor(dispatch.Int64, []int{2, 3, 8, 6})),
	}
	// Ceil mode's windows longer than the padded input (issue 15, defect
	// 17): [2, 2] pooled by 4×3 windows with padding (1, 0) is one window,
	// clipped to the input and, for the count, to the right padding.
	lw := layout.Window{Kernel: []int{4, 3}, Stride: []int{4, 3}, Padding: []int{1, 0}, Dilation: []int{1, 1}, CeilMode: true}
	ld := layout.Window{Kernel: []int{2, 2}, Stride: []int{2, 2}, Padding: []int{0, 0}, Dilation: []int{3, 1}, CeilMode: true}
	small, gs := tensor(dt, []int{2, 3, 2, 2}), tensor(dt, []int{2, 3, 1, 1})
	cs = append(cs,
		caseOf(ops.AvgPool, ops.AvgPoolParams{Window: lw}, small),
		caseOf(ops.AvgPool, ops.AvgPoolParams{Window: lw, ExcludePadding: true}, small),
		caseOf(ops.AvgPoolBackward, ops.AvgPoolBackwardParams{AvgPoolParams: ops.AvgPoolParams{Window: lw}, InSize: []int{2, 2}}, gs),
		caseOf(ops.MaxPoolIndices, lw, small),
		caseOf(ops.MaxPoolIndices, ld, tensor(dt, []int{2, 3, 3, 1})))
	for _, op := range []*dispatch.Op[ops.AdaptivePool]{ops.AdaptiveAvgPool, ops.AdaptiveMaxPoolIndices} {
		cs = append(cs,
			caseOf(op, ops.AdaptivePool{Size: []int{4, 3}}, x),
			caseOf(op, ops.AdaptivePool{Size: []int{3}}, tensor(dt, []int{2, 3, 10})))
	}
	uw := layout.Window{Kernel: []int{3, 2}, Stride: []int{2, 1}, Padding: []int{1, 0}, Dilation: []int{1, 2}}
	return append(cs,
		caseOf(ops.Unfold, ops.UnfoldParams{Window: uw}, tensor(dt, []int{2, 3, 7, 6})),
		caseOf(ops.Unfold, ops.UnfoldParams{Window: uw}, tensor(dt, []int{2, 3, 7, 6}, 126, 1, 18, 3)),
		caseOf(ops.Fold, ops.UnfoldParams{Window: uw, OutputSize: []int{7, 6}}, tensor(dt, []int{2, 18, 16})))
}

// convCases are the convolution cases of one float dtype: groups 2.
func convCases(dt dispatch.DType) []kcase {
	w := layout.Window{Stride: []int{2, 1}, Padding: []int{1, 0}, Dilation: []int{1, 2}}
	x, wt := tensor(dt, []int{2, 4, 7, 6}), tensor(dt, []int{6, 2, 3, 2})
	gy := tensor(dt, []int{2, 6, 4, 4})
	a := ops.ConvParams{Window: w, Groups: 2}
	ab := a
	ab.InputSize = []int{7, 6}
	wk := w
	wk.Kernel = []int{3, 2}
	return []kcase{
		caseOf(ops.Conv, a, x, wt),
		caseOf(ops.Conv, a, tensor(dt, []int{2, 4, 7, 6}, 168, 1, 24, 4), wt),
		caseOf(ops.ConvInputBackward, ab, gy, wt),
		caseOf(ops.ConvWeightBackward, ops.ConvParams{Window: wk, Groups: 2}, x, gy),
	}
}

// upsampleCases are the interpolation cases of one float dtype.
func upsampleCases(dt dispatch.DType) []kcase {
	var cs []kcase
	for _, u := range ops.Upsamples {
		nearest := u.Filter == layout.FilterNearest
		cs = append(cs,
			caseOf(u.Forward, ops.Interp{Size: []int{7, 5}}, tensor(dt, []int{2, 3, 3, 4})),
			caseOf(u.Forward, ops.Interp{Size: []int{5, 4}, Scales: []float64{1.7, 1}}, tensor(dt, []int{2, 3, 3, 4}, 36, 1, 12, 3)),
			caseOf(u.Forward, ops.Interp{Size: []int{9}, Scales: []float64{2.3}, AlignCorners: !nearest, Exact: nearest}, tensor(dt, []int{1, 2, 4})),
			caseOf(u.Forward, ops.Interp{Size: []int{3, 3, 8}}, tensor(dt, []int{1, 1, 2, 3, 4})),
			caseOf(u.Backward, ops.Interp{Size: []int{7, 5}, InputSize: []int{3, 4}}, tensor(dt, []int{2, 3, 7, 5})),
			caseOf(u.Backward, ops.Interp{Size: []int{9}, InputSize: []int{4}, Scales: []float64{2.3}, AlignCorners: !nearest}, tensor(dt, []int{1, 2, 9})),
			// A scale whose output size is the input's, or twice it:
			// nearest copies, or halves the index (issue 15, defect 18).
			caseOf(u.Forward, ops.Interp{Size: []int{3, 5}, Scales: []float64{1.25, 1.25}}, tensor(dt, []int{2, 3, 3, 4})),
			caseOf(u.Forward, ops.Interp{Size: []int{10}, Scales: []float64{2.1}}, tensor(dt, []int{1, 2, 5})),
			caseOf(u.Backward, ops.Interp{Size: []int{3, 5}, InputSize: []int{3, 4}, Scales: []float64{1.25, 1.25}}, tensor(dt, []int{2, 3, 3, 5})),
			caseOf(u.Backward, ops.Interp{Size: []int{10}, InputSize: []int{5}, Scales: []float64{2.1}}, tensor(dt, []int{1, 2, 10})))
	}
	return cs
}

// casesByOp is cases() by op, and the ops that have a cuda kernel of this
// package, by name.
func casesByOp() (map[*dispatch.Schema][]kcase, []*dispatch.Schema) {
	by := map[*dispatch.Schema][]kcase{}
	for _, c := range cases() {
		by[c.op] = append(by[c.op], c)
	}
	var registered []*dispatch.Schema
	for op := range kernels {
		registered = append(registered, op)
	}
	sort.Slice(registered, func(i, j int) bool { return registered[i].Name < registered[j].Name })
	return by, registered
}

// TestKernelsLaunchWhatThePTXHas runs every registered kernel on its cases
// with the recorders and checks each launch against the PTX.
func TestKernelsLaunchWhatThePTXHas(t *testing.T) {
	ents := entries(t)
	log := recordLaunches(t)
	byOp, registered := casesByOp()
	used := map[string]bool{}
	for _, op := range registered {
		cs := byOp[op]
		if len(cs) == 0 {
			t.Errorf("%s: no test cases", op.Name)
			continue
		}
		for _, c := range cs {
			dt, shape, err := c.infer(c.in)
			if err != nil {
				t.Errorf("%s: bad case %v: %v", op.Name, c.in, err)
				continue
			}
			out := tensor(dt, shape)
			*log = (*log)[:0]
			label := fmt.Sprintf("%s(%s)", op.Name, describe(c.in))
			if !op.KernelDTypes(kind).Has(c.in[0].DType) {
				t.Errorf("%s: no kernel for %s, which the case takes", label, c.in[0].DType)
				continue
			}
			if err := c.run(out, c.in); err != nil {
				t.Errorf("%s: %v", label, err)
				continue
			}
			if len(*log) == 0 && out.Numel() > 0 {
				t.Errorf("%s: launched nothing", label)
			}
			for _, l := range *log {
				used[l.mod+"/"+l.fn] = true
				checkLaunch(t, label, ents, l)
			}
		}
	}
	t.Logf("%d ops launched %d distinct kernels", len(registered), len(used))
}

func describe(in []*dispatch.Tensor) string {
	var parts []string
	for _, t := range in {
		parts = append(parts, fmt.Sprintf("%s%v/%v", t.DType, t.Shape, t.Strides))
	}
	return strings.Join(parts, ", ")
}

func checkLaunch(t *testing.T, label string, ents map[string]map[string]entry, l launched) {
	t.Helper()
	mod, ok := ents[l.mod]
	if !ok {
		t.Errorf("%s: launches module %q, which kernels/ptx does not have", label, l.mod)
		return
	}
	e, ok := mod[l.fn]
	if !ok {
		t.Errorf("%s: launches %s/%s, which the PTX does not have", label, l.mod, l.fn)
		return
	}
	var kinds []string
	for _, a := range l.args {
		kinds = append(kinds, argKind(a))
	}
	if !slices.Equal(kinds, e) {
		t.Errorf("%s: launches %s with (%s), the PTX entry takes (%s)", label, l.fn, strings.Join(kinds, ", "), strings.Join(e, ", "))
	}
	threads := l.block[0] * l.block[1] * l.block[2]
	if threads == 0 || threads > 1024 || l.grid[0] == 0 || l.grid[1] == 0 || l.grid[2] == 0 || l.grid[1] > 65535 || l.grid[2] > 65535 {
		t.Errorf("%s: %s launched with grid %v, block %v", label, l.fn, l.grid, l.block)
	}
	// The block reductions need whole warps.
	if (strings.Contains(l.fn, "_block_") || strings.Contains(l.fn, "_finish_") || l.mod == "softmax") && l.block[0]%32 != 0 {
		t.Errorf("%s: %s needs a multiple of 32 threads, has %d", label, l.fn, l.block[0])
	}
}

// owed are the ops that have a cpu kernel and no cuda kernel (matmul is
// the host side's, matmul.go: cuBLAS, falling back to the tiled PTX kernel
// matmul_tiled_<dtype>, which conv uses here): argtopk, whose public op,
// TopK, narrows argsort's result where it is missing, and argcumextreme,
// whose public ops, CumMax and CumMin, double over (value, index) pairs
// where it is missing (a line a thread would be slower on a GPU for the
// long lines that the doubling spreads over the whole grid).
var owed = []string{"argcumextreme", "argtopk"}

// TestCoverage checks that every op with a cpu kernel has a cuda one, but
// for those listed in owed.
func TestCoverage(t *testing.T) {
	var missing []string
	hasCPU := map[string]bool{}
	for _, op := range dispatch.Ops() {
		if !op.RunsKernel() || !op.HasKernel(dispatch.Host) {
			continue
		}
		hasCPU[op.Key()] = true
		if !op.HasKernel(kind) && !slices.Contains(owed, op.Key()) {
			missing = append(missing, op.Key())
		}
	}
	sort.Strings(missing)
	for _, name := range owed {
		if !hasCPU[name] {
			t.Errorf("owed lists %s, which is not an op with a cpu kernel", name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ops with a cpu kernel and no cuda kernel (add one, or list it in owed): %v", missing)
	}
}
