//go:build cgo

package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/testenv"
	"github.com/lathe-ml/lathe/layout"
)

// TestFakeDriver runs the backend's cgo code end to end against stand-ins
// for libcuda, libcublas and libcudnn (testdata/fake*.c, built here with the C
// compiler), which check the calls against the driver's contracts. The
// backend opens the driver once per process, so the checks run in a child
// process of this test binary with LATHE_CUDA_LIB, LATHE_CUBLAS_LIB and
// LATHE_CUDNN_LIB pointing at the stand-ins.
func TestFakeDriver(t *testing.T) {
	if os.Getenv("LATHE_FAKE_CUDA_CHILD") == "1" {
		fakeDriverChecks(t)
		return
	}
	runFakeChild(t, "TestFakeDriver")
}

// TestFakeDriverNoCaching: with LATHE_CUDA_NO_CACHING=1 each tensor is its
// own driver allocation, freed at its release, and Close gives everything
// back and releases the primary context.
func TestFakeDriverNoCaching(t *testing.T) {
	if os.Getenv("LATHE_FAKE_CUDA_CHILD") == "1" {
		fakeNoCachingChecks(t)
		return
	}
	runFakeChild(t, "TestFakeDriverNoCaching", noCachingEnv+"=1")
}

// runFakeChild builds the stand-ins and runs test in a child process of
// this test binary against them, with env added.
func runFakeChild(t *testing.T, test string, env ...string) {
	// The stand-ins' own kernels, even where this process plays cuda:0 on
	// the host emulation (LATHE_FAKE_CUDA_EMU, internal/emucuda).
	out, err := testenv.RunChild(test, append([]string{"LATHE_FAKE_CUDA_CHILD=1", "LATHE_FAKE_CUDA_EMU=",
		"LATHE_CUDA_LIB=" + testenv.SharedLibrary(t, "testdata/fakecuda.c"),
		"LATHE_CUBLAS_LIB=" + testenv.SharedLibrary(t, "testdata/fakecublas.c"),
		"LATHE_CUDNN_LIB=" + testenv.SharedLibrary(t, "testdata/fakecudnn.c")}, env...)...)
	if err != nil || !strings.Contains(out, "--- PASS: "+test) {
		t.Fatalf("the checks against the stand-in driver failed (%v):\n%s", err, out)
	}
	t.Logf("%s", out)
}

func fakeNoCachingChecks(t *testing.T) {
	old := moduleSource
	t.Cleanup(func() { moduleSource = old })
	moduleSource = func(name string) ([]byte, bool) {
		s, ok := fakeModules[name]
		return append([]byte(s), 0), ok
	}
	dev := dispatch.Device{Kind: kind}
	if err := cudaBackend.Open(0); err != nil {
		t.Fatal(err)
	}
	if desc := cudaBackend.Describe(0); !strings.Contains(desc, "no caching allocator") {
		t.Errorf("Describe: %q does not say that the cache is off", desc)
	}
	d := d0(t)
	free0, _, _ := d.memInfo()
	x := upload(t, dev, []float32{1, 2, 3}, dispatch.Float32, 3)
	y := upload(t, dev, make([]float32, 300_000), dispatch.Float32, 300_000)
	free1, _, _ := d.memInfo()
	if used := free0 - free1; used != 12+1_200_000 {
		t.Errorf("the driver gave %d bytes for 12 and 1,200,000", used)
	}
	if got := read[float32](t, x); !slices.Equal(got, []float32{1, 2, 3}) {
		t.Errorf("read back %v", got)
	}
	x.Release()
	y.Release()
	if free2, _, _ := d.memInfo(); free2 != free0 {
		t.Errorf("after the releases the driver has %d bytes free, want %d", free2, free0)
	}
	// A value check allocates its slots; Close frees them with the rest.
	idx := upload(t, dev, []int64{0, 1}, dispatch.Int64, 2)
	if err := cudaBackend.CheckValues(idx, &dispatch.ValueCheck{Op: "gather", Min: 0, Max: 2}); err != nil {
		t.Fatal(err)
	}
	// A convolution makes the cuDNN handle and borrows a workspace: Close
	// destroys the one and has the other back.
	c := struct {
		x, w []int
		win  layout.Window
	}{[]int{1, 2, 4, 4}, []int{3, 2, 2, 2}, layout.Window{Stride: []int{1, 1}, Padding: []int{0, 0}, Dilation: []int{1, 1}}}
	if _, ran, err := convAll(dev, dispatch.Float32, c.x, c.w, c.win, 1, quarters); err != nil || len(ran) != 3 || ran[0] != "cudnnConvolutionForward" {
		t.Fatalf("a convolution before Close: %v, ran %v", err, ran)
	}
	if err := cudaBackend.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.memInfo(); err == nil {
		t.Errorf("the context still works after Close released it")
	}
	// Open makes a new one, with all the memory free.
	if err := cudaBackend.Open(0); err != nil {
		t.Fatal(err)
	}
	if free, total, err := d0(t).memInfo(); err != nil || free != total {
		t.Errorf("after Close %d of %d bytes free (%v), want all", free, total, err)
	}
	if err := cudaBackend.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeModules are the stand-in's modules: text that its
// cuModuleLoadDataEx accepts, or refuses when it says BROKEN.
var fakeModules = map[string]string{"fake": "fake kernels", "matmul": "fake matmul", "index": "fake checks", "narrow": "fake conversions", "broken": "BROKEN"}

// realDevice is true where checkMatmul runs on a GPU, whose rounding under
// TF32 the test does not predict; realKernels where it runs the real PTX,
// which has every kernel (a GPU, or the stand-in on the host emulation).
var realDevice, realKernels bool

func fakeDriverChecks(t *testing.T) {
	old := moduleSource
	t.Cleanup(func() { moduleSource = old })
	moduleSource = func(name string) ([]byte, bool) {
		s, ok := fakeModules[name]
		return append([]byte(s), 0), ok
	}
	dev := dispatch.Device{Kind: kind}
	b := cudaBackend
	if n := b.Count(); n != 1 {
		t.Fatalf("Count() = %d, want 1: %v", n, b.Open(0))
	}
	if err := b.Open(0); err != nil {
		t.Fatal(err)
	}
	desc := b.Describe(0)
	for _, want := range []string{"Fake GPU", "compute capability 9.0", "132 SMs", "64.0 MiB", "CUDA driver 13.0", "fakecuda.so", "cuBLAS 13.1.0"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe: %q lacks %q", desc, want)
		}
	}
	if err := b.Open(1); !errors.Is(err, dispatch.ErrUnavailable) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open(1): %v", err)
	}

	t.Run("copies", func(t *testing.T) { fakeCopies(t, dev) })
	t.Run("small uploads", func(t *testing.T) { fakeSmallUploads(t, dev) })
	t.Run("launch", func(t *testing.T) { fakeLaunch(t, dev) })
	t.Run("matmul", func(t *testing.T) { checkMatmul(t, dev) })
	t.Run("value checks", func(t *testing.T) { fakeValueChecks(t, dev) })
	t.Run("narrow dtypes", func(t *testing.T) { fakeNarrow(t, dev) })
	t.Run("half matmul", func(t *testing.T) { fakeHalfMatmul(t, dev) })
	t.Run("wide matmul", func(t *testing.T) { fakeWideMatmul(t, dev) })
	t.Run("conv products", func(t *testing.T) { fakeConvProducts(t, dev) })
	t.Run("cudnn", func(t *testing.T) { fakeCudnn(t, dev) })
	t.Run("memory", func(t *testing.T) { fakeMemoryChecks(t, dev) })
	t.Run("dropped tensors", func(t *testing.T) { fakeDroppedTensors(t, dev) })
	t.Run("concurrent", func(t *testing.T) { fakeConcurrent(t, dev) })
	t.Run("fault", func(t *testing.T) { fakeFault(t, dev) }) // last: the fault is sticky
}

func upload[T any](t *testing.T, dev dispatch.Device, data []T, dt dispatch.DType, shape ...int) *dispatch.Tensor {
	t.Helper()
	x, err := dispatch.Upload(dev, data, dt, shape)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func read[T any](t *testing.T, x *dispatch.Tensor) []T {
	t.Helper()
	got, err := dispatch.ReadHost(x)
	if err != nil {
		t.Fatal(err)
	}
	return got.([]T)
}

// fakeSmallUploads: small uploads (a step's scalar operands) share a
// pinned stage, so that thousands of them make the host wait for no copy
// (each had a stage of its own, and the fifth waited for the first); past
// what the stages hold they wait, and every value lands as it was, which
// the stand-in checks too: it refuses a copy into or from pinned memory
// that a copy not yet waited for still reads.
func fakeSmallUploads(t *testing.T, dev dispatch.Device) {
	d := d0(t)
	d.mu.Lock()
	waits := d.stageWaits
	d.mu.Unlock()
	var xs []*dispatch.Tensor
	for i := range 5000 {
		xs = append(xs, upload(t, dev, []float32{float32(i)}, dispatch.Float32))
	}
	d.mu.Lock()
	if d.stageWaits != waits {
		t.Errorf("5000 uploads of 4 bytes waited for the device %d times, want none", d.stageWaits-waits)
	}
	d.mu.Unlock()
	for i, x := range xs {
		if got := read[float32](t, x); got[0] != float32(i) {
			t.Fatalf("upload %d came back as %v", i, got)
		}
		x.Release()
	}
	// 300 uploads of 60 KiB: 18 MB, more than the four stages' 16 MiB.
	const n = 60 << 10 / 4
	xs = xs[:0]
	for i := range 300 {
		xs = append(xs, upload(t, dev, slices.Repeat([]int32{int32(i)}, n), dispatch.Int32, n))
	}
	for i, x := range xs {
		if got := read[int32](t, x); got[0] != int32(i) || got[n-1] != int32(i) {
			t.Fatalf("upload %d of 60 KiB came back as %d ... %d", i, got[0], got[n-1])
		}
		x.Release()
	}
}

func fakeCopies(t *testing.T, dev dispatch.Device) {
	// More than one 4 MiB stage, and not a whole number of them.
	big := make([]float32, (9<<20)/4+3)
	for i := range big {
		big[i] = float32(i) * 0.5
	}
	x := upload(t, dev, big, dispatch.Float32, len(big))
	defer x.Release()
	if got := read[float32](t, x); !slices.Equal(got, big) {
		t.Fatal("9 MiB of float32 came back changed")
	}
	v := x.View([]int{4}, []int{2}, 1<<20) // Read reads from the view's offset
	if got, err := cudaBackend.Read(dev, v.Storage.Buffer, dispatch.Float32, v.Offset, 3); err != nil || !slices.Equal(got.([]float32), big[1<<20:1<<20+3]) {
		t.Fatalf("Read at offset %d: %v %v", v.Offset, got, err)
	}
	v.Release()
	bools := []bool{true, false, false, true, true}
	if got := read[bool](t, upload(t, dev, bools, dispatch.Bool, 5)); !slices.Equal(got, bools) {
		t.Fatalf("bools came back as %v", got)
	}
	ints := []int64{math.MinInt64, -1, 0, 1 << 40}
	if got := read[int64](t, upload(t, dev, ints, dispatch.Int64, 4)); !slices.Equal(got, ints) {
		t.Fatalf("int64s came back as %v", got)
	}
	if got := read[int32](t, upload(t, dev, []int32{}, dispatch.Int32, 0)); len(got) != 0 {
		t.Fatalf("an empty tensor came back as %v", got)
	}
	if _, err := cudaBackend.Upload(dev, []uint16{1}); !errors.Is(err, dispatch.ErrDType) {
		t.Fatalf("[]uint16: %v", err)
	}
}

func fakeLaunch(t *testing.T, dev dispatch.Device) {
	x := upload(t, dev, []float32{1, 2, 3, 4}, dispatch.Float32, 4)
	y := upload(t, dev, []float32{10, 20, 30, 40}, dispatch.Float32, 4)
	one, block := [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}
	// y = 2x + y + (3·5 − 1), through every kind of parameter.
	if err := launch(dev, "fake", "axpy", one, block, 0, devicePtr(x), devicePtr(y), int64(4), float32(2), packInt64s(3, 5, 1)); err != nil {
		t.Fatal(err)
	}
	if got := read[float32](t, y); !slices.Equal(got, []float32{26, 38, 50, 62}) {
		t.Fatalf("axpy gave %v", got)
	}
	// devicePtr adds the view's offset: the last two elements only.
	xv, yv := x.View([]int{2}, []int{1}, 2), y.View([]int{2}, []int{1}, 2)
	if err := launch(dev, "fake", "axpy", one, block, 0, devicePtr(xv), devicePtr(yv), int64(2), float32(1), packInt64s(0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if got := read[float32](t, y); !slices.Equal(got, []float32{26, 38, 53, 66}) {
		t.Fatalf("axpy on views gave %v", got)
	}
	checks := []struct {
		name string
		err  error
		kind error
		want string
	}{
		{"int32 for an int64", launch(dev, "fake", "axpy", one, block, 0, devicePtr(x), devicePtr(y), int32(4), float32(2), packInt64s(3, 5, 1)),
			dispatch.ErrValue, "takes 5 parameters of [8 8 8 4 24] bytes, but the launch passed 5 of [8 8 4 4 24]"},
		{"a parameter short", launch(dev, "fake", "axpy", one, block, 0, devicePtr(x)), dispatch.ErrValue, "takes 5 parameters"},
		{"a block too big", launch(dev, "fake", "axpy", one, [3]uint32{2048, 1, 1}, 0), dispatch.ErrValue, "fake.axpy launched with grid"},
		{"no such kernel", launch(dev, "fake", "nope", one, block, 0), dispatch.ErrUnsupported, `PTX module "fake" has no kernel "nope"`},
		{"no such module", launch(dev, "absent", "k", one, block, 0), dispatch.ErrUnsupported, `no PTX module "absent"`},
		{"a module that does not JIT", launch(dev, "broken", "k", one, block, 0), dispatch.ErrUnavailable, "CUDA_ERROR_INVALID_PTX (code 218"},
		{"its log", launch(dev, "broken", "k", one, block, 0), dispatch.ErrUnavailable, "the JIT says: ptxas fatal : fake syntax error"},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.kind) || c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want %v containing %q", c.name, c.err, c.kind, c.want)
		}
	}
	if err := cudaBackend.Sync(dev); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	p, free, err := scratch(dev, 1000)
	if err != nil || p == 0 {
		t.Fatalf("scratch: %#x %v", p, err)
	}
	free()
}

// fakeValueChecks queues value checks through the driver (the stand-in's
// index_check and check_fetch keep their contract) and reads their outcome
// with Sync and with a read-back: the first bad value in row-major order,
// once, and nothing from clean checks; a full log drains itself.
func fakeValueChecks(t *testing.T, dev dispatch.Device) {
	checkOf := func(idx *dispatch.Tensor) *dispatch.ValueCheck {
		c := ops.IndexSelect.Checks([]*dispatch.Tensor{tensor(dispatch.Float32, []int{5, 2}), idx}, ops.IndexDim{Dim: 0})[0]
		c.Op = ops.IndexSelect.Name
		return &c
	}
	queue := func(idx *dispatch.Tensor) {
		t.Helper()
		if err := cudaBackend.CheckValues(idx, checkOf(idx)); err != nil {
			t.Fatalf("CheckValues: %v", err)
		}
	}
	// Row-major the view holds 1 6 / 5 2: its first bad value is 6, the
	// storage's is 5.
	s := upload(t, dev, []int32{1, 5, 6, 2}, dispatch.Int32, 4)
	bad := s.View([]int{2, 2}, []int{1, 2}, 0)
	good := upload(t, dev, []int64{0, 4, 2}, dispatch.Int64, 3)
	want := "lathe: index_select: argument \"index\" holds 6"
	queue(good)
	queue(bad)
	if err := cudaBackend.Sync(dev); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Sync after a bad check: %v, want %q", err, want)
	}
	if err := cudaBackend.Sync(dev); err != nil {
		t.Errorf("a second Sync: %v", err)
	}
	// A read-back of another tensor settles the check and returns that
	// tensor's data; the failure waits for the next Sync (and for the
	// tensors made from the checked values, which dispatch marks).
	queue(bad)
	if got := read[int64](t, good); !slices.Equal(got, []int64{0, 4, 2}) {
		t.Errorf("a read-back of another tensor after a bad check: %v", got)
	}
	if err := cudaBackend.Sync(dev); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Sync after a read-back settled a bad check: %v, want %q", err, want)
	}
	queue(good)
	if got := read[int64](t, good); !slices.Equal(got, []int64{0, 4, 2}) {
		t.Errorf("a read-back after a clean check: %v", got)
	}
	q := d0(t).checks
	for range checkSlots - 1 {
		queue(good)
	}
	queue(bad)
	if err := cudaBackend.CheckValues(good, checkOf(good)); err != nil {
		t.Errorf("the check past a full log: %v, want it queued", err)
	}
	if n := q.log.Len(); n != 1 {
		t.Errorf("%d checks logged after the full log drained and one more, want 1", n)
	}
	if err := cudaBackend.Sync(dev); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Sync after the full log drained: %v, want %q", err, want)
	}
	if err := cudaBackend.Sync(dev); err != nil {
		t.Errorf("a second Sync: %v", err)
	}
	s.Release()
	bad.Release()
	good.Release()
}

// refMatMul is a row-major reference over torch.matmul's shapes, from host
// data laid out as the tensors' views.
func refMatMul(a, b []float64, batch []int, n, k, m int, sa, sb operand) []float64 {
	nb := dispatch.Numel(batch)
	out := make([]float64, nb*n*m)
	for bi := range nb {
		oa, ob, rest := 0, 0, bi
		for d := len(batch) - 1; d >= 0; d-- {
			i := rest % batch[d]
			rest /= batch[d]
			oa += i * sa.Batch[d]
			ob += i * sb.Batch[d]
		}
		for i := range n {
			for j := range m {
				var acc float64
				for p := range k {
					acc += a[oa+i*sa.RowStride+p*sa.ColStride] * b[ob+p*sb.RowStride+j*sb.ColStride]
				}
				out[(bi*n+i)*m+j] = acc
			}
		}
	}
	return out
}

// checkMatmul runs products of every layout through the matmul kernel and
// compares them with refMatMul, checking which path ran each: cuBLAS for
// row- and column-major operands where the device has it, else the PTX
// kernel.
func checkMatmul(t *testing.T, dev dispatch.Device) {
	seq := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(i%7) - 2.5 + float64(i)/16
		}
		return s
	}
	// Each case: the storages, and the views of them that are multiplied.
	type view struct {
		shape, strides []int
		offset         int
	}
	cases := []struct {
		name    string
		sizeA   int
		va      view
		sizeB   int
		vb      view
		viaBLAS bool
	}{
		{"batched row-major", 24, view{[]int{2, 3, 4}, []int{12, 4, 1}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, true},
		{"rhs transposed", 24, view{[]int{2, 3, 4}, []int{12, 4, 1}, 0}, 20, view{[]int{4, 5}, []int{1, 4}, 0}, true},
		{"lhs transposed, offset", 13, view{[]int{3, 4}, []int{1, 3}, 1}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, true},
		{"cross broadcast", 24, view{[]int{2, 1, 3, 4}, []int{12, 12, 4, 1}, 0}, 60, view{[]int{1, 3, 4, 5}, []int{60, 20, 5, 1}, 0}, true},
		{"1-d lhs", 4, view{[]int{4}, []int{1}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, true},
		{"1-d rhs", 12, view{[]int{3, 4}, []int{4, 1}, 0}, 8, view{[]int{4}, []int{2}, 0}, true},
		{"every other column: the PTX kernel", 24, view{[]int{3, 4}, []int{8, 2}, 0}, 20, view{[]int{4, 5}, []int{5, 1}, 0}, false},
		{"an expanded row: the PTX kernel", 4, view{[]int{2, 3, 4}, []int{0, 0, 1}, 0}, 40, view{[]int{2, 4, 5}, []int{20, 5, 1}, 0}, false},
	}
	for _, c := range cases {
		for _, dt := range []dispatch.DType{dispatch.Float32, dispatch.Float64} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				viaBLAS := c.viaBLAS && d0(t).blas != nil
				if _, ok := moduleSource("matmul"); !ok && !viaBLAS {
					t.Skip("this build has no PTX module matmul")
				}
				ha, hb := seq(c.sizeA), seq(c.sizeB)
				var sa, sb *dispatch.Tensor
				if dt == dispatch.Float32 {
					sa = upload(t, dev, toF32(ha), dt, c.sizeA)
					sb = upload(t, dev, toF32(hb), dt, c.sizeB)
				} else {
					sa = upload(t, dev, ha, dt, c.sizeA)
					sb = upload(t, dev, hb, dt, c.sizeB)
				}
				a, bb := sa.View(c.va.shape, c.va.strides, c.va.offset), sb.View(c.vb.shape, c.vb.strides, c.vb.offset)
				batch, n, k, m, shape, err := ops.MatMulShapes(a.Shape, bb.Shape)
				if err != nil {
					t.Fatal(err)
				}
				out, err := dispatch.Empty(dev, dt, shape)
				if err != nil {
					t.Fatal(err)
				}
				launches := d0(t).launches.Load()
				if err := matmul(out, []*dispatch.Tensor{a, bb}, dispatch.None{}); err != nil {
					t.Fatal(err)
				}
				op := *d0(t).lastOp.Load()
				if blas := strings.HasPrefix(op, "cublas"); blas != viaBLAS || d0(t).launches.Load() == launches {
					t.Errorf("the product ran on %s, want cuBLAS %v", op, viaBLAS)
				}
				oa, ob := asOperand(a, true, batch), asOperand(bb, false, batch)
				oa.ptr, ob.ptr = 0, 0
				want := refMatMul(ha[c.va.offset:], hb[c.vb.offset:], batch, n, k, m, oa, ob)
				var got []float64
				if dt == dispatch.Float32 {
					for _, v := range read[float32](t, out) {
						got = append(got, float64(v))
					}
				} else {
					got = read[float64](t, out)
				}
				for i := range want {
					if math.Abs(got[i]-want[i]) > 1e-4*(1+math.Abs(want[i])) {
						t.Fatalf("element %d: %g, want %g\n got %v\nwant %v", i, got[i], want[i], got, want)
					}
				}
			})
		}
	}
	t.Run("k=0 is zeros", func(t *testing.T) {
		a, bb := upload(t, dev, []float32{}, dispatch.Float32, 3, 0), upload(t, dev, []float32{}, dispatch.Float32, 0, 2)
		out := upload(t, dev, []float32{1, 2, 3, 4, 5, 6}, dispatch.Float32, 3, 2) // not zeros before
		if err := matmul(out, []*dispatch.Tensor{a, bb}, dispatch.None{}); err != nil {
			t.Fatal(err)
		}
		if got := read[float32](t, out); !slices.Equal(got, make([]float32, 6)) {
			t.Fatalf("got %v", got)
		}
	})
	t.Run("tf32", func(t *testing.T) {
		if d0(t).blas == nil {
			t.Skip("no cuBLAS")
		}
		// 1 + 2^-20 has bits below TF32's 10: kept by default, dropped
		// (by the stand-in; tensor cores round) once TF32 is allowed.
		x := float32(1 + 1.0/(1<<20))
		a := upload(t, dev, []float32{x}, dispatch.Float32, 1, 1)
		product := func() float32 {
			out, _ := dispatch.Empty(dev, dispatch.Float32, []int{1, 1})
			if err := matmul(out, []*dispatch.Tensor{a, a}, dispatch.None{}); err != nil {
				t.Fatal(err)
			}
			return read[float32](t, out)[0]
		}
		if got := product(); got != x*x {
			t.Errorf("default math: %v, want %v", got, x*x)
		}
		cudaBackend.SetNumericOptions(dispatch.NumericOptions{AllowTF32: true})
		defer cudaBackend.SetNumericOptions(dispatch.NumericOptions{})
		if got := product(); got == x*x && !realDevice {
			t.Errorf("with TF32 allowed the stand-in kept every bit: %v", got)
		}
	})
	t.Run("int32 needs its kernel", func(t *testing.T) {
		a := upload(t, dev, []int32{1, 2}, dispatch.Int32, 1, 2)
		out, _ := dispatch.Empty(dev, dispatch.Int32, []int{1, 1})
		err := matmul(out, []*dispatch.Tensor{a, a.View([]int{2, 1}, []int{1, 1}, 0)}, dispatch.None{})
		if realKernels {
			// The real PTX has matmul_tiled_i32: [1 2]·[1 2]ᵀ = 5.
			if err != nil {
				t.Fatalf("int32 matmul: %v", err)
			}
			if got := read[int32](t, out); !slices.Equal(got, []int32{5}) {
				t.Fatalf("int32 matmul: %v, want [5]", got)
			}
			return
		}
		// The stand-in's modules lack it.
		if !errors.Is(err, dispatch.ErrUnsupported) || !strings.Contains(err.Error(), "matmul_tiled_i32") {
			t.Fatalf("int32 matmul without its kernel: %v", err)
		}
	})
}

func toF32(s []float64) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = float32(v)
	}
	return out
}

func d0(t *testing.T) *device {
	d, err := cudaBackend.device(0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fakeMemoryChecks goes through dispatch.MemoryManager, the capability
// that lathe.EmptyCache and lathe.MemoryStats ask every backend for.
func fakeMemoryChecks(t *testing.T, dev dispatch.Device) {
	b, err := dispatch.BackendFor(kind)
	if err != nil {
		t.Fatal(err)
	}
	mm, ok := b.(dispatch.MemoryManager)
	if !ok {
		t.Fatal("the cuda backend is not a dispatch.MemoryManager")
	}
	if err := mm.EmptyCache(dev); err != nil {
		t.Fatal(err)
	}
	st, err := mm.MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	base := st.Reserved
	big, err := cudaBackend.Alloc(dev, dispatch.Float32, (40<<20)/4)
	if err != nil {
		t.Fatal(err)
	}
	big.Free()
	// 40 MiB cached, 50 asked of the 64 that the device has: the pool
	// gives its cache back and retries.
	b50, err := cudaBackend.Alloc(dev, dispatch.Float32, (50<<20)/4)
	if err != nil {
		t.Fatalf("50 MiB with 40 cached: %v", err)
	}
	// The collections on the way (a 64 MiB device is under pressure from
	// 4 MiB on) may hand back slabs of tensors that earlier checks dropped,
	// so what the pool reserves besides the 50 MiB is at most base.
	if st, _ := mm.MemoryStats(dev); st.OOMRetries != 1 || st.Reserved < 50<<20 || st.Reserved > base+50<<20 {
		t.Errorf("after the retry: %+v (reserved before %d)", st, base)
	}
	_, err = cudaBackend.Alloc(dev, dispatch.Float32, (30<<20)/4)
	if !errors.Is(err, dispatch.ErrOutOfMemory) {
		t.Fatalf("30 MiB more: %v", err)
	}
	for _, want := range []string{"cuda:0: out of memory: asked for 30.0 MiB", "of 64.0 MiB", "CUDA_ERROR_OUT_OF_MEMORY"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	b50.Free()
	if err := mm.EmptyCache(dev); err != nil {
		t.Fatal(err)
	}
	if st, _ := mm.MemoryStats(dev); st.Reserved > base || st.Allocated > base || st.PeakAllocated < 50<<20 {
		t.Errorf("after EmptyCache: %+v", st)
	}
}

// fakeDroppedTensors: tensors that nobody releases give their memory back
// under pressure, though the Go heap hardly grows: 40 dropped 4 MiB
// tensors fit the 64 MiB stand-in (issue 15, defect 12).
func fakeDroppedTensors(t *testing.T, dev dispatch.Device) {
	for i := range 40 {
		if _, err := dispatch.Empty(dev, dispatch.Float32, []int{1 << 20}); err != nil {
			t.Fatalf("dropped 4 MiB tensor %d: %v", i+1, err)
		}
	}
	st, err := cudaBackend.MemoryStats(dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("40 dropped 4 MiB tensors: %d MiB reserved, %d collections", st.Reserved>>20, st.Collections)
}

func fakeFault(t *testing.T, dev dispatch.Device) {
	y := upload(t, dev, []float32{1}, dispatch.Float32, 1)
	if err := launch(dev, "fake", "fault", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0); err != nil {
		t.Fatalf("the launch itself succeeds: %v", err)
	}
	err := cudaBackend.Sync(dev)
	for _, want := range []string{"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access", "the last kernel launched before it was fake.fault", "cuStreamSynchronize"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Sync after a faulting kernel: %v, want it to name %q", err, want)
		}
	}
	if !errors.Is(err, dispatch.ErrUnavailable) {
		t.Errorf("the fault's kind: %v", err)
	}
	if _, err := dispatch.ReadHost(y); err == nil || !strings.Contains(err.Error(), "fake.fault") {
		t.Errorf("a read after the fault: %v", err)
	}
}

// fakeConcurrent runs uploads, launches, value checks, read-backs and frees
// from many goroutines at once (with -race, a check of the backend's
// locking).
func fakeConcurrent(t *testing.T, dev dispatch.Device) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 40 {
				n := 1 + (g*40+i)%300
				xs, ys := make([]float32, n), make([]float32, n)
				for j := range xs {
					xs[j], ys[j] = float32(j), float32(g)
				}
				x, err := dispatch.Upload(dev, xs, dispatch.Float32, []int{n})
				if err != nil {
					errs <- err
					return
				}
				y, _ := dispatch.Upload(dev, ys, dispatch.Float32, []int{n})
				err = launch(dev, "fake", "axpy", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0,
					devicePtr(x), devicePtr(y), int64(n), float32(3), packInt64s(0, 0, 0))
				if err != nil {
					errs <- err
					return
				}
				idx, _ := dispatch.Upload(dev, []int32{int32(g), int32(i)}, dispatch.Int32, []int{2})
				if err := cudaBackend.CheckValues(idx, &dispatch.ValueCheck{Max: 40, Op: "index_select"}); err != nil {
					errs <- err
					return
				}
				idx.Release()
				got, err := dispatch.ReadHost(y)
				if err != nil {
					errs <- err
					return
				}
				for j, v := range got.([]float32) {
					if v != 3*float32(j)+float32(g) {
						errs <- fmt.Errorf("goroutine %d round %d element %d: %v", g, i, j, v)
						return
					}
				}
				x.Release()
				y.Release()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
