// Runs elementwise.cu's and binary.cu's kernels on the host (simt.h) on the cases whose
// semantics are easy to get wrong.
#include "simt.h"
#include "elementwise.cu"
#include "binary.cu"

static const double NaN = std::nan("");

int main() {
	{ // round: half to even.
		float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f}, want[] = {0, 2, 2, -0.0f, -2, 2}, out[6];
		launch(dim3(2), dim3(4), [&] { round_f32(out, x, 6, 0, 0); });
		for (int i = 0; i < 6; i++) CHECK(out[i] == want[i] && std::signbit(out[i]) == std::signbit(want[i]), "round(%g) = %g, want %g", x[i], out[i], want[i]);
	}
	{ // sign: NaN gives +0; relu passes NaN.
		double x[] = {NaN, -0.0, -3, 2}, s[4], r[4];
		launch(dim3(1), dim3(32), [&] { sign_f64(s, x, 4, 0, 0); relu_f64(r, x, 4, 0, 0); });
		CHECK(s[0] == 0 && !std::signbit(s[0]) && s[1] == 0 && s[2] == -1 && s[3] == 1, "sign: %g %g %g %g", s[0], s[1], s[2], s[3]);
		CHECK(std::isnan(r[0]) && r[2] == 0 && r[3] == 2, "relu: %g %g %g", r[0], r[2], r[3]);
	}
	{ // integer clamp with fractional bounds: ceil(lo), floor(hi).
		int x[] = {0, 1, 2, 3, 4, 5}, out[6], want[] = {2, 2, 2, 3, 3, 3};
		launch(dim3(1), dim3(32), [&] { clamp_i32(out, x, 6, 1.5, 3.5); });
		for (int i = 0; i < 6; i++) CHECK(out[i] == want[i], "clamp(%d) = %d, want %d", x[i], out[i], want[i]);
		float f[] = {(float)NaN, -5, 0.25f, 9}, fo[4];
		launch(dim3(1), dim3(32), [&] { clamp_strided_f32(fo, f, 4, layout({4}, {{1}, {1}}), -1, 1); });
		CHECK(std::isnan(fo[0]) && fo[1] == -1 && fo[2] == 0.25f && fo[3] == 1, "clamp f32: %g %g %g %g", fo[0], fo[1], fo[2], fo[3]);
	}
	{ // abs and neg of the most negative integer wrap.
		long long x[] = {-9223372036854775807LL - 1, -4}, a[2], n[2];
		launch(dim3(1), dim3(32), [&] { abs_i64(a, x, 2, 0, 0); neg_i64(n, x, 2, 0, 0); });
		CHECK(a[0] == x[0] && a[1] == 4 && n[0] == x[0] && n[1] == 4, "abs/neg wrap: %lld %lld %lld %lld", a[0], a[1], n[0], n[1]);
	}
	{ // add over a transposed x and a broadcast row y: out[i][j] = x[j][i] + y[j]... as laid out.
		// out [2,3] contiguous; x is a [3,2] tensor read transposed (strides 1, 2);
		// y [3] broadcast along dim 0 (stride 0).
		float x[6] = {0, 1, 2, 3, 4, 5}, y[3] = {10, 20, 30}, out[6];
		Layout L = layout({2, 3}, {{3, 1}, {1, 2}, {0, 1}});
		launch(dim3(3), dim3(2), [&] { add_strided_f32(out, x, y, 6, L); });
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 3; j++) CHECK(out[i * 3 + j] == x[j * 2 + i] + y[j], "add[%d][%d] = %g", i, j, out[i * 3 + j]);
	}
	{ // maximum and minimum propagate NaN from either side.
		double x[] = {NaN, 1, 3}, y[] = {1, NaN, 2}, mx[3], mn[3];
		launch(dim3(1), dim3(32), [&] { maximum_f64(mx, x, y, 3); minimum_f64(mn, x, y, 3); });
		CHECK(std::isnan(mx[0]) && std::isnan(mx[1]) && mx[2] == 3, "maximum: %g %g %g", mx[0], mx[1], mx[2]);
		CHECK(std::isnan(mn[0]) && std::isnan(mn[1]) && mn[2] == 2, "minimum: %g %g %g", mn[0], mn[1], mn[2]);
	}
	{ // integer pow: by squaring, wrapping; negative exponents as PyTorch.
		long long a[] = {3, 2, 1, -1, -1, 5}, b[] = {4, 64, -3, -3, -2, -1}, out[6], want[] = {81, 0, 1, -1, 1, 0};
		launch(dim3(1), dim3(32), [&] { pow_i64(out, a, b, 6); });
		for (int i = 0; i < 6; i++) CHECK(out[i] == want[i], "pow(%lld, %lld) = %lld, want %lld", a[i], b[i], out[i], want[i]);
	}
	{ // comparisons give bool bytes; NaN compares false but for ne.
		float x[] = {1, (float)NaN, 2}, y[] = {1, (float)NaN, 3};
		unsigned char eq[3], ne[3], lt[3];
		launch(dim3(1), dim3(32), [&] { eq_f32(eq, x, y, 3); ne_f32(ne, x, y, 3); lt_f32(lt, x, y, 3); });
		CHECK(eq[0] == 1 && eq[1] == 0 && eq[2] == 0 && ne[1] == 1 && lt[2] == 1 && lt[0] == 0, "compare");
	}
	{ // logical ops over mixed dtypes: -0.0 is false, NaN is true.
		float x[] = {-0.0f, (float)NaN, 1, 0};
		long long y[] = {5, 0, 7, 0};
		unsigned char a[4], o[4], n[4];
		Layout L = layout({4}, {{1}, {1}, {1}});
		launch(dim3(1), dim3(32), [&] { logical_and(a, x, y, 4, L, 1, 4); logical_or(o, x, y, 4, L, 1, 4); logical_not(n, x, 4, L, 1); });
		unsigned char wa[] = {0, 0, 1, 0}, wo[] = {1, 1, 1, 0}, wn[] = {1, 0, 0, 1};
		for (int i = 0; i < 4; i++) CHECK(a[i] == wa[i] && o[i] == wo[i] && n[i] == wn[i], "logical[%d]: %d %d %d", i, a[i], o[i], n[i]);
	}
	{ // where with a broadcast condition and scalar y.
		unsigned char c[] = {1, 0};
		int x[] = {1, 2, 3}, y[] = {-1}, out[6];
		Layout L = layout({2, 3}, {{3, 1}, {1, 0}, {0, 1}, {0, 0}});
		launch(dim3(1), dim3(32), [&] { where_strided_i32(out, c, x, y, 6, L); });
		int want[] = {1, 2, 3, -1, -1, -1};
		for (int i = 0; i < 6; i++) CHECK(out[i] == want[i], "where[%d] = %d", i, out[i]);
	}
	{ // casts: truncation toward zero, nonzero is true, true is 1.
		float x[] = {-1.7f, 2.9f, 0.0f, -0.0f};
		int i[4];
		unsigned char b[4];
		launch(dim3(1), dim3(32), [&] { cast_f32_i32(i, x, 4); cast_f32_bool(b, x, 4); });
		CHECK(i[0] == -1 && i[1] == 2 && i[2] == 0, "cast f32->i32: %d %d %d", i[0], i[1], i[2]);
		CHECK(b[0] == 1 && b[1] == 1 && b[2] == 0 && b[3] == 0, "cast f32->bool: %d %d %d %d", b[0], b[1], b[2], b[3]);
		unsigned char t[] = {1, 0};
		double d[2];
		launch(dim3(1), dim3(32), [&] { cast_bool_f64(d, t, 2); });
		CHECK(d[0] == 1 && d[1] == 0, "cast bool->f64");
	}
	{ // the strided copy reading backward (flip) from a moved pointer.
		long long x[] = {0, 1, 2, 3, 4, 5}, out[6];
		Layout L = layout({2, 3}, {{3, 1}, {-3, -1}});
		launch(dim3(1), dim3(32), [&] { cast_strided_i64_i64(out, x + 5, 6, L); });
		for (int i = 0; i < 6; i++) CHECK(out[i] == 5 - i, "flip[%d] = %lld", i, out[i]);
	}
	{ // activations against their formulas in float64.
		double x[] = {-30, -2, -0.5, 0, 0.5, 2, 25};
		double sg[7], si[7], sp[7], ge[7], gt[7], lr[7];
		launch(dim3(1), dim3(32), [&] {
			sigmoid_f64(sg, x, 7, 0, 0);
			silu_f64(si, x, 7, 0, 0);
			softplus_f64(sp, x, 7, 0, 0);
			gelu_f64(ge, x, 7, 0, 0);
			gelu_tanh_f64(gt, x, 7, 0, 0);
			leaky_relu_f64(lr, x, 7, 0.1, 0);
		});
		for (int i = 0; i < 7; i++) {
			double v = x[i], s = 1 / (1 + std::exp(-v));
			CHECK(same(sg[i], s, 1e-15), "sigmoid(%g) = %g, want %g", v, sg[i], s);
			CHECK(same(si[i], v * s, 1e-15), "silu(%g)", v);
			CHECK(same(sp[i], v > 20 ? v : std::log1p(std::exp(v)), 1e-15), "softplus(%g)", v);
			CHECK(same(ge[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-15), "gelu(%g)", v);
			CHECK(same(gt[i], 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))), 1e-15), "gelu_tanh(%g)", v);
			CHECK(lr[i] == (v > 0 ? v : 0.1 * v), "leaky_relu(%g)", v);
		}
	}
	{ // fill.
		int out[5];
		launch(dim3(2), dim3(2), [&] { fill_i32(out, 5, -7); });
		for (int i = 0; i < 5; i++) CHECK(out[i] == -7, "fill[%d] = %d", i, out[i]);
	}
	return finish("elementwise");
}
