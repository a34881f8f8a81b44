//go:build cgo

package cpu

/*
#include "cdecl.h"
*/
import "C"

import (
	"os"
	"unsafe"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
)

// haveAMX says whether bfloat16 products run on AMX tiles (amx.c): the
// CPU has them, Linux granted this process their state, and LATHE_AMX is
// not "off" (which leaves them to the float32 GEMM, for comparison).
var haveAMX = os.Getenv("LATHE_AMX") != "off" && C.lathe_amx_open() != 0

// amxMatMul computes out = x·y for bfloat16 x, y and out on AMX tiles and
// reports whether it did: false, out untouched, where the machine has no
// AMX, the product is empty or C could not allocate its scratch. As the
// float32 path, it sums the exact products in float32 and rounds once.
func amxMatMul(out, x, y *dispatch.Tensor) bool {
	if !haveAMX || out.DType != dispatch.BFloat16 || x.DType != dispatch.BFloat16 || y.DType != dispatch.BFloat16 {
		return false
	}
	batch, n, k, m, _, err := ops.MatMulShapes(x.Shape, y.Shape)
	nb := dispatch.Numel(batch)
	if err != nil || n == 0 || m == 0 || k == 0 || nb == 0 {
		return false
	}
	a, b := asMatrices(x, true, batch), asMatrices(y, false, batch)
	ad, bd := bf16Bits(a.t), bf16Bits(b.t)
	c := bf16Bits(out)[out.Offset:]

	// B in tiles, once per distinct matrix: once where it is broadcast
	// over the batch (a Linear layer's weight).
	packs := nb
	if isZero(b.Batch) {
		packs = 1
	}
	size := int(C.lathe_amx_packed_b(C.ptrdiff_t(k), C.ptrdiff_t(m)))
	if packs > amxPackLimit/size {
		// A right-hand side broadcast over some batch dims but not all
		// would be packed once per product: more memory than the float32
		// path's widened copy of it, so that path takes it.
		return false
	}
	tiles := dispatch.NewTensor(out.Device, dispatch.BFloat16, []int{packs * size}, newBuffer(dispatch.BFloat16, packs*size))
	defer tiles.Release()
	packed := bf16Bits(tiles)
	parallel(packs, k*m, func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			_, ob := offsets(bi, batch, a, b)
			C.lathe_amx_pack_b(cU16(packed[bi*size:]), cU16(bd[ob:]), C.ptrdiff_t(k), C.ptrdiff_t(m),
				C.ptrdiff_t(b.RowStride), C.ptrdiff_t(b.ColStride))
		}
	})

	// Then 32 rows of the product at a time, over the batch. A cost unit
	// is 256 multiply-adds (the tiles do 512 a cycle), so that a product
	// is split only where each goroutine gets some 25 µs of work: split
	// from the old 32, a 256³ product took 73-75 µs against 54-56 µs on
	// one goroutine here, and slowed a PyTorch process's products run
	// after it by half; 1024³ takes 1.8-2.5 ms split against 2.9 whole.
	blocks := (n + 31) / 32
	failed := make([]bool, blocks*nb)
	parallel(blocks*nb, max(k*m/8, 1), func(lo, hi int) {
		for u := lo; u < hi; {
			bi, first := u/blocks, u%blocks
			last := min(blocks, first+hi-u)
			oa, _ := offsets(bi, batch, a, b)
			p := 0
			if packs > 1 {
				p = bi * size
			}
			ok := C.lathe_amx_gemm(cU16(c[bi*n*m:]), C.ptrdiff_t(m), cU16(ad[oa:]), C.ptrdiff_t(a.RowStride), C.ptrdiff_t(a.ColStride),
				C.ptrdiff_t(n), C.ptrdiff_t(k), C.ptrdiff_t(m), cU16(packed[p:]), C.ptrdiff_t(first*32), C.ptrdiff_t(min(last*32, n)))
			failed[u] = ok == 0
			u += last - first
		}
	})
	for _, f := range failed {
		if f {
			return false
		}
	}
	return true
}

// bf16Bits is the storage of a bfloat16 tensor as its bits.
func bf16Bits(t *dispatch.Tensor) []uint16 { return uint16s(elems[half.BFloat16](t)) }

func cU16(v []uint16) *C.ushort { return (*C.ushort)(unsafe.Pointer(unsafe.SliceData(v))) }

func isZero(v []int) bool {
	for _, s := range v {
		if s != 0 {
			return false
		}
	}
	return true
}
