// Runs reduce.cu's kernels on the host (simt.h): the thread, block and
// split (block + finish) forms must agree with a plain loop, and the NaN,
// tie and infinity rules must be the cpu backend's.
#include "simt.h"
#include "reduce.cu"
#include "moments.cu"

static const double NaN = std::nan("");
static const double Inf = INFINITY;

// One row of n contiguous elements.
static Rows row(long long n) { return rows({}, {{}, {}}, {n}, {{0}, {1}}); }

// reduce3 runs a reduction of one row of n elements three ways (thread;
// block with 96 threads; 3 splits of 64-thread blocks + finish on 2 blocks)
// and returns the three results.
#define REDUCE3(name, sfx, Out, Acc, x, n, corr, res)                                                         \
	do {                                                                                                  \
		Rows R = row(n);                                                                              \
		std::vector<Acc> partial(3);                                                                  \
		launch(dim3(1), dim3(7), [&] { name##_thread_##sfx(&res[0], x, R, 1, n, corr); });            \
		launch(dim3(1), dim3(96), [&] { name##_block_##sfx(&res[1], x, R, 1, n, 1, nullptr, corr); }); \
		launch(dim3(2), dim3(64), [&] { name##_block_##sfx(&res[2], x, R, 1, n, 3, partial.data(), corr); }); \
		launch(dim3(2), dim3(32), [&] { name##_finish_##sfx(&res[2], partial.data(), 1, 3, corr); }); \
	} while (0)

int main() {
	{ // sum of ints accumulates in int64; the i32 result wraps once.
		std::vector<int> x(1000);
		long long want = 0;
		for (int i = 0; i < 1000; i++) want += (x[i] = i % 13 - 6);
		int res[3];
		REDUCE3(sum, i32, int, long long, x.data(), 1000, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == want, "sum form %d = %d, want %lld", k, res[k], want);
	}
	{ // float sum in float64.
		std::vector<float> x(777);
		double want = 0;
		for (int i = 0; i < 777; i++) want += (x[i] = 0.1f * (i % 10));
		float res[3];
		REDUCE3(sum, f32, float, double, x.data(), 777, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == (float)want, "sum f32 form %d = %.9g, want %.9g", k, res[k], (float)want);
	}
	{ // max and min: NaN wins; ints need no -inf.
		std::vector<double> x(300, 1.0);
		x[123] = 7;
		x[250] = NaN;
		double res[3];
		REDUCE3(max, f64, double, Extreme<double>, x.data(), 300, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(std::isnan(res[k]), "max with NaN form %d = %g", k, res[k]);
		x[250] = -3;
		REDUCE3(max, f64, double, Extreme<double>, x.data(), 300, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 7, "max form %d = %g", k, res[k]);
		REDUCE3(min, f64, double, Extreme<double>, x.data(), 300, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == -3, "min form %d = %g", k, res[k]);
		std::vector<long long> xi(200, -9000000000LL);
		xi[17] = -9000000001LL;
		long long ri[3];
		REDUCE3(min, i64, long long, Extreme<long long>, xi.data(), 200, 0.0, ri);
		for (int k = 0; k < 3; k++) CHECK(ri[k] == -9000000001LL, "min i64 form %d = %lld", k, ri[k]);
	}
	{ // argmax: the first of equal maxima; the first NaN beats everything.
		std::vector<float> x(500, 0.0f);
		x[310] = 5;
		x[90] = 5;
		x[400] = 5;
		long long res[3];
		REDUCE3(argmax, f32, long long, Indexed<float>, x.data(), 500, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 90, "argmax form %d = %lld, want 90", k, res[k]);
		x[450] = NAN;
		x[200] = NAN;
		REDUCE3(argmax, f32, long long, Indexed<float>, x.data(), 500, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 200, "argmax NaN form %d = %lld, want 200", k, res[k]);
		REDUCE3(argmin, f32, long long, Indexed<float>, x.data(), 500, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 200, "argmin NaN form %d = %lld, want 200", k, res[k]);
		std::vector<int> xi(300, 4);
		xi[299] = -1;
		xi[100] = -1;
		REDUCE3(argmin, i32, long long, Indexed<int>, xi.data(), 300, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 100, "argmin i32 form %d = %lld, want 100", k, res[k]);
	}
	{ // var and std against the two-pass formula, with correction 1 and 0.
		std::vector<double> x(1001);
		double mean = 0;
		for (int i = 0; i < 1001; i++) mean += (x[i] = 1e6 + std::sin(i));
		mean /= 1001;
		double m2 = 0;
		for (double v : x) m2 += (v - mean) * (v - mean);
		double res[3];
		REDUCE3(var, f64, double, Moments, x.data(), 1001, 1.0, res);
		for (int k = 0; k < 3; k++) CHECK(same(res[k], m2 / 1000, 1e-9), "var form %d = %.17g, want %.17g", k, res[k], m2 / 1000);
		REDUCE3(std, f64, double, Moments, x.data(), 1001, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(same(res[k], std::sqrt(m2 / 1001), 1e-9), "std form %d", k);
		double one = 3;
		REDUCE3(var, f64, double, Moments, &one, 1, 1.0, res);
		for (int k = 0; k < 3; k++) CHECK(std::isnan(res[k]) || std::isinf(res[k]), "var of one element, correction 1, form %d = %g", k, res[k]);
	}
	{ // logsumexp: shifted by the max; infinities and NaN are the result.
		struct Case {
			std::vector<double> x;
			double want;
		} cases[] = {
			{{0, 0}, std::log(2.0)},
			{{1000, 1000, -Inf}, 1000 + std::log(2.0)},
			{{-Inf, -Inf}, -Inf},
			{{Inf, 1, -Inf}, Inf},
			{{1, NaN, Inf}, NaN},
			{{-1000, 0, -1000}, std::log1p(2 * std::exp(-1000.0))},
		};
		for (auto &c : cases) {
			std::vector<double> x;
			for (int r = 0; r < 40; r++) x.insert(x.end(), c.x.begin(), c.x.end()); // long enough for blocks
			double want = std::isinf(c.want) || std::isnan(c.want) ? c.want : c.want + std::log(40.0);
			double res[3];
			REDUCE3(logsumexp, f64, double, LogSum, x.data(), (long long)x.size(), 0.0, res);
			for (int k = 0; k < 3; k++) CHECK(same(res[k], want, 1e-14), "logsumexp(%g, ...) form %d = %.17g, want %.17g", c.x[0], k, res[k], want);
		}
		double none[1];
		double res[3];
		REDUCE3(logsumexp, f64, double, LogSum, none, 0, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == -Inf, "empty logsumexp form %d = %g", k, res[k]);
	}
	{ // prod, and empty sum and prod.
		long long x[] = {2, 3, 4}, res[3];
		REDUCE3(prod, i64, long long, long long, x, 3, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 24, "prod form %d = %lld", k, res[k]);
		REDUCE3(prod, i64, long long, long long, x, 0, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 1, "empty prod form %d = %lld", k, res[k]);
		REDUCE3(sum, i64, long long, long long, x, 0, 0.0, res);
		for (int k = 0; k < 3; k++) CHECK(res[k] == 0, "empty sum form %d = %lld", k, res[k]);
	}
	{ // many rows over strided outer and inner dims: sum over dims 0 and 2 of
	  // a [3, 4, 5] tensor stored as [4][5][3] (strides 1, 15, 3).
		std::vector<double> x(60);
		for (int i = 0; i < 60; i++) x[i] = i * 0.5;
		Rows R = rows({4}, {{1}, {15}}, {3, 5}, {{0, 0}, {1, 3}});
		double out[4], outb[4];
		launch(dim3(2), dim3(3), [&] { sum_thread_f64(out, x.data(), R, 4, 15, 0.0); });
		launch(dim3(3), dim3(32), [&] { sum_block_f64(outb, x.data(), R, 4, 15, 1, nullptr, 0.0); });
		for (int j = 0; j < 4; j++) {
			double want = 0;
			for (int i = 0; i < 3; i++)
				for (int k = 0; k < 5; k++) want += x[i * 1 + j * 15 + k * 3];
			CHECK(out[j] == want && outb[j] == want, "strided sum row %d = %g / %g, want %g", j, out[j], outb[j], want);
		}
	}
	{ // cumsum: along dim 0 of a [3, 2] int32 tensor read transposed, into a
	  // contiguous out; int64 accumulation, rounding per element.
		int x[] = {1, 2, 3, 4, 5, 6}; // x[i][j] = x[i + 3j]
		int out[6];
		Rows R = rows({2}, {{1}, {3}}, {3}, {{2}, {1}});
		launch(dim3(1), dim3(32), [&] { cumsum_i32(out, x, R, 2, 3); });
		int want[] = {1, 4, 3, 9, 6, 15}; // out[i][j] at i*2 + j
		for (int i = 0; i < 6; i++) CHECK(out[i] == want[i], "cumsum[%d] = %d, want %d", i, out[i], want[i]);
	}
	return finish("reduce");
}
