//go:build cgo

package cudaemu

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*lathe_emu_launch_t)(const char *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **);

static int lathe_emu_call(void *f, const char *name, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, void **args) {
	return ((lathe_emu_launch_t)f)(name, gx, gy, gz, bx, by, bz, args);
}
static void *lathe_emu_ptr(uint64_t p) { return (void *)(uintptr_t)p; }
static uint64_t lathe_emu_addr(void *p) { return (uint64_t)(uintptr_t)p; }
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

const cgoEnabled = true

// Emulator is an opened emulation library.
type Emulator struct {
	launch unsafe.Pointer
}

// Open loads an emulation library (Load builds one and opens it).
func Open(path string) (*Emulator, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	h := C.dlopen(cpath, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		return nil, fmt.Errorf("cudaemu: cannot open %s: %s", path, C.GoString(C.dlerror()))
	}
	sym := C.CString("lathe_emu_launch")
	defer C.free(unsafe.Pointer(sym))
	f := C.dlsym(h, sym)
	if f == nil {
		return nil, fmt.Errorf("cudaemu: %s has no lathe_emu_launch", path)
	}
	return &Emulator{launch: f}, nil
}

// Launch runs kernel fn over grid and block, with args as the cuda
// backend's launch takes them (uint64 pointers, int32, uint32, int64,
// float32, float64, or []byte structs), each copied to its own buffer as
// cuLaunchKernel's kernelParams are.
func (e *Emulator) Launch(fn string, grid, block [3]uint32, args ...any) error {
	bufs := make([]unsafe.Pointer, len(args))
	defer func() {
		for _, b := range bufs {
			C.free(b)
		}
	}()
	params := (*[1 << 20]unsafe.Pointer)(C.calloc(C.size_t(max(len(args), 1)), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
	defer C.free(unsafe.Pointer(params))
	for i, a := range args {
		var b []byte
		switch v := a.(type) {
		case uint64:
			b = binary.LittleEndian.AppendUint64(nil, v)
		case int64:
			b = binary.LittleEndian.AppendUint64(nil, uint64(v))
		case int32:
			b = binary.LittleEndian.AppendUint32(nil, uint32(v))
		case uint32:
			b = binary.LittleEndian.AppendUint32(nil, v)
		case float64:
			b = binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
		case float32:
			b = binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
		case []byte:
			b = v
		default:
			return fmt.Errorf("cudaemu: %s: argument %d is a %T", fn, i, a)
		}
		bufs[i] = C.CBytes(b)
		params[i] = bufs[i]
	}
	cfn := C.CString(fn)
	defer C.free(unsafe.Pointer(cfn))
	switch C.lathe_emu_call(e.launch, cfn, C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block[0]), C.uint(block[1]), C.uint(block[2]), &params[0]) {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("cudaemu: no kernel %s in the library", fn)
	case 1: // simt::stuck
		return fmt.Errorf("cudaemu: %s: threads of a block wait at a barrier that the block's other threads have left (a __syncthreads under a condition they do not share; on a GPU, a hang)", fn)
	case 2: // simt::no_stack
		return fmt.Errorf("cudaemu: %s: cannot map a stack for each of a block's %d threads", fn, block[0]*block[1]*block[2])
	default: // simt::bad_block
		return fmt.Errorf("cudaemu: %s: a block of %d×%d×%d threads (CUDA takes 1 to 1024)", fn, block[0], block[1], block[2])
	}
}

// Alloc returns n zeroed bytes of "device" memory (at least one byte).
func Alloc(n int) uint64 { return uint64(C.lathe_emu_addr(C.calloc(C.size_t(max(n, 1)), 1))) }

// Free frees memory from Alloc.
func Free(p uint64) { C.free(C.lathe_emu_ptr(C.uint64_t(p))) }

// Write copies b to p.
func Write(p uint64, b []byte) {
	if len(b) > 0 {
		C.memcpy(C.lathe_emu_ptr(C.uint64_t(p)), unsafe.Pointer(&b[0]), C.size_t(len(b)))
	}
}

// Read copies n bytes from p.
func Read(p uint64, n int) []byte { return C.GoBytes(C.lathe_emu_ptr(C.uint64_t(p)), C.int(n)) }
