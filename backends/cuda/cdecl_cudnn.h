// The C declarations of lathe's cuDNN binding (cudnn.go), written from the
// cuDNN API reference as cdecl.h's are from the driver's, so that no cuDNN
// header is needed to build. It follows cdecl.h, whose types and
// LATHE_BLAS_IN_CTX it uses.
//
// lathe calls cuDNN's convolution API of descriptors (cudnn_cnn in cuDNN 9,
// cudnn_cnn_infer and _train in 8), which both majors keep: a tensor
// descriptor for the input and the output, a filter descriptor for the
// weight and a convolution descriptor for the window, then for each of the
// three directions a heuristic list of algorithms (the _v7 query), the
// chosen one's workspace size, and the call.

typedef struct cudnnContext *cudnnHandle_t;
typedef int cudnnStatus_t;
typedef struct cudnnTensorStruct *cudnnTensorDescriptor_t;
typedef struct cudnnFilterStruct *cudnnFilterDescriptor_t;
typedef struct cudnnConvolutionStruct *cudnnConvolutionDescriptor_t;

// cudnnConvolutionFwdAlgoPerf_t, and the BwdData and BwdFilter structs,
// which have the same layout: the algorithm, its status for these
// descriptors, a time (-1 from the heuristic query), the workspace bytes,
// cudnnDeterminism_t (1: CUDNN_DETERMINISTIC), cudnnMathType_t.
typedef struct {
	int algo;
	cudnnStatus_t status;
	float time;
	size_t memory;
	int determinism;
	int mathType;
	int reserved[3];
} lathe_cudnn_perf;

typedef cudnnStatus_t (*lathe_cudnn_algos_fn)(cudnnHandle_t, void *, void *, cudnnConvolutionDescriptor_t, void *,
	int, int *, lathe_cudnn_perf *);
typedef cudnnStatus_t (*lathe_cudnn_workspace_fn)(cudnnHandle_t, void *, void *, cudnnConvolutionDescriptor_t, void *,
	int, size_t *);
typedef cudnnStatus_t (*lathe_cudnn_run_fn)(cudnnHandle_t, const void *, void *, const void *, void *, const void *,
	cudnnConvolutionDescriptor_t, int, void *, size_t, const void *, void *, void *);

typedef struct {
	size_t (*getVersion)(void);
	const char *(*getErrorString)(cudnnStatus_t);
	cudnnStatus_t (*create)(cudnnHandle_t *);
	cudnnStatus_t (*destroy)(cudnnHandle_t);
	cudnnStatus_t (*setStream)(cudnnHandle_t, CUstream);
	cudnnStatus_t (*createTensor)(cudnnTensorDescriptor_t *);
	cudnnStatus_t (*setTensorNd)(cudnnTensorDescriptor_t, int, int, const int *, const int *);
	cudnnStatus_t (*destroyTensor)(cudnnTensorDescriptor_t);
	cudnnStatus_t (*createFilter)(cudnnFilterDescriptor_t *);
	cudnnStatus_t (*setFilterNd)(cudnnFilterDescriptor_t, int, int, int, const int *);
	cudnnStatus_t (*destroyFilter)(cudnnFilterDescriptor_t);
	cudnnStatus_t (*createConv)(cudnnConvolutionDescriptor_t *);
	cudnnStatus_t (*setConvNd)(cudnnConvolutionDescriptor_t, int, const int *, const int *, const int *, int, int);
	cudnnStatus_t (*setConvGroups)(cudnnConvolutionDescriptor_t, int);
	cudnnStatus_t (*setConvMath)(cudnnConvolutionDescriptor_t, int);
	cudnnStatus_t (*destroyConv)(cudnnConvolutionDescriptor_t);
	// By direction (LATHE_DNN_*): cudnnGetConvolution{Forward,
	// BackwardData,BackwardFilter}Algorithm_v7, their WorkspaceSize, and
	// cudnnConvolution{Forward,BackwardData,BackwardFilter}. The
	// descriptors' order is each call's own (lathe_cudnn_args).
	lathe_cudnn_algos_fn algos[3];
	lathe_cudnn_workspace_fn workspace[3];
	lathe_cudnn_run_fn run[3];
} lathe_cudnn;

// The directions, and the values of cuDNN's enums that lathe passes.
enum {
	LATHE_DNN_FORWARD = 0, // y from x and w
	LATHE_DNN_DATA = 1,    // dx from dy and w
	LATHE_DNN_FILTER = 2,  // dw from x and dy
	LATHE_DNN_TENSOR_NCHW = 0, // cudnnTensorFormat_t
	LATHE_DNN_CROSS_CORRELATION = 1, // cudnnConvolutionMode_t: PyTorch's convolution, no flipped window
};

// A convolution's four descriptors: x and y in the forward sense.
typedef struct {
	cudnnTensorDescriptor_t x, y;
	cudnnFilterDescriptor_t w;
	cudnnConvolutionDescriptor_t conv;
} lathe_cudnn_conv;

static size_t lathe_cudnn_version(lathe_cudnn *n) { return n->getVersion(); }
static const char *lathe_cudnn_status_string(lathe_cudnn *n, cudnnStatus_t s) { return n->getErrorString(s); }

static cudnnStatus_t lathe_cudnn_create(lathe_cudnn *n, lathe_cuda *l, CUcontext c, CUresult *cuErr, cudnnHandle_t *h, CUstream s) {
	cudnnStatus_t st;
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	if ((st = n->create(h)) != 0) return st;
	if ((st = n->setStream(*h, s)) != 0) {
		n->destroy(*h);
		*h = NULL;
	}
	return st;
}
static cudnnStatus_t lathe_cudnn_destroy(lathe_cudnn *n, lathe_cuda *l, CUcontext c, CUresult *cuErr, cudnnHandle_t h) {
	LATHE_BLAS_IN_CTX(l, c, cuErr);
	return n->destroy(h);
}

static void lathe_cudnn_conv_free(lathe_cudnn *n, lathe_cudnn_conv *c) {
	if (c->x) n->destroyTensor(c->x);
	if (c->y) n->destroyTensor(c->y);
	if (c->w) n->destroyFilter(c->w);
	if (c->conv) n->destroyConv(c->conv);
	c->x = c->y = NULL;
	c->w = NULL;
	c->conv = NULL;
}

// packed writes the row-major strides of dims.
static void lathe_packed(int rank, const int *dims, int *strides) {
	int s = 1;
	for (int i = rank - 1; i >= 0; i--) {
		strides[i] = s;
		s *= dims[i];
	}
}

// Describes a convolution of rank-dimensional row-major tensors (4 or 5:
// batch, channels, then 2 or 3 spatial dims) x, w and y of cudnnDataType_t
// dtype, computed in computeType with mathType, over the window's
// rank - 2 paddings, strides and dilations. On failure every descriptor
// made is destroyed.
static cudnnStatus_t lathe_cudnn_conv_describe(lathe_cudnn *n, lathe_cudnn_conv *c, int dtype, int computeType, int mathType,
		int rank, const int *x, const int *w, const int *y, const int *pad, const int *stride, const int *dilation, int groups) {
	int strides[8];
	cudnnStatus_t st;
	if (rank < 4 || rank > 8) return 3; // CUDNN_STATUS_BAD_PARAM of cuDNN 8; cudnn.go checks first
	c->x = c->y = NULL;
	c->w = NULL;
	c->conv = NULL;
	if ((st = n->createTensor(&c->x)) != 0) goto fail;
	lathe_packed(rank, x, strides);
	if ((st = n->setTensorNd(c->x, dtype, rank, x, strides)) != 0) goto fail;
	if ((st = n->createTensor(&c->y)) != 0) goto fail;
	lathe_packed(rank, y, strides);
	if ((st = n->setTensorNd(c->y, dtype, rank, y, strides)) != 0) goto fail;
	if ((st = n->createFilter(&c->w)) != 0) goto fail;
	if ((st = n->setFilterNd(c->w, dtype, LATHE_DNN_TENSOR_NCHW, rank, w)) != 0) goto fail;
	if ((st = n->createConv(&c->conv)) != 0) goto fail;
	if ((st = n->setConvNd(c->conv, rank - 2, pad, stride, dilation, LATHE_DNN_CROSS_CORRELATION, computeType)) != 0) goto fail;
	if ((st = n->setConvGroups(c->conv, groups)) != 0) goto fail;
	if ((st = n->setConvMath(c->conv, mathType)) != 0) goto fail;
	return 0;
fail:
	lathe_cudnn_conv_free(n, c);
	return st;
}

// The descriptors in the order each direction's calls take them: the two
// operands, then the result.
static void lathe_cudnn_args(lathe_cudnn_conv *c, int dir, void **a, void **b, void **out) {
	switch (dir) {
	case LATHE_DNN_FORWARD: *a = c->x, *b = c->w, *out = c->y; break;
	case LATHE_DNN_DATA: *a = c->w, *b = c->y, *out = c->x; break;
	default: *a = c->x, *b = c->y, *out = c->w; break;
	}
}

static cudnnStatus_t lathe_cudnn_conv_algos(lathe_cudnn *n, lathe_cuda *l, CUcontext ctx, CUresult *cuErr, cudnnHandle_t h,
		lathe_cudnn_conv *c, int dir, int requested, int *returned, lathe_cudnn_perf *perf) {
	void *a, *b, *out;
	LATHE_BLAS_IN_CTX(l, ctx, cuErr);
	lathe_cudnn_args(c, dir, &a, &b, &out);
	return n->algos[dir](h, a, b, c->conv, out, requested, returned, perf);
}

static cudnnStatus_t lathe_cudnn_conv_workspace(lathe_cudnn *n, lathe_cuda *l, CUcontext ctx, CUresult *cuErr, cudnnHandle_t h,
		lathe_cudnn_conv *c, int dir, int algo, size_t *bytes) {
	void *a, *b, *out;
	LATHE_BLAS_IN_CTX(l, ctx, cuErr);
	lathe_cudnn_args(c, dir, &a, &b, &out);
	return n->workspace[dir](h, a, b, c->conv, out, algo, bytes);
}

// Runs direction dir with algorithm algo: out = 1·op(a, b) + 0·out, the
// scalars doubles for double data (wide) and floats otherwise, as cuDNN
// reads them.
static cudnnStatus_t lathe_cudnn_conv_run(lathe_cudnn *n, lathe_cuda *l, CUcontext ctx, CUresult *cuErr, cudnnHandle_t h,
		lathe_cudnn_conv *c, int dir, int algo, CUdeviceptr pa, CUdeviceptr pb, CUdeviceptr pout,
		CUdeviceptr ws, size_t wsBytes, int wide) {
	void *a, *b, *out;
	float one = 1, zero = 0;
	double oneD = 1, zeroD = 0;
	const void *alpha = wide ? (const void *)&oneD : (const void *)&one;
	const void *beta = wide ? (const void *)&zeroD : (const void *)&zero;
	LATHE_BLAS_IN_CTX(l, ctx, cuErr);
	lathe_cudnn_args(c, dir, &a, &b, &out);
	return n->run[dir](h, alpha, a, (const void *)(uintptr_t)pa, b, (const void *)(uintptr_t)pb, c->conv, algo,
		(void *)(uintptr_t)ws, wsBytes, beta, out, (void *)(uintptr_t)pout);
}
