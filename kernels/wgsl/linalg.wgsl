{{/*
matmul: out[b, i, j] = sum over p of A[b, i, p] * B[b, p, j], for a batch of
n×k times k×m products. Data: .T is the WGSL element type (f32 or i32; i32
products and sums wrap, as PyTorch's do).

Launch: one workgroup of 16×16 invocations per 64×64 tile of one product's
output, each invocation computing a 4×4 block of it (rows ty + 16r, cols
tx + 16c, so that neighbours touch neighbouring words). The tiles are
numbered batch-major, then row tile, then column tile, and spread over the
(x, y) grid as items are (workgroup index y·nwg.x + x); tiles at or past
p[0] return. A and B are read through strides, so a transposed or strided
view needs no copy; their tiles are staged in workgroup memory, 16 steps of
k at a time, padded with zeros past the matrix edges. out is contiguous at
element 0.

Parameters (u32 words; strides and offsets are i32 bits):
  p[0] tiles, p[1] n, p[2] k, p[3] m, p[4] row tiles, p[5] column tiles,
  p[6..9) A's offset, row stride, column stride,
  p[9..12) B's offset, row stride, column stride,
  p[12] the batch rank r (up to 6), p[13..19) the batch shape,
  p[19..25) A's batch strides, p[25..31) B's (0 where broadcast).
*/}}
{{define "matmul"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> lhs: array<{{.T}}>;
@group(0) @binding(3) var<storage, read> rhs: array<{{.T}}>;

const TILE: u32 = 64u;
const STEP: u32 = 16u;

// tileA[s][r] is A's element (row0 + r, k0 + s); tileB[s][c] is B's (k0 + s, col0 + c).
var<workgroup> tileA: array<array<{{.T}}, 64>, 16>;
var<workgroup> tileB: array<array<{{.T}}, 64>, 16>;

fn si(w: u32) -> i32 {
    return bitcast<i32>(w);
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let tile = wg.y * nwg.x + wg.x;
    if (tile >= p[0]) {
        return;
    }
    let n = p[1];
    let k = p[2];
    let m = p[3];
    let per = p[4] * p[5];
    var b = tile / per;
    let row0 = (tile % per) / p[5] * TILE;
    let col0 = (tile % per) % p[5] * TILE;
    let out0 = b * n * m;

    // The batch index, row-major over the batch shape, gives each operand's
    // matrix offset.
    var aoff = si(p[6]);
    var boff = si(p[9]);
    for (var d = i32(p[12]) - 1; d >= 0; d = d - 1) {
        let size = p[13u + u32(d)];
        let c = i32(b % size);
        b = b / size;
        aoff = aoff + c * si(p[19u + u32(d)]);
        boff = boff + c * si(p[25u + u32(d)]);
    }
    let ars = si(p[7]);
    let acs = si(p[8]);
    let brs = si(p[10]);
    let bcs = si(p[11]);

    // acc[r] holds row ty + 16r, columns tx + 16c in its lanes c.
    var acc: array<vec4<{{.T}}>, 4>;
    for (var k0 = 0u; k0 < k; k0 = k0 + STEP) {
        // 1024 elements of each tile, 4 per invocation.
        for (var s = 0u; s < 4u; s = s + 1u) {
            let e = li + 256u * s;
            let ar = e / STEP;
            let ak = e % STEP;
            var av = {{.T}}(0);
            if (row0 + ar < n && k0 + ak < k) {
                av = lhs[u32(aoff + i32(row0 + ar) * ars + i32(k0 + ak) * acs)];
            }
            tileA[ak][ar] = av;
            let bk = e / TILE;
            let bc = e % TILE;
            var bv = {{.T}}(0);
            if (k0 + bk < k && col0 + bc < m) {
                bv = rhs[u32(boff + i32(k0 + bk) * brs + i32(col0 + bc) * bcs)];
            }
            tileB[bk][bc] = bv;
        }
        workgroupBarrier();
        for (var s = 0u; s < STEP; s = s + 1u) {
            let bv = vec4<{{.T}}>(tileB[s][lid.x], tileB[s][lid.x + 16u], tileB[s][lid.x + 32u], tileB[s][lid.x + 48u]);
            acc[0] = acc[0] + tileA[s][lid.y] * bv;
            acc[1] = acc[1] + tileA[s][lid.y + 16u] * bv;
            acc[2] = acc[2] + tileA[s][lid.y + 32u] * bv;
            acc[3] = acc[3] + tileA[s][lid.y + 48u] * bv;
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < 4u; r = r + 1u) {
        let row = row0 + lid.y + 16u * r;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let col = col0 + lid.x + 16u * c;
            if (row < n && col < m) {
                dst[out0 + row * m + col] = acc[r][c];
            }
        }
    }
}
{{end}}
