//go:build !cgo

package cpu

// Without cgo there is no C: gonum does the matrix products and the Go
// loops all the rest. These stand in for cgo.go's wrappers.

import (
	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// openBLAS is unavailable in a build without cgo: gonum does the work.
func openBLAS() (gemmFunc[float32], gemmFunc[float64], string, string) {
	return nil, nil, "", "built without cgo"
}

const vectorMin = 1 << 62

func setBLASThreads(n int) bool { return false }

func sumFloat32(v []float32) float64 { return sumFloat32Go(v) }

func softmaxRowsFloat32(dst, src []float32, n int, log bool) int { return 0 }

func expRowFloat32(row []float32, shift float32) (float64, bool) { return 0, false }

func arithFloat32(op arithOp, dst, p, q []float32, s float32) bool { return false }

func attnProbsFloat32(b attnBlockF32, shift []float32, stride int) bool { return false }

func attnOnlineFloat32(b attnBlockF32, m, l []float64, acc []float32, ev int) bool { return false }

func attnDSFloat32(dp, p, pm []float32, ld, bq, bk int, d []float64) bool { return false }

func reluBackwardFloat32(dst, g, x []float32) bool { return false }

func arithBcastFloat32(op arithOp, dst, full, b []float32, rows, cols int, perRow, bLeft bool) bool {
	return false
}

func reluFloat32(dst, src []float32) bool { return false }

const haveAVX2, haveF16C = false, false

var tiles = noTiles

func tileKernels() []tileKernel { return nil }

// Without cgo there are no tiles: registerTiled never calls these.
func amxMatMul(*dispatch.Tensor, []*dispatch.Tensor, dispatch.None) bool { return false }

func convForwardTiles(*dispatch.Tensor, []*dispatch.Tensor, ops.ConvParams) bool { return false }

func convInputBackwardTiles(*dispatch.Tensor, []*dispatch.Tensor, ops.ConvParams) bool { return false }

func convWeightBackwardTiles(*dispatch.Tensor, []*dispatch.Tensor, ops.ConvParams) bool { return false }

func widen16(dst []float32, src []uint16, bf bool) bool { return false }

func convertVector(dst, src any) bool { return false }

func softmaxColsFloat32(dst, src []float32, n, inner, c0, c1 int, log bool) bool { return false }

func sumExpFloat32(v []float32, shift float32) (float64, bool) { return 0, false }

func extremeFloat32(v []float32, more bool) (float32, bool) { return 0, false }

func unary64Float32(op unary64Op, dst, src []float32, a, b float64) bool { return false }

func belowFloat32(v []float32, top, flip uint32, base int, found []uint64) ([]uint64, int, bool) {
	return found, 0, false
}

func binaryFloat32(op binaryOp, dst, p, q []float32, s float32) bool { return false }

func unaryFloat32(op unaryOp, dst, src []float32, a, b float32) bool { return false }

func narrow16(dst []uint16, src []float32, bf bool) bool { return false }

func erfRowFloat32(dst, src []float32, gelu bool) bool { return false }

func expFloat32(dst, src []float32) bool { return false }

func sqrtFloat32(dst, src []float32) bool { return false }

func sumColsFloat32(dst, x []float32, rows, stride int) bool { return false }

func extremeColsFloat32(dst, x []float32, rows, stride int, more bool) bool { return false }

func reduceRowsFloat32(op rowReduction, dst, x []float32, n, stride int) bool { return false }

func bnMomentsFloat32(v []float32, c bnChannel, shift float64) (s, q float64, ok bool) {
	return 0, 0, false
}

func bnSumProdFloat32(g, x []float32, c bnChannel, shift float64) (s, p float64, ok bool) {
	return 0, 0, false
}

func bnApplyFloat32(dst, src []float32, a, b float32) bool { return false }

func bnGradFloat32(dst, g, x []float32, a, k, mean, d float32) bool { return false }

func actBackwardFloat32(op actOp, dst, g, x []float32) bool { return false }

func halfMap(op halfOp, bf bool, dst, p, q []uint16, s float32) {}

func halfRows(op halfOp, bf bool, dst, p, b []uint16, first, period, cols int) {}

func layerNormRowsFloat32(y, x, w, b []float32, d int, eps float64) bool { return false }

func layerNormBackwardRowsFloat32(dx []float32, pw, pb []float64, x, w, g []float32, d int, eps float64) bool {
	return false
}

func convDirectFloat32(y, x, w []float32, c, o, hp, wp, oh, ow, kh, kw, dh, dw int, wide bool) bool {
	return false
}

func convWeightGradFloat32(dw, dy, x []float32, c, o, hp, wp, oh, ow, kh, kw, dh, dwid int, wide bool) bool {
	return false
}

var haveAVX512, useAVX512 = false, false

const convSlack = 32

func bnMomentsHalf(v []uint16, c bnChannel, shift float64, bf bool) (float64, float64, bool) {
	return 0, 0, false
}

func bnSumProdHalf(g, x []uint16, c bnChannel, shift float64, bf bool) (float64, float64, bool) {
	return 0, 0, false
}

func bnApplyHalf(dst, src []uint16, a, b float32, bf bool) bool { return false }

func bnGradHalf(dst []float32, g, x []uint16, a, k, mean, d float32, bf bool) bool { return false }

func unaryFloat64(op float64Op, dst, src []float64) bool { return false }

func softmaxRowsFloat64(dst, src []float64, n int, log bool) int { return 0 }

func transpose32(dst, src []uint32, rows, cols, ldd, lds int) bool { return false }

func arithFloat64(op arithOp, dst, p, q []float64, s float64) bool { return false }

func sumFloat64(v []float64) (float64, bool) { return 0, false }

func prodFloat32(v []float32) (float64, bool) { return 0, false }

const haveDotConv = false

func padPairsBF16(dst []uint32, x []uint16, in, h, w, ph, pw int) bool { return false }

func convDotBF16(y []float32, x, w []uint32, pairs, o, hp, wp, oh, ow, kh, kw, dh, dw int) bool {
	return false
}

func convWeightGradDotBF16(dw []float32, dy, x []uint16, c, o, hp, wp, oh, ow, kh, kw, dh, dwid int) bool {
	return false
}

func whereBits[U uint8 | uint16 | uint32 | uint64](dst []U, c []bool, a, b []U, as, bs U) bool {
	return false
}

func compare32[T number](op cmpOp, dst []bool, p, q []T, s T) bool { return false }

func dropoutFloat32(dst, src []float32, first, key uint64, t uint32, scale float32) bool {
	return false
}

func dropoutFloat64(dst, src []float64, first, key uint64, t uint32, scale float64) bool {
	return false
}

func dropoutBlockFloat32(dst, src []float32, b probBlock, key uint64, t uint32, scale float32) bool {
	return false
}

func dropoutBlockFloat64(dst, src []float64, b probBlock, key uint64, t uint32, scale float64) bool {
	return false
}

func addScaledFloat32(dst, p, q []float32, s, alpha float32) bool { return false }

func addScaledFloat64(dst, p, q []float64, s, alpha float64) bool { return false }
