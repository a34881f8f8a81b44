package dispatch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
)

// hostBackend is a test backend that keeps float64s in host memory under any
// device kind, so that dispatch's validation can be tested across "devices"
// without a real backend (the conformance suite never uses it).
type hostBackend struct{}

type hostBuf struct{ data []float64 }

func (*hostBuf) Free() {}

func (h hostBackend) Open(i int) error    { return nil }
func (h hostBackend) Describe(int) string { return "test" }
func (h hostBackend) Count() int          { return 1 }
func (h hostBackend) Alloc(_ dispatch.Device, _ dispatch.DType, n int) (dispatch.Buffer, error) {
	return &hostBuf{make([]float64, n)}, nil
}
func (h hostBackend) Upload(_ dispatch.Device, data any) (dispatch.Buffer, error) {
	return &hostBuf{data.([]float64)}, nil
}
func (h hostBackend) Read(_ dispatch.Device, b dispatch.Buffer, _ dispatch.DType, off, n int) (any, error) {
	return b.(*hostBuf).data[off : off+n], nil
}
func (h hostBackend) Sync(dispatch.Device) error { return nil }

// The test registers a host backend under the host's name and again under
// "cuda" and "wgpu", as if they were GPUs.
var (
	testCUDA = dispatch.Device{Kind: dispatch.RegisterBackend("cuda", hostBackend{})}
	testWGPU = dispatch.Device{Kind: dispatch.RegisterBackend("wgpu", hostBackend{})}
)

func init() {
	dispatch.RegisterBackend("cpu", hostBackend{})
	add := func(out *dispatch.Tensor, in []*dispatch.Tensor, _ dispatch.None) error {
		o := out.Storage.Buffer.(*hostBuf).data
		for i := range o {
			o[i] = in[0].Storage.Buffer.(*hostBuf).data[i] + in[1].Storage.Buffer.(*hostBuf).data[i]
		}
		return nil
	}
	dispatch.RegisterKernel(dispatch.Host, ops.Add, 1<<dispatch.Float64, add)
	dispatch.RegisterKernel(testCUDA.Kind, ops.Add, 1<<dispatch.Float64, add)
}

func host(t testing.TB, dev dispatch.Device, vals ...float64) *dispatch.Tensor {
	x, err := dispatch.Upload(dev, vals, dispatch.Float64, []int{len(vals)})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestCallAdds(t *testing.T) {
	add := ops.Add
	out, err := dispatch.Call(add, dispatch.None{}, host(t, dispatch.Device{}, 1, 2), host(t, dispatch.Device{}, 10, 20))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Storage.Buffer.(*hostBuf).data; got[0] != 11 || got[1] != 22 {
		t.Fatalf("add = %v, want [11 22]", got)
	}
}

func TestValidationErrors(t *testing.T) {
	add := ops.Add
	cpu := dispatch.Device{}
	released := host(t, cpu, 1)
	released.Release()
	ints, _ := dispatch.Upload(cpu, []float64{1}, dispatch.Int32, []int{1}) // dtype tag is what dispatch checks
	cases := []struct {
		name     string
		in       []*dispatch.Tensor
		kind     error
		contains []string
	}{
		{"device", []*dispatch.Tensor{host(t, cpu, 1), host(t, testCUDA, 1)}, dispatch.ErrDevice,
			[]string{`lathe: add: argument "rhs" is on cuda:0 but the op runs on cpu (move it with rhs.To(lathe.CPU))`}},
		{"device/reversed", []*dispatch.Tensor{host(t, testCUDA, 1), host(t, cpu, 1)}, dispatch.ErrDevice,
			[]string{`argument "rhs" is on cpu but the op runs on cuda:0`, "rhs.To(lathe.CUDA(0))"}},
		{"released", []*dispatch.Tensor{host(t, cpu, 1), released}, dispatch.ErrReleased, []string{`argument "rhs" was released`}},
		{"nil", []*dispatch.Tensor{nil, host(t, cpu, 1)}, dispatch.ErrValue, []string{`argument "lhs" is nil`}},
		{"shape", []*dispatch.Tensor{host(t, cpu, 1, 2), host(t, cpu, 1, 2, 3)}, dispatch.ErrShape,
			[]string{`argument "rhs" has shape [3], which does not broadcast with [2]`}},
		{"dtype", []*dispatch.Tensor{host(t, cpu, 1), ints}, dispatch.ErrDType,
			[]string{`argument "rhs" is int32 but "lhs" is float64`, "Cast(lathe.Float64)"}},
		{"arity", []*dispatch.Tensor{host(t, cpu, 1)}, dispatch.ErrValue, []string{"takes 2 tensors, got 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := dispatch.Call(add, dispatch.None{}, c.in...)
			if err == nil {
				t.Fatalf("no error; got %v", out)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("error %q is not of kind %v", err, c.kind)
			}
			var e *dispatch.Error
			if !errors.As(err, &e) || e.Op != "add" {
				t.Errorf("error %q is not an *Error for op add", err)
			}
			if !strings.Contains(e.Site, "dispatch_test.go:") {
				t.Errorf("call site %q does not name the test", e.Site)
			}
			for _, s := range c.contains {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestNoKernel(t *testing.T) {
	_, err := dispatch.Call(ops.Mul, dispatch.None{}, host(t, testCUDA, 1), host(t, testCUDA, 2))
	if !errors.Is(err, dispatch.ErrUnsupported) || !strings.Contains(err.Error(), "mul: has no float64 kernel on cuda:0, nor one for any dtype") {
		t.Fatalf("got %v, want an ErrUnsupported naming mul, float64 and cuda:0", err)
	}
}

// A device whose kernel lacks the argument's dtype says so, naming the op,
// the dtype and the device, as it would on any backend.
func TestNoKernelForDType(t *testing.T) {
	f32, _ := dispatch.Upload(dispatch.Device{}, []float64{1}, dispatch.Float32, []int{1}) // the kernel is float64's
	_, err := dispatch.Call(ops.Add, dispatch.None{}, f32, f32)
	if !errors.Is(err, dispatch.ErrUnsupported) || !strings.Contains(err.Error(), "add: has no float32 kernel on cpu") {
		t.Fatalf("got %v, want an ErrUnsupported naming add, float32 and cpu", err)
	}
}

func TestRecorderOnlyWhenGradWanted(t *testing.T) {
	var calls int
	dispatch.SetRecorder(func(op *dispatch.Schema, in []*dispatch.Tensor, out *dispatch.Tensor, _ any) error {
		calls++
		return nil
	})
	defer dispatch.SetRecorder(nil)
	add := ops.Add
	a, b := host(t, dispatch.Device{}, 1), host(t, dispatch.Device{}, 2)
	if _, err := dispatch.Call(add, dispatch.None{}, a, b); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("recorded %d entries for inputs that want no gradient", calls)
	}
	b.RequiresGrad.Store(true)
	if _, err := dispatch.Call(add, dispatch.None{}, a, b); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("recorded %d entries, want 1", calls)
	}
}

func TestParseDevice(t *testing.T) {
	good := map[string]dispatch.Device{"cpu": {}, "cuda": testCUDA, "cuda:3": {testCUDA.Kind, 3}, "WGPU:0": testWGPU}
	for s, want := range good {
		if got, err := dispatch.ParseDevice(s); err != nil || got != want {
			t.Errorf("ParseDevice(%q) = %v, %v; want %v", s, got, err, want)
		}
		if want.String() != strings.ToLower(s) && s != "cuda" {
			t.Errorf("%v.String() = %q, want %q", want, want.String(), s)
		}
	}
	for _, s := range []string{"", "gpu", "cuda:-1", "cuda:x", "cpu:1"} {
		if _, err := dispatch.ParseDevice(s); !errors.Is(err, dispatch.ErrValue) {
			t.Errorf("ParseDevice(%q) error = %v, want ErrValue", s, err)
		}
	}
}

// BenchmarkCheckArgs measures the validation every op pays before launch.
func BenchmarkCheckArgs(b *testing.B) {
	add := ops.Add
	in := []*dispatch.Tensor{host(b, dispatch.Device{}, 1), host(b, dispatch.Device{}, 2)}
	b.ReportAllocs()
	for b.Loop() {
		if err := dispatch.CheckArgs(&add.Schema, in); err != nil {
			b.Fatal(err)
		}
	}
}
