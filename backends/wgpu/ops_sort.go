package wgpu

import (
	"fmt"
	"math/bits"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// argsort (sort.wgsl). A line of at most sortItemMax elements is sorted
// by one invocation (an insertion sort, O(n²)); one of at most sortRankMax
// by rank counting, an invocation per element (O(n²) per line, no
// barriers). A longer one is cut into
// blocks of up to sortBlock elements, which one workgroup each sorts in
// workgroup memory with a bitonic network; a line of at most sortBlock
// elements is done then (one launch, O(n log² n) work per line). Longer
// lines go through scratch memory, sorted (key, index) runs that each
// argsort_merge pass merges pairwise, one invocation per element placing
// itself by a binary search in the other run; the last pass writes the
// int64 indices. O(n log² B + n log n · log(n/B)) work and
// 1 + ceil(log2(n/B)) launches for a line of n > B = sortBlock. Ties are
// broken by index, so the result is the stable order on every path.

func init() {
	register(ops.ArgSort, allTypes, argsortKernel)
}

// sortBlock is the longest line sorted in one workgroup: three u32 arrays
// of it fill 12 KiB of the 16 KiB of workgroup memory WebGPU guarantees.
const sortBlock = 1024

// sortItemMax is the longest line that one invocation sorts by itself
// (an insertion sort, O(n²)): shorter lines would leave most of a
// workgroup's 256 lanes idle.
const sortItemMax = 16

// sortRankMax is the longest line sorted by rank counting, one invocation
// per element (O(n²) per line but no barrier: on lavapipe a workgroup's
// barriers cost more than the counting does at these lengths).
const sortRankMax = 256

func argsortKernel(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.SortDim) error {
	x := in[0]
	dim, err := ops.NormDim(s.Dim, x.Rank(), "dim")
	if err != nil {
		return err
	}
	if out.Numel() == 0 {
		return nil
	}
	p, lines, err := lineParams(out, x, dim)
	if err != nil {
		return err
	}
	n := int(p[1])
	block := min(sortBlock, max(2, 1<<bits.Len(uint(n-1))))
	nb := (n + block - 1) / block
	desc := 0
	if s.Descending {
		desc = 1
	}
	p = append(p, uint32(desc), uint32(nb), uint32(block))
	t := wgslType(x.DType)
	words := 2
	if x.DType == dispatch.Int64 {
		words = 3
	}
	if lines*n > 1<<31/words {
		return &dispatch.Error{Kind: dispatch.ErrUnsupported, Found: fmt.Sprint(lines*n, " elements"),
			Detail: "sorts more elements than the wgpu kernel's 32-bit scratch offsets reach",
			Fix:    "sort in parts (e.g. Split along another dim) or on the cpu"}
	}
	if n <= sortItemMax {
		sh, err := shaderFor(fmt.Sprintf("argsort_item/%s", t), "argsort_item", struct {
			T string
			B int
		}{t, sortItemMax})
		if err != nil {
			return err
		}
		return launch("argsort", sh, grid(lines), p, out, x)
	}
	if n <= sortRankMax {
		sh, err := shaderFor(fmt.Sprintf("argsort_rank/%s", t), "argsort_rank", struct{ T string }{t})
		if err != nil {
			return err
		}
		return launch("argsort", sh, grid(lines*n), p, out, x)
	}
	data := struct {
		T             string
		W, B          int
		Direct, Final bool
	}{T: t, W: words, B: block, Direct: nb == 1}
	sh, err := shaderFor(fmt.Sprintf("argsort_block/%s/B=%d/direct=%v", t, block, data.Direct), "argsort_block", data)
	if err != nil {
		return err
	}
	if nb == 1 {
		return launch("argsort", sh, grid(lines*workgroup), p, out, x)
	}
	// Two scratch buffers of (key, index) words, ping-ponged between passes.
	var scratch [2]*dispatch.Tensor
	for i := range scratch {
		if scratch[i], err = dispatch.Empty(out.Device, dispatch.Int32, []int{lines * n * words}); err != nil {
			return err
		}
		defer scratch[i].Release()
	}
	if err := launch("argsort", sh, grid(lines*nb*workgroup), p, scratch[0], x); err != nil {
		return err
	}
	cur := 0
	for width := block; width < n; width *= 2 {
		data.Final = 2*width >= n
		sh, err := shaderFor(fmt.Sprintf("argsort_merge/%s/W=%d/final=%v", t, words, data.Final), "argsort_merge", data)
		if err != nil {
			return err
		}
		p[32] = uint32(width)
		dst := scratch[1-cur]
		if data.Final {
			dst = out
		}
		if err := launch("argsort", sh, grid(lines*n), p, dst, scratch[cur]); err != nil {
			return err
		}
		cur = 1 - cur
	}
	return nil
}
