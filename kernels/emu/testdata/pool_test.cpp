// Runs pool.cu's kernels on the host (simt.h) against a direct transcription
// of the cpu backend's loops (backends/cpu/pool.go: the windows' taps laid
// out per output place, summed or maxed in order, and the backward pass
// adding each window's share in output order).
#include "simt.h"
#include "pool.cu"

// Window is the taps of each output place of a 2-D pooling, as windowGeom
// and adaptiveGeom give them.
struct Window {
	std::vector<std::vector<long long>> taps;
	std::vector<long long> count;
};

static Window windows(const PoolGeom &G) {
	Window w;
	for (long long o0 = 0; o0 < G.out[0]; o0++)
		for (long long o1 = 0; o1 < G.out[1]; o1++) {
			std::vector<long long> lo(2), hi(2), start(2), step(2), count(2);
			long long o[2] = {o0, o1};
			for (int d = 0; d < 2; d++) {
				long long n = G.in[d];
				if (G.adaptive) {
					lo[d] = o[d] * n / G.out[d];
					hi[d] = ((o[d] + 1) * n + G.out[d] - 1) / G.out[d];
					start[d] = 0, step[d] = 1, count[d] = hi[d] - lo[d];
					continue;
				}
				start[d] = o[d] * G.stride[d] - G.padding[d];
				step[d] = G.dilation[d];
				lo[d] = 0, hi[d] = G.kernel[d];
				for (long long k = 0; k < G.kernel[d]; k++) {
					long long at = start[d] + k * step[d];
					if (at < 0) lo[d] = k + 1;
					if (at >= n && hi[d] == G.kernel[d]) hi[d] = k;
				}
				count[d] = G.exclude ? hi[d] - lo[d] : std::min(start[d] + G.kernel[d], n + G.padding[d]) - start[d];
			}
			std::vector<long long> t;
			for (long long k0 = lo[0]; k0 < hi[0]; k0++)
				for (long long k1 = lo[1]; k1 < hi[1]; k1++) t.push_back((start[0] + k0 * step[0]) * G.in[1] + start[1] + k1 * step[1]);
			w.taps.push_back(t);
			w.count.push_back(count[0] * count[1]);
		}
	return w;
}

static PoolGeom geom(long long h, long long wd, long long oh, long long ow, std::vector<long long> k, std::vector<long long> s,
		     std::vector<long long> p, std::vector<long long> dil, bool adaptive, bool exclude, long long divisor) {
	PoolGeom G{};
	G.dims = 2;
	G.in[0] = h, G.in[1] = wd, G.out[0] = oh, G.out[1] = ow;
	for (int d = 0; d < 2 && !adaptive; d++) G.kernel[d] = k[d], G.stride[d] = s[d], G.padding[d] = p[d], G.dilation[d] = dil[d];
	G.adaptive = adaptive, G.exclude = exclude, G.divisor = divisor;
	G.in_plane = h * wd, G.out_plane = oh * ow;
	return G;
}

static void check(const char *name, const PoolGeom &G, int planes) {
	Window w = windows(G);
	std::vector<float> x(planes * G.in_plane), g(planes * G.out_plane);
	for (size_t i = 0; i < x.size(); i++) x[i] = (float)std::sin(i * 1.7) * 4;
	x[5] = NAN;
	for (size_t i = 0; i < g.size(); i++) g[i] = (float)std::cos(i * 0.3);
	std::vector<float> avg(g.size()), back(x.size());
	std::vector<long long> arg(g.size());
	launch(dim3(3), dim3(32), [&] {
		avg_pool_f32(avg.data(), x.data(), g.size(), G);
		max_pool_indices_f32(arg.data(), x.data(), g.size(), G);
		avg_pool_backward_f32(back.data(), g.data(), x.size(), G);
	});
	std::vector<float> wantBack(x.size(), 0);
	for (int p = 0; p < planes; p++)
		for (size_t j = 0; j < w.taps.size(); j++) {
			const float *in = x.data() + p * G.in_plane;
			float sum = 0, best = -INFINITY;
			long long at = w.taps[j][0];
			for (long long t : w.taps[j]) {
				sum += in[t];
				if (in[t] > best || in[t] != in[t]) best = in[t], at = t;
			}
			float div = (float)(G.divisor ? G.divisor : w.count[j]);
			size_t o = p * G.out_plane + j;
			CHECK(same(avg[o], sum / div), "%s: avg[%d][%zu] = %.9g, want %.9g", name, p, j, avg[o], sum / div);
			CHECK(arg[o] == at, "%s: argmax[%d][%zu] = %lld, want %lld", name, p, j, arg[o], at);
			float v = g[o] / div;
			for (long long t : w.taps[j]) wantBack[p * G.in_plane + t] += v;
		}
	for (size_t i = 0; i < x.size(); i++) CHECK(back[i] == wantBack[i], "%s: backward[%zu] = %.9g, want %.9g", name, i, back[i], wantBack[i]);
}

int main() {
	// 3x2 kernel, stride 2, padding (1, 0) over 7x6: out 4x3.
	check("window", geom(7, 6, 4, 3, {3, 2}, {2, 2}, {1, 0}, {1, 1}, false, false, 0), 2);
	check("window exclude", geom(7, 6, 4, 3, {3, 2}, {2, 2}, {1, 0}, {1, 1}, false, true, 0), 2);
	check("window divisor", geom(7, 6, 4, 3, {3, 2}, {2, 2}, {1, 0}, {1, 1}, false, false, 5), 1);
	// ceil mode: 7 wide, kernel 2, stride 2 gives 4 outputs, the last window half outside.
	check("ceil mode", geom(5, 7, 3, 4, {2, 2}, {2, 2}, {0, 0}, {1, 1}, false, false, 0), 1);
	// dilation 2, padding 1 (max pooling's only).
	check("dilated", geom(9, 8, 4, 4, {3, 2}, {2, 2}, {1, 1}, {2, 3}, false, false, 0), 1);
	check("overlapping stride 1", geom(6, 5, 4, 3, {3, 3}, {1, 1}, {0, 0}, {1, 1}, false, false, 0), 2);
	check("adaptive", geom(7, 10, 3, 4, {}, {}, {}, {}, true, false, 0), 2);
	check("adaptive up", geom(3, 2, 5, 7, {}, {}, {}, {}, true, false, 0), 1);
	return finish("pool");
}
