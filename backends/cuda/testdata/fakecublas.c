// A stand-in for libcublas, built by fake_test.go: column-major reference
// GEMMs with cuBLAS's signatures, which refuse what cuBLAS refuses
// (leading dimensions below the stored rows), so that the backend's
// row-major-to-column-major mapping is checked against the contract.
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
