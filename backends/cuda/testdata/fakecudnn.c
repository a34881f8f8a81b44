// A stand-in for libcudnn, built by fake_test.go: the convolution API of
// descriptors, with a direct reference convolution in each direction over
// the stand-in driver's memory (host memory), which refuses what cuDNN
// refuses (descriptors that do not fit together, strides that are not the
// tensors' packed ones, a compute type that cuDNN does not pair with the
// data) and checks the backend's choices against the contract: the
// algorithm list holds a nondeterministic algorithm first, then one that
// does not support the case, then a deterministic one whose workspace no
// device holds, then the one to run; any other that runs fails, as does a
// workspace smaller than the one asked for. A batch of 13 images stands
// for a call that fails on the device (CUDNN_STATUS_EXECUTION_FAILED). It
// reports itself as cuDNN 9.1.0, with cuDNN 9's status numbers.
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef int cudnnStatus_t;
enum { OK = 0, SUBLIBRARY_LOADING_FAILED = 1008, BAD_PARAM = 2000, NOT_SUPPORTED = 3000, EXECUTION_FAILED = 5000 };
enum { FLOAT = 0, DOUBLE = 1, HALF = 2, BFLOAT16 = 9 };   // cudnnDataType_t
enum { FORWARD, DATA, FILTER };                          // the directions
enum { RUN_ALGO = 3, HUGE_ALGO = 2, MAX_RANK = 5, FAILING_BATCH = 13 };

typedef struct { void *stream; } handle;
typedef struct { int set, dtype, rank, dims[8], strides[8]; } tensor;
typedef struct { int set, dtype, format, rank, dims[8]; } filter;
typedef struct { int set, n, pad[3], stride[3], dilation[3], mode, compute, groups, math; } conv;

size_t cudnnGetVersion(void) { return 90100; }
const char *cudnnGetErrorString(cudnnStatus_t s) {
	switch (s) {
	case OK: return "CUDNN_STATUS_SUCCESS";
	case BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
	case NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
	case EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
	case SUBLIBRARY_LOADING_FAILED: return "CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED";
	}
	return "CUDNN_STATUS_UNKNOWN";
}

// With FAKE_CUDNN_CREATE=fail in the environment, making a handle fails as
// it does where cuDNN's engine libraries are missing.
cudnnStatus_t cudnnCreate(handle **h) {
	const char *e = getenv("FAKE_CUDNN_CREATE");
	if (e && strcmp(e, "fail") == 0) return SUBLIBRARY_LOADING_FAILED;
	*h = calloc(1, sizeof(handle));
	return OK;
}
cudnnStatus_t cudnnDestroy(handle *h) { free(h); return OK; }
cudnnStatus_t cudnnSetStream(handle *h, void *s) {
	if (!s) return BAD_PARAM; // lathe's stream is its own, never the legacy stream 0
	h->stream = s;
	return OK;
}

cudnnStatus_t cudnnCreateTensorDescriptor(tensor **t) { *t = calloc(1, sizeof(tensor)); return OK; }
cudnnStatus_t cudnnDestroyTensorDescriptor(tensor *t) { free(t); return OK; }
cudnnStatus_t cudnnSetTensorNdDescriptor(tensor *t, int dtype, int rank, const int *dims, const int *strides) {
	if (rank < 3 || rank > 8) return BAD_PARAM;
	for (int i = 0; i < rank; i++)
		if (dims[i] <= 0 || strides[i] <= 0) return BAD_PARAM;
	t->set = 1, t->dtype = dtype, t->rank = rank;
	memcpy(t->dims, dims, rank * sizeof(int));
	memcpy(t->strides, strides, rank * sizeof(int));
	return OK;
}
cudnnStatus_t cudnnCreateFilterDescriptor(filter **f) { *f = calloc(1, sizeof(filter)); return OK; }
cudnnStatus_t cudnnDestroyFilterDescriptor(filter *f) { free(f); return OK; }
cudnnStatus_t cudnnSetFilterNdDescriptor(filter *f, int dtype, int format, int rank, const int *dims) {
	if (rank < 3 || rank > 8 || format != 0) return BAD_PARAM; // CUDNN_TENSOR_NCHW only here
	for (int i = 0; i < rank; i++)
		if (dims[i] <= 0) return BAD_PARAM;
	f->set = 1, f->dtype = dtype, f->format = format, f->rank = rank;
	memcpy(f->dims, dims, rank * sizeof(int));
	return OK;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(conv **c) { *c = calloc(1, sizeof(conv)); (*c)->groups = 1; return OK; }
cudnnStatus_t cudnnDestroyConvolutionDescriptor(conv *c) { free(c); return OK; }
cudnnStatus_t cudnnSetConvolutionNdDescriptor(conv *c, int n, const int *pad, const int *stride, const int *dilation, int mode, int compute) {
	if (n < 1 || n > 3 || (mode != 0 && mode != 1)) return BAD_PARAM;
	for (int i = 0; i < n; i++)
		if (pad[i] < 0 || stride[i] <= 0 || dilation[i] <= 0) return BAD_PARAM;
	c->set = 1, c->n = n, c->mode = mode, c->compute = compute;
	memcpy(c->pad, pad, n * sizeof(int));
	memcpy(c->stride, stride, n * sizeof(int));
	memcpy(c->dilation, dilation, n * sizeof(int));
	return OK;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(conv *c, int g) { if (g < 1) return BAD_PARAM; c->groups = g; return OK; }
cudnnStatus_t cudnnSetConvolutionMathType(conv *c, int m) { if (m < 0 || m > 3) return BAD_PARAM; c->math = m; return OK; }

static long numel(int rank, const int *dims) {
	long n = 1;
	for (int i = 0; i < rank; i++) n *= dims[i];
	return n;
}

// fits checks that the descriptors describe one convolution of packed
// NCHW tensors, as cuDNN's calls do, and that the compute type is the one
// cuDNN pairs with the data for lathe's contract (float for the 16-bit
// floats and float, double for double).
static int fits(const tensor *x, const filter *w, const conv *c, const tensor *y) {
	if (!x->set || !w->set || !c->set || !y->set) return 0;
	int r = x->rank;
	if (r != y->rank || r != w->rank || r != c->n + 2 || r > MAX_RANK) return 0;
	if (x->dtype != y->dtype || x->dtype != w->dtype) return 0;
	if (c->compute != (x->dtype == DOUBLE ? DOUBLE : FLOAT)) return 0;
	if (x->dims[1] != w->dims[1] * c->groups || w->dims[0] % c->groups || y->dims[0] != x->dims[0] || y->dims[1] != w->dims[0])
		return 0;
	for (int i = 2; i < r; i++) {
		int span = c->dilation[i - 2] * (w->dims[i] - 1) + 1;
		if (y->dims[i] != (x->dims[i] + 2 * c->pad[i - 2] - span) / c->stride[i - 2] + 1) return 0;
	}
	for (const tensor *t = x; t; t = t == x ? y : NULL) {
		long s = 1;
		for (int i = r - 1; i >= 0; i--) {
			if (t->strides[i] != s) return 0;
			s *= t->dims[i];
		}
	}
	return 1;
}

// The workspace that RUN_ALGO asks for: some bytes per result element.
static size_t need(int dir, const tensor *x, const filter *w, const tensor *y) {
	long n = dir == FORWARD ? numel(y->rank, y->dims) : dir == DATA ? numel(x->rank, x->dims) : numel(w->rank, w->dims);
	return 256 + 4 * (size_t)n;
}

typedef struct {
	int algo;
	cudnnStatus_t status;
	float time;
	size_t memory;
	int determinism, mathType, reserved[3];
} perf;

static cudnnStatus_t algos(int dir, const tensor *x, const filter *w, const conv *c, const tensor *y, int requested, int *returned, perf *p) {
	if (!fits(x, w, c, y)) return BAD_PARAM;
	perf all[4] = {
		{0, OK, -1, 0, 0, c->math, {0}},                            // nondeterministic
		{1, NOT_SUPPORTED, -1, 0, 1, c->math, {0}},                 // not for this case
		{HUGE_ALGO, OK, -1, (size_t)1 << 40, 1, c->math, {0}},       // past the device
		{RUN_ALGO, OK, -1, need(dir, x, w, y), 1, c->math, {0}},
	};
	*returned = requested < 4 ? requested : 4;
	memcpy(p, all, *returned * sizeof(perf));
	return OK;
}

static cudnnStatus_t workspace(int dir, const tensor *x, const filter *w, const conv *c, const tensor *y, int algo, size_t *bytes) {
	if (!fits(x, w, c, y)) return BAD_PARAM;
	switch (algo) {
	case 0: *bytes = 0; return OK;
	case HUGE_ALGO: *bytes = (size_t)1 << 40; return OK;
	case RUN_ALGO: *bytes = need(dir, x, w, y); return OK;
	}
	return NOT_SUPPORTED;
}

// get reads element i of dtype as a double; float32 under
// CUDNN_DEFAULT_MATH is cut to TF32's 10 mantissa bits first (towards
// zero, enough to tell the math types apart), as tensor cores may.
static double get(const void *p, int dtype, long i, int tf32) {
	switch (dtype) {
	case DOUBLE: return ((const double *)p)[i];
	case HALF: return (float)((const _Float16 *)p)[i];
	case BFLOAT16: {
		unsigned int u = (unsigned int)((const unsigned short *)p)[i] << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	}
	float f = ((const float *)p)[i];
	if (tf32) {
		unsigned int u;
		memcpy(&u, &f, 4);
		u &= ~0x1fffu;
		memcpy(&f, &u, 4);
	}
	return f;
}

static double *load(const void *p, int dtype, long n, int tf32) {
	double *v = malloc((n > 0 ? n : 1) * sizeof(double));
	for (long i = 0; i < n; i++) v[i] = get(p, dtype, i, tf32);
	return v;
}

// store writes v to element i, rounded once to dtype (to nearest even).
static void store(void *p, int dtype, long i, double v) {
	switch (dtype) {
	case DOUBLE: ((double *)p)[i] = v; return;
	case HALF: ((_Float16 *)p)[i] = (_Float16)(float)v; return;
	case BFLOAT16: {
		float f = (float)v;
		unsigned int u;
		memcpy(&u, &f, 4);
		if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x400000u;
		else u += 0x7fffu + ((u >> 16) & 1);
		((unsigned short *)p)[i] = (unsigned short)(u >> 16);
		return;
	}
	default: ((float *)p)[i] = (float)v;
	}
}

// run computes direction dir: out = alpha·op(a, b) + beta·out, with the
// operands in the order of cuDNN's call (forward x, w; data w, dy; filter
// x, dy). One walk over every (image, output channel, output position,
// input channel of its group, tap) pair adds the product of the two
// operands' elements into the result's.
static cudnnStatus_t run(int dir, const void *alpha, const void *a, const void *b, const tensor *x, const filter *w,
		const conv *c, const tensor *y, int algo, void *ws, size_t wsBytes, const void *beta, void *out) {
	if (!fits(x, w, c, y)) return BAD_PARAM;
	if (algo != RUN_ALGO) return EXECUTION_FAILED;
	if (!ws || wsBytes < need(dir, x, w, y)) return BAD_PARAM;
	if (x->dims[0] == FAILING_BATCH) return EXECUTION_FAILED;
	memset(ws, 0xab, need(dir, x, w, y)); // the workspace is the backend's memory, and as long as asked
	int r = x->rank, dt = x->dtype, tf32 = dt == FLOAT && c->math == 0;
	long nx = numel(r, x->dims), nw = numel(r, w->dims), ny = numel(r, y->dims);
	const void *px = dir == DATA ? NULL : a, *pw = dir == FORWARD ? b : dir == DATA ? a : NULL, *py = dir == FORWARD ? NULL : b;
	double *X = px ? load(px, dt, nx, tf32) : NULL, *W = pw ? load(pw, dt, nw, tf32) : NULL, *Y = py ? load(py, dt, ny, tf32) : NULL;
	long nout = dir == FORWARD ? ny : dir == DATA ? nx : nw;
	double *acc = calloc(nout, sizeof(double));
	// Spatial dims padded to three of size 1.
	int in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, o[3] = {1, 1, 1}, pad[3] = {0}, str[3] = {1, 1, 1}, dil[3] = {1, 1, 1};
	for (int i = 0; i < r - 2; i++)
		in[i] = x->dims[2 + i], k[i] = w->dims[2 + i], o[i] = y->dims[2 + i], pad[i] = c->pad[i], str[i] = c->stride[i], dil[i] = c->dilation[i];
	int N = x->dims[0], C = x->dims[1], O = y->dims[1], G = c->groups, cg = C / G, og = O / G;
	long L = (long)o[0] * o[1] * o[2], I = (long)in[0] * in[1] * in[2], K = (long)k[0] * k[1] * k[2];
	for (int n = 0; n < N; n++)
		for (int oc = 0; oc < O; oc++)
			for (int p0 = 0; p0 < o[0]; p0++)
				for (int p1 = 0; p1 < o[1]; p1++)
					for (int p2 = 0; p2 < o[2]; p2++)
						for (int ci = 0; ci < cg; ci++)
							for (int t0 = 0; t0 < k[0]; t0++)
								for (int t1 = 0; t1 < k[1]; t1++)
									for (int t2 = 0; t2 < k[2]; t2++) {
										int q0 = p0 * str[0] - pad[0] + t0 * dil[0];
										int q1 = p1 * str[1] - pad[1] + t1 * dil[1];
										int q2 = p2 * str[2] - pad[2] + t2 * dil[2];
										// CUDNN_CONVOLUTION (0) flips the window.
										int u0 = c->mode ? t0 : k[0] - 1 - t0, u1 = c->mode ? t1 : k[1] - 1 - t1, u2 = c->mode ? t2 : k[2] - 1 - t2;
										long wi = ((long)oc * cg + ci) * K + ((long)u0 * k[1] + u1) * k[2] + u2;
										long yi = ((long)n * O + oc) * L + ((long)p0 * o[1] + p1) * o[2] + p2;
										if (q0 < 0 || q0 >= in[0] || q1 < 0 || q1 >= in[1] || q2 < 0 || q2 >= in[2]) {
											// The padding is zeros that take part in the
											// products, as in the convolution of the padded
											// input: 0·Inf is NaN.
											if (dir == FORWARD) acc[yi] += 0.0 * W[wi];
											else if (dir == FILTER) acc[wi] += 0.0 * Y[yi];
											continue;
										}
										long xi = ((long)n * C + (oc / og) * cg + ci) * I + ((long)q0 * in[1] + q1) * in[2] + q2;
										if (dir == FORWARD) acc[yi] += X[xi] * W[wi];
										else if (dir == DATA) acc[xi] += W[wi] * Y[yi];
										else acc[wi] += X[xi] * Y[yi];
									}
	double al = dt == DOUBLE ? *(const double *)alpha : *(const float *)alpha;
	double be = dt == DOUBLE ? *(const double *)beta : *(const float *)beta;
	for (long i = 0; i < nout; i++) store(out, dt, i, al * acc[i] + (be == 0 ? 0 : be * get(out, dt, i, 0)));
	free(X), free(W), free(Y), free(acc);
	return OK;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(handle *h, tensor *x, filter *w, conv *c, tensor *y, int req, int *ret, perf *p) {
	return algos(FORWARD, x, w, c, y, req, ret, p);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(handle *h, filter *w, tensor *dy, conv *c, tensor *dx, int req, int *ret, perf *p) {
	return algos(DATA, dx, w, c, dy, req, ret, p);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle *h, tensor *x, tensor *dy, conv *c, filter *dw, int req, int *ret, perf *p) {
	return algos(FILTER, x, dw, c, dy, req, ret, p);
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(handle *h, tensor *x, filter *w, conv *c, tensor *y, int algo, size_t *n) {
	return workspace(FORWARD, x, w, c, y, algo, n);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(handle *h, filter *w, tensor *dy, conv *c, tensor *dx, int algo, size_t *n) {
	return workspace(DATA, dx, w, c, dy, algo, n);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(handle *h, tensor *x, tensor *dy, conv *c, filter *dw, int algo, size_t *n) {
	return workspace(FILTER, x, dw, c, dy, algo, n);
}
cudnnStatus_t cudnnConvolutionForward(handle *h, const void *alpha, tensor *x, const void *px, filter *w, const void *pw,
		conv *c, int algo, void *ws, size_t wsBytes, const void *beta, tensor *y, void *py) {
	return h->stream ? run(FORWARD, alpha, px, pw, x, w, c, y, algo, ws, wsBytes, beta, py) : BAD_PARAM;
}
cudnnStatus_t cudnnConvolutionBackwardData(handle *h, const void *alpha, filter *w, const void *pw, tensor *dy, const void *pdy,
		conv *c, int algo, void *ws, size_t wsBytes, const void *beta, tensor *dx, void *pdx) {
	return h->stream ? run(DATA, alpha, pw, pdy, dx, w, c, dy, algo, ws, wsBytes, beta, pdx) : BAD_PARAM;
}
cudnnStatus_t cudnnConvolutionBackwardFilter(handle *h, const void *alpha, tensor *x, const void *px, tensor *dy, const void *pdy,
		conv *c, int algo, void *ws, size_t wsBytes, const void *beta, filter *dw, void *pdw) {
	return h->stream ? run(FILTER, alpha, px, pdy, x, dw, c, dy, algo, ws, wsBytes, beta, pdw) : BAD_PARAM;
}
