//go:build cgo

package cpu

/*
#cgo CFLAGS: -O2 -Wno-psabi
#cgo LDFLAGS: -ldl -lm
#cgo noescape lathe_below_f32
#cgo nocallback lathe_below_f32
#include <stdlib.h>
#include "cdecl.h"
*/
import "C"

import (
	"math"
	"os"
	"strings"
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// The binding: every call into the package's C (shim.c, declared in
// cdecl.h) is here, as a thin wrapper, and no C type leaves this file.
// Go slices are passed to C for the call's duration only, as cgo allows.
// Without cgo, nocgo.go stands in for each wrapper.

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

// setBLASThreads sets OpenBLAS's thread count, global state of the
// library, and reports whether it could: only blas_threads.go's gate
// calls it.
func setBLASThreads(n int) bool { return C.lathe_blas_threads(C.int(n)) != 0 }

func cblasTrans(t blas.Transpose) C.int {
	if t == blas.NoTrans {
		return 111
	}
	return 112
}

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

// vectorMin is the size below which the Go loops win: a cgo call costs
// tens of nanoseconds.
const vectorMin = 256

// haveAVX2 says whether this machine runs the C loops.
var haveAVX2 = C.lathe_has_avx2() != 0

// sumFloat32 is the float64 sum of v.
func sumFloat32(v []float32) float64 {
	if len(v) == 0 || !haveAVX2 {
		return sumFloat32Go(v)
	}
	return float64(C.lathe_sum_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v))))
}

// sumFloat64 is the sum of v in shim.c's lathe_sum_f64, sixteen lanes
// added pairwise, and reports whether it ran: not on a machine without
// AVX2.
func sumFloat64(v []float64) (float64, bool) {
	if len(v) == 0 || !haveAVX2 {
		return 0, false
	}
	return float64(C.lathe_sum_f64((*C.double)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v)))), true
}

// prodFloat32 is the float64 product of v in shim.c's lathe_prod_f32,
// sixteen chains multiplied together at the end, and reports whether it
// ran: not on a machine without AVX2.
func prodFloat32(v []float32) (float64, bool) {
	if len(v) == 0 || !haveAVX2 {
		return 0, false
	}
	return float64(C.lathe_prod_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v)))), true
}

// softmaxRowsFloat32 writes the softmax (or log-softmax) of consecutive
// rows of n values of src to dst, which has src's length, and returns how
// many rows it wrote before the first it left to the general path: a row
// with a NaN or an infinite max, or every row where the rows are short or
// the machine has no AVX2.
func softmaxRowsFloat32(dst, src []float32, n int, log bool) int {
	// One call takes every row: short rows (from the 8 values of a
	// vector) pay for it together, as a model's logits over a small
	// vocabulary do.
	if !haveAVX2 || n < 8 || len(src) < vectorMin || len(dst) < len(src) || len(src) < n {
		return 0
	}
	l := C.int(0)
	if log {
		l = 1
	}
	return int(C.lathe_softmax_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])),
		C.ptrdiff_t(len(src)/n), C.ptrdiff_t(n), l, cBool(useAVX512)))
}

// softmaxColsFloat32 writes the softmax (log: log_softmax) along the n
// rows of the n × inner block src into dst, for the columns [c0, c1) (c1 -
// c0 a multiple of 8), in shim.c's lathe_softmax_cols_f32, and reports
// whether it did: not on a machine without AVX2.
func softmaxColsFloat32(dst, src []float32, n, inner, c0, c1 int, log bool) bool {
	if !haveAVX2 {
		return false
	}
	C.lathe_softmax_cols_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(n), C.ptrdiff_t(inner),
		C.ptrdiff_t(c0), C.ptrdiff_t(c1), cBool(log))
	return true
}

// haveAVX512 says whether this machine runs the AVX-512 loops; useAVX512,
// which tests turn off to run the AVX2 ones, whether they run.
var (
	haveAVX512 = C.lathe_has_avx512() != 0
	useAVX512  = haveAVX512
)

// expRowFloat32 replaces each x of row by e^(x - shift), for x - shift ≤ 0,
// and returns their sum; ok is false, and row unchanged, where the machine
// has no AVX2 or the row is too short to pay for the call.
func expRowFloat32(row []float32, shift float32) (sum float64, ok bool) {
	if !haveAVX2 || len(row) < 16 {
		return 0, false
	}
	return float64(C.lathe_exp_f32((*C.float)(unsafe.Pointer(&row[0])), C.ptrdiff_t(len(row)), C.float(shift), cBool(useAVX512))), true
}

func (b attnBlockF32) args() (*C.float, C.ptrdiff_t, C.ptrdiff_t, C.ptrdiff_t) {
	return (*C.float)(unsafe.Pointer(&b.s[0])), C.ptrdiff_t(b.ld), C.ptrdiff_t(b.bq), C.ptrdiff_t(b.bk)
}

// attnProbsFloat32 is attnProbs's exponentials of a block in C, with the
// logsumexp of row r at shift[r·stride]; false where the machine has no
// AVX2, the block unchanged.
func attnProbsFloat32(b attnBlockF32, shift []float32, stride int) bool {
	if !haveAVX2 || b.bq == 0 {
		return false
	}
	s, ld, bq, bk := b.args()
	C.lathe_attn_probs_f32(s, ld, bq, bk, (*C.float)(unsafe.Pointer(&shift[0])), C.ptrdiff_t(stride), cBool(b.causal), C.ptrdiff_t(b.diag),
		cBool(useAVX512))
	return true
}

// attnOnlineFloat32 is one key block of the forward's online softmax in C
// (m, l: the rows' running max and sum; acc: their outputs, ev a row).
func attnOnlineFloat32(b attnBlockF32, m, l []float64, acc []float32, ev int) bool {
	if !haveAVX2 || b.bq == 0 {
		return false
	}
	s, ld, bq, bk := b.args()
	C.lathe_attn_online_f32(s, ld, bq, bk, cBool(b.causal), C.ptrdiff_t(b.diag), (*C.double)(unsafe.Pointer(&m[0])),
		(*C.double)(unsafe.Pointer(&l[0])), (*C.float)(unsafe.Pointer(unsafe.SliceData(acc))), C.ptrdiff_t(ev), cBool(useAVX512))
	return true
}

// attnDSFloat32 is attnDS in C.
func attnDSFloat32(dp, p, pm []float32, ld, bq, bk int, d []float64) bool {
	if !haveAVX2 || bq == 0 || bk == 0 {
		return false
	}
	var pmp *C.float
	if pm != nil {
		pmp = (*C.float)(unsafe.Pointer(&pm[0]))
	}
	C.lathe_attn_ds_f32((*C.float)(unsafe.Pointer(&dp[0])), (*C.float)(unsafe.Pointer(&p[0])), pmp, C.ptrdiff_t(ld), C.ptrdiff_t(bq),
		C.ptrdiff_t(bk), (*C.double)(unsafe.Pointer(&d[0])))
	return true
}

// arithFloat32 writes op(p[i], q[i]) to dst (op(p[i], s) where q is nil)
// and reports whether it did: short rows and machines without AVX2 are
// left to the Go loop. p, and q unless nil, have dst's length.
func arithFloat32(op arithOp, dst, p, q []float32, s float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var qp *C.float
	if q != nil {
		qp = (*C.float)(unsafe.Pointer(&q[0]))
	}
	C.lathe_arith_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&p[0])), qp, C.float(s), C.ptrdiff_t(len(dst)))
	return true
}

// arithFloat64 is arithFloat32 for float64s (shim.c's lathe_arith_f64).
func arithFloat64(op arithOp, dst, p, q []float64, s float64) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var qp *C.double
	if q != nil {
		qp = (*C.double)(unsafe.Pointer(&q[0]))
	}
	C.lathe_arith_f64(C.int(op), (*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&p[0])), qp, C.double(s), C.ptrdiff_t(len(dst)))
	return true
}

// arithBcastFloat32 runs lathe_arith_bcast_f32 (shim.c) over rows runs of
// cols values of dst and full, b a run repeated (perRow false) or a value
// per run (perRow true), the left operand where bLeft is set.
func arithBcastFloat32(op arithOp, dst, full, b []float32, rows, cols int, perRow, bLeft bool) {
	C.lathe_arith_bcast_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&full[0])),
		(*C.float)(unsafe.Pointer(&b[0])), C.ptrdiff_t(rows), C.ptrdiff_t(cols), cBool(perRow), cBool(bLeft))
}

// reluBackwardFloat32 writes g[i] where x[i] > 0, else 0, to dst (g and x
// of its length) and reports whether it did, as arithFloat32.
func reluBackwardFloat32(dst, g, x []float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_relu_backward_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&g[0])),
		(*C.float)(unsafe.Pointer(&x[0])), C.ptrdiff_t(len(dst)))
	return true
}

// reluFloat32 writes max(src[i], 0) to dst, which has src's length, and
// reports whether it did, as arithFloat32.
func reluFloat32(dst, src []float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_relu_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)))
	return true
}

// haveF16C says whether this machine runs the 16-bit float conversions
// in C.
var haveF16C = C.lathe_has_f16c() != 0

// widen16 writes the float32 values of src's 16-bit floats (bfloat16 where
// bf, else float16) to dst, which has src's length, and reports whether it
// did: short rows and machines without F16C are left to the Go loop.
func widen16(dst []float32, src []uint16, bf bool) bool {
	if !haveF16C || len(dst) < vectorMin {
		return false
	}
	C.lathe_widen16((*C.float)(unsafe.Pointer(&dst[0])), (*C.ushort)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)), cBool(bf))
	return true
}

// convertVector writes src converted to dst's element type (dst as long as
// src) in shim.c's lathe_convert, for the pairs it has (float32, float64
// and int32 among themselves, int32 from floats truncating), and reports
// whether it did: not for another pair, a short run or a machine without
// AVX2.
func convertVector(dst, src any) bool {
	var (
		kind   C.int
		n      int
		dp, sp unsafe.Pointer
	)
	switch s := src.(type) {
	case []float32:
		n, sp = len(s), unsafe.Pointer(unsafe.SliceData(s))
		switch d := dst.(type) {
		case []float64:
			kind, dp = C.convF32F64, unsafe.Pointer(unsafe.SliceData(d))
		case []int32:
			kind, dp = C.convF32I32, unsafe.Pointer(unsafe.SliceData(d))
		default:
			return false
		}
	case []float64:
		n, sp = len(s), unsafe.Pointer(unsafe.SliceData(s))
		switch d := dst.(type) {
		case []float32:
			kind, dp = C.convF64F32, unsafe.Pointer(unsafe.SliceData(d))
		case []int32:
			kind, dp = C.convF64I32, unsafe.Pointer(unsafe.SliceData(d))
		default:
			return false
		}
	case []int32:
		n, sp = len(s), unsafe.Pointer(unsafe.SliceData(s))
		switch d := dst.(type) {
		case []float32:
			kind, dp = C.convI32F32, unsafe.Pointer(unsafe.SliceData(d))
		case []float64:
			kind, dp = C.convI32F64, unsafe.Pointer(unsafe.SliceData(d))
		default:
			return false
		}
	default:
		return false
	}
	if !haveAVX2 || n < vectorMin {
		return false
	}
	C.lathe_convert(kind, dp, sp, C.ptrdiff_t(n))
	return true
}

// unaryFloat32 writes op of src to dst (as long as src) in shim.c's
// lathe_unary_f32, with parameters a and b, and reports whether it did:
// not for a short run or on a machine without AVX2.
func unaryFloat32(op unaryOp, dst, src []float32, a, b float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_unary_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)),
		C.float(a), C.float(b), cBool(useAVX512))
	return true
}

// binaryFloat32 writes op of p and q (nil: of p and s) to dst in shim.c's
// lathe_binary_f32 and reports whether it did: not for a short run or on a
// machine without AVX2.
func binaryFloat32(op binaryOp, dst, p, q []float32, s float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var qp *C.float
	if q != nil {
		qp = (*C.float)(unsafe.Pointer(&q[0]))
	}
	C.lathe_binary_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&p[0])), qp, C.float(s), C.ptrdiff_t(len(dst)))
	return true
}

// unary64Float32 writes op of src to dst (of src's length) in shim.c's
// lathe_unary64_f32, float64 lanes rounded once, and reports whether it
// did: not for a short run or on a machine without AVX2.
func unary64Float32(op unary64Op, dst, src []float32, a, b float64) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_unary64_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)),
		C.double(a), C.double(b))
	return true
}

// unaryFloat64 writes op of src to dst (of src's length) in shim.c's
// lathe_unary_f64 and reports whether it did: not for a short run or on a
// machine without AVX2.
func unaryFloat64(op float64Op, dst, src []float64) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_unary_f64(C.int(op), (*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)))
	return true
}

// softmaxRowsFloat64 is softmaxRowsFloat32 for float64 rows (shim.c's
// lathe_softmax_f64), which takes rows of 4 values or more.
func softmaxRowsFloat64(dst, src []float64, n int, log bool) int {
	if !haveAVX2 || n < 4 || len(src) < vectorMin || len(dst) < len(src) || len(src) < n {
		return 0
	}
	return int(C.lathe_softmax_f64((*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&src[0])),
		C.ptrdiff_t(len(src)/n), C.ptrdiff_t(n), cBool(log)))
}

// extremeFloat32 is the largest (more) or smallest value of v, or a NaN
// where v holds one, in shim.c's lathe_extreme_f32; ok is false where it
// did not run: a short run or a machine without AVX2.
func extremeFloat32(v []float32, more bool) (best float32, ok bool) {
	if !haveAVX2 || len(v) < vectorMin {
		return 0, false
	}
	return float32(C.lathe_extreme_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v)), cBool(more))), true
}

// belowFloat32 appends to found (up to its capacity, at least 8) the
// packed keys (sortKeyF32(v[i])^flip)<<32 | base+i of the v[i] whose key is
// below top, in order, in shim.c's lathe_below_f32, and returns them and
// the i where the scan stopped (len(v), or where found filled up); ok is
// false where it did not run: a short run or a machine without AVX2.
func belowFloat32(v []float32, top, flip uint32, base int, found []uint64) (_ []uint64, end int, ok bool) {
	if !haveAVX2 || len(v) < vectorMin || cap(found) < 8 {
		return found, 0, false
	}
	found = found[:cap(found)]
	var stop C.ptrdiff_t
	c := C.lathe_below_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v)), C.uint(top), C.uint(flip), C.ptrdiff_t(base),
		(*C.ulonglong)(unsafe.Pointer(&found[0])), C.ptrdiff_t(len(found)), &stop)
	return found[:c], int(stop), true
}

// sumExpFloat32 is Σ e^(x - shift) over v, in shim.c's lathe_sum_exp_f32;
// ok is false where it did not run: a short run or a machine without AVX2.
func sumExpFloat32(v []float32, shift float32) (sum float64, ok bool) {
	if !haveAVX2 || len(v) < vectorMin {
		return 0, false
	}
	return float64(C.lathe_sum_exp_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(len(v)), C.float(shift))), true
}

// halfMap writes op of p and q (nil: of p and s) to dst, all 16-bit floats
// (bfloat16 where bf) of dst's length, computed in float32 and rounded
// once, in shim.c's lathe_half_map; the caller checks haveF16C.
func halfMap(op halfOp, bf bool, dst, p, q []uint16, s float32) {
	var qp *C.ushort
	if q != nil {
		qp = (*C.ushort)(unsafe.Pointer(&q[0]))
	}
	C.lathe_half_map(C.int(op), cBool(bf), (*C.ushort)(unsafe.Pointer(&dst[0])), (*C.ushort)(unsafe.Pointer(&p[0])), qp, C.float(s),
		C.ptrdiff_t(len(dst)))
}

// halfRows writes op of p's rows of cols values (dst's length over cols)
// and b[(first + r) mod period] for row r, in shim.c's lathe_half_rows.
func halfRows(op halfOp, bf bool, dst, p, b []uint16, first, period, cols int) {
	C.lathe_half_rows(C.int(op), cBool(bf), (*C.ushort)(unsafe.Pointer(&dst[0])), (*C.ushort)(unsafe.Pointer(&p[0])),
		(*C.ushort)(unsafe.Pointer(&b[0])), C.ptrdiff_t(first), C.ptrdiff_t(period), C.ptrdiff_t(len(dst)/cols), C.ptrdiff_t(cols))
}

// narrow16 rounds src to 16-bit floats in dst, as widen16.
func narrow16(dst []uint16, src []float32, bf bool) bool {
	if !haveF16C || len(dst) < vectorMin {
		return false
	}
	C.lathe_narrow16((*C.ushort)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)), cBool(bf))
	return true
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// reduceRowsFloat32 writes to dst[r], for r < len(dst), op's reduction of
// the n values from x[r·stride]: sumFloat32's sum or prodFloat32's product
// rounded to float32, or extremeFloat32's largest or smallest (whose NaN
// or zero the caller settles), in shim.c's lathe_reduce_rows_f32: one call for many rows. It
// reports whether it ran: not for rows shorter than vectorMin (those are
// Go's) or without AVX2.
func reduceRowsFloat32(op rowReduction, dst, x []float32, n, stride int) bool {
	if !haveAVX2 || n < vectorMin || len(dst) == 0 || len(x) < (len(dst)-1)*stride+n {
		return false
	}
	C.lathe_reduce_rows_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), C.ptrdiff_t(len(dst)),
		C.ptrdiff_t(n), C.ptrdiff_t(stride))
	return true
}

// sumColsFloat32 writes to dst[j] the sum over i < rows of x[i·stride + j]
// (shim.c's lathe_sum_cols_f32) and reports whether it did, as
// erfRowFloat32.
func sumColsFloat32(dst, x []float32, rows, stride int) bool {
	if !haveAVX2 || len(dst) == 0 || rows == 0 || len(x) < (rows-1)*stride+len(dst) {
		return false
	}
	C.lathe_sum_cols_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), C.ptrdiff_t(rows),
		C.ptrdiff_t(stride), C.ptrdiff_t(len(dst)))
	return true
}

// extremeColsFloat32 writes to dst[j] the largest (more) or smallest of
// x[i·stride + j] over i < rows (shim.c's lathe_extreme_cols_f32) and
// reports whether it did, as sumColsFloat32.
func extremeColsFloat32(dst, x []float32, rows, stride int, more bool) bool {
	if !haveAVX2 || len(dst) == 0 || rows == 0 || len(x) < (rows-1)*stride+len(dst) {
		return false
	}
	C.lathe_extreme_cols_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&x[0])), C.ptrdiff_t(rows),
		C.ptrdiff_t(stride), C.ptrdiff_t(len(dst)), cBool(more))
	return true
}

// transpose32 writes dst[r·ldd + c] = src[c·lds + r] for r < rows and c <
// cols (shim.c's lathe_transpose32) and reports whether it did: not on a
// machine without AVX2, nor for slices that do not hold those elements.
func transpose32(dst, src []uint32, rows, cols, ldd, lds int) bool {
	if !haveAVX2 || rows <= 0 || cols <= 0 || len(dst) < (rows-1)*ldd+cols || len(src) < (cols-1)*lds+rows {
		return false
	}
	C.lathe_transpose32((*C.uint32_t)(unsafe.Pointer(&dst[0])), (*C.uint32_t)(unsafe.Pointer(&src[0])), C.ptrdiff_t(rows),
		C.ptrdiff_t(cols), C.ptrdiff_t(ldd), C.ptrdiff_t(lds))
	return true
}

// compare32 writes op(p[i], q[i]) (op(p[i], s) where q is nil) to dst
// for float32 or int32 T in shim.c's lathe_compare32, and reports whether
// it did: not for other dtypes, short runs or a machine without AVX2. The
// slices hold len(dst) elements.
func compare32[T number](op cmpOp, dst []bool, p, q []T, s T) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var isInt C.int
	var sb uint32
	switch v := any(s).(type) {
	case float32:
		sb = math.Float32bits(v)
	case int32:
		isInt, sb = 1, uint32(v)
	default:
		return false
	}
	C.lathe_compare32(C.int(op), (*C.uint8_t)(unsafe.Pointer(&dst[0])), (*C.uint32_t)(unsafe.Pointer(&p[0])),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(q))), C.uint32_t(sb), C.ptrdiff_t(len(dst)), isInt)
	return true
}

// whereBits writes c[i] ? a[i] : b[i] to dst[i] for 4- and 8-byte
// elements in shim.c's lathe_where32 and lathe_where64, a nil a or b
// standing for as or bs in every place, and reports whether it did: not
// for other sizes, short runs or a machine without AVX2. The slices hold
// len(dst) elements.
func whereBits[U uint8 | uint16 | uint32 | uint64](dst []U, c []bool, a, b []U, as, bs U) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	cp := (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(c)))
	switch d := any(dst).(type) {
	case []uint32:
		C.lathe_where32((*C.uint32_t)(unsafe.Pointer(&d[0])), cp, (*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(a))),
			(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(b))), C.uint32_t(as), C.uint32_t(bs), C.ptrdiff_t(len(d)))
	case []uint64:
		C.lathe_where64((*C.uint64_t)(unsafe.Pointer(&d[0])), cp, (*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(a))),
			(*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(b))), C.uint64_t(as), C.uint64_t(bs), C.ptrdiff_t(len(d)))
	default:
		return false
	}
	return true
}

// sqrtFloat32 writes the square roots of src to dst, which has src's
// length, and reports whether it did, as erfRowFloat32.
func sqrtFloat32(dst, src []float32) bool {
	if !haveAVX2 || len(src) < vectorMin || len(dst) < len(src) {
		return false
	}
	C.lathe_sqrt_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(src)))
	return true
}

// expFloat32 writes e^x of src to dst, which has src's length, and
// reports whether it did, as erfRowFloat32.
func expFloat32(dst, src []float32) bool {
	if !haveAVX2 || len(src) < vectorMin || len(dst) < len(src) {
		return false
	}
	C.lathe_exp_rows_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(src)))
	return true
}

// erfRowFloat32 writes erf (or gelu) of src to dst, which has src's length,
// and reports whether it did: short rows and machines without AVX2 are left
// to the Go loop.
func erfRowFloat32(dst, src []float32, gelu bool) bool {
	if !haveAVX2 || len(src) < vectorMin || len(dst) < len(src) {
		return false
	}
	g := C.int(0)
	if gelu {
		g = 1
	}
	C.lathe_erf_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(src)),
		(*C.double)(unsafe.Pointer(&erf32Pieces[0])), C.double(erf32Saturate), g, cBool(useAVX512))
	return true
}

// bnMomentsFloat32 is Σ(x - shift) and Σ(x - shift)² in float64 over the
// planes of a channel that start v (each plane's sums, added in plane
// order), in one call; ok is false where the machine has no AVX2 or the
// planes are too short to pay for the call.
func bnMomentsFloat32(v []float32, c bnChannel, shift float64) (s, q float64, ok bool) {
	if !haveAVX2 || !c.fits(len(v)) {
		return 0, 0, false
	}
	r := C.lathe_bn_moments_f32((*C.float)(unsafe.Pointer(&v[0])), C.ptrdiff_t(c.planes), C.ptrdiff_t(c.stride), C.ptrdiff_t(c.n), C.double(shift))
	return float64(r.a), float64(r.b), true
}

// bnSumProdFloat32 is Σg and Σg·(x - shift) in float64 over the planes of a
// channel that start g and x, as bnMomentsFloat32.
func bnSumProdFloat32(g, x []float32, c bnChannel, shift float64) (s, p float64, ok bool) {
	if !haveAVX2 || !c.fits(len(g)) || !c.fits(len(x)) {
		return 0, 0, false
	}
	r := C.lathe_bn_sumprod_f32((*C.float)(unsafe.Pointer(&g[0])), (*C.float)(unsafe.Pointer(&x[0])), C.ptrdiff_t(c.planes),
		C.ptrdiff_t(c.stride), C.ptrdiff_t(c.n), C.double(shift))
	return float64(r.a), float64(r.b), true
}

// bnApplyFloat32 writes src·a + b to dst, which has src's length, and
// reports whether it did, as arithFloat32.
func bnApplyFloat32(dst, src []float32, a, b float32) bool {
	if !haveAVX2 || len(src) < vectorMin || len(dst) < len(src) {
		return false
	}
	C.lathe_bn_apply_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(src)), C.float(a), C.float(b))
	return true
}

// bnGradFloat32 writes a·g + k·(x - mean) + d to dst; g and x have dst's
// length. It reports whether it did, as arithFloat32.
func bnGradFloat32(dst, g, x []float32, a, k, mean, d float32) bool {
	if !haveAVX2 || len(dst) < vectorMin || len(g) < len(dst) || len(x) < len(dst) {
		return false
	}
	C.lathe_bn_grad_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&g[0])), (*C.float)(unsafe.Pointer(&x[0])),
		C.ptrdiff_t(len(dst)), C.float(a), C.float(k), C.float(mean), C.float(d))
	return true
}

// bnMomentsHalf, bnSumProdHalf, bnApplyHalf and bnGradHalf are the four
// above on 16-bit floats (bf: bfloat16) in shim.c's lathe_bn_*_h16, which
// widen them as they read: the sums in registers, apply and grad a block at
// a time in the stack; apply rounds into 16 bits, grad writes float32.
// Each reports whether it ran: not for a short run or on a machine without
// F16C. apply's and grad's arguments have dst's length.
func bnMomentsHalf(v []uint16, c bnChannel, shift float64, bf bool) (s, q float64, ok bool) {
	if !haveF16C || !c.fits(len(v)) {
		return 0, 0, false
	}
	r := C.lathe_bn_moments_h16((*C.ushort)(unsafe.Pointer(&v[0])), C.ptrdiff_t(c.planes), C.ptrdiff_t(c.stride), C.ptrdiff_t(c.n),
		C.double(shift), cBool(bf))
	return float64(r.a), float64(r.b), true
}

func bnSumProdHalf(g, x []uint16, c bnChannel, shift float64, bf bool) (s, p float64, ok bool) {
	if !haveF16C || !c.fits(len(g)) || !c.fits(len(x)) {
		return 0, 0, false
	}
	r := C.lathe_bn_sumprod_h16((*C.ushort)(unsafe.Pointer(&g[0])), (*C.ushort)(unsafe.Pointer(&x[0])), C.ptrdiff_t(c.planes),
		C.ptrdiff_t(c.stride), C.ptrdiff_t(c.n), C.double(shift), cBool(bf))
	return float64(r.a), float64(r.b), true
}

func bnApplyHalf(dst, src []uint16, a, b float32, bf bool) bool {
	if !haveF16C || len(src) < vectorMin || len(dst) < len(src) {
		return false
	}
	C.lathe_bn_apply_h16((*C.ushort)(unsafe.Pointer(&dst[0])), (*C.ushort)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(src)),
		C.float(a), C.float(b), cBool(bf))
	return true
}

func bnGradHalf(dst []float32, g, x []uint16, a, k, mean, d float32, bf bool) bool {
	if !haveF16C || len(dst) < vectorMin || len(g) < len(dst) || len(x) < len(dst) {
		return false
	}
	C.lathe_bn_grad_h16((*C.float)(unsafe.Pointer(&dst[0])), (*C.ushort)(unsafe.Pointer(&g[0])), (*C.ushort)(unsafe.Pointer(&x[0])),
		C.ptrdiff_t(len(dst)), C.float(a), C.float(k), C.float(mean), C.float(d), cBool(bf))
	return true
}

// actBackwardFloat32 writes op's backward, g[i]·f'(x[i]), to dst, which g
// and x match in length, and reports whether it did, as erfRowFloat32.
func actBackwardFloat32(op actOp, dst, g, x []float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	C.lathe_act_backward_f32(C.int(op), (*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&g[0])), (*C.float)(unsafe.Pointer(&x[0])),
		C.ptrdiff_t(len(dst)), cBool(useAVX512))
	return true
}

// layerNormRowsFloat32 writes the layer norm of the rows of d values of x
// to y (x's length) and reports whether it did; machines without AVX2 are
// left to the Go loop. The choice depends on the machine only, so that the
// backward recomputes a row's statistics with the forward's code.
func layerNormRowsFloat32(y, x, w, b []float32, d int, eps float64) bool {
	if !haveAVX2 {
		return false
	}
	if len(x) > 0 {
		C.lathe_layer_norm_f32((*C.float)(unsafe.Pointer(&y[0])), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&w[0])),
			(*C.float)(unsafe.Pointer(&b[0])), C.ptrdiff_t(len(x)/d), C.ptrdiff_t(d), C.double(eps))
	}
	return true
}

// layerNormBackwardRowsFloat32 writes the gradient of x of the rows of x
// and g to dx, adds their g·x̂ to pw and g to pb, and reports whether it
// did, as layerNormRowsFloat32.
func layerNormBackwardRowsFloat32(dx []float32, pw, pb []float64, x, w, g []float32, d int, eps float64) bool {
	if !haveAVX2 {
		return false
	}
	if len(x) > 0 {
		C.lathe_layer_norm_backward_f32((*C.float)(unsafe.Pointer(&dx[0])), (*C.double)(unsafe.Pointer(&pw[0])),
			(*C.double)(unsafe.Pointer(&pb[0])), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&w[0])),
			(*C.float)(unsafe.Pointer(&g[0])), C.ptrdiff_t(len(x)/d), C.ptrdiff_t(d), C.double(eps))
	}
	return true
}

// convSlack is the floats past a padded input that the direct kernels may
// read: a block's lanes past the last row's end.
const convSlack = 32

// convDirectFloat32 is lathe_conv_f32 over slices, which it checks hold
// what the kernel reads and writes (x with its slack); it reports whether
// it ran (not: no AVX2, or a slice too short).
func convDirectFloat32(y, x, w []float32, c, o, hp, wp, oh, ow, kh, kw, dh, dw int, wide bool) bool {
	if !haveAVX2 || len(x) < c*hp*wp+convSlack || len(w) < c*kh*kw*o || len(y) < o*oh*ow || o*oh*ow == 0 {
		return false
	}
	C.lathe_conv_f32((*C.float)(unsafe.Pointer(&y[0])), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&w[0])),
		C.ptrdiff_t(c), C.ptrdiff_t(o), C.ptrdiff_t(hp), C.ptrdiff_t(wp), C.ptrdiff_t(oh), C.ptrdiff_t(ow),
		C.ptrdiff_t(kh), C.ptrdiff_t(kw), C.ptrdiff_t(dh), C.ptrdiff_t(dw), cBool(wide && haveAVX512))
	return true
}

// haveDotConv says whether the bfloat16 direct convolution's dot products
// (conv_dot.c) run here: AVX512-BF16, as amx.go's dot tiles need.
var haveDotConv = C.lathe_dot_bf16_open() != 0

// padPairsBF16 is lathe_pad_pairs_bf16 over slices, which it checks hold
// the image and the padded pairs with their slack.
func padPairsBF16(dst []uint32, x []uint16, in, h, w, ph, pw int) bool {
	pairs := (in + 1) / 2
	if !haveDotConv || in*h*w == 0 || len(x) < in*h*w || len(dst) < pairs*(h+2*ph)*(w+2*pw)+dotSlack {
		return false
	}
	C.lathe_pad_pairs_bf16((*C.uint32_t)(unsafe.Pointer(&dst[0])), (*C.uint16_t)(unsafe.Pointer(&x[0])), C.ptrdiff_t(in),
		C.ptrdiff_t(h), C.ptrdiff_t(w), C.ptrdiff_t(ph), C.ptrdiff_t(pw))
	return true
}

// convDotBF16 is lathe_conv_dot_bf16 over slices, checked as
// convDirectFloat32's.
func convDotBF16(y []float32, x, w []uint32, pairs, o, hp, wp, oh, ow, kh, kw, dh, dw int) bool {
	if !haveDotConv || len(x) < pairs*hp*wp+dotSlack || len(w) < pairs*kh*kw*o || len(y) < o*oh*ow || o*oh*ow == 0 {
		return false
	}
	C.lathe_conv_dot_bf16((*C.float)(unsafe.Pointer(&y[0])), (*C.uint32_t)(unsafe.Pointer(&x[0])), (*C.uint32_t)(unsafe.Pointer(&w[0])),
		C.ptrdiff_t(pairs), C.ptrdiff_t(o), C.ptrdiff_t(hp), C.ptrdiff_t(wp), C.ptrdiff_t(oh), C.ptrdiff_t(ow),
		C.ptrdiff_t(kh), C.ptrdiff_t(kw), C.ptrdiff_t(dh), C.ptrdiff_t(dw))
	return true
}

// convWeightGradDotBF16 is lathe_conv_wgrad_dot_bf16 over slices, checked
// as convWeightGradFloat32's (its loads are masked at the rows' ends, so
// x needs no slack).
func convWeightGradDotBF16(dw []float32, dy, x []uint16, c, o, hp, wp, oh, ow, kh, kw, dh, dwid int) bool {
	if !haveDotConv || len(x) < c*hp*wp || len(dw) < c*kh*kw*o || len(dy) < o*oh*ow || o*oh*ow == 0 || c*kh*kw == 0 {
		return false
	}
	C.lathe_conv_wgrad_dot_bf16((*C.float)(unsafe.Pointer(&dw[0])), (*C.uint16_t)(unsafe.Pointer(&dy[0])),
		(*C.uint16_t)(unsafe.Pointer(&x[0])), C.ptrdiff_t(c), C.ptrdiff_t(o), C.ptrdiff_t(hp), C.ptrdiff_t(wp),
		C.ptrdiff_t(oh), C.ptrdiff_t(ow), C.ptrdiff_t(kh), C.ptrdiff_t(kw), C.ptrdiff_t(dh), C.ptrdiff_t(dwid))
	return true
}

// convWeightGradFloat32 is lathe_conv_wgrad_f32 over slices, checked as
// convDirectFloat32's.
func convWeightGradFloat32(dw, dy, x []float32, c, o, hp, wp, oh, ow, kh, kw, dh, dwid int, wide bool) bool {
	if !haveAVX2 || len(x) < c*hp*wp+convSlack || len(dw) < c*kh*kw*o || len(dy) < o*oh*ow || o*oh*ow == 0 || c*kh*kw == 0 {
		return false
	}
	C.lathe_conv_wgrad_f32((*C.float)(unsafe.Pointer(&dw[0])), (*C.float)(unsafe.Pointer(&dy[0])), (*C.float)(unsafe.Pointer(&x[0])),
		C.ptrdiff_t(c), C.ptrdiff_t(o), C.ptrdiff_t(hp), C.ptrdiff_t(wp), C.ptrdiff_t(oh), C.ptrdiff_t(ow),
		C.ptrdiff_t(kh), C.ptrdiff_t(kw), C.ptrdiff_t(dh), C.ptrdiff_t(dwid), cBool(wide && haveAVX512))
	return true
}

// dropoutFloat32 and dropoutFloat64 are dropout.c's rows over dst (src of
// at least its length), whose first element has index first.
func dropoutFloat32(dst, src []float32, first, key uint64, t uint32, scale float32) bool {
	if !haveAVX2 || len(dst) < vectorMin || len(src) < len(dst) {
		return false
	}
	C.lathe_dropout_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)),
		C.uint64_t(first), C.uint64_t(key), C.uint32_t(t), C.float(scale))
	return true
}

func dropoutFloat64(dst, src []float64, first, key uint64, t uint32, scale float64) bool {
	if !haveAVX2 || len(dst) < vectorMin || len(src) < len(dst) {
		return false
	}
	C.lathe_dropout_f64((*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&src[0])), C.ptrdiff_t(len(dst)),
		C.uint64_t(first), C.uint64_t(key), C.uint32_t(t), C.double(scale))
	return true
}

// dropoutBlockFloat32 and dropoutBlockFloat64 are dropout.c's rows over
// the block b of dst and src (attention.go's dropBlock).
func dropoutBlockFloat32(dst, src []float32, b probBlock, key uint64, t uint32, scale float32) bool {
	if !haveAVX2 || b.rows == 0 {
		return false
	}
	C.lathe_dropout_block_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&src[0])), C.ptrdiff_t(b.ld), C.ptrdiff_t(b.rows),
		C.ptrdiff_t(b.cols), cBool(b.causal), C.ptrdiff_t(b.diag), C.uint64_t(b.first), C.uint64_t(b.step), C.uint64_t(key), C.uint32_t(t), C.float(scale))
	return true
}

func dropoutBlockFloat64(dst, src []float64, b probBlock, key uint64, t uint32, scale float64) bool {
	if !haveAVX2 || b.rows == 0 {
		return false
	}
	C.lathe_dropout_block_f64((*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&src[0])), C.ptrdiff_t(b.ld), C.ptrdiff_t(b.rows),
		C.ptrdiff_t(b.cols), cBool(b.causal), C.ptrdiff_t(b.diag), C.uint64_t(b.first), C.uint64_t(b.step), C.uint64_t(key), C.uint32_t(t), C.double(scale))
	return true
}

// addScaledFloat32 and addScaledFloat64 are add_scaled.c's rows: dst of
// p + alpha·q, or of p + alpha·s where q is nil; p and q of dst's length.
func addScaledFloat32(dst, p, q []float32, s, alpha float32) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var qp *C.float
	if q != nil {
		qp = (*C.float)(unsafe.Pointer(&q[0]))
	}
	C.lathe_add_scaled_f32((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&p[0])), qp, C.float(s), C.float(alpha), C.ptrdiff_t(len(dst)))
	return true
}

func addScaledFloat64(dst, p, q []float64, s, alpha float64) bool {
	if !haveAVX2 || len(dst) < vectorMin {
		return false
	}
	var qp *C.double
	if q != nil {
		qp = (*C.double)(unsafe.Pointer(&q[0]))
	}
	C.lathe_add_scaled_f64((*C.double)(unsafe.Pointer(&dst[0])), (*C.double)(unsafe.Pointer(&p[0])), qp, C.double(s), C.double(alpha), C.ptrdiff_t(len(dst)))
	return true
}
