{{/*
matmul_offsets: what every matmul kernel shares. si reads a parameter word
as the i32 it holds; offsets(b) is the element offsets of A's and B's
matrices in product b, row-major over the batch shape that the parameters
carry (p[12] dims, shape at p[13..], A's strides at p[19..], B's at
p[25..]).
*/}}
{{define "matmul_offsets"}}
fn si(w: u32) -> i32 {
    return bitcast<i32>(w);
}

fn offsets(batch: u32) -> vec2<i32> {
    var b = batch;
    var off = vec2<i32>(si(p[6]), si(p[9]));
    for (var d = i32(p[12]) - 1; d >= 0; d = d - 1) {
        let size = p[13u + u32(d)];
        let c = i32(b % size);
        b = b / size;
        off = off + c * vec2<i32>(si(p[19u + u32(d)]), si(p[25u + u32(d)]));
    }
    return off;
}
{{end}}

{{/*
matmul: out[b, i, j] = sum over p of A[b, i, p] * B[b, p, j], for a batch of
n×k times k×m products. Data: .T is the WGSL element type (f32 or i32; i32
products and sums wrap, as PyTorch's do).

Launch: one workgroup of 16×16 invocations per 64×64 tile of one product's
output, invocation (tx, ty) computing the 4×4 block at rows 4ty .. + 4 and
columns 4tx .. + 4 of it. The tiles are numbered batch-major, then row
tile, then column tile, and spread over the (x, y) grid as items are
(workgroup index y·nwg.x + x); tiles at or past p[0] return. A and B are
read through strides, so a transposed or strided view needs no copy; their
tiles are staged in workgroup memory as vectors of 4 rows (A) or 4 columns
(B), 32 steps of k at a time, padded with zeros past the matrix edges, so
that each step of the product is two vector reads and four vector
multiply-adds. out is contiguous at element 0.

Parameters (u32 words; strides and offsets are i32 bits):
  p[0] tiles, p[1] n, p[2] k, p[3] m, p[4] row tiles, p[5] column tiles,
  p[6..9) A's offset, row stride, column stride,
  p[9..12) B's offset, row stride, column stride,
  p[12] the batch rank r (up to 6, after the host collapses the batch
  walk), p[13..19) the batch shape,
  p[19..25) A's batch strides, p[25..31) B's (0 where broadcast).
*/}}
{{define "matmul"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> lhs: array<{{.T}}>;
@group(0) @binding(3) var<storage, read> rhs: array<{{.T}}>;

const TILE: u32 = 64u;
const STEP: u32 = 32u;

// tileA[s][g] holds A's rows row0 + 4g .. + 4 at column k0 + s; tileB[s][g]
// B's columns col0 + 4g .. + 4 at row k0 + s (16 KiB in all, WebGPU's
// least maxComputeWorkgroupStorageSize).
var<workgroup> tileA: array<array<vec4<{{.T}}>, 16>, 32>;
var<workgroup> tileB: array<array<vec4<{{.T}}>, 16>, 32>;

{{template "matmul_offsets"}}

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
    let b = tile / per;
    let row0 = (tile % per) / p[5] * TILE;
    let col0 = (tile % per) % p[5] * TILE;
    let out0 = b * n * m;
    let off = offsets(b);
    let aoff = off.x;
    let boff = off.y;
    let ars = si(p[7]);
    let acs = si(p[8]);
    let brs = si(p[10]);
    let bcs = si(p[11]);

    // acc[r] holds row 4ty + r, columns 4tx .. + 4 in its lanes.
    var acc: array<vec4<{{.T}}>, 4>;
    for (var k0 = 0u; k0 < k; k0 = k0 + STEP) {
        // 512 vectors of each tile, 2 per invocation.
        for (var s = 0u; s < 2u; s = s + 1u) {
            let e = li + 256u * s;
            let ak = e % STEP;
            let ag = e / STEP;
            var av = vec4<{{.T}}>();
            if (k0 + ak < k) {
                for (var r = 0u; r < 4u; r = r + 1u) {
                    let row = row0 + 4u * ag + r;
                    if (row < n) {
                        av[r] = lhs[u32(aoff + i32(row) * ars + i32(k0 + ak) * acs)];
                    }
                }
            }
            tileA[ak][ag] = av;
            let bg = e % 16u;
            let bk = e / 16u;
            var bv = vec4<{{.T}}>();
            if (k0 + bk < k) {
                for (var c = 0u; c < 4u; c = c + 1u) {
                    let col = col0 + 4u * bg + c;
                    if (col < m) {
                        bv[c] = rhs[u32(boff + i32(k0 + bk) * brs + i32(col) * bcs)];
                    }
                }
            }
            tileB[bk][bg] = bv;
        }
        workgroupBarrier();
        for (var s = 0u; s < STEP; s = s + 1u) {
            let a = tileA[s][lid.y];
            let bv = tileB[s][lid.x];
            acc[0] = acc[0] + a.x * bv;
            acc[1] = acc[1] + a.y * bv;
            acc[2] = acc[2] + a.z * bv;
            acc[3] = acc[3] + a.w * bv;
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < 4u; r = r + 1u) {
        let row = row0 + 4u * lid.y + r;
        for (var c = 0u; c < 4u; c = c + 1u) {
            let col = col0 + 4u * lid.x + c;
            if (row < n && col < m) {
                dst[out0 + row * m + col] = acc[r][c];
            }
        }
    }
}
{{end}}

{{/*
matmul_cpu: matmul for a CPU adapter (lavapipe), the same product and
parameters as matmul's. There workgroup memory is ordinary memory, a
barrier switches between the invocations' coroutines, and every load is a
scalar load per lane, so what counts is the multiply-adds per load: each
invocation reads A and B where they are and keeps an 8×8 block of the
output in registers, 16 loads for 64 multiply-adds a step of k, where
matmul's 4×4 block takes 8 from workgroup memory for 16 (on lavapipe
256×256 products run 3× faster). Rows and columns past the edge read the
last row or column and are not written; an invocation whose block lies
wholly past an edge returns, so that its lanes cost nothing.

Launch: one workgroup of 16×16 invocations per 128×128 tile, numbered as
matmul's (p[4] and p[5] count 128-row and 128-column tiles).
*/}}
{{define "matmul_cpu"}}{{template "prelude" .}}
@group(0) @binding(1) var<storage, read_write> dst: array<{{.T}}>;
@group(0) @binding(2) var<storage, read> lhs: array<{{.T}}>;
@group(0) @binding(3) var<storage, read> rhs: array<{{.T}}>;

const BLOCK: u32 = 8u;
const TILE: u32 = 128u;

{{template "matmul_offsets"}}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let tile = wg.y * nwg.x + wg.x;
    let n = p[1];
    let k = p[2];
    let m = p[3];
    let per = p[4] * p[5];
    let row0 = (tile % per) / p[5] * TILE + BLOCK * lid.y;
    let col0 = (tile % per) % p[5] * TILE + BLOCK * lid.x;
    if (tile >= p[0] || row0 >= n || col0 >= m) {
        return;
    }
    let b = tile / per;
    let off = offsets(b);
    let ars = si(p[7]);
    let acs = si(p[8]);
    let brs = si(p[10]);
    let bcs = si(p[11]);
    var arow: array<i32, BLOCK>;
    var bcol: array<i32, BLOCK>;
    for (var r = 0u; r < BLOCK; r = r + 1u) {
        arow[r] = off.x + i32(min(row0 + r, n - 1u)) * ars;
        bcol[r] = off.y + i32(min(col0 + r, m - 1u)) * bcs;
    }
    // acc[2r] and acc[2r + 1] hold row row0 + r, columns col0 .. + 8.
    var acc: array<vec4<{{.T}}>, 16>;
    for (var q = 0u; q < k; q = q + 1u) {
        let ak = i32(q) * acs;
        let bk = i32(q) * brs;
        let b0 = vec4<{{.T}}>(rhs[u32(bcol[0] + bk)], rhs[u32(bcol[1] + bk)], rhs[u32(bcol[2] + bk)], rhs[u32(bcol[3] + bk)]);
        let b1 = vec4<{{.T}}>(rhs[u32(bcol[4] + bk)], rhs[u32(bcol[5] + bk)], rhs[u32(bcol[6] + bk)], rhs[u32(bcol[7] + bk)]);
        for (var r = 0u; r < BLOCK; r = r + 1u) {
            let a = lhs[u32(arow[r] + ak)];
            acc[2u * r] = acc[2u * r] + a * b0;
            acc[2u * r + 1u] = acc[2u * r + 1u] + a * b1;
        }
    }
    let out0 = b * n * m;
    for (var r = 0u; r < BLOCK && row0 + r < n; r = r + 1u) {
        for (var c = 0u; c < BLOCK && col0 + c < m; c = c + 1u) {
            dst[out0 + (row0 + r) * m + col0 + c] = acc[2u * r + c / 4u][c % 4u];
        }
    }
}
{{end}}

{{/*
matmul_i64: matmul of int64 (int64.wgsl's products and sums, which wrap as
the cpu's do). WGSL has no vectors of int64s for the tiled kernel's
blocks, so each invocation computes one output element, reading its row of
A and column of B through their strides.

Launch: one item per output element (b, i, j), row-major, items at or past
p[0] return. Parameters are matmul's, but p[0] is the number of output
elements (p[4] and p[5] unused).
*/}}
{{define "matmul_i64"}}{{template "prelude" .}}
{{template "int64"}}
@group(0) @binding(1) var<storage, read_write> dst: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> lhs: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> rhs: array<vec2<u32>>;

{{template "matmul_offsets"}}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = item(gid, nwg);
    if (e >= p[0]) {
        return;
    }
    let n = p[1];
    let k = p[2];
    let m = p[3];
    let j = e % m;
    let i = e / m % n;
    let off = offsets(e / m / n);
    let aoff = off.x;
    let boff = off.y;
    let arow = aoff + i32(i) * si(p[7]);
    let bcol = boff + i32(j) * si(p[11]);
    var acc = vec2<u32>(0u, 0u);
    for (var t = 0u; t < k; t = t + 1u) {
        let a = lhs[u32(arow + i32(t) * si(p[8]))];
        let bv = rhs[u32(bcol + i32(t) * si(p[10]))];
        acc = i64_add(acc, i64_mul(a, bv));
    }
    dst[e] = acc;
}
{{end}}
