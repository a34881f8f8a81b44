//go:build cgo

package wgpu

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lathe-ml/lathe/dispatch"

	"github.com/lathe-ml/lathe/internal/testenv"
)

// device opens wgpu:0 or skips the test with the reason.
func testDevice(t *testing.T) *device {
	t.Helper()
	d, err := open()
	if err != nil {
		testenv.SkipDevice(t, "wgpu:0", "wgpu:0 is unavailable: %v", err)
	}
	return d
}

func uploadF32(t *testing.T, v []float32) *dispatch.Tensor {
	t.Helper()
	x, err := dispatch.Upload(dispatch.Device{Kind: kind}, v, dispatch.Float32, []int{len(v)})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestShaderErrorIsAnError: WGSL that does not compile is an error value
// that names the op and carries Dawn's message, and the device goes on.
func TestShaderErrorIsAnError(t *testing.T) {
	testDevice(t)
	x := uploadF32(t, []float32{1, 2, 3})
	bad := &shader{key: "test/bad", code: "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }"}
	err := launch("broken_op", bad, [3]uint32{1, 1, 1}, nil, x)
	var de *dispatch.Error
	if !errors.As(err, &de) || de.Op != "broken_op" || !errors.Is(err, dispatch.ErrUnsupported) {
		t.Fatalf("error %v, want an ErrUnsupported naming broken_op", err)
	}
	if !strings.Contains(err.Error(), "could not compile") || len(err.Error()) < 60 {
		t.Errorf("error %q does not carry Dawn's message", err)
	}
	stillWorks(t, x)
}

// TestValidationErrorNamesTheOp: a dispatch that Dawn refuses (a shader
// that wants a binding the op does not give) comes back from the op, or at
// the latest from the next read-back, naming the op; nothing is printed
// and lost.
func TestValidationErrorNamesTheOp(t *testing.T) {
	testDevice(t)
	x := uploadF32(t, []float32{1, 2, 3})
	sh := &shader{key: "test/missing-binding", code: `
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(1) fn main() { a[0] = b[0] + f32(p[0]); }`}
	err := launch("unbound_op", sh, [3]uint32{1, 1, 1}, nil, x)
	if err == nil {
		_, err = backend{}.Read(x.Device, x.Storage.Buffer, dispatch.Float32, 0, 3)
	}
	if err == nil || !strings.Contains(err.Error(), "unbound_op") {
		t.Fatalf("error %v, want one that names unbound_op", err)
	}
	stillWorks(t, x)
}

// TestRefusedBindGroupRecordsNothing: a bind group that passes launch's
// own checks but that Dawn refuses (binding 2 is declared but unused, so
// the layout Dawn makes from the shader lacks it) fails its own op, naming
// it, and leaves the ops recorded before it in the same submission intact:
// recording it would have made the whole command encoder invalid.
func TestRefusedBindGroupRecordsNothing(t *testing.T) {
	testDevice(t)
	x := uploadF32(t, []float32{1, 2, 3})
	double := &shader{key: "test/double", code: `
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(1) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
	if (id.x < 3u) { a[id.x] = a[id.x] * 2.0 + f32(p[0]); }
}`}
	unused := &shader{key: "test/unused-binding", code: `
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@group(0) @binding(2) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(1) fn main() { a[0] = f32(p[0]); }`}
	if err := launch("double", double, [3]uint32{3, 1, 1}, nil, x); err != nil {
		t.Fatal(err)
	}
	err := launch("unused_binding_op", unused, [3]uint32{1, 1, 1}, nil, x, x)
	var de *dispatch.Error
	if !errors.As(err, &de) || de.Op != "unused_binding_op" || !errors.Is(err, dispatch.ErrUnsupported) {
		t.Fatalf("the refused launch: %v, want an ErrUnsupported naming unused_binding_op", err)
	}
	t.Logf("the refused launch: %v", err)
	v, err := backend{}.Read(x.Device, x.Storage.Buffer, dispatch.Float32, 0, 3)
	if err != nil {
		t.Fatalf("reading back after the refused launch: %v", err)
	}
	if got := v.([]float32); got[0] != 2 || got[1] != 4 || got[2] != 6 {
		t.Fatalf("the op recorded before the refused one gave %v, want [2 4 6]", got)
	}
}

// TestLaunchChecks: what launch checks before Dawn sees a dispatch (the
// number of bindings against the shader's, the workgroups against the
// device's limit) fails the op, naming it and the limit, and records
// nothing, so the op recorded before it still runs.
func TestLaunchChecks(t *testing.T) {
	d := testDevice(t)
	x := uploadF32(t, []float32{1, 2, 3})
	double := &shader{key: "test/double", code: `
@group(0) @binding(0) var<storage, read> p: array<u32>;
@group(0) @binding(1) var<storage, read_write> a: array<f32>;
@compute @workgroup_size(1) fn main(@builtin(global_invocation_id) id: vec3<u32>) {
	if (id.x < 3u) { a[id.x] = a[id.x] * 2.0 + f32(p[0]); }
}`}
	if err := launch("double", double, [3]uint32{3, 1, 1}, nil, x); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		groups [3]uint32
		args   []*dispatch.Tensor
		want   string
	}{
		{"bindings", [3]uint32{1, 1, 1}, []*dispatch.Tensor{x, x}, "the shader declares 2"},
		{"workgroups", [3]uint32{d.limits.maxComputeWorkgroupsPerDimension + 1, 1, 1}, []*dispatch.Tensor{x}, "maxComputeWorkgroupsPerDimension"},
	} {
		err := launch("checked_op", double, c.groups, nil, c.args...)
		var de *dispatch.Error
		if !errors.As(err, &de) || de.Op != "checked_op" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming checked_op that says %q", c.name, err, c.want)
		}
	}
	v, err := backend{}.Read(x.Device, x.Storage.Buffer, dispatch.Float32, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.([]float32); got[0] != 2 || got[1] != 4 || got[2] != 6 {
		t.Fatalf("the op recorded before the refused ones gave %v, want [2 4 6]", got)
	}
}

func TestDeclaredBindings(t *testing.T) {
	for _, c := range []struct {
		code string
		want int
	}{
		{"", 0},
		{"@group(0) @binding(0) var<storage, read> p: array<u32>;", 1},
		{"@group(0) @binding(0) var a: x;\n@group(0) @binding( 3 ) var b: y;\n@group(0) @binding(1) var c: z;", 4},
	} {
		if got := declaredBindings(c.code); got != c.want {
			t.Errorf("declaredBindings(%q) = %d, want %d", c.code, got, c.want)
		}
	}
}

func stillWorks(t *testing.T, x *dispatch.Tensor) {
	t.Helper()
	v, err := backend{}.Read(x.Device, x.Storage.Buffer, dispatch.Float32, 0, 3)
	if err != nil || v.([]float32)[2] != 3 {
		t.Fatalf("after the error, reading back gives %v, %v", v, err)
	}
}

// TestBindingLimit: a tensor larger than a shader can bind is refused
// with the limit stated, before Dawn sees it.
func TestBindingLimit(t *testing.T) {
	d := testDevice(t)
	n := int(d.limits.maxStorageBufferBindingSize/4) + 1
	_, err := backend{}.Alloc(dispatch.Device{Kind: kind}, dispatch.Float32, n)
	if !errors.Is(err, dispatch.ErrOutOfMemory) || !strings.Contains(err.Error(), "maxStorageBufferBindingSize") {
		t.Fatalf("allocating %d floats: %v, want ErrOutOfMemory stating maxStorageBufferBindingSize", n, err)
	}
	if _, err := (backend{}).Upload(dispatch.Device{Kind: kind}, []float64{1}); !errors.Is(err, dispatch.ErrUnsupported) || !strings.Contains(err.Error(), "float64") {
		t.Fatalf("uploading float64: %v, want ErrUnsupported naming float64", err)
	}
}

// TestNoVulkanDriverIsRefused opens Dawn in a child process whose Vulkan
// loader finds no driver: Dawn then offers its Null backend, which
// computes nothing, and lathe must call the device unavailable, saying why.
func TestNoVulkanDriverIsRefused(t *testing.T) {
	if os.Getenv("LATHE_WGPU_CHILD") == "1" {
		_, err := open()
		if err == nil {
			t.Fatal("wgpu:0 opened with no Vulkan driver")
		}
		if !errors.Is(err, dispatch.ErrUnavailable) {
			t.Fatalf("error %v, want ErrUnavailable", err)
		}
		t.Log(err)
		return
	}
	testDevice(t)
	out, err := testenv.RunChild("TestNoVulkanDriverIsRefused", "LATHE_WGPU_CHILD=1", "VK_DRIVER_FILES=/nonexistent/icd.json",
		"VK_ICD_FILENAMES=/nonexistent/icd.json")
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(out, "unavailable") {
		t.Fatalf("child said:\n%s", out)
	}
	t.Logf("child: %s", strings.TrimSpace(out))
}

// TestUploadWithAnErrorPending: an upload that finds an error Dawn
// reported earlier returns it, and gives its buffer back without waiting
// on the device's lock, which it holds (issue 15, defect 2: it deadlocked).
func TestUploadWithAnErrorPending(t *testing.T) {
	d := testDevice(t)
	uploadF32(t, []float32{0, 0, 0}).Release() // so that the upload's buffer comes from the cache
	d.mu.Lock()
	d.c.error_type = 2 // a validation error, as Dawn's callback would leave it
	d.c.error_message[0] = 0
	d.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		_, err := backend{}.Upload(dispatch.Device{Kind: kind}, []float32{1, 2, 3})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, dispatch.ErrUnsupported) {
			t.Fatalf("upload with an error pending: %v, want Dawn's refusal", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an upload with an error pending did not return in 30 s: deadlock")
	}
	stillWorks(t, uploadF32(t, []float32{1, 2, 3}))
}
