// Runs matmul.cu's tiled kernel on the host (simt.h): sizes that are not
// multiples of the tile, a transposed B, a broadcast (batch stride 0) A,
// and grids smaller than the work (the grid-stride loops).
#include "simt.h"
#include "matmul.cu"

int main() {
	const long long M = 37, N = 19, K = 23, batch = 3;
	std::vector<double> A(M * K), B(batch * N * K), C(batch * M * N, -1);
	for (size_t i = 0; i < A.size(); i++) A[i] = std::sin(i);
	for (size_t i = 0; i < B.size(); i++) B[i] = std::cos(i);
	// A: one [M, K] matrix for every batch; B stored as [batch][N][K] and read
	// transposed as [K, N]; C contiguous [batch][M][N].
	MatmulStrides S = {{0, K, 1}, {N * K, 1, K}, {M * N, N, 1}};
	for (dim3 grid : {dim3(2, 3, 3), dim3(1, 1, 1)}) {
		launch(grid, dim3(16, 16), [&] { matmul_tiled_f64(A.data(), B.data(), C.data(), M, N, K, batch, S); });
		for (long long b = 0; b < batch; b++)
			for (long long i = 0; i < M; i++)
				for (long long j = 0; j < N; j++) {
					double want = 0;
					for (long long k = 0; k < K; k++) want += A[i * K + k] * B[b * N * K + j * K + k];
					double got = C[b * M * N + i * N + j];
					CHECK(same(got, want, 1e-12), "C[%lld][%lld][%lld] = %g, want %g (grid %u)", b, i, j, got, want, grid.x);
				}
	}
	float a = 2, bb = 3, c = -1;
	MatmulStrides one = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
	launch(dim3(1), dim3(16, 16), [&] { matmul_tiled_f32(&a, &bb, &c, 1, 1, 0, 1, one); });
	CHECK(c == 0, "K = 0 gives %g, want 0", c);
	return finish("matmul");
}
