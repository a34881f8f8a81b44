// Runs unfold.cu's kernels on the host (simt.h): unfold against a direct
// im2col, and fold against the adjoint's definition (each column entry
// added to the place it was read from, in column order).
#include "simt.h"
#include "unfold.cu"

int main() {
	// 2 planes of 7x6; kernel 3x2, stride (2, 1), padding (1, 0), dilation (1, 2): 4x4 positions.
	PoolGeom G{};
	G.dims = 2;
	long long in[] = {7, 6}, out[] = {4, 4}, k[] = {3, 2}, s[] = {2, 1}, p[] = {1, 0}, dil[] = {1, 2};
	for (int d = 0; d < 2; d++) G.in[d] = in[d], G.out[d] = out[d], G.kernel[d] = k[d], G.stride[d] = s[d], G.padding[d] = p[d], G.dilation[d] = dil[d];
	G.in_plane = 42, G.out_plane = 16;
	const int planes = 2, K = 6, L = 16;
	std::vector<double> x(planes * 42), col(planes * K * L), back(planes * 42), y(planes * K * L);
	for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(i + 0.5);
	for (size_t i = 0; i < y.size(); i++) y[i] = std::cos(i * 0.7);
	launch(dim3(3), dim3(32), [&] {
		unfold_f64(col.data(), x.data(), col.size(), G);
		fold_f64(back.data(), y.data(), back.size(), G);
	});
	std::vector<double> want(back.size(), 0);
	for (int pl = 0; pl < planes; pl++)
		for (int kh = 0; kh < 3; kh++)
			for (int kw = 0; kw < 2; kw++)
				for (int oh = 0; oh < 4; oh++)
					for (int ow = 0; ow < 4; ow++) {
						int h = oh * 2 - 1 + kh, w = ow - 0 + kw * 2;
						bool inside = h >= 0 && h < 7 && w >= 0 && w < 6;
						size_t c = (pl * K + kh * 2 + kw) * L + oh * 4 + ow;
						double v = inside ? x[pl * 42 + h * 6 + w] : 0;
						CHECK(col[c] == v, "unfold[%zu] = %g, want %g", c, col[c], v);
						if (inside) want[pl * 42 + h * 6 + w] += y[c];
					}
	for (size_t i = 0; i < back.size(); i++) CHECK(back[i] == want[i], "fold[%zu] = %.17g, want %.17g", i, back[i], want[i]);
	return finish("unfold");
}
