// pool.cu: average and max pooling, their adaptive forms and backward
// passes, over 1 to 3 spatial dims. The semantics are lathe's cpu kernels'
// (backends/cpu/pool.go): a window's taps are walked in row-major order,
// sums run in the element type, max takes a later tap if it is larger or
// NaN (so the first of equal values and the last NaN), and the backward
// passes add each output place's share in row-major order of the output
// places, so results match the cpu's bit for bit.
//
// Tensors are (planes, spatial...) and row-major (the host copies a strided
// input first): plane p of x starts at p * in_plane, of out at
// p * out_plane.
//
// Launch contract of every kernel here: a 1-D grid of 1-D blocks of any
// size; each thread computes one element of its output (a grid-stride loop
// over n = planes * out_plane elements, or planes * in_plane for the
// backward passes, which write the input-shaped gradient).
#include "window.cuh"

// Axis is output place o's window along one dim: taps k in [lo, hi) read
// input place start + k * step; count is what average pooling divides by.
struct Axis {
	i64 start, step, lo, hi, count;
};

// axis_of gives output place o's window along dim d, as the cpu's
// windowGeom (with dispatch.PoolTaps) and adaptiveGeom lay it out.
__device__ __forceinline__ Axis axis_of(const PoolGeom &G, int d, i64 o) {
	Axis a;
	i64 n = G.in[d];
	if (G.adaptive) {
		i64 m = G.out[d];
		a.start = o * n / m;
		a.step = 1;
		a.lo = 0;
		a.hi = ((o + 1) * n + m - 1) / m - a.start;
		a.count = a.hi;
		return a;
	}
	i64 dil = G.dilation[d], k = G.kernel[d], pad = G.padding[d];
	a.start = o * G.stride[d] - pad;
	a.step = dil;
	a.lo = a.start < 0 ? (-a.start + dil - 1) / dil : 0;
	a.hi = k;
	i64 last = a.start + (k - 1) * dil;
	if (last >= n) a.hi -= (last - n + dil) / dil;
	if (a.hi < a.lo) a.hi = a.lo;
	if (G.exclude) {
		a.count = a.hi - a.lo;
	} else {
		i64 end = a.start + k < n + pad ? a.start + k : n + pad;
		a.count = end - a.start;
	}
	return a;
}

// place_axes unravels output place j of a plane into its windows, and
// returns the product of their counts.
__device__ __forceinline__ i64 place_axes(const PoolGeom &G, i64 j, Axis (&ax)[LATHE_POOL_DIMS]) {
	i64 count = 1;
	for (int d = (int)G.dims - 1; d >= 0; d--) {
		i64 q = j / G.out[d];
		ax[d] = axis_of(G, d, j - q * G.out[d]);
		count *= ax[d].count;
		j = q;
	}
	return count;
}

// for_taps calls f(offset in the plane) for each tap of the window, in
// row-major order (the last dim fastest).
template <typename F>
__device__ __forceinline__ void for_taps(const PoolGeom &G, const Axis (&ax)[LATHE_POOL_DIMS], F f) {
	i64 s1 = G.dims > 1 ? G.in[1] : 1, s2 = G.dims > 2 ? G.in[2] : 1;
	i64 lo1 = G.dims > 1 ? ax[1].lo : 0, hi1 = G.dims > 1 ? ax[1].hi : 1;
	i64 lo2 = G.dims > 2 ? ax[2].lo : 0, hi2 = G.dims > 2 ? ax[2].hi : 1;
	for (i64 k0 = ax[0].lo; k0 < ax[0].hi; k0++) {
		i64 off0 = (ax[0].start + k0 * ax[0].step) * s1 * s2;
		for (i64 k1 = lo1; k1 < hi1; k1++) {
			i64 off1 = G.dims > 1 ? (ax[1].start + k1 * ax[1].step) * s2 : 0;
			for (i64 k2 = lo2; k2 < hi2; k2++) {
				i64 off2 = G.dims > 2 ? ax[2].start + k2 * ax[2].step : 0;
				f(off0 + off1 + off2);
			}
		}
	}
}

// avg_pool_<dtype>(F *out, const F *x, i64 n, PoolGeom G): n = planes *
// out_plane outputs, each its window's sum over its divisor.
template <typename F>
__device__ void avg_pool(F *out, const F *x, i64 n, const PoolGeom &G) {
	LATHE_FOR(i, n) {
		i64 p = i / G.out_plane, j = i - p * G.out_plane;
		Axis ax[LATHE_POOL_DIMS];
		i64 count = place_axes(G, j, ax);
		const F *plane = x + p * G.in_plane;
		F sum = 0;
		for_taps(G, ax, [&](i64 t) { sum += plane[t]; });
		out[i] = sum / (F)(G.divisor ? G.divisor : count);
	}
}

// max_pool_indices_<dtype>(i64 *out, const F *x, i64 n, PoolGeom G): the
// offset within its plane of each window's maximum (a window with no tap
// inside the input cannot occur: Infer refuses such padding).
template <typename F>
__device__ void max_pool_indices(i64 *out, const F *x, i64 n, const PoolGeom &G) {
	LATHE_FOR(i, n) {
		i64 p = i / G.out_plane, j = i - p * G.out_plane;
		Axis ax[LATHE_POOL_DIMS];
		place_axes(G, j, ax);
		const F *plane = x + p * G.in_plane;
		F best = -(F)inf_f64();
		i64 at = -1;
		for_taps(G, ax, [&](i64 t) {
			F v = plane[t];
			if (at < 0) at = t; // the first tap, if every value is -inf
			if (v > best || is_nan(v)) {
				best = v;
				at = t;
			}
		});
		out[i] = at;
	}
}

// Window pooling's adjoint for input place idx along dim d: the output
// places o whose windows read it, o in [first, last], each after a check
// (taps are dilated, and an adaptive window's extent varies).
__device__ __forceinline__ void covering(const PoolGeom &G, int d, i64 idx, i64 &first, i64 &last) {
	i64 m = G.out[d], n = G.in[d];
	if (G.adaptive) {
		first = idx * m / n - 1;
		last = ((idx + 1) * m + n - 1) / n;
	} else {
		// o * stride - pad <= idx  and  o * stride - pad + (k-1) * dil >= idx
		i64 s = G.stride[d], reach = (G.kernel[d] - 1) * G.dilation[d];
		i64 num = idx + G.padding[d] - reach;
		first = num <= 0 ? 0 : (num + s - 1) / s;
		last = (idx + G.padding[d]) / s;
	}
	if (first < 0) first = 0;
	if (last > m - 1) last = m - 1;
}

// avg_pool_backward_<dtype>(F *out, const F *grad, i64 n, PoolGeom G): G is
// the forward geometry (in: the input's spatial size, out: grad's); n =
// planes * in_plane. Each input place sums grad[o] / divisor(o) over the
// output places o whose windows read it, in row-major order of o, as the
// cpu's loop over windows adds them.
template <typename F>
__device__ void avg_pool_backward(F *out, const F *grad, i64 n, const PoolGeom &G) {
	LATHE_FOR(i, n) {
		i64 p = i / G.in_plane, rem = i - p * G.in_plane;
		i64 idx[LATHE_POOL_DIMS], first[LATHE_POOL_DIMS], last[LATHE_POOL_DIMS];
		for (int d = (int)G.dims - 1; d >= 0; d--) {
			i64 q = rem / G.in[d];
			idx[d] = rem - q * G.in[d];
			rem = q;
			covering(G, d, idx[d], first[d], last[d]);
		}
		const F *g = grad + p * G.out_plane;
		F sum = 0;
		i64 o[LATHE_POOL_DIMS] = {0, 0, 0};
		i64 end1 = G.dims > 1 ? 1 : 0, end2 = G.dims > 2 ? 1 : 0;
		for (o[0] = first[0]; o[0] <= last[0]; o[0]++)
			for (o[1] = end1 ? first[1] : 0; o[1] <= (end1 ? last[1] : 0); o[1]++)
				for (o[2] = end2 ? first[2] : 0; o[2] <= (end2 ? last[2] : 0); o[2]++) {
					// Does window o read this place, and what is its count?
					bool reads = true;
					i64 count = 1, j = 0;
					for (int d = 0; d < (int)G.dims; d++) {
						Axis a = axis_of(G, d, o[d]);
						i64 k = idx[d] - a.start;
						reads = reads && k >= 0 && k % a.step == 0 && k / a.step >= a.lo && k / a.step < a.hi;
						count *= a.count;
						j = j * G.out[d] + o[d];
					}
					if (reads) sum += g[j] / (F)(G.divisor ? G.divisor : count);
				}
		out[i] = sum;
	}
}

#define LATHE_POOL(F, sfx)                                                                                   \
	extern "C" __global__ void avg_pool_##sfx(F *out, const F *x, i64 n, PoolGeom G) { avg_pool<F>(out, x, n, G); } \
	extern "C" __global__ void max_pool_indices_##sfx(i64 *out, const F *x, i64 n, PoolGeom G) {        \
		max_pool_indices<F>(out, x, n, G);                                                           \
	}                                                                                                    \
	extern "C" __global__ void avg_pool_backward_##sfx(F *out, const F *grad, i64 n, PoolGeom G) {      \
		avg_pool_backward<F>(out, grad, n, G);                                                       \
	}
LATHE_FLOATS(LATHE_POOL)
