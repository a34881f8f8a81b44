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
	"github.com/lathe-ml/lathe/kernels/ptx"
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
	readInts = func(t *dispatch.Tensor) ([]int64, error) { return make([]int64, t.Numel()), nil } // every index 0
	t.Cleanup(func() { enqueue, addressOf, borrow = oldE, oldA, oldB })
	return &log
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
	return &dispatch.Tensor{Shape: shape, Strides: strides, DType: dt, Device: dispatch.Device{Kind: kind}}
}

// kcase is one call of a kernel.
type kcase struct {
	name  string
	in    []*dispatch.Tensor
	attrs any
}

var allDTypes = []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64, dispatch.Bool}

// layouts are the shapes each elementwise case is tried in: contiguous, a
// transposed view, and a 0-d tensor.
func layouts(dt dispatch.DType) []*dispatch.Tensor {
	return []*dispatch.Tensor{tensor(dt, []int{2, 3}), tensor(dt, []int{3, 2}, 1, 3), tensor(dt, []int{})}
}

func casesFor(name string) []kcase {
	var cs []kcase
	for _, u := range dispatch.UnaryOps {
		if u.Name == name {
			for _, dt := range allDTypes {
				if u.DTypes.Has(dt) {
					for _, x := range layouts(dt) {
						cs = append(cs, kcase{name, []*dispatch.Tensor{x}, dispatch.Params{A: 0.5, B: 2}})
					}
				}
			}
			return cs
		}
	}
	for _, b := range dispatch.BinaryOps {
		if b.Name == name {
			for _, dt := range allDTypes {
				if b.DTypes.Has(dt) {
					cs = append(cs,
						kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3}), tensor(dt, []int{2, 3})}, nil},
						kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3}), tensor(dt, []int{3})}, nil},
						kcase{name, []*dispatch.Tensor{tensor(dt, []int{3, 2}, 1, 3), tensor(dt, []int{})}, nil})
				}
			}
			if strings.HasPrefix(name, "logical") {
				cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dispatch.Float32, []int{2, 3}), tensor(dispatch.Int64, []int{3})}, nil})
			}
			return cs
		}
	}
	for _, r := range dispatch.ReduceOps {
		if r.Name == name {
			for _, dt := range allDTypes {
				if !r.DTypes.Has(dt) {
					continue
				}
				cs = append(cs,
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3})}, dispatch.Reduce{Dims: []int{1}}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{64, 4096})}, dispatch.Reduce{Dims: []int{0}}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{4096, 64}, 1, 4096)}, dispatch.Reduce{Dims: []int{1}, Correction: 1}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{1000, 1000})}, dispatch.Reduce{}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 20000})}, dispatch.Reduce{Dims: []int{1}}}, // split in 2 blocks a row
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{})}, nil})
				if !r.OneDim {
					cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{3, 4, 5, 6})}, dispatch.Reduce{Dims: []int{0, 2}, KeepDim: true}})
				}
			}
			return cs
		}
	}
	switch name {
	case "where":
		for _, dt := range allDTypes {
			cs = append(cs,
				kcase{name, []*dispatch.Tensor{tensor(dispatch.Bool, []int{2, 3}), tensor(dt, []int{2, 3}), tensor(dt, []int{2, 3})}, nil},
				kcase{name, []*dispatch.Tensor{tensor(dispatch.Bool, []int{2, 1}), tensor(dt, []int{3}), tensor(dt, []int{})}, nil})
		}
	case "logical_not", "contiguous":
		for _, dt := range allDTypes {
			for _, x := range layouts(dt) {
				cs = append(cs, kcase{name, []*dispatch.Tensor{x}, nil})
			}
		}
	case "cast":
		for _, from := range allDTypes {
			for _, to := range allDTypes {
				for _, x := range layouts(from) {
					cs = append(cs, kcase{name, []*dispatch.Tensor{x}, dispatch.CastTo{DType: to}})
				}
			}
		}
	case "flip":
		for _, dt := range allDTypes {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3})}, dispatch.Flip{Dims: []int{0}}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{3, 2}, 1, 3)}, dispatch.Flip{Dims: []int{0, 1}}})
		}
	case "concat":
		for _, dt := range allDTypes {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3}), tensor(dt, []int{2, 1}), tensor(dt, []int{2, 0})}, dispatch.Concat{Dim: 1}})
		}
	case "pad":
		for _, dt := range allDTypes {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3})}, dispatch.Pad{Pads: []int{1, -1, 2, 0}, Value: 1}})
		}
	case "cumsum":
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Int32, dispatch.Int64} {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3})}, dispatch.Scan{Dim: 1}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{3, 2}, 1, 3)}, dispatch.Scan{Dim: 0}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{})}, dispatch.Scan{Dim: 0}})
		}
	case "softmax", "log_softmax":
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 300})}, dispatch.Scan{Dim: -1}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{5, 4, 3}, 1, 5, 20)}, dispatch.Scan{Dim: 1}})
		}
	case "index_select":
		for _, dt := range allDTypes {
			for _, it := range []dispatch.DType{dispatch.Int32, dispatch.Int64} {
				cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{4, 3}), tensor(it, []int{2})}, dispatch.IndexDim{Dim: 0}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{4, 3}), tensor(it, []int{})}, dispatch.IndexDim{Dim: 1}})
			}
		}
	case "gather":
		for _, dt := range allDTypes {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{4, 3}), tensor(dispatch.Int64, []int{2, 3})}, dispatch.IndexDim{Dim: 1}})
		}
	case "scatter", "scatter_add":
		for _, dt := range allDTypes {
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{4, 3}), tensor(dispatch.Int32, []int{2, 3}), tensor(dt, []int{2, 3})}, dispatch.IndexDim{Dim: 0}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{}), tensor(dispatch.Int64, []int{}), tensor(dt, []int{})}, dispatch.IndexDim{Dim: 0}})
		}
	case "avg_pool", "max_pool_indices", "avg_pool_backward", "adaptive_avg_pool", "adaptive_avg_pool_backward",
		"adaptive_max_pool_indices", "pool_gather", "max_pool_backward", "max_unpool":
		w := dispatch.Window{Kernel: []int{3, 2}, Stride: []int{2, 2}, Padding: []int{1, 0}, Dilation: []int{1, 1}}
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			x := tensor(dt, []int{2, 3, 7, 6})
			xt := tensor(dt, []int{2, 3, 7, 6}, 126, 1, 18, 3) // channels-last: copied first
			idx := tensor(dispatch.Int64, []int{2, 3, 4, 3})
			g := tensor(dt, []int{2, 3, 4, 3})
			switch name {
			case "avg_pool":
				cs = append(cs, kcase{name, []*dispatch.Tensor{x}, dispatch.AvgPool{Window: w, ExcludePadding: true}},
					kcase{name, []*dispatch.Tensor{xt}, dispatch.AvgPool{Window: w, Divisor: 5}})
			case "avg_pool_backward":
				cs = append(cs, kcase{name, []*dispatch.Tensor{g}, dispatch.AvgPoolBackward{AvgPool: dispatch.AvgPool{Window: w}, InSize: []int{7, 6}}})
			case "max_pool_indices":
				cs = append(cs, kcase{name, []*dispatch.Tensor{x}, w}, kcase{name, []*dispatch.Tensor{xt}, w})
			case "adaptive_avg_pool", "adaptive_max_pool_indices":
				cs = append(cs, kcase{name, []*dispatch.Tensor{x}, dispatch.AdaptivePool{Size: []int{4, 3}}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 10})}, dispatch.AdaptivePool{Size: []int{3}}})
			case "adaptive_avg_pool_backward":
				cs = append(cs, kcase{name, []*dispatch.Tensor{g}, dispatch.AdaptivePoolBackward{InSize: []int{7, 6}}})
			case "pool_gather":
				cs = append(cs, kcase{name, []*dispatch.Tensor{x, idx}, nil}, kcase{name, []*dispatch.Tensor{xt, idx}, nil})
			default:
				cs = append(cs, kcase{name, []*dispatch.Tensor{g, idx}, dispatch.PoolScatter{Size: []int{7, 6}}})
			}
		}
	case "unfold", "fold":
		w := dispatch.Window{Kernel: []int{3, 2}, Stride: []int{2, 1}, Padding: []int{1, 0}, Dilation: []int{1, 2}}
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			if name == "unfold" {
				cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 7, 6})}, dispatch.Unfold{Window: w}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 7, 6}, 126, 1, 18, 3)}, dispatch.Unfold{Window: w}})
			} else {
				cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 18, 16})}, dispatch.Unfold{Window: w, OutputSize: []int{7, 6}}})
			}
		}
	case "conv", "conv_input_backward", "conv_weight_backward":
		w := dispatch.Window{Stride: []int{2, 1}, Padding: []int{1, 0}, Dilation: []int{1, 2}}
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			x, wt := tensor(dt, []int{2, 4, 7, 6}), tensor(dt, []int{6, 2, 3, 2}) // groups 2
			gy := tensor(dt, []int{2, 6, 4, 4})
			a := dispatch.Conv{Window: w, Groups: 2}
			switch name {
			case "conv":
				cs = append(cs, kcase{name, []*dispatch.Tensor{x, wt}, a},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 4, 7, 6}, 168, 1, 24, 4), wt}, a})
			case "conv_input_backward":
				a.InputSize = []int{7, 6}
				cs = append(cs, kcase{name, []*dispatch.Tensor{gy, wt}, a})
			default:
				wk := w
				wk.Kernel = []int{3, 2}
				cs = append(cs, kcase{name, []*dispatch.Tensor{x, gy}, dispatch.Conv{Window: wk, Groups: 2}})
			}
		}
	case "upsample_nearest", "upsample_linear", "upsample_bicubic",
		"upsample_nearest_backward", "upsample_linear_backward", "upsample_bicubic_backward":
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			if strings.HasSuffix(name, "_backward") {
				cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 7, 5})}, dispatch.Interp{Size: []int{7, 5}, InputSize: []int{3, 4}}},
					kcase{name, []*dispatch.Tensor{tensor(dt, []int{1, 2, 9})}, dispatch.Interp{Size: []int{9}, InputSize: []int{4}, Scales: []float64{2.3}, AlignCorners: name != "upsample_nearest_backward"}})
				continue
			}
			cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 3, 4})}, dispatch.Interp{Size: []int{7, 5}}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{2, 3, 3, 4}, 36, 1, 12, 3)}, dispatch.Interp{Size: []int{5, 4}, Scales: []float64{1.7, 1}}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{1, 2, 4})}, dispatch.Interp{Size: []int{9}, Scales: []float64{2.3}, AlignCorners: name != "upsample_nearest", Exact: name == "upsample_nearest"}},
				kcase{name, []*dispatch.Tensor{tensor(dt, []int{1, 1, 2, 3, 4})}, dispatch.Interp{Size: []int{3, 3, 8}}})
		}
	case "one_hot":
		cs = append(cs, kcase{name, []*dispatch.Tensor{tensor(dispatch.Int64, []int{3, 2})}, dispatch.OneHot{NumClasses: 5}})
	}
	return cs
}

// TestKernelsLaunchWhatThePTXHas runs every registered kernel on its cases
// with the recorders and checks each launch against the PTX.
func TestKernelsLaunchWhatThePTXHas(t *testing.T) {
	ents := entries(t)
	log := recordLaunches(t)
	names := make([]string, 0, len(kernels))
	for name := range kernels {
		names = append(names, name)
	}
	sort.Strings(names)
	used := map[string]bool{}
	for _, name := range names {
		cs := casesFor(name)
		if len(cs) == 0 {
			t.Errorf("%s: no test cases", name)
			continue
		}
		op := dispatch.Lookup(name)
		for _, c := range cs {
			dt, shape, err := op.Infer(c.in, c.attrs)
			if err != nil {
				t.Errorf("%s: bad case %v: %v", name, c.in, err)
				continue
			}
			out := tensor(dt, shape)
			*log = (*log)[:0]
			label := fmt.Sprintf("%s(%s)", name, describe(c.in))
			if err := kernels[name](out, c.in, c.attrs); err != nil {
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
	t.Logf("%d ops launched %d distinct kernels", len(names), len(used))
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

// owed are the ops that have a cpu kernel and no cuda kernel: none (matmul
// is the host side's, matmul.go: cuBLAS, falling back to the tiled PTX
// kernel matmul_tiled_<dtype>, which conv uses here).
var owed []string

// TestCoverage checks that every op with a cpu kernel has a cuda one, but
// for those listed in owed.
func TestCoverage(t *testing.T) {
	var missing []string
	for _, op := range dispatch.Ops() {
		if op.Infer != nil && op.HasKernel(dispatch.Host) && !op.HasKernel(kind) && !slices.Contains(owed, op.Name) {
			missing = append(missing, op.Name)
		}
	}
	sort.Strings(missing)
	for _, name := range owed {
		if op := dispatch.Lookup(name); op == nil || !op.HasKernel(dispatch.Host) {
			t.Errorf("owed lists %s, which is not an op with a cpu kernel", name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("ops with a cpu kernel and no cuda kernel (add one, or list it in owed): %v", missing)
	}
}
