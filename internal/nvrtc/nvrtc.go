//go:build cgo

package nvrtc

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// The few NVRTC declarations used, written from NVRTC's documented API
// (the CUDA Toolkit's "NVRTC" guide, section 3) so that no CUDA header is
// needed: nvrtcResult is an int enum with NVRTC_SUCCESS = 0, and
// nvrtcProgram an opaque pointer.
typedef int nvrtcResult;
typedef void *nvrtcProgram;

typedef const char *(*nvrtcGetErrorString_t)(nvrtcResult);
typedef nvrtcResult (*nvrtcVersion_t)(int *, int *);
typedef nvrtcResult (*nvrtcCreateProgram_t)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
typedef nvrtcResult (*nvrtcCompileProgram_t)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*nvrtcGetSize_t)(nvrtcProgram, size_t *);
typedef nvrtcResult (*nvrtcGetText_t)(nvrtcProgram, char *);
typedef nvrtcResult (*nvrtcDestroyProgram_t)(nvrtcProgram *);

// lathe_nvrtc holds the library's entry points, found once by Open.
typedef struct {
	nvrtcGetErrorString_t errorString;
	nvrtcVersion_t version;
	nvrtcCreateProgram_t create;
	nvrtcCompileProgram_t compile;
	nvrtcGetSize_t ptxSize;
	nvrtcGetText_t ptx;
	nvrtcGetSize_t logSize;
	nvrtcGetText_t log;
	nvrtcDestroyProgram_t destroy;
} lathe_nvrtc;

// Calls through the function pointers: cgo cannot call a C function
// pointer from Go.
static const char *lathe_nvrtc_error_string(lathe_nvrtc *l, nvrtcResult r) { return l->errorString(r); }
static nvrtcResult lathe_nvrtc_version(lathe_nvrtc *l, int *maj, int *min) { return l->version(maj, min); }
static nvrtcResult lathe_nvrtc_create(lathe_nvrtc *l, nvrtcProgram *p, const char *src, const char *name) {
	return l->create(p, src, name, 0, NULL, NULL);
}
static nvrtcResult lathe_nvrtc_compile(lathe_nvrtc *l, nvrtcProgram p, int n, const char *const *opts) { return l->compile(p, n, opts); }
static nvrtcResult lathe_nvrtc_ptx_size(lathe_nvrtc *l, nvrtcProgram p, size_t *n) { return l->ptxSize(p, n); }
static nvrtcResult lathe_nvrtc_ptx(lathe_nvrtc *l, nvrtcProgram p, char *buf) { return l->ptx(p, buf); }
static nvrtcResult lathe_nvrtc_log_size(lathe_nvrtc *l, nvrtcProgram p, size_t *n) { return l->logSize(p, n); }
static nvrtcResult lathe_nvrtc_log(lathe_nvrtc *l, nvrtcProgram p, char *buf) { return l->log(p, buf); }
static nvrtcResult lathe_nvrtc_destroy(lathe_nvrtc *l, nvrtcProgram *p) { return l->destroy(p); }
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"unsafe"
)

// Library is an opened NVRTC. Its methods may be called from one goroutine
// at a time (NVRTC itself is thread-safe, but nothing here needs more).
type Library struct {
	path string
	fns  *C.lathe_nvrtc // C memory: cgo forbids C keeping Go pointers
}

// Open loads NVRTC from path (libnvrtc.so.11.2, say). NVRTC opens its
// builtins library (libnvrtc-builtins.so.<major>.<minor>) by soname when it
// first compiles; Open loads it first from the same folder with
// RTLD_GLOBAL, so that NVRTC finds it already loaded and needs no
// LD_LIBRARY_PATH.
func Open(path string) (*Library, error) {
	builtins, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "libnvrtc-builtins.so*"))
	for _, b := range builtins {
		cb := C.CString(b)
		h := C.dlopen(cb, C.RTLD_NOW|C.RTLD_GLOBAL)
		C.free(unsafe.Pointer(cb))
		if h != nil {
			break
		}
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("nvrtc: cannot open %s: %s (run make deps)", path, C.GoString(C.dlerror()))
	}
	fns := (*C.lathe_nvrtc)(C.calloc(1, C.sizeof_lathe_nvrtc))
	syms := []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"nvrtcGetErrorString", (*unsafe.Pointer)(unsafe.Pointer(&fns.errorString))},
		{"nvrtcVersion", (*unsafe.Pointer)(unsafe.Pointer(&fns.version))},
		{"nvrtcCreateProgram", (*unsafe.Pointer)(unsafe.Pointer(&fns.create))},
		{"nvrtcCompileProgram", (*unsafe.Pointer)(unsafe.Pointer(&fns.compile))},
		{"nvrtcGetPTXSize", (*unsafe.Pointer)(unsafe.Pointer(&fns.ptxSize))},
		{"nvrtcGetPTX", (*unsafe.Pointer)(unsafe.Pointer(&fns.ptx))},
		{"nvrtcGetProgramLogSize", (*unsafe.Pointer)(unsafe.Pointer(&fns.logSize))},
		{"nvrtcGetProgramLog", (*unsafe.Pointer)(unsafe.Pointer(&fns.log))},
		{"nvrtcDestroyProgram", (*unsafe.Pointer)(unsafe.Pointer(&fns.destroy))},
	}
	for _, s := range syms {
		cs := C.CString(s.name)
		p := C.dlsym(h, cs)
		C.free(unsafe.Pointer(cs))
		if p == nil {
			C.free(unsafe.Pointer(fns))
			C.dlclose(h)
			return nil, fmt.Errorf("nvrtc: %s has no symbol %s", path, s.name)
		}
		*s.dst = p
	}
	return &Library{path: path, fns: fns}, nil
}

// Version is NVRTC's version, as major and minor (11 and 8 for 11.8).
func (l *Library) Version() (major, minor int, err error) {
	var maj, min C.int
	if err := l.check("nvrtcVersion", C.lathe_nvrtc_version(l.fns, &maj, &min)); err != nil {
		return 0, 0, err
	}
	return int(maj), int(min), nil
}

// Compile compiles one CUDA C++ source to PTX. name is what NVRTC's
// messages call the source (its file name); opts are nvcc-style options
// (--gpu-architecture=compute_70, --include-path=dir, ...). A source that
// does not compile gives an error holding NVRTC's log.
func (l *Library) Compile(src, name string, opts []string) ([]byte, error) {
	csrc, cname := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cname))
	var prog C.nvrtcProgram
	if err := l.check("nvrtcCreateProgram", C.lathe_nvrtc_create(l.fns, &prog, csrc, cname)); err != nil {
		return nil, err
	}
	defer C.lathe_nvrtc_destroy(l.fns, &prog)

	// The options array lives in C memory: C may not hold a Go pointer to
	// Go memory that itself holds Go pointers.
	copts := unsafe.Slice((**C.char)(C.calloc(C.size_t(len(opts)+1), C.size_t(unsafe.Sizeof((*C.char)(nil))))), len(opts)+1)
	defer C.free(unsafe.Pointer(&copts[0]))
	for i, o := range opts {
		copts[i] = C.CString(o)
		defer C.free(unsafe.Pointer(copts[i]))
	}
	res := C.lathe_nvrtc_compile(l.fns, prog, C.int(len(opts)), &copts[0])
	if res != 0 {
		return nil, fmt.Errorf("nvrtc: %s: %s:\n%s", name, C.GoString(C.lathe_nvrtc_error_string(l.fns, res)), l.log(prog))
	}

	var n C.size_t
	if err := l.check("nvrtcGetPTXSize", C.lathe_nvrtc_ptx_size(l.fns, prog, &n)); err != nil {
		return nil, err
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if err := l.check("nvrtcGetPTX", C.lathe_nvrtc_ptx(l.fns, prog, (*C.char)(buf))); err != nil {
		return nil, err
	}
	// The size counts the terminating NUL.
	return C.GoBytes(buf, C.int(n-1)), nil
}

// log is the program's compilation log, or what stopped it being read.
func (l *Library) log(prog C.nvrtcProgram) string {
	var n C.size_t
	if err := l.check("nvrtcGetProgramLogSize", C.lathe_nvrtc_log_size(l.fns, prog, &n)); err != nil {
		return err.Error()
	}
	buf := C.malloc(n)
	defer C.free(buf)
	if err := l.check("nvrtcGetProgramLog", C.lathe_nvrtc_log(l.fns, prog, (*C.char)(buf))); err != nil {
		return err.Error()
	}
	return C.GoString((*C.char)(buf))
}

// check turns an NVRTC result into an error that names the call and gives
// NVRTC's own name for the code.
func (l *Library) check(call string, r C.nvrtcResult) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("nvrtc: %s: %s (code %d)", call, C.GoString(C.lathe_nvrtc_error_string(l.fns, r)), int(r))
}
