package dispatch

import (
	"errors"
	"strings"
	"testing"
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
func (h hostBackend) Alloc(_ Device, _ DType, n int) (Buffer, error) {
	return &hostBuf{make([]float64, n)}, nil
}
func (h hostBackend) Upload(_ Device, data any) (Buffer, error) {
	return &hostBuf{data.([]float64)}, nil
}
func (h hostBackend) Read(_ Device, b Buffer, _ DType, off, n int) (any, error) {
	return b.(*hostBuf).data[off : off+n], nil
}
func (h hostBackend) Sync(Device) error { return nil }

// The test registers a host backend under the host's name and again under
// "cuda" and "wgpu", as if they were GPUs.
var (
	testCUDA = Device{Kind: RegisterBackend("cuda", hostBackend{})}
	testWGPU = Device{Kind: RegisterBackend("wgpu", hostBackend{})}
)

func init() {
	RegisterBackend("cpu", hostBackend{})
	add := func(out *Tensor, in []*Tensor, _ any) error {
		o := out.Storage.Buffer.(*hostBuf).data
		for i := range o {
			o[i] = in[0].Storage.Buffer.(*hostBuf).data[i] + in[1].Storage.Buffer.(*hostBuf).data[i]
		}
		return nil
	}
	RegisterKernel(Host, "add", add)
	RegisterKernel(testCUDA.Kind, "add", add)
}

func host(t testing.TB, dev Device, vals ...float64) *Tensor {
	x, err := Upload(dev, vals, Float64, []int{len(vals)})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestCallAdds(t *testing.T) {
	add := Lookup("add")
	out, err := Call(add, nil, host(t, Device{}, 1, 2), host(t, Device{}, 10, 20))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Storage.Buffer.(*hostBuf).data; got[0] != 11 || got[1] != 22 {
		t.Fatalf("add = %v, want [11 22]", got)
	}
}

func TestValidationErrors(t *testing.T) {
	add := Lookup("add")
	cpu := Device{}
	released := host(t, cpu, 1)
	released.Release()
	ints, _ := Upload(cpu, []float64{1}, Int32, []int{1}) // dtype tag is what dispatch checks
	cases := []struct {
		name     string
		in       []*Tensor
		kind     error
		contains []string
	}{
		{"device", []*Tensor{host(t, cpu, 1), host(t, testCUDA, 1)}, ErrDevice,
			[]string{`lathe: add: argument "rhs" is on cuda:0 but the op runs on cpu (move it with rhs.To(lathe.CPU))`}},
		{"device/reversed", []*Tensor{host(t, testCUDA, 1), host(t, cpu, 1)}, ErrDevice,
			[]string{`argument "rhs" is on cpu but the op runs on cuda:0`, "rhs.To(lathe.CUDA(0))"}},
		{"released", []*Tensor{host(t, cpu, 1), released}, ErrReleased, []string{`argument "rhs" was released`}},
		{"nil", []*Tensor{nil, host(t, cpu, 1)}, ErrValue, []string{`argument "lhs" is nil`}},
		{"shape", []*Tensor{host(t, cpu, 1, 2), host(t, cpu, 1, 2, 3)}, ErrShape,
			[]string{`argument "rhs" has shape [3], which does not broadcast with [2]`}},
		{"dtype", []*Tensor{host(t, cpu, 1), ints}, ErrDType,
			[]string{`argument "rhs" is int32 but "lhs" is float64`, "Cast(lathe.Float64)"}},
		{"arity", []*Tensor{host(t, cpu, 1)}, ErrValue, []string{"takes 2 tensors, got 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Call(add, nil, c.in...)
			if err == nil {
				t.Fatalf("no error; got %v", out)
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("error %q is not of kind %v", err, c.kind)
			}
			var e *Error
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
	_, err := Call(Lookup("mul"), nil, host(t, testCUDA, 1), host(t, testCUDA, 2))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "mul: has no kernel on cuda:0") {
		t.Fatalf("got %v, want an ErrUnsupported naming mul and cuda:0", err)
	}
}

func TestRecorderOnlyWhenGradWanted(t *testing.T) {
	var calls int
	SetRecorder(func(op *Op, in []*Tensor, out *Tensor, _ any) error { calls++; return nil })
	defer recorder.Store(nil)
	add := Lookup("add")
	a, b := host(t, Device{}, 1), host(t, Device{}, 2)
	if _, err := Call(add, nil, a, b); err != nil {
		t.Fatal(err)
	}
	if calls != 0 {
		t.Fatalf("recorded %d entries for inputs that want no gradient", calls)
	}
	b.RequiresGrad = true
	if _, err := Call(add, nil, a, b); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("recorded %d entries, want 1", calls)
	}
}

func TestParseDevice(t *testing.T) {
	good := map[string]Device{"cpu": {}, "cuda": testCUDA, "cuda:3": {testCUDA.Kind, 3}, "WGPU:0": testWGPU}
	for s, want := range good {
		if got, err := ParseDevice(s); err != nil || got != want {
			t.Errorf("ParseDevice(%q) = %v, %v; want %v", s, got, err, want)
		}
		if want.String() != strings.ToLower(s) && s != "cuda" {
			t.Errorf("%v.String() = %q, want %q", want, want.String(), s)
		}
	}
	for _, s := range []string{"", "gpu", "cuda:-1", "cuda:x", "cpu:1"} {
		if _, err := ParseDevice(s); !errors.Is(err, ErrValue) {
			t.Errorf("ParseDevice(%q) error = %v, want ErrValue", s, err)
		}
	}
}

func TestBroadcastShapes(t *testing.T) {
	cases := []struct{ a, b, want []int }{
		{[]int{3, 1}, []int{1, 4}, []int{3, 4}},
		{[]int{}, []int{2, 3}, []int{2, 3}},
		{[]int{5, 1, 3}, []int{4, 1}, []int{5, 4, 3}},
		{[]int{0}, []int{1}, []int{0}},
		{[]int{2}, []int{3}, nil},
	}
	for _, c := range cases {
		got, ok := BroadcastShapes(c.a, c.b)
		if c.want == nil {
			if ok {
				t.Errorf("BroadcastShapes(%v, %v) = %v, want no broadcast", c.a, c.b, got)
			}
			continue
		}
		if !ok || FormatShape(got) != FormatShape(c.want) {
			t.Errorf("BroadcastShapes(%v, %v) = %v, %v; want %v", c.a, c.b, got, ok, c.want)
		}
	}
}

// numpyBroadcast is NumPy's rule written out independently of the code
// under test: the result size of each aligned dim is the maximum, and the
// shapes broadcast when every size is that maximum or 1.
func numpyBroadcast(a, b []int) ([]int, bool) {
	n := max(len(a), len(b))
	pad := func(s []int) []int { return append(make([]int, n-len(s)), s...) }
	pa, pb := pad(a), pad(b)
	out := make([]int, n)
	for i := range n {
		x, y := max(pa[i], 0), max(pb[i], 0)
		if i < n-len(a) {
			x = 1
		}
		if i < n-len(b) {
			y = 1
		}
		switch {
		case x == y:
			out[i] = x
		case x == 1:
			out[i] = y
		case y == 1:
			out[i] = x
		default:
			return nil, false
		}
	}
	return out, true
}

// FuzzBroadcast checks the shape rule on any pair of small shapes: no panic,
// and the result equals NumPy's rule.
func FuzzBroadcast(f *testing.F) {
	f.Add([]byte{3, 1}, []byte{1, 4})
	f.Add([]byte{}, []byte{0, 2})
	f.Add([]byte{5, 1, 3, 1}, []byte{7, 1})
	f.Fuzz(func(t *testing.T, ab, bb []byte) {
		if len(ab) > 8 || len(bb) > 8 {
			return
		}
		shape := func(bs []byte) []int {
			s := make([]int, len(bs))
			for i, v := range bs {
				s[i] = int(v % 6)
			}
			return s
		}
		a, b := shape(ab), shape(bb)
		got, ok := BroadcastShapes(a, b)
		want, wok := numpyBroadcast(a, b)
		if ok != wok || (ok && FormatShape(got) != FormatShape(want)) {
			t.Fatalf("BroadcastShapes(%v, %v) = %v, %v; NumPy gives %v, %v", a, b, got, ok, want, wok)
		}
		if ok {
			// The rule must also hold through an op's schema, with no panic.
			x := &Tensor{Shape: a, Strides: ContiguousStrides(a), DType: Float32}
			y := &Tensor{Shape: b, Strides: ContiguousStrides(b), DType: Float32}
			_, s, err := Lookup("add").Infer([]*Tensor{x, y}, nil)
			if err != nil || FormatShape(s) != FormatShape(want) {
				t.Fatalf("add's Infer(%v, %v) = %v, %v; want %v", a, b, s, err, want)
			}
		}
	})
}

// BenchmarkCheckArgs measures the validation every op pays before launch.
func BenchmarkCheckArgs(b *testing.B) {
	add := Lookup("add")
	in := []*Tensor{host(b, Device{}, 1), host(b, Device{}, 2)}
	b.ReportAllocs()
	for b.Loop() {
		if err := CheckArgs(add, in); err != nil {
			b.Fatal(err)
		}
	}
}
