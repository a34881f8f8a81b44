// A stand-in for libcublas, built by fake_test.go: column-major reference
// GEMMs with cuBLAS's signatures, which refuse what cuBLAS refuses
// (leading dimensions below the stored rows, types it does not pair), so
// that the backend's row-major-to-column-major mapping is checked against
// the contract.
#include <stddef.h>
#include <string.h>

typedef int cublasStatus_t;
enum { SUCCESS = 0, INVALID_VALUE = 7 };
static int handle, mathMode = -1;

cublasStatus_t cublasCreate_v2(void **h) { *h = &handle; return SUCCESS; }
cublasStatus_t cublasDestroy_v2(void *h) { return h == &handle ? SUCCESS : INVALID_VALUE; }
cublasStatus_t cublasSetStream_v2(void *h, void *s) { return s ? SUCCESS : INVALID_VALUE; }
cublasStatus_t cublasSetMathMode(void *h, int mode) { mathMode = mode; return SUCCESS; }
cublasStatus_t cublasGetVersion_v2(void *h, int *v) { *v = 130100; return SUCCESS; }
const char *cublasGetStatusName(cublasStatus_t s) { return s == INVALID_VALUE ? "CUBLAS_STATUS_INVALID_VALUE" : "CUBLAS_STATUS_SUCCESS"; }

// tf32 rounds a float to TF32's 10 mantissa bits (towards zero, which is
// enough to tell the modes apart), as CUBLAS_TF32_TENSOR_OP_MATH (3) lets
// tensor cores do; doubles and the default mode keep every bit.
static float tf32f(float v) {
	unsigned int u;
	memcpy(&u, &v, 4);
	u &= ~0x1fffu;
	memcpy(&v, &u, 4);
	return v;
}
#define ROUND_float(v) (mathMode == 3 ? tf32f(v) : (v))
#define ROUND_double(v) (v)

#define GEMM(T, NAME)                                                                                   \
	cublasStatus_t NAME(void *h, int ta, int tb, int m, int n, int k, const T *alpha,                   \
			const T *A, int lda, long long sA, const T *B, int ldb, long long sB,                       \
			const T *beta, T *C, int ldc, long long sC, int batch) {                                    \
		if (m < 0 || n < 0 || k < 0 || batch < 0) return INVALID_VALUE;                                 \
		if (lda < (ta ? k : m) || lda < 1 || ldb < (tb ? n : k) || ldb < 1 || ldc < m || ldc < 1)       \
			return INVALID_VALUE;                                                                       \
		for (int b = 0; b < batch; b++)                                                                 \
			for (int i = 0; i < m; i++)                                                                 \
				for (int j = 0; j < n; j++) {                                                           \
					T acc = 0;                                                                          \
					for (int p = 0; p < k; p++) {                                                       \
						T a = ta ? A[b * sA + p + (long long)i * lda] : A[b * sA + i + (long long)p * lda]; \
						T bv = tb ? B[b * sB + j + (long long)p * ldb] : B[b * sB + p + (long long)j * ldb]; \
						acc += ROUND_##T(a) * ROUND_##T(bv);                                                                  \
					}                                                                                   \
					T *c = &C[b * sC + i + (long long)j * ldc];                                         \
					*c = *alpha * acc + (*beta == 0 ? 0 : *beta * *c);                                  \
				}                                                                                       \
		return SUCCESS;                                                                                 \
	}
GEMM(float, cublasSgemmStridedBatched)
GEMM(double, cublasDgemmStridedBatched)

// cublasGemmStridedBatchedEx over 16-bit storage, as the cuBLAS guide
// describes it for CUBLAS_COMPUTE_32F (68): A and B of one type,
// CUDA_R_16F (2) or CUDA_R_16BF (14), C of theirs or CUDA_R_32F (0),
// alpha and beta floats, products and sums in float32, C rounded to
// nearest even once (a float32 C not at all). Without
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION (16) in the math mode
// it adds the two halves of k as a split-K product may, each rounded to
// C's type first, so that a caller that does not set it gets a second
// rounding the tests can see. float16 goes through the C compiler's
// _Float16, bfloat16 through its bits: implementations independent of
// lathe's.
enum { R_32F = 0, R_16F = 2, R_16BF = 14, COMPUTE_32F = 68, DISALLOW_REDUCED = 16, NOT_SUPPORTED = 15 };

static float load16(const void *p, int type, long long i) {
	if (type == R_32F) return ((const float *)p)[i];
	if (type == R_16F) return (float)((const _Float16 *)p)[i];
	unsigned int u = (unsigned int)((const unsigned short *)p)[i] << 16;
	float v;
	memcpy(&v, &u, 4);
	return v;
}
static float round16(float v, int type) {
	if (type == R_32F) return v;
	if (type == R_16F) return (float)(_Float16)v;
	unsigned int u;
	memcpy(&u, &v, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u) u |= 0x400000u; // a NaN stays one (quiet)
	else u += 0x7fffu + ((u >> 16) & 1); // to nearest, ties to even
	u &= 0xffff0000u;
	memcpy(&v, &u, 4);
	return v;
}
static void store16(void *p, int type, long long i, float v) {
	if (type == R_32F) {
		((float *)p)[i] = v;
		return;
	}
	if (type == R_16F) {
		((_Float16 *)p)[i] = (_Float16)v;
		return;
	}
	unsigned int u;
	v = round16(v, type);
	memcpy(&u, &v, 4);
	((unsigned short *)p)[i] = (unsigned short)(u >> 16);
}

cublasStatus_t cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
		const void *A, int Atype, int lda, long long sA, const void *B, int Btype, int ldb, long long sB,
		const void *beta, void *C, int Ctype, int ldc, long long sC, int batch, int computeType, int algo) {
	if (computeType != COMPUTE_32F || (Atype != R_16F && Atype != R_16BF) || Btype != Atype || (Ctype != Atype && Ctype != R_32F))
		return NOT_SUPPORTED;
	if (algo != -1 || m < 0 || n < 0 || k < 0 || batch < 0) return INVALID_VALUE;
	if (lda < (ta ? k : m) || lda < 1 || ldb < (tb ? n : k) || ldb < 1 || ldc < m || ldc < 1) return INVALID_VALUE;
	float al = *(const float *)alpha, be = *(const float *)beta;
	int split = (mathMode & DISALLOW_REDUCED) ? k : k / 2;
	for (int b = 0; b < batch; b++)
		for (int i = 0; i < m; i++)
			for (int j = 0; j < n; j++) {
				float part[2] = {0, 0};
				for (int p = 0; p < k; p++) {
					float a = load16(A, Atype, ta ? b * sA + p + (long long)i * lda : b * sA + i + (long long)p * lda);
					float bv = load16(B, Btype, tb ? b * sB + j + (long long)p * ldb : b * sB + p + (long long)j * ldb);
					part[p >= split] += a * bv;
				}
				float acc = split == k ? part[0] : round16(part[0], Ctype) + round16(part[1], Ctype);
				long long c = b * sC + i + (long long)j * ldc;
				store16(C, Ctype, c, al * acc + (be == 0 ? 0 : be * load16(C, Ctype, c)));
			}
	return SUCCESS;
}
