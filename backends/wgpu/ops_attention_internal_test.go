//go:build cgo

package wgpu

import (
	"testing"

	"github.com/lathe-ml/lathe/dispatch"
	"github.com/lathe-ml/lathe/dispatch/ops"
	"github.com/lathe-ml/lathe/internal/philox"
	"github.com/lathe-ml/lathe/kernels/wgsl"
)

// TestAttentionKeptPast2to32: the attention kernels' dropout bits (kept,
// attention.wgsl) of elements whose index in the probabilities passes
// 2^32, which the fused ops reach with Lq·Lk past 2^32 and no buffer that
// large, but which lavapipe would take minutes to run: kept itself, in a
// kernel of one invocation, against internal/philox. The cases carry out
// of row·Lk's low word, out of adding j0 to it, and out of the counter's
// low word between two blocks of a row.
func TestAttentionKeptPast2to32(t *testing.T) {
	wgpuOrSkip(t)
	prelude, err := wgsl.Render("prelude", nil)
	if err != nil {
		t.Fatal(err)
	}
	dropout, err := wgsl.Render("attention_dropout", nil)
	if err != nil {
		t.Fatal(err)
	}
	sh := &shader{key: "test/attention_kept", code: prelude + dropout + `
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x == 0u) {
        dst[0] = kept(p[1], p[2], p[3]);
    }
}
`}
	m := ops.Mask{P: 0.5, Key: 0x9e3779b97f4a7c15}
	dev := dispatch.Device{Kind: kind}
	for _, c := range []struct {
		name              string
		row, lk, j0, keys uint32
	}{
		{"small", 3, 37, 6, 32},
		{"row_times_lk_past_2^32", 70000, 70001, 35, 32},
		{"carry_adding_j0", 65535, 65537, 5, 20},
		{"counter_low_word_wraps", 1<<17 - 1, 1 << 17, 1<<17 - 6, 32},
		{"near_2^62", 1<<30 - 1, 1<<32 - 1, 1<<32 - 40, 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst, err := dispatch.Empty(dev, dispatch.Int32, []int{1})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Release()
			p := make([]uint32, 45)
			p[0], p[1], p[2], p[3], p[5] = 1, c.row, c.j0, c.keys, c.lk
			p[41], p[42], p[43] = uint32(m.Key), uint32(m.Key>>32), m.Threshold()
			if err := launch("attention_kept", sh, grid(1), p, dst); err != nil {
				t.Fatal(err)
			}
			data, err := registered.Read(dst.Device, dst.Storage.Buffer, dst.DType, dst.Offset, 1)
			if err != nil {
				t.Fatal(err)
			}
			got := uint32(data.([]int32)[0])
			want := uint32(0)
			for r := range c.keys {
				x := uint64(c.row)*uint64(c.lk) + uint64(c.j0) + uint64(r)
				if philox.Words(m.Key, x)[x%4] >= m.Threshold() {
					want |= 1 << r
				}
			}
			if got != want {
				t.Errorf("kept(%d, %d, %d) with Lk %d = %032b, want %032b", c.row, c.j0, c.keys, c.lk, got, want)
			}
		})
	}
}
