package cuda

import (
	"math/bits"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// argsort (kernels/cuda/sort.cu): a row along the dim of at most
// sortBlock elements is sorted by one block in shared memory with a
// bitonic network, its indices written straight to out (one launch,
// O(n log² n) work per row). A longer row is cut into blocks of sortBlock,
// each sorted so into scratch memory as (key, index) pairs, and then
// merged pairwise by argsort_merge, one thread per element placing itself
// by a binary search in the other run, ceil(log2(n/sortBlock)) passes
// whose last writes out: O(n log² B + n log n · log(n/B)) work. Ties are
// broken by index on every path, so the order is the stable one.

// sortBlock is LATHE_SORT_BLOCK: the longest row one block sorts.
const sortBlock = 1024

// sortKeyBytes is sizeof(SortKey): a u64 key and an i64 index.
const sortKeyBytes = 16

func init() {
	kernel(ops.ArgSort, dispatch.AllTypes, func(out *dispatch.Tensor, in []*dispatch.Tensor, s ops.SortDim) error {
		x := in[0]
		dim, err := ops.NormDim(s.Dim, x.Rank(), "dim")
		if err != nil {
			return err
		}
		r, nrows, n, err := alongRows(out, x, dim)
		if err != nil || nrows*n == 0 {
			return named("argsort", err)
		}
		return named("argsort", argsort(out, x, r, nrows, n, s.Descending))
	})
}

func argsort(out, x *dispatch.Tensor, r cRows, nrows, n int, desc bool) error {
	return argsortAt(out.Device, x.DType, addressOf(out), addressOf(x), r, nrows, n, desc)
}

// argsortAt is argsort of the dt elements at device address x into the
// int64s at out, as r lays the rows out from there.
func argsortAt(dev dispatch.Device, dt dispatch.DType, out, x uint64, r cRows, nrows, n int, desc bool) error {
	block := min(sortBlock, max(2, 1<<bits.Len(uint(n-1))))
	nb := (n + block - 1) / block
	d := int32(0)
	if desc {
		d = 1
	}
	rb := cBytes(&r)
	g, b := gridRows(nrows*nb, block/2)
	fn := "argsort_block_" + suffix(dt)
	if nb == 1 {
		return enqueue(dev, "sort", fn, g, b, 0, out, x, rb,
			int64(nrows), int64(n), int64(block), int64(nb), d, uint64(0))
	}
	bytes := nrows * n * sortKeyBytes
	s0, free0, err := borrow(dev, bytes)
	if err != nil {
		return err
	}
	defer free0() // the allocator reuses it only after the queued kernels
	s1, free1, err := borrow(dev, bytes)
	if err != nil {
		return err
	}
	defer free1()
	if err := enqueue(dev, "sort", fn, g, b, 0, out, x, rb,
		int64(nrows), int64(n), int64(block), int64(nb), d, s0); err != nil {
		return err
	}
	src, dst := s0, s1
	g, b = grid1(nrows * n)
	for width := block; width < n; width *= 2 {
		last := int32(0)
		if 2*width >= n {
			last = 1
		}
		if err := enqueue(dev, "sort", "argsort_merge", g, b, 0, out, src, dst, rb,
			int64(nrows), int64(n), int64(width), last); err != nil {
			return err
		}
		src, dst = dst, src
	}
	return nil
}
