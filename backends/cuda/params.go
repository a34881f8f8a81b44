package cuda

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lathe-ml/lathe/dispatch"
)

// Kernel parameters and launch geometry, checked and laid out in plain Go
// before anything reaches the driver.
//
// cuLaunchKernel takes kernelParams as an array of pointers, one per
// parameter of the kernel, each pointing at that parameter's value; the
// driver copies the values before it returns. lathe lays the values out in
// one byte image (packParams), each at an offset aligned to its size (8 for
// a struct, whose fields the kernels declare 8-byte aligned), and the cgo
// side copies the image into C memory and points the array into it, so C
// never holds a Go pointer.

// maxParams bounds the parameters of a launch; the C side's pointer array
// has this many entries. (The driver's own limit is 4 KiB of parameters,
// 32 KiB on Volta and later with CUDA 12.1.)
const maxParams = 64

// packParams lays the launch arguments out as the kernel reads them: the
// byte image, and each parameter's offset in it and size. Each argument is a uint64
// (a device pointer), int32, uint32, int64, float32, float64, or a []byte
// holding a struct passed by value.
func packParams(args []any) (image []byte, offsets, sizes []uint32, err error) {
	if len(args) > maxParams {
		return nil, nil, nil, &dispatch.Error{Kind: dispatch.ErrValue,
			Detail: fmt.Sprintf("a kernel launch with %d parameters: at most %d are supported", len(args), maxParams)}
	}
	offsets, sizes = make([]uint32, len(args)), make([]uint32, len(args))
	le := binary.LittleEndian // the byte order of every GPU that CUDA drives, and of its hosts
	for i, a := range args {
		var size int
		switch a.(type) {
		case int32, uint32, float32:
			size = 4
		case uint64, int64, float64:
			size = 8
		case []byte:
			size = 8 // the alignment of a struct of 8-byte fields
		case int, uint, uintptr:
			return nil, nil, nil, &dispatch.Error{Kind: dispatch.ErrValue,
				Detail: fmt.Sprintf("kernel parameter %d is a %T, whose size the kernel cannot know", i, a),
				Fix:    "pass int64, int32 or uint64 as the kernel declares"}
		default:
			return nil, nil, nil, &dispatch.Error{Kind: dispatch.ErrValue,
				Detail: fmt.Sprintf("kernel parameter %d is a %T; a launch takes uint64 (a device pointer), int32, uint32, int64, float32, float64 or []byte (a struct)", i, a),
				Fix:    "convert it to the type that the kernel declares"}
		}
		for len(image)%size != 0 {
			image = append(image, 0)
		}
		offsets[i] = uint32(len(image))
		switch v := a.(type) {
		case int32:
			image = le.AppendUint32(image, uint32(v))
		case uint32:
			image = le.AppendUint32(image, v)
		case float32:
			image = le.AppendUint32(image, math.Float32bits(v))
		case uint64:
			image = le.AppendUint64(image, v)
		case int64:
			image = le.AppendUint64(image, uint64(v))
		case float64:
			image = le.AppendUint64(image, math.Float64bits(v))
		case []byte:
			if len(v) == 0 {
				return nil, nil, nil, &dispatch.Error{Kind: dispatch.ErrValue,
					Detail: fmt.Sprintf("kernel parameter %d is an empty struct", i)}
			}
			image = append(image, v...)
		}
		sizes[i] = uint32(len(image)) - offsets[i]
	}
	return image, offsets, sizes, nil
}

// packInt64s lays out a struct of int64 fields, as a kernel's by-value
// struct parameter of that many `long long`s reads it.
func packInt64s(fields ...int64) []byte {
	b := make([]byte, 0, 8*len(fields))
	for _, f := range fields {
		b = binary.LittleEndian.AppendUint64(b, uint64(f))
	}
	return b
}

// The limits of a launch's geometry on every GPU from compute capability
// 3.0 on (the CUDA C programming guide's table of technical specifications).
const (
	maxBlockThreads = 1024
	maxBlockXY      = 1024
	maxBlockZ       = 64
	maxGridX        = 1<<31 - 1
	maxGridYZ       = 65535
)

// checkGeometry returns an ErrValue error for grid and block sizes that no
// GPU launches, so that a kernel registration's mistake reads as an error
// naming the kernel rather than a driver code.
func checkGeometry(kernel string, grid, block [3]uint32) error {
	bad := func(what string) error {
		return &dispatch.Error{Kind: dispatch.ErrValue,
			Detail: fmt.Sprintf("kernel %s launched with grid %v and block %v: %s", kernel, grid, block, what)}
	}
	for i, n := range grid {
		if n == 0 {
			return bad(fmt.Sprintf("grid dim %d is 0", i))
		}
	}
	for i, n := range block {
		if n == 0 {
			return bad(fmt.Sprintf("block dim %d is 0", i))
		}
	}
	switch {
	case uint64(grid[0]) > maxGridX:
		return bad(fmt.Sprintf("grid x is at most %d", maxGridX))
	case grid[1] > maxGridYZ || grid[2] > maxGridYZ:
		return bad(fmt.Sprintf("grid y and z are at most %d", maxGridYZ))
	case block[0] > maxBlockXY || block[1] > maxBlockXY || block[2] > maxBlockZ:
		return bad(fmt.Sprintf("block x and y are at most %d and z at most %d", maxBlockXY, maxBlockZ))
	case uint64(block[0])*uint64(block[1])*uint64(block[2]) > maxBlockThreads:
		return bad(fmt.Sprintf("a block has at most %d threads", maxBlockThreads))
	}
	return nil
}

// checkParams compares what a launch passes with the parameters the kernel
// declares (want, from cuFuncGetParamInfo; nil where the driver cannot
// say), so that a registration that disagrees with its kernel is an error
// naming both instead of a kernel reading garbage.
func checkParams(kernel string, want []int, got []uint32) error {
	if want == nil {
		return nil
	}
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == int(got[i])
	}
	if ok {
		return nil
	}
	return &dispatch.Error{Kind: dispatch.ErrValue,
		Detail: fmt.Sprintf("kernel %s takes %d parameters of %v bytes, but the launch passed %d of %v bytes", kernel, len(want), want, len(got), got),
		Fix:    "make the op's launch pass the parameters that the kernel's CUDA C signature declares"}
}
