package wgpu

import (
	"fmt"
	"sync"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/kernels/wgsl"
)

// This file is what the op families (ops_*.go) build on: shaders rendered
// once per specialisation, the workgroup grid, and the parameter words of
// a strided layout. The launch itself is launch (launch.go).

// shader is one specialisation of a kernel family: its WGSL and the key
// under which its compiled pipeline is cached.
type shader struct {
	key  string
	code string
}

var (
	shadersMu sync.Mutex
	shaders   = map[string]*shader{}
)

// shaderFor renders family's template with data the first time key is
// asked for (key must name every field of data that changes the source).
func shaderFor(key, family string, data any) (*shader, error) {
	shadersMu.Lock()
	defer shadersMu.Unlock()
	if sh, ok := shaders[key]; ok {
		return sh, nil
	}
	code, err := wgsl.Render(family, data)
	if err != nil {
		return nil, fmt.Errorf("wgpu: rendering %s: %w", key, err)
	}
	sh := &shader{key: key, code: code}
	shaders[key] = sh
	return sh, nil
}

// register gives op name a wgpu kernel.
func register(name string, k dispatch.Kernel) { dispatch.RegisterKernel(kind, name, k) }

// wgslType is the WGSL element type that holds a dtype on wgpu:0.
func wgslType(dt dispatch.DType) (string, bool) {
	switch dt {
	case dispatch.Float32:
		return "f32", true
	case dispatch.Int32:
		return "i32", true
	case dispatch.Bool:
		return "u32", true
	}
	return "", false
}

// workgroup is the number of invocations per workgroup in every kernel.
const workgroup = 256

// grid returns the workgroups that cover n items, workgroup per group:
// x up to 65535 (WebGPU's least maxComputeWorkgroupsPerDimension), then y.
func grid(n int) [3]uint32 {
	groups := (n + workgroup - 1) / workgroup
	if groups <= 65535 {
		return [3]uint32{uint32(max(groups, 1)), 1, 1}
	}
	y := (groups + 65534) / 65535
	return [3]uint32{uint32((groups + y - 1) / y), uint32(y), 1}
}

// maxRank is the largest rank a strided layout carries.
const maxRank = 8

// stridedParams are the parameter words of the prelude's layout: n, the
// rank, out's shape, then for each argument its offset and its strides
// broadcast to out's shape. Arguments of a rank past maxRank are refused.
func stridedParams(op string, out *dispatch.Tensor, in ...*dispatch.Tensor) ([]uint32, error) {
	rank := len(out.Shape)
	if rank > maxRank {
		return nil, &dispatch.Error{Op: op, Kind: dispatch.ErrUnsupported,
			Detail: fmt.Sprintf("has rank %d on wgpu:0, which takes up to %d dims", rank, maxRank),
			Fix:    "reshape to fewer dims"}
	}
	p := make([]uint32, 10+9*len(in))
	p[0] = uint32(out.Numel())
	p[1] = uint32(rank)
	for d, s := range out.Shape {
		p[2+d] = uint32(s)
	}
	for k, t := range in {
		base := 10 + 9*k
		p[base] = uint32(int32(t.Offset))
		for d, s := range dispatch.BroadcastStrides(t, out.Shape) {
			p[base+1+d] = uint32(int32(s))
		}
	}
	return p, nil
}
