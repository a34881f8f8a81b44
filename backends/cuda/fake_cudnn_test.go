//go:build cgo

package cuda

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/half"
	"github.com/lathe-ml/lathe/layout"
)

// fakeCudnn runs convolution's three ops on dev through the stand-in
// cuDNN (testdata/fakecudnn.c), in every float dtype, for windows of 1, 2
// and 3 dims with strides, padding, dilation and groups, and compares each
// result with the cpu's bit for bit (the inputs are quarters, so every sum
// is exact and rounds once). The stand-in refuses descriptors that do not
// fit together, a compute type other than float (double for double), an
// algorithm that is not the deterministic one whose workspace fits, and a
// workspace shorter than that algorithm asks for; the last op launched
// says that cuDNN ran each op, the 16-bit floats in place.
func fakeCudnn(t *testing.T, dev dispatch.Device) {
	d := d0(t)
	if d.dnn == nil {
		t.Fatalf("the stand-in cuDNN did not open: %s", d.dnnWhy)
	}
	if desc := cudaBackend.Describe(dev.Index); !strings.Contains(desc, "convolution by cuDNN 9.1.0") {
		t.Errorf("Describe: %q does not name cuDNN", desc)
	}
	cases := []struct {
		name   string
		x, w   []int
		win    layout.Window
		groups int
	}{
		{"2-d, two groups", []int{2, 4, 5, 6}, []int{6, 2, 3, 2}, layout.Window{Stride: []int{2, 1}, Padding: []int{1, 0}, Dilation: []int{1, 2}}, 2},
		{"1-d", []int{2, 3, 7}, []int{4, 3, 3}, layout.Window{Stride: []int{2}, Padding: []int{1}, Dilation: []int{1}}, 1},
		{"3-d", []int{1, 2, 3, 4, 4}, []int{2, 2, 2, 3, 2}, layout.Window{Stride: []int{1, 1, 1}, Padding: []int{0, 1, 1}, Dilation: []int{1, 1, 2}}, 1},
	}
	for _, c := range cases {
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64, dispatch.Float16, dispatch.BFloat16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				want, _, err := convAll(dispatch.Device{Kind: dispatch.Host}, dt, c.x, c.w, c.win, c.groups, quarters)
				if err != nil {
					t.Fatal(err)
				}
				got, ran, err := convAll(dev, dt, c.x, c.w, c.win, c.groups, quarters)
				if err != nil {
					t.Fatal(err)
				}
				for i, name := range []string{"conv", "conv_input_backward", "conv_weight_backward"} {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("%s: %v, the cpu's %v", name, got[i], want[i])
					}
				}
				if wantRan := []string{"cudnnConvolutionForward", "cudnnConvolutionBackwardData", "cudnnConvolutionBackwardFilter"}; !slices.Equal(ran, wantRan) {
					t.Errorf("ran %v, want %v", ran, wantRan)
				}
			})
		}
	}
	// Eight goroutines at once, each with its own batch size, so that
	// each case's algorithm choice is made while others convolve.
	t.Run("concurrent", func(t *testing.T) {
		c := cases[0]
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				x := append([]int{g + 3}, c.x[1:]...)
				want, _, err := convAll(dispatch.Device{Kind: dispatch.Host}, dispatch.Float32, x, c.w, c.win, c.groups, quarters)
				if err != nil {
					t.Error(err)
					return
				}
				for range 5 {
					got, _, err := convAll(dev, dispatch.Float32, x, c.w, c.win, c.groups, quarters)
					if err != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("batch %d: %v, or results that are not the cpu's", g+3, err)
						return
					}
				}
			})
		}
		wg.Wait()
	})
	// A call that fails on the device is the op's error, naming cuDNN's
	// call and status, and the device goes on working.
	t.Run("a failed call", func(t *testing.T) {
		c := cases[1]
		_, _, err := convAll(dev, dispatch.Float32, append([]int{13}, c.x[1:]...), c.w, c.win, c.groups, quarters)
		t.Logf("%v", err)
		for _, want := range []string{"conv: cuda:0: a convolution", "cudnnConvolutionForward", "CUDNN_STATUS_EXECUTION_FAILED", "5000"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%v, want it to say %q", err, want)
			}
		}
		if _, _, err := convAll(dev, dispatch.Float32, c.x, c.w, c.win, c.groups, quarters); err != nil {
			t.Errorf("the next convolution: %v", err)
		}
	})
	// TF32: the stand-in cuts float32 inputs to TF32 under
	// CUDNN_DEFAULT_MATH, which convolve asks for only when TF32 is
	// allowed (CUDNN_FMA_MATH otherwise), so 1 + 2^-20 sums differently.
	t.Run("tf32", func(t *testing.T) {
		defer allowTF32.Store(allowTF32.Load())
		c := cases[0]
		fine := func(i int) float32 { return 1 + 1.0/(1<<20) }
		want, _, err := convAll(dispatch.Device{Kind: dispatch.Host}, dispatch.Float32, c.x, c.w, c.win, c.groups, fine)
		if err != nil {
			t.Fatal(err)
		}
		for _, tf32 := range []bool{false, true} {
			allowTF32.Store(tf32)
			got, _, err := convAll(dev, dispatch.Float32, c.x, c.w, c.win, c.groups, fine)
			if err != nil {
				t.Fatal(err)
			}
			if same := reflect.DeepEqual(got[0], want[0]); same == tf32 {
				t.Errorf("with TF32 allowed %v the forward is %v, the cpu's exact %v", tf32, got[0], want[0])
			}
		}
	})
}

// TestFakeCudnnHandleFails: where cuDNN opens but a handle cannot be made
// (its engine libraries missing), the first convolution finds out, and
// from then on the device convolves by im2col, which Describe says with
// cuDNN's words.
func TestFakeCudnnHandleFails(t *testing.T) {
	if os.Getenv("LATHE_FAKE_CUDA_CHILD") != "1" {
		runFakeChild(t, "TestFakeCudnnHandleFails", "FAKE_CUDNN_CREATE=fail")
		return
	}
	dev := dispatch.Device{Kind: kind}
	if err := cudaBackend.Open(0); err != nil {
		t.Fatal(err)
	}
	if desc := cudaBackend.Describe(0); !strings.Contains(desc, "convolution by cuDNN 9.1.0") {
		t.Errorf("Describe before a convolution: %q, want cuDNN named", desc)
	}
	// The stand-in driver has no unfold kernel, so the im2col path fails
	// here, naming it: the sign that cuDNN was not used.
	_, ran, err := convAll(dev, dispatch.Float32, []int{1, 2, 4, 4}, []int{3, 2, 2, 2}, layout.Window{Stride: []int{1, 1}, Padding: []int{0, 0}, Dilation: []int{1, 1}}, 1, quarters)
	if err == nil || !strings.Contains(err.Error(), "unfold") {
		t.Errorf("a convolution without a cuDNN handle: %v (ran %v), want the im2col path's unfold", err, ran)
	}
	want := "convolution by im2col and matmul (cuda:0: creating a cuDNN handle: cudnnCreate returned CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED (code 1008))"
	if desc := cudaBackend.Describe(0); !strings.Contains(desc, want) {
		t.Errorf("Describe: %q lacks %q", desc, want)
	}
}

// quarters are the inputs of fakeCudnn's cases: multiples of 1/4 in
// [-1, 1].
func quarters(i int) float32 { return float32(i%9-4) / 4 }

// convAll runs conv, then both backward ops with a gradient of the
// output's shape, on dev in dt, from inputs of the shapes given with
// values of at; it returns the three results as ReadHost gives them, and
// on a cuda device the last op launched after each.
func convAll(dev dispatch.Device, dt dispatch.DType, xs, ws []int, win layout.Window, groups int, at func(int) float32) (res [3]any, ran []string, err error) {
	upload := func(shape []int, start int) (*dispatch.Tensor, error) {
		vs := make([]float32, dispatch.Numel(shape))
		for i := range vs {
			vs[i] = at(start + i)
		}
		switch dt {
		case dispatch.Float64:
			f := make([]float64, len(vs))
			for i, v := range vs {
				f[i] = float64(v)
			}
			return dispatch.Upload(dev, f, dt, shape)
		case dispatch.Float16:
			h := make([]half.Float16, len(vs))
			for i, v := range vs {
				h[i] = half.Float16(half.Float16FromFloat32(v))
			}
			return dispatch.Upload(dev, h, dt, shape)
		case dispatch.BFloat16:
			h := make([]half.BFloat16, len(vs))
			for i, v := range vs {
				h[i] = half.BFloat16(half.BFloat16FromFloat32(v))
			}
			return dispatch.Upload(dev, h, dt, shape)
		}
		return dispatch.Upload(dev, vs, dt, shape)
	}
	var held []*dispatch.Tensor
	defer func() {
		for _, t := range held {
			t.Release()
		}
	}()
	keep := func(t *dispatch.Tensor, err error) (*dispatch.Tensor, error) {
		if err == nil {
			held = append(held, t)
			if d, err := opened(dev); err == nil {
				ran = append(ran, *d.lastOp.Load())
			}
		}
		return t, err
	}
	x, err := upload(xs, 0)
	if err != nil {
		return res, nil, err
	}
	w, err := upload(ws, 5)
	if err != nil {
		return res, nil, err
	}
	held = append(held, x, w)
	a := ops.ConvParams{Window: win, Groups: groups}
	y, err := keep(dispatch.Call(ops.Conv, a, x, w))
	if err != nil {
		return res, nil, err
	}
	gy, err := upload(y.Shape, 3)
	if err != nil {
		return res, nil, err
	}
	held = append(held, gy)
	ab := a
	ab.InputSize = xs[2:]
	dx, err := keep(dispatch.Call(ops.ConvInputBackward, ab, gy, w))
	if err != nil {
		return res, nil, err
	}
	aw := a
	aw.Window.Kernel = ws[2:]
	dw, err := keep(dispatch.Call(ops.ConvWeightBackward, aw, x, gy))
	if err != nil {
		return res, nil, err
	}
	for i, r := range []*dispatch.Tensor{y, dx, dw} {
		if res[i], err = dispatch.ReadHost(r); err != nil {
			return res, nil, err
		}
	}
	return res, ran, nil
}
