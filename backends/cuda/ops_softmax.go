package cuda

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// softmax and log_softmax (kernels/cuda/softmax.cu): one block per row
// along the dim, fused (max, sum of exponentials, write); rows of
// contiguous elements (the dim innermost, stride 1, in both x and out) take
// the fast path, which keeps the row in registers and moves it in 16-byte
// vectors: a warp (or for short rows part of one) per row where the row
// fits a warp's registers, a block per row otherwise.

const (
	// softmaxCache is CACHE in softmax.cu: the 16-byte vectors of a row
	// each thread keeps in registers.
	softmaxCache = 8
	// softmaxWarpBlock is the block of the warp-per-row kernels: 4 rows
	// per block, so that a few thousand rows spread over every
	// multiprocessor.
	softmaxWarpBlock = 128
)

// softmaxGeometry is the fast path's launch for nrows contiguous rows of n
// elements of size bytes each, and the kernel's infix.
func softmaxGeometry(nrows, n, size int) (grid, block [3]uint32, infix string) {
	w := 16 / size
	if n <= 32*softmaxCache*w {
		// A warp takes 32/g rows of g lanes each, g as the kernel
		// chooses it (any grid is correct: the kernel loops over rows).
		g := w
		for g < (n+w-1)/w && g < 32 {
			g *= 2
		}
		rows := softmaxWarpBlock / 32 * (32 / g)
		return [3]uint32{blocksFor(nrows, rows), 1, 1}, [3]uint32{softmaxWarpBlock, 1, 1}, "_warp_"
	}
	// A block per row: blockThreads (256, the kernels' launch bound) is
	// the most; a row of fewer vectors takes fewer whole warps.
	g, b := gridRows(nrows, (n+w-1)/w)
	return g, b, "_block_"
}

func init() {
	for _, op := range []*dispatch.Op[ops.Scan]{ops.Softmax, ops.LogSoftmax} {
		name := op.Name
		kernel(op, dispatch.Floats, func(out *dispatch.Tensor, in []*dispatch.Tensor, sc ops.Scan) error {
			x := in[0]
			dim, err := ops.NormDim(sc.Dim, x.Rank(), "dim")
			if err != nil {
				return err
			}
			r, nrows, n, err := alongRows(out, x, dim)
			if err != nil || nrows*n == 0 {
				return named(name, err)
			}
			if stride, ok := r.runs(2); ok && n < 1<<30 {
				g, b, fn := softmaxGeometry(nrows, n, x.DType.Size())
				return named(name, enqueue(out.Device, "softmax", name+fn+suffix(x.DType), g, b, 0,
					addressOf(out), addressOf(x), int64(nrows), int32(n), stride[0], stride[1]))
			}
			g, b := gridRows(nrows, n)
			return named(name, enqueue(out.Device, "softmax", name+"_"+suffix(x.DType), g, b, 0,
				addressOf(out), addressOf(x), cBytes(&r), int64(nrows), int64(n)))
		})
	}
}
