package cuda

import "github.com/lathe-ml/lathe/dispatch"

// Launch geometry. Every elementwise kernel is a grid-stride loop, so the
// grid is capped: past a few blocks per multiprocessor more blocks only
// cost scheduling, and a cap keeps grid.x far inside its limit (2^31-1).

const (
	// blockThreads is the block size of the 1-D kernels: a multiple of 32,
	// as the block reductions need, and small enough for any register use.
	blockThreads = 256
	// maxBlocks caps a 1-D grid. An H200 has 132 multiprocessors of 2048
	// threads: 8 blocks of 256 each fill one, and 65536 blocks are 60 waves.
	maxBlocks = 1 << 16
)

// grid1 is the geometry of a 1-D grid-stride kernel over n items, one
// thread each.
func grid1(n int) (grid, block [3]uint32) {
	return [3]uint32{blocksFor(n, blockThreads), 1, 1}, [3]uint32{blockThreads, 1, 1}
}

// denseWaves is how many full-occupancy rounds of blocks a dense
// elementwise grid holds at most: several, so that a kernel whose registers
// let fewer blocks reside per multiprocessor still ends in balanced rounds,
// and few enough that each thread takes a few vectors (the grid-stride
// loop) rather than paying a block's start for one.
const denseWaves = 4

// defaultSMs stands in for the multiprocessor count where the device cannot
// say (the recorded and emulated launches of the tests): an H200's.
const defaultSMs = 132

// gridDense is the geometry of a dense elementwise kernel (dense.cuh's
// dense_map) over n elements of out and the inputs: one thread per
// 16-byte vector of the widest operand, in blocks of blockThreads, capped
// at denseWaves rounds of the blocks that fill every multiprocessor
// (2048 threads each on sm_70 to sm_90).
func gridDense(dev dispatch.Device, n int, out view, in []view) (grid, block [3]uint32) {
	size := out.dtype.Size()
	for _, v := range in {
		size = max(size, v.dtype.Size())
	}
	vectors := (n + 16/size - 1) / (16 / size)
	sms := multiprocessors(dev)
	if sms <= 0 {
		sms = defaultSMs
	}
	blocks := min(max((vectors+blockThreads-1)/blockThreads, 1), sms*(2048/blockThreads)*denseWaves, maxBlocks)
	return [3]uint32{uint32(blocks), 1, 1}, [3]uint32{blockThreads, 1, 1}
}

// blocksFor is ceil(n / per) blocks, at least 1 and at most maxBlocks.
func blocksFor(n, per int) uint32 {
	b := (n + per - 1) / per
	return uint32(min(max(b, 1), maxBlocks))
}

// gridRows is the geometry of a block-per-task kernel over tasks tasks
// (reduction rows, softmax rows) whose rows are n long: a block of
// blockThreads threads, or fewer for short rows (a multiple of 32, at least
// one warp), so that threads are not left idle.
func gridRows(tasks, n int) (grid, block [3]uint32) {
	threads := min(max((n+31)/32*32, 32), blockThreads)
	return [3]uint32{uint32(min(max(tasks, 1), maxBlocks)), 1, 1}, [3]uint32{uint32(threads), 1, 1}
}

// The host side's functions that the registrations and the value checks
// call (launch.go), through variables so that the tests can record what
// would be launched without a GPU (ops_test.go), or run it on the host
// emulation (emulate_test.go).
var (
	enqueue   = launch
	addressOf = devicePtr
	borrow    = scratch
	checksOn  = checksOf // a device's queue of value checks (checks.go)
	allocate  = bufferOn // a buffer for dispatch.ViaCompute's wide temporaries (narrow.go)
	// multiprocessors is a device's multiprocessor count, 0 where it
	// cannot say (backend.go; nocgo.go).
	multiprocessors = multiprocessorsOf
	// gemm is a cuBLAS product (matmul's, conv's and attention's), blasOn
	// whether a device has cuBLAS, halfGemm whether it has it for the
	// 16-bit floats: the tests that record or emulate launches make them
	// all say "no cuBLAS", so that on a GPU machine their made-up
	// addresses never reach the real library.
	gemm     = gemmOn
	blasOn   = hasBLAS
	halfGemm = halfGemmOn // whether gemm takes float16 and bfloat16 (ops_conv.go)
	// dnn is a convolution by cuDNN (conv_dnn.go), dnnOn whether a device
	// has cuDNN; the same tests make them say "no cuDNN".
	dnn   = convolveOn
	dnnOn = hasDNN
)

// kernels holds every kernel registered by this package, a
// dispatch.Kernel[A] by its op, for the tests, which call it with the op's
// attributes (ops_test.go's call).
var kernels = map[*dispatch.Schema]any{}

// kernel registers k as op's cuda kernel for the dtypes in set (register,
// which gives it the narrow dtypes too), and keeps what it registered for
// the tests.
func kernel[A any](op *dispatch.Op[A], set dispatch.DTypeSet, k dispatch.Kernel[A]) {
	kernels[&op.Schema] = register(op, set, k)
}

// kernelHalves is kernel for a k with a native path for the 16-bit
// floats (registerHalves).
func kernelHalves[A any](op *dispatch.Op[A], set dispatch.DTypeSet, half halfKernel[A], k dispatch.Kernel[A]) {
	kernels[&op.Schema] = registerHalves(op, set, half, k)
}
