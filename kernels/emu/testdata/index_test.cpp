// Runs index.cu's kernels on the host (simt.h).
#include "simt.h"
#include "index.cu"

int main() {
	{ // index_select along dim 0 of a [4, 3] tensor with an int32 index,
	  // through the gather kernel: idx stride along dim 0, 0 along dim 1.
		float x[12];
		for (int i = 0; i < 12; i++) x[i] = i;
		int idx[] = {3, 0, 3, 7 /* out of range: 0, untouched memory */};
		float out[12];
		Layout L = layout({4, 3}, {{3, 1}, {0, 1}, {1, 0}});
		launch(dim3(2), dim3(4), [&] { gather_f32(out, x, idx, 12, L, 3, 4, 3); });
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 3; j++) {
				float want = idx[i] < 4 ? x[idx[i] * 3 + j] : 0;
				CHECK(out[i * 3 + j] == want, "index_select[%d][%d] = %g, want %g", i, j, out[i * 3 + j], want);
			}
	}
	{ // gather along dim 1 with an int64 index of shape [2, 2].
		double x[] = {1, 2, 3, 4, 5, 6}; // [2, 3]
		long long idx[] = {2, 0, 1, 1};
		double out[4];
		Layout L = layout({2, 2}, {{2, 1}, {3, 0}, {2, 1}});
		launch(dim3(1), dim3(32), [&] { gather_f64(out, x, idx, 4, L, 1, 3, 4); });
		double want[] = {3, 1, 5, 5};
		for (int i = 0; i < 4; i++) CHECK(out[i] == want[i], "gather[%d] = %g, want %g", i, out[i], want[i]);
	}
	{ // scatter along dim 0 into a [3, 2] copy of x: duplicates keep the
	  // last in row-major order; scatter_add sums them; a bad index is skipped.
		long long base[] = {0, 0, 0, 0, 0, 0};
		long long idx[] = {1, 2, 1, 2, 9, 0}; // [3, 2] index
		long long src[] = {10, 20, 30, 40, 50, 60};
		long long s[6], a[6];
		std::memcpy(s, base, sizeof base);
		std::memcpy(a, base, sizeof base);
		// Lines along dim 0 (n = 3), one per column: L over [2] (the other dim).
		Layout L = layout({2}, {{1}, {1}, {1}});
		launch(dim3(1), dim3(32), [&] {
			scatter_i64(s, src, idx, 2, L, 3, 2, 2, 2, 3, 4);
			scatter_add_i64(a, src, idx, 2, L, 3, 2, 2, 2, 3, 4);
		});
		// column 0: idx 1, 1, 9 with src 10, 30, 50 -> row 1 = 30 (set), 40 (add)
		// column 1: idx 2, 2, 0 with src 20, 40, 60 -> row 2 = 40 / 60, row 0 = 60
		long long ws[] = {0, 60, 30, 0, 0, 40}, wa[] = {0, 60, 40, 0, 0, 60};
		for (int i = 0; i < 6; i++) CHECK(s[i] == ws[i] && a[i] == wa[i], "scatter[%d] = %lld / %lld, want %lld / %lld", i, s[i], a[i], ws[i], wa[i]);
		unsigned char b[] = {0, 1}, bsrc[] = {1, 0, 1};
		long long bidx[] = {0, 0, 1};
		Layout B = layout({}, {{}, {}, {}});
		launch(dim3(1), dim3(32), [&] { scatter_add_bool(b, bsrc, bidx, 1, B, 3, 1, 1, 1, 2, 4); });
		CHECK(b[0] == 1 && b[1] == 1, "bool scatter_add is or: %d %d", b[0], b[1]);
	}
	{ // one_hot of a [3] index read with stride 2, 4 classes.
		long long idx[] = {2, -1, 0, -1, 3};
		long long out[12];
		Layout L = layout({3}, {{1}, {2}});
		launch(dim3(1), dim3(5), [&] { one_hot(out, idx, 12, L, 4, 4); });
		for (int p = 0; p < 3; p++)
			for (int c = 0; c < 4; c++) CHECK(out[p * 4 + c] == (idx[2 * p] == c), "one_hot[%d][%d] = %lld", p, c, out[p * 4 + c]);
	}
	return finish("index");
}
