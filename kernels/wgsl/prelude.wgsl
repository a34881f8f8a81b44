{{/*
The prelude every kernel includes with {{template "prelude" .}}.

Launch contract shared by all kernels:
- binding 0 is the op's parameter words (read-only u32s): p[0] is the
  number of work items n; kernels read their own fields after it.
- bindings 1.. are the tensors, in the order the Go side passes them, each
  bound whole; element offsets come in the parameters.
- workgroups are 256 invocations wide; the grid is (x, y, 1) workgroups with
  x <= 65535, and item i = (gid.y * num_workgroups.x) * 256 + gid.x; items
  at or past n return at once.
- a kernel whose items are single elements of a flat walk (elementwise,
  copy, fill, convert) takes ITEM_ELEMENTS of them an invocation: invocation l of
  workgroup w takes elements w·256·ITEM_ELEMENTS + l + 256·k for
  k < ITEM_ELEMENTS (flat_main), so that a workgroup's invocations still
  touch neighbouring elements together, as a GPU wants. On lavapipe that takes about a third off such a kernel: it
  works out each invocation's local id with an integer division by the
  workgroup size, per lane, which costs as much as a float multiply's
  whole element.
- a strided argument k has its layout at p[10 + 9k]: the element offset,
  then one stride per dim (i32, 0 where broadcast) for the rank in p[1]
  and the walk's shape (the output's) in p[2 .. 10). The host collapses
  the walk first (layout.Walk.Collapse), so 8 slots hold any walk whose
  dims merge to at most 8.
*/}}
{{define "prelude"}}
@group(0) @binding(0) var<storage, read> p: array<u32>;

const WG: u32 = 256u;
const ITEM_ELEMENTS: u32 = 8u;

fn item(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.y * nwg.x * WG + gid.x;
}


// strided maps output item i (row-major over the output shape) to argument
// k's element index.
fn strided(k: u32, i: u32) -> u32 {
    let rank = p[1];
    let base = 10u + 9u * k;
    var rem = i;
    var idx = bitcast<i32>(p[base]);
    for (var d = i32(rank) - 1; d >= 0; d = d - 1) {
        let size = p[2u + u32(d)];
        let c = rem % size;
        rem = rem / size;
        idx = idx + i32(c) * bitcast<i32>(p[base + 1u + u32(d)]);
    }
    return u32(idx);
}
{{end}}

{{/*
flat_main: the entry point of a flat kernel, which calls the function its
argument names, fn(i: u32), on each of its invocation's ITEM_ELEMENTS
items, WG apart; items at or past p[0] return.
*/}}
{{define "flat_main"}}
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
    let first = (item(gid, nwg) - lid.x) * ITEM_ELEMENTS + lid.x;
    for (var k = 0u; k < ITEM_ELEMENTS; k = k + 1u) {
        let i = first + k * WG;
        if (i >= p[0]) {
            return;
        }
        {{.}}(i);
    }
}
{{end}}
