package lathe

import (
	"strconv"
	"testing"
)

// BenchmarkDispatchAdd1 is the whole cost of one op that does almost no
// work: a 1-element add, from the method call through validation, output
// allocation and the kernel. Compare with torch.add on two 1-element tensors
// (lathe-bench's "add 1 element" row: 1.1-1.7 µs with PyTorch 1.13 on the
// 2-core development machine in December 2026, 2.7 µs on an older one).
func BenchmarkDispatchAdd1(b *testing.B) {
	x := FromSlice(CPU, []float32{1})
	y := FromSlice(CPU, []float32{2})
	b.ReportAllocs()
	for b.Loop() {
		if z := x.Add(y); z.err != nil {
			b.Fatal(z.err)
		}
	}
}

// BenchmarkAddFloat32 measures elementwise bandwidth (two reads and a
// write per element) on 1M and 16M elements. Compare with torch.add(out=)
// on the same machine.
func BenchmarkAddFloat32(b *testing.B) {
	for _, n := range []int{1 << 20, 1 << 24} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			x := Rand(CPU, Float32, n)
			y := Rand(CPU, Float32, n)
			b.SetBytes(3 * 4 * int64(n))
			for b.Loop() {
				z := x.Add(y)
				if z.err != nil {
					b.Fatal(z.err)
				}
				z.Release()
			}
		})
	}
}

// BenchmarkDispatchAdd1Grad is BenchmarkDispatchAdd1 with an input that
// requires a gradient, so each add also records a tape node. Compare with
// torch.add with requires_grad (1.5-2.1 µs with PyTorch 1.13 here, 4.3 µs
// on the older machine).
func BenchmarkDispatchAdd1Grad(b *testing.B) {
	x := FromSlice(CPU, []float32{1}).RequireGrad()
	y := FromSlice(CPU, []float32{2})
	b.ReportAllocs()
	for b.Loop() {
		if z := x.Add(y); z.err != nil {
			b.Fatal(z.err)
		}
	}
}

// BenchmarkSumFloat32 measures a whole-tensor sum's bandwidth on 16M
// elements. Compare with torch.sum on the same machine.
func BenchmarkSumFloat32(b *testing.B) {
	const n = 1 << 24
	x := Rand(CPU, Float32, n)
	b.SetBytes(4 * n)
	for b.Loop() {
		z := x.Sum()
		if z.err != nil {
			b.Fatal(z.err)
		}
		z.Release()
	}
}

// BenchmarkDispatchAdd1Released is BenchmarkDispatchAdd1 with the result
// released each time, as a loop that keeps no result does in PyTorch (whose
// reference count frees it): the output's buffer comes from the pool.
func BenchmarkDispatchAdd1Released(b *testing.B) {
	x := FromSlice(CPU, []float32{1})
	y := FromSlice(CPU, []float32{2})
	b.ReportAllocs()
	for b.Loop() {
		z := x.Add(y)
		if z.err != nil {
			b.Fatal(z.err)
		}
		z.Release()
	}
}

// BenchmarkSoftmaxFloat32 is softmax over the rows of a 4096×1024 float32
// tensor, lathe-bench's softmax row. Compare with torch.softmax.
func BenchmarkSoftmaxFloat32(b *testing.B) {
	x := RandN(CPU, Float32, 4096, 1024)
	b.SetBytes(2 * 4 * 4096 * 1024)
	for b.Loop() {
		z := x.Softmax(-1)
		if z.err != nil {
			b.Fatal(z.err)
		}
		z.Release()
	}
}
