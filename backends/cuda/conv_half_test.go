package cuda

import (
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// TestHalfConvLaunches: where the device's cuBLAS multiplies the 16-bit
// floats, a float16 or bfloat16 convolution of contiguous tensors unfolds
// its input with unfold_h16 (checked against the PTX) and hands cuBLAS one
// product per group in its own dtype, with no conversion; a strided input
// takes the float32 path, conversions and all.
func TestHalfConvLaunches(t *testing.T) {
	ents := entries(t)
	log := recordLaunches(t)
	var products []dispatch.DType
	gemm = func(_ dispatch.Device, dt dispatch.DType, _ gemmArgs) (bool, error) {
		products = append(products, dt)
		return true, nil
	}
	halfGemm = func(dispatch.Device) bool { return true }
	for _, dt := range []dispatch.DType{dispatch.Float16, dispatch.BFloat16} {
		cs := convCases(dt)
		for i, c := range cs[:2] {
			*log, products = (*log)[:0], nil
			shapeDT, shape, err := c.infer(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.run(tensor(shapeDT, shape), c.in); err != nil {
				t.Fatalf("conv %s case %d: %v", dt, i, err)
			}
			var fns []string
			for _, l := range *log {
				fns = append(fns, l.fn)
				checkLaunch(t, "conv/"+dt.String(), ents, l)
			}
			got := strings.Join(fns, " ")
			if i == 0 {
				if got != "unfold_h16" || len(products) != 2 || products[0] != dt || products[1] != dt {
					t.Errorf("conv %s, contiguous: launched %q and %v products, want unfold_h16 and two %s products", dt, got, products, dt)
				}
				continue
			}
			if !strings.Contains(got, "convert_") || len(products) != 2 || products[0] != dispatch.Float32 {
				t.Errorf("conv %s, strided input: launched %q and %v products, want the float32 path", dt, got, products)
			}
		}
	}
}

// TestConvMatchesCPUWithBLAS runs the convolution cases of every float
// dtype on the emulation as on a device whose cuBLAS takes them all:
// emuGEMM, the reference of cuBLAS's strided-batched GEMM over the
// emulation's memory, does the products, so that the 16-bit forward runs
// in its own dtype (convForwardHalf) and the rest through gemm, against
// the cpu.
func TestConvMatchesCPUWithBLAS(t *testing.T) {
	calls, halves := new(int), 0
	ref := emuGEMM(calls)
	emuBLAS = func(dev dispatch.Device, dt dispatch.DType, g gemmArgs) (bool, error) {
		if dispatch.Halves.Has(dt) {
			halves++
		}
		return ref(dev, dt, g)
	}
	t.Cleanup(func() { emuBLAS = nil })
	conv := map[*dispatch.Schema]bool{&ops.Conv.Schema: true, &ops.ConvInputBackward.Schema: true, &ops.ConvWeightBackward.Schema: true}
	matchCPU(t, func(op *dispatch.Schema, _ bool) bool { return conv[op] }, nil)
	if halves == 0 || *calls == halves {
		t.Errorf("%d products reached cuBLAS's stand-in, %d of them 16-bit: want both kinds", *calls, halves)
	}
}

// emuBLAS, where a test sets it, is the emulation's gemm (emulate), with
// every float dtype taken.
var emuBLAS func(dispatch.Device, dispatch.DType, gemmArgs) (bool, error)
