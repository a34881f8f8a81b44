// matmul.cu: the tiled shared-memory matrix product that the host's matmul
// falls back to when cuBLAS does not open. C[b] = A[b] x B[b] for each of
// batch products, A[b] M x K, B[b] K x N, C[b] M x N, every operand through
// its own strides (in elements), so transposed and broadcast (batch stride
// 0) operands need no copy. float32 accumulates in float32 and float64 in
// float64, as the cpu's sgemm and dgemm do; integers in their own type.
//
// Launch contract of matmul_tiled_f32, _f64, _i32 and _i64
//   (const T *A, const T *B, T *C, i64 M, i64 N, i64 K, i64 batch,
//    MatmulStrides S):
// blocks of exactly LATHE_TILE x LATHE_TILE x 1 threads (16 x 16); a grid of
// any size, as x (column tiles), y (row tiles) and z (batch) are each
// grid-stride loops; the host uses (ceil(N/16), ceil(M/16), min(batch, 65535))
// capped at 65535 in y and z. Static shared memory: 2 tiles of T (2 or 4 KB).
// M, N, K, batch >= 0; K == 0 writes zeros.
#include "lathe.cuh"

#define LATHE_TILE 16

// MatmulStrides: batch, row and column strides of A, B and C, in elements.
// Byte offsets (backends/cuda cMatmulStrides): a 0, b 24, c 48; size 72.
struct MatmulStrides {
	i64 a[3], b[3], c[3];
};
static_assert(sizeof(MatmulStrides) == 72, "MatmulStrides must match backends/cuda cMatmulStrides");

template <typename T>
__device__ void matmul_tiled(const T *A, const T *B, T *C, i64 M, i64 N, i64 K, i64 batch, const MatmulStrides &S) {
	__shared__ T As[LATHE_TILE][LATHE_TILE];
	__shared__ T Bs[LATHE_TILE][LATHE_TILE + 1]; // +1: no bank conflicts reading a column
	int tx = threadIdx.x, ty = threadIdx.y;
	i64 rowTiles = (M + LATHE_TILE - 1) / LATHE_TILE, colTiles = (N + LATHE_TILE - 1) / LATHE_TILE;
	// The loop bounds depend only on the block's indices, so all of a
	// block's threads reach each __syncthreads.
	for (i64 b = blockIdx.z; b < batch; b += gridDim.z) {
		const T *a = A + b * S.a[0];
		const T *bb = B + b * S.b[0];
		T *c = C + b * S.c[0];
		for (i64 rt = blockIdx.y; rt < rowTiles; rt += gridDim.y) {
			for (i64 ct = blockIdx.x; ct < colTiles; ct += gridDim.x) {
				i64 i = rt * LATHE_TILE + ty, j = ct * LATHE_TILE + tx;
				T acc = 0;
				for (i64 k0 = 0; k0 < K; k0 += LATHE_TILE) {
					i64 ka = k0 + tx, kb = k0 + ty;
					As[ty][tx] = (i < M && ka < K) ? a[i * S.a[1] + ka * S.a[2]] : (T)0;
					Bs[ty][tx] = (kb < K && j < N) ? bb[kb * S.b[1] + j * S.b[2]] : (T)0;
					__syncthreads();
#pragma unroll
					for (int k = 0; k < LATHE_TILE; k++) acc += As[ty][k] * Bs[k][tx];
					__syncthreads();
				}
				if (i < M && j < N) c[i * S.c[1] + j * S.c[2]] = acc;
			}
		}
	}
}

// One entry point per dtype, all from the template: integers wrap as the
// cpu's integer product does.
#define LATHE_MATMUL(suffix, T)                                                                           \
	extern "C" __global__ void matmul_tiled_##suffix(const T *A, const T *B, T *C, i64 M, i64 N, i64 K, \
							 i64 batch, MatmulStrides S) {                      \
		matmul_tiled<T>(A, B, C, M, N, K, batch, S);                                                    \
	}
LATHE_MATMUL(f32, float)
LATHE_MATMUL(f64, double)
LATHE_MATMUL(i32, i32)
LATHE_MATMUL(i64, i64)
