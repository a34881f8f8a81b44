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

// tiles is the fastest tileKernel the machine has: AMX where the CPU has
// it and Linux granted this process its state, else AVX512-BF16's dot
// products, else none. LATHE_BF16_GEMM=dot or =float32 picks a slower one,
// for comparison.
var tiles = pickTiles(os.Getenv("LATHE_BF16_GEMM"))

func pickTiles(want string) tileKernel {
	switch {
	case want == "float32":
		return noTiles
	case want != "dot" && C.lathe_amx_open() != 0:
		return amxTiles
	case C.lathe_dot_bf16_open() != 0:
		return dotTiles
	}
	return noTiles
}

// tileKernels is every kernel the machine can run, for tests.
func tileKernels() []tileKernel {
	var ks []tileKernel
	if C.lathe_dot_bf16_open() != 0 {
		ks = append(ks, dotTiles)
	}
	if C.lathe_amx_open() != 0 {
		ks = append(ks, amxTiles)
	}
	return ks
}

// amxMatMul computes out = x·y for bfloat16 x and y on AMX tiles
// (registerTiled) and reports whether it did: false, out untouched, where
// the product is empty, its packed right-hand side too large, or C could
// not allocate its scratch. As the float32 path, it sums the exact
// products in float32, and rounds once into a bfloat16 out (matmul) or
// not at all into a float32 one (matmul_wide).
func amxMatMul(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) bool {
	x, y := in[0], in[1]
	batch, n, k, m, _, err := ops.MatMulShapes(x.Shape, y.Shape)
	nb := dispatch.Numel(batch)
	if err != nil || n == 0 || m == 0 || k == 0 || nb == 0 {
		return false
	}
	a, b := asMatrices(x, true, batch), asMatrices(y, false, batch)
	ad, bd := bf16Bits(a.t), bf16Bits(b.t)
	// The result is bfloat16 (matmul) or float32 (matmul_wide, unrounded).
	var c []uint16
	var c32 []float32
	if out.DType == dispatch.Float32 {
		c32 = span[float32](out)
	} else {
		c = bf16Bits(out)[out.Offset:]
	}
	dst := func(bi int) tileOut {
		if c32 != nil {
			return tileOut{f32: c32[bi*n*m:], ld: m}
		}
		return tileOut{bf: c[bi*n*m:], ld: m}
	}

	// B in tiles, once per distinct matrix: once where it is broadcast
	// over the batch (a Linear layer's weight).
	packs := nb
	if isZero(b.Batch) {
		packs = 1
	}
	size := packedSize(k, m)
	if packs > amxPackLimit/size {
		// A right-hand side broadcast over some batch dims but not all
		// would be packed once per product: more memory than the float32
		// path's widened copy of it, so that path takes it.
		return false
	}
	packedB := dispatch.NewTensor(out.Device, dispatch.BFloat16, []int{packs * size}, newBuffer(dispatch.BFloat16, packs*size))
	defer packedB.Release()
	packed := bf16Bits(packedB)
	parallel(packs, k*m, func(lo, hi int) {
		for bi := lo; bi < hi; bi++ {
			_, ob := offsets(bi, batch, a, b)
			packB(packed[bi*size:], tileMatrix{bd[ob:], b.RowStride, b.ColStride}, k, m)
		}
	})

	// Then 32 rows of the product at a time, over the batch, split only
	// where each goroutine gets some 25 µs of work. On AMX a cost unit is
	// 256 multiply-adds (the tiles do 512 a cycle): split from 32
	// multiply-adds a unit, a 256³ product took 73-75 µs against 54-56 µs
	// on one goroutine on a Sapphire Rapids; 1024³ takes 1.8-2.5 ms split
	// against 2.9 whole. The dot products do about 180 a nanosecond on a
	// Zen 5 core (a 256³ product in 90-100 µs), so there a unit is 16
	// multiply-adds, and 256³ is split in two, where 1024³ went from 4.8
	// ms on one goroutine to 3.1-3.7 on two.
	blocks := (n + 31) / 32
	failed := make([]bool, blocks*nb)
	cost := max(k*m/8, 1)
	if tiles == dotTiles {
		cost = 2 * k * m
	}
	parallel(blocks*nb, cost, func(lo, hi int) {
		for u := lo; u < hi; {
			bi, first := u/blocks, u%blocks
			last := min(blocks, first+hi-u)
			oa, _ := offsets(bi, batch, a, b)
			p := 0
			if packs > 1 {
				p = bi * size
			}
			ok := tileRows(dst(bi), tileMatrix{ad[oa:], a.RowStride, a.ColStride}, n, k, m, packed[p:],
				first*32, min(last*32, n))
			failed[u] = !ok
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

// A tileMatrix is a bfloat16 matrix as its bits: element (i, j) at
// data[i·rs + j·cs].
type tileMatrix struct {
	data   []uint16
	rs, cs int
}

// A tileOut is where a product on the tiles goes: rounded to bfloat16 into
// bf, or else in float32 into f32 (added to its values where acc); ld is
// its row stride.
type tileOut struct {
	bf  []uint16
	f32 []float32
	acc bool
	ld  int
}

// packedSize is the number of bfloat16s that packB writes for a k×n matrix.
func packedSize(k, n int) int { return int(C.lathe_amx_packed_b(C.ptrdiff_t(k), C.ptrdiff_t(n))) }

// packB copies the k×n matrix b into dst in the tiles' order.
func packB(dst []uint16, b tileMatrix, k, n int) {
	C.lathe_amx_pack_b(cU16(dst), cU16(b.data), C.ptrdiff_t(k), C.ptrdiff_t(n), C.ptrdiff_t(b.rs), C.ptrdiff_t(b.cs))
}

// tileRows writes rows lo to hi (lo a multiple of 32; hi one too, or m) of
// the m×n product of a and the packed k×n matrix to out, and reports
// whether it did: false, out untouched, where C could not allocate.
func tileRows(out tileOut, a tileMatrix, m, k, n int, packed []uint16, lo, hi int) bool {
	var cf *C.float
	if out.f32 != nil {
		cf = (*C.float)(unsafe.Pointer(unsafe.SliceData(out.f32)))
	}
	c, acc, ld, ad, rs, cs := cU16(out.bf), cBool(out.acc), C.ptrdiff_t(out.ld), cU16(a.data), C.ptrdiff_t(a.rs), C.ptrdiff_t(a.cs)
	cm, ck, cn, pb, clo, chi := C.ptrdiff_t(m), C.ptrdiff_t(k), C.ptrdiff_t(n), cU16(packed), C.ptrdiff_t(lo), C.ptrdiff_t(hi)
	if tiles == amxTiles {
		return C.lathe_amx_gemm(c, cf, acc, ld, ad, rs, cs, cm, ck, cn, pb, clo, chi) != 0
	}
	return C.lathe_dot_bf16_gemm(c, cf, acc, ld, ad, rs, cs, cm, ck, cn, pb, clo, chi) != 0
}

// tileProduct writes the m×n product of a (m×k) and b (k×n) to out on the
// calling goroutine, packing b into packed (packedSize(k, n) long), and
// reports whether it did, as tileRows.
func tileProduct(out tileOut, a, b tileMatrix, m, k, n int, packed []uint16) bool {
	packB(packed, b, k, n)
	return tileRows(out, a, m, k, n, packed, 0, m)
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
