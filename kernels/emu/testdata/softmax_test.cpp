// Runs softmax.cu's kernels on the host (simt.h).
#include "simt.h"
#include "softmax.cu"

int main() {
	// softmax along dim 1 of a [2, 70] float64 tensor stored transposed
	// (strides 1, 2), into a contiguous out; 2 blocks of 64 threads
	// (rows longer than a block) and 1 block (the grid-stride row loop).
	const int n = 70;
	std::vector<double> x(2 * n);
	for (int i = 0; i < 2 * n; i++) x[i] = std::sin(i) * 30;
	Rows R = rows({2}, {{n}, {1}}, {n}, {{1}, {2}});
	for (int blocks : {1, 2}) {
		std::vector<double> p(2 * n), lp(2 * n);
		launch(dim3(blocks), dim3(64), [&] {
			softmax_f64(p.data(), x.data(), R, 2, n);
			log_softmax_f64(lp.data(), x.data(), R, 2, n);
		});
		for (int r = 0; r < 2; r++) {
			double m = -INFINITY, s = 0;
			for (int j = 0; j < n; j++) m = std::fmax(m, x[r + 2 * j]);
			for (int j = 0; j < n; j++) s += std::exp(x[r + 2 * j] - m);
			for (int j = 0; j < n; j++) {
				double want = std::exp(x[r + 2 * j] - m) / s, lwant = x[r + 2 * j] - m - std::log(s);
				CHECK(same(p[r * n + j], want, 1e-14), "softmax[%d][%d] = %g, want %g", r, j, p[r * n + j], want);
				CHECK(same(lp[r * n + j], lwant, 1e-14), "log_softmax[%d][%d] = %g, want %g", r, j, lp[r * n + j], lwant);
			}
		}
	}
	{ // a NaN makes its row NaN; -inf entries get probability 0.
		float x[] = {1, NAN, 2, -INFINITY, 0, 0};
		float p[6];
		Rows R = rows({2}, {{3}, {3}}, {3}, {{1}, {1}});
		launch(dim3(2), dim3(32), [&] { softmax_f32(p, x, R, 2, 3); });
		CHECK(std::isnan(p[0]) && std::isnan(p[1]) && std::isnan(p[2]), "NaN row: %g %g %g", p[0], p[1], p[2]);
		CHECK(p[3] == 0 && same(p[4], 0.5, 1e-7) && same(p[5], 0.5, 1e-7), "row with -inf: %g %g %g", p[3], p[4], p[5]);
	}
	return finish("softmax");
}
