//go:build cgo

package cpu

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// The few CBLAS entry points lathe uses, found with dlopen so that lathe
// builds and runs without OpenBLAS (then gonum does the work). Values of
// the CBLAS enums: CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112.
typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double, double *, int);
typedef char *(*config_fn)(void);
typedef void (*threads_fn)(int);

static sgemm_fn lathe_sgemm_p;
static dgemm_fn lathe_dgemm_p;
static config_fn lathe_config_p;

// lathe_blas_open returns NULL on success, else dlerror's text.
static const char *lathe_blas_open(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) return dlerror();
	lathe_sgemm_p = (sgemm_fn)dlsym(h, "cblas_sgemm");
	lathe_dgemm_p = (dgemm_fn)dlsym(h, "cblas_dgemm");
	lathe_config_p = (config_fn)dlsym(h, "openblas_get_config");
	// One thread per call: lathe splits a lone product over its own
	// goroutines (rowSplit in matmul.go), and keeps OpenBLAS's spinning
	// workers off the cores that its other kernels run on.
	threads_fn set_threads = (threads_fn)dlsym(h, "openblas_set_num_threads");
	if (set_threads) set_threads(1);
	if (!lathe_sgemm_p || !lathe_dgemm_p) return "no cblas_sgemm or cblas_dgemm in the library";
	return NULL;
}

static const char *lathe_blas_config(void) { return lathe_config_p ? lathe_config_p() : "unknown"; }

static void lathe_sgemm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c, int ldc) {
	lathe_sgemm_p(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void lathe_dgemm(int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                        const double *b, int ldb, double beta, double *c, int ldc) {
	lathe_dgemm_p(101, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
*/
import "C"

import (
	"os"
	"strings"
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// openBLAS opens the OpenBLAS library ($LATHE_OPENBLAS_LIB, else the
// soname that Debian's libopenblas0 installs) and returns its GEMMs and a
// description, or the reason it could not.
func openBLAS() (gemmFunc[float32], gemmFunc[float64], string, string) {
	path := os.Getenv("LATHE_OPENBLAS_LIB")
	if path == "" {
		path = "libopenblas.so.0"
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.lathe_blas_open(cpath); msg != nil {
		return nil, nil, "", path + ": " + C.GoString(msg)
	}
	desc := "OpenBLAS (" + path + ", " + strings.TrimSpace(C.GoString(C.lathe_blas_config())) + ")"
	return openSgemm, openDgemm, desc, ""
}

func cblasTrans(t blas.Transpose) C.int {
	if t == blas.NoTrans {
		return 111
	}
	return 112
}

// The Go slices are passed for the call's duration only, as cgo allows.
func openSgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	C.lathe_sgemm(cblasTrans(tA), cblasTrans(tB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		(*C.float)(unsafe.Pointer(unsafe.SliceData(a))), C.int(lda), (*C.float)(unsafe.Pointer(unsafe.SliceData(b))), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(unsafe.SliceData(c))), C.int(ldc))
}

func openDgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	C.lathe_dgemm(cblasTrans(tA), cblasTrans(tB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		(*C.double)(unsafe.Pointer(unsafe.SliceData(a))), C.int(lda), (*C.double)(unsafe.Pointer(unsafe.SliceData(b))), C.int(ldb),
		C.double(beta), (*C.double)(unsafe.Pointer(unsafe.SliceData(c))), C.int(ldc))
}
