{{/*
Fused scaled dot-product attention (ops.Attention, ops.AttentionBackward,
and their masked ops ops.AttentionMasked, ops.AttentionMaskedBackward),
the design of kernels/cuda/attention.cu in f32: each invocation owns one
row (a query row forward and for dQ, a key row for dK and dV) and holds the
TILE scores of the current tile of the other side's rows, which are staged
through workgroup memory DC columns at a time, with the online softmax
(running max and sum) of FlashAttention (Dao et al. 2022; backward as
FlashAttention-2). Nothing of size Lq x Lk exists. exp and log are
math.wgsl's expf and logf.

Data: .Kind is "fwd", "delta", "dkv" or "dq"; .Mask is the binding of the
additive mask of the masked ops (after every other tensor of the kernel),
or 0: the unmasked ops' kernels neither declare nor read one. The
mask is added to each score after the scale, s = scale * q.k + mask, where
a score is formed (fwd, dkv, dq; delta reads no score). A row whose
scores are all -Inf ends the forward with l = 0: its output is 0/0, NaN,
and its logsumexp -Inf, as the softmax gives; the backward's exp(s - lse)
is then exp(-Inf - -Inf), NaN, on purpose, with no special case.

.Dropout (fwd, dkv, dq) renders the dropout of the probabilities
(ops.AttentionParams): P_ij times M_ij, the scale or 0 by Philox's word of
element ((n * Hq + h) * Lq + i) * Lk + j (attention_dropout, at the end);
without it the kernels hold no trace of dropout. The forward's l and
logsumexp stay the undropped probabilities' and its output sums
P_ij M_ij v_j; dkv sums (P∘M)ᵀ·dO into dV and both backward kernels take
dS = P∘(dP∘M - D), with D = rowsum(dO∘O) - dlse as without dropout (delta
is never rendered with it).

Parameters: p[0] the workgroups' tiles (the delta kernel: its rows), p[1]
N, p[2] Hq, p[3] Hk, p[4] Lq, p[5] Lk, p[6] E, p[7] Ev, p[8] the scale (f32
bits), p[9] causal (0 or 1), p[10] dst's element offset; then per input a
layout of five words, the element offset and the strides of its four dims
(n, h, row, column): q at 11, k at 16, v at 21, the forward's result at 26
and its gradient at 31 (the backward's), the mask at 36 (the masked
kernels': [n, h, i, j], h the query head, its strides often 0 as a
broadcast view's); then the dropout at 41 (the .Dropout kernels'): the
key's low and high words, the threshold (ops.Mask.Threshold) and the kept
probabilities' factor (f32 bits of ops.Mask.Scale).

Launch: workgroups of ROWS (64) invocations; workgroup t = wid.y * nwg.x +
wid.x is tile t (at or past p[0] it returns: the whole workgroup, so the
barriers stay in uniform control flow): fwd and dq tiles are ROWS query
rows of one (n, h), N * Hq * ceil(Lq / ROWS) of them; dkv tiles ROWS key
rows of one (n, hk). dst is contiguous from p[10]: fwd writes [N, Hq, Lq,
Ev + 1]; the backward's dst is the flat [dq | dk | dv]; delta writes one
value per query row into its own buffer (binding 7, read by dkv).
*/}}
{{define "attention"}}{{template "prelude" .}}
{{template "math"}}
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<storage, read> q: array<f32>;
@group(0) @binding(3) var<storage, read> k: array<f32>;
@group(0) @binding(4) var<storage, read> v: array<f32>;
{{- if ne .Kind "fwd"}}
@group(0) @binding(5) var<storage, read> res: array<f32>;
@group(0) @binding(6) var<storage, read> gr: array<f32>;
{{- end}}
{{- if eq .Kind "dkv"}}
@group(0) @binding(7) var<storage, read> dd: array<f32>;
{{- end}}
{{- if .Mask}}
@group(0) @binding({{.Mask}}) var<storage, read> mask: array<f32>;
{{- end}}

const ROWS: u32 = 64u;
const TILE: u32 = 32u;
const DC: u32 = 32u;

var<workgroup> tile: array<f32, 1056>; // TILE x (DC + 1)
{{- if and .Dropout (eq .Kind "dkv")}}

// KEPT_WORDS is the words of kept's bits per query row of a dkv tile, 32
// of its ROWS keys a word; keptTile holds TILE rows of them, one word per
// invocation (TILE * ROWS / 32 = ROWS).
const KEPT_WORDS: u32 = ROWS / 32u;
const_assert TILE * KEPT_WORDS == ROWS;
var<workgroup> keptTile: array<u32, 64>;
{{- end}}

// at is the element index of [n, h, r, c] of the input whose layout is at
// p[l].
fn at(l: u32, n: u32, h: u32, r: u32, c: u32) -> u32 {
    return u32(bitcast<i32>(p[l]) + i32(n) * bitcast<i32>(p[l + 1u]) + i32(h) * bitcast<i32>(p[l + 2u]) +
        i32(r) * bitcast<i32>(p[l + 3u]) + i32(c) * bitcast<i32>(p[l + 4u]));
}

// load reads element [n, h, r, c] of input which: 0 q, 1 k, 2 v, 3 the
// forward's result, 4 its gradient, 5 the mask.
fn load(which: u32, n: u32, h: u32, r: u32, c: u32) -> f32 {
    switch which {
        case 0u: { return q[at(11u, n, h, r, c)]; }
        case 1u: { return k[at(16u, n, h, r, c)]; }
        case 2u: { return v[at(21u, n, h, r, c)]; }
{{- if ne .Kind "fwd"}}
        case 3u: { return res[at(26u, n, h, r, c)]; }
        case 4u: { return gr[at(31u, n, h, r, c)]; }
{{- end}}
{{- if .Mask}}
        case 5u: { return mask[at(36u, n, h, r, c)]; }
{{- end}}
        default: { return 0.0; }
    }
}

// stage copies rows [r0, r0 + nr) and columns [c0, c0 + nc) of input
// which at (n, h) into tile, zeros past the ends. Called by the whole
// workgroup.
fn stage(which: u32, n: u32, h: u32, r0: u32, nr: u32, c0: u32, nc: u32, lid: u32) {
    workgroupBarrier();
    for (var x = lid; x < TILE * DC; x = x + ROWS) {
        let rr = x / DC;
        let cc = x % DC;
        var val = 0.0;
        if (rr < nr && cc < nc) {
            val = load(which, n, h, r0 + rr, c0 + cc);
        }
        tile[rr * (DC + 1u) + cc] = val;
    }
    workgroupBarrier();
}

// dots adds to acc[rr], for rr < nr, the dot product over cols columns of
// this invocation's row r of input row at (n, h) (when live) with row
// r0 + rr of input staged at (n, hs), staged DC columns at a time. Called
// by the whole workgroup.
fn dots(acc: ptr<function, array<f32, 32>>, row: u32, h: u32, r: u32, staged: u32, hs: u32, r0: u32, nr: u32,
        cols: u32, n: u32, live: bool, lid: u32) {
    for (var c0 = 0u; c0 < cols; c0 = c0 + DC) {
        let nc = min(DC, cols - c0);
        stage(staged, n, hs, r0, nr, c0, nc, lid);
        if (live) {
            for (var cc = 0u; cc < nc; cc = cc + 1u) {
                let x = load(row, n, h, r, c0 + cc);
                for (var rr = 0u; rr < nr; rr = rr + 1u) {
                    (*acc)[rr] = (*acc)[rr] + x * tile[rr * (DC + 1u) + cc];
                }
            }
        }
    }
}

// update sets dst[out + c] = dst[out + c] * keep + by * Σ w[rr] · (row
// r0 + rr of input staged at (n, hs), column c), for c < cols and rr < nr
// (when live), staged DC columns at a time. Called by the whole workgroup.
fn update(w: ptr<function, array<f32, 32>>, staged: u32, hs: u32, r0: u32, nr: u32, cols: u32, n: u32,
          out: u32, keep: f32, by: f32, live: bool, lid: u32) {
    for (var c0 = 0u; c0 < cols; c0 = c0 + DC) {
        let nc = min(DC, cols - c0);
        stage(staged, n, hs, r0, nr, c0, nc, lid);
        if (live) {
            for (var cc = 0u; cc < nc; cc = cc + 1u) {
                var a = 0.0;
                for (var rr = 0u; rr < nr; rr = rr + 1u) {
                    a = a + (*w)[rr] * tile[rr * (DC + 1u) + cc];
                }
                dst[out + c0 + cc] = dst[out + c0 + cc] * keep + by * a;
            }
        }
    }
}

{{- if .Dropout}}
{{template "attention_dropout"}}
{{- end}}

fn keys(causal: bool, i: u32, j0: u32, nr: u32) -> u32 {
    if (!causal) {
        return nr;
    }
    if (i + 1u <= j0) {
        return 0u;
    }
    return min(nr, i + 1u - j0);
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = wid.y * nwg.x + wid.x;
    if (t >= p[0]) {
        return;
    }
    let N = p[1];
    let Hq = p[2];
    let Hk = p[3];
    let Lq = p[4];
    let Lk = p[5];
    let E = p[6];
    let Ev = p[7];
    let scale = bitcast<f32>(p[8]);
    let causal = p[9] != 0u;
    let base = p[10];
    var group = 1u;
    if (Hk > 0u) {
        group = Hq / Hk;
    }
    let W = Ev + 1u;
{{- if eq .Kind "delta"}}
    // One query row per invocation: D = rowsum(dO * O) - dlse.
    let r = t * ROWS + lid;
    if (r >= Lq * Hq * N) {
        return;
    }
    let n = r / (Hq * Lq);
    let h = (r / Lq) % Hq;
    let i = r % Lq;
    var s = 0.0;
    for (var e = 0u; e < Ev; e = e + 1u) {
        s = s + load(4u, n, h, i, e) * load(3u, n, h, i, e);
    }
    dst[base + r] = s - load(4u, n, h, i, Ev);
{{- else if eq .Kind "fwd"}}
    let nqb = (Lq + ROWS - 1u) / ROWS;
    let nh = t / nqb;
    let i0 = (t % nqb) * ROWS;
    let n = nh / Hq;
    let h = nh % Hq;
    let hk = h / group;
    let i = i0 + lid;
    let live = i < Lq;
    let orow = base + ((n * Hq + h) * Lq + i) * W;
    var m = -inf_f32();
    var l = 0.0;
    var kEnd = Lk;
    if (causal) {
        kEnd = min(Lk, min(Lq, i0 + ROWS));
    }
    if (live) {
        for (var e = 0u; e < Ev; e = e + 1u) {
            dst[orow + e] = 0.0;
        }
    }
    for (var j0 = 0u; j0 < kEnd; j0 = j0 + TILE) {
        let nr = min(TILE, kEnd - j0);
        var s: array<f32, 32>;
        for (var rr = 0u; rr < TILE; rr = rr + 1u) {
            s[rr] = 0.0;
        }
        dots(&s, 0u, h, i, 1u, hk, j0, nr, E, n, live, lid);
        var lim = 0u;
        if (live) {
            lim = keys(causal, i, j0, nr);
        }
        var mx = m;
        for (var rr = 0u; rr < lim; rr = rr + 1u) {
            s[rr] = s[rr] * scale{{if .Mask}} + load(5u, n, h, i, j0 + rr){{end}};
            mx = max(mx, s[rr]);
        }
        // While every score so far is -Inf (masked), m and mx stay -Inf:
        // corr stays 1 and the probabilities 0, never exp(-Inf - -Inf).
        var corr = 1.0;
        if (mx != m) {
            corr = expf(m - mx);
        }
        var sum = 0.0;
{{- if .Dropout}}
        var keep = 0u;
        if (lim > 0u) {
            keep = kept((n * Hq + h) * Lq + i, j0, lim);
        }
{{- end}}
        for (var rr = 0u; rr < TILE; rr = rr + 1u) {
            var pr = 0.0;
            if (rr < lim && mx != -inf_f32()) {
                pr = expf(s[rr] - mx);
            }
            s[rr] = pr{{if .Dropout}} * factor(keep, rr){{end}};
            sum = sum + pr;
        }
        l = l * corr + sum;
        m = mx;
        update(&s, 2u, hk, j0, nr, Ev, n, orow, corr, 1.0, live, lid);
    }
    if (live) {
        if (Lk == 0u) {
            dst[orow + Ev] = -inf_f32();
        } else {
            for (var e = 0u; e < Ev; e = e + 1u) {
                dst[orow + e] = dst[orow + e] / l;
            }
            dst[orow + Ev] = m + logf(l);
        }
    }
{{- else if eq .Kind "dq"}}
    let nqb = (Lq + ROWS - 1u) / ROWS;
    let nh = t / nqb;
    let i0 = (t % nqb) * ROWS;
    let n = nh / Hq;
    let h = nh % Hq;
    let hk = h / group;
    let i = i0 + lid;
    let live = i < Lq;
    let dqr = base + ((n * Hq + h) * Lq + i) * E;
    var lse = 0.0;
    var delta = 0.0;
    if (live) {
        for (var e = 0u; e < E; e = e + 1u) {
            dst[dqr + e] = 0.0;
        }
        for (var e = 0u; e < Ev; e = e + 1u) {
            delta = delta + load(4u, n, h, i, e) * load(3u, n, h, i, e);
        }
        delta = delta - load(4u, n, h, i, Ev);
        lse = load(3u, n, h, i, Ev);
    }
    var kEnd = Lk;
    if (causal) {
        kEnd = min(Lk, min(Lq, i0 + ROWS));
    }
    for (var j0 = 0u; j0 < kEnd; j0 = j0 + TILE) {
        let nr = min(TILE, kEnd - j0);
        var s: array<f32, 32>;
        var ds: array<f32, 32>;
        for (var rr = 0u; rr < TILE; rr = rr + 1u) {
            s[rr] = 0.0;
            ds[rr] = 0.0;
        }
        dots(&s, 0u, h, i, 1u, hk, j0, nr, E, n, live, lid);
        dots(&ds, 4u, h, i, 2u, hk, j0, nr, Ev, n, live, lid);
        var lim = 0u;
        if (live) {
            lim = keys(causal, i, j0, nr);
        }
{{- if .Dropout}}
        var keep = 0u;
        if (lim > 0u) {
            keep = kept((n * Hq + h) * Lq + i, j0, lim);
        }
{{- end}}
        for (var rr = 0u; rr < TILE; rr = rr + 1u) {
            var pr = 0.0;
            if (rr < lim) {
                pr = expf(s[rr] * scale{{if .Mask}} + load(5u, n, h, i, j0 + rr){{end}} - lse);
            }
            ds[rr] = pr * (ds[rr]{{if .Dropout}} * factor(keep, rr){{end}} - delta);
        }
        update(&ds, 1u, hk, j0, nr, E, n, dqr, 1.0, scale, live, lid);
    }
{{- else}}
    // dkv: one key row per invocation, over every query row of every
    // query head of its key head.
    let nkb = (Lk + ROWS - 1u) / ROWS;
    let nh = t / nkb;
    let j0 = (t % nkb) * ROWS;
    let n = nh / Hk;
    let hk = nh % Hk;
    let j = j0 + lid;
    let live = j < Lk;
    let nq = N * Hq * Lq * E;
    let dkr = base + nq + ((n * Hk + hk) * Lk + j) * E;
    let dvr = base + nq + N * Hk * Lk * E + ((n * Hk + hk) * Lk + j) * Ev;
    if (live) {
        for (var e = 0u; e < E; e = e + 1u) {
            dst[dkr + e] = 0.0;
        }
        for (var e = 0u; e < Ev; e = e + 1u) {
            dst[dvr + e] = 0.0;
        }
    }
    for (var h = hk * group; h < (hk + 1u) * group; h = h + 1u) {
        var first = 0u;
        if (causal) {
            first = j0 / TILE * TILE;
        }
        for (var i0 = first; i0 < Lq; i0 = i0 + TILE) {
            let nr = min(TILE, Lq - i0);
{{- if .Dropout}}
            // The tile's dropout, TILE query rows by the workgroup's ROWS
            // keys, made together: invocation lid makes word lid, 32
            // consecutive keys of one row, so that a Philox block serves
            // four keys, where a key row's own elements lie Lk apart.
            workgroupBarrier(); // the last tile's readers are done
            {
                let rr = lid / KEPT_WORDS;
                let jw = j0 + (lid % KEPT_WORDS) * 32u;
                var bits = 0u;
                if (rr < nr && jw < Lk) {
                    bits = kept((n * Hq + h) * Lq + i0 + rr, jw, min(32u, Lk - jw));
                }
                keptTile[lid] = bits;
            }
            workgroupBarrier();
{{- end}}
            var s: array<f32, 32>;
            var dp: array<f32, 32>;
            for (var rr = 0u; rr < TILE; rr = rr + 1u) {
                s[rr] = 0.0;
                dp[rr] = 0.0;
            }
            dots(&s, 1u, hk, j, 0u, h, i0, nr, E, n, live, lid);
            dots(&dp, 2u, hk, j, 4u, h, i0, nr, Ev, n, live, lid);
            for (var rr = 0u; rr < TILE; rr = rr + 1u) {
                var pr = 0.0;
                if (live && rr < nr && (!causal || i0 + rr >= j)) {
                    let row = (n * Hq + h) * Lq + i0 + rr;
                    pr = expf(s[rr] * scale{{if .Mask}} + load(5u, n, h, i0 + rr, j){{end}} - load(3u, n, h, i0 + rr, Ev));
{{- if .Dropout}}
                    let f = factor(keptTile[rr * KEPT_WORDS + lid / 32u], lid % 32u);
                    dp[rr] = pr * (dp[rr] * f - dd[row]);
                    pr = pr * f; // dV sums (P∘M)ᵀ·dO
{{- else}}
                    dp[rr] = pr * (dp[rr] - dd[row]);
{{- end}}
                } else {
                    dp[rr] = 0.0;
                }
                s[rr] = pr;
            }
            update(&s, 4u, h, i0, nr, Ev, n, dvr, 1.0, 1.0, live, lid);
            update(&dp, 0u, h, i0, nr, E, n, dkr, 1.0, scale, live, lid);
        }
    }
{{- end}}
}
{{end}}

{{/*
attention_dropout: the dropout of the probabilities, which the .Dropout
kernels include with {{template "attention_dropout"}} (philox with it),
after the prelude; it reads Lk from p[5] and the dropout's words from
p[41 .. 45), as the attention kernels' parameters lay them out.
*/}}
{{define "attention_dropout"}}
{{- template "philox"}}
// kept is the dropout of keys j0 .. j0 + nr - 1 (nr <= 32) of probability
// row `row`, (n * Hq + h) * Lq + i: bit r is set where key j0 + r is
// kept. Element x = row * Lk + j takes word x % 4 of the Philox block at
// counter x / 4 (ops.AttentionParams, internal/philox's Words). x passes
// 2^32 where Lq * Lk does, which no buffer bounds (nothing holds the
// probabilities), so it is formed in two words: row fits one (it is below
// the rows of the forward's result), row * Lk needs mulhi. The blocks are
// walked one per four keys, the same count in every invocation of a
// tile, so that lanes stay together.
fn kept(row: u32, j0: u32, nr: u32) -> u32 {
    let Lk = p[5];
    let key = vec2<u32>(p[41], p[42]);
    let threshold = p[43];
    let lo = row * Lk + j0;
    let hi = mulhi(row, Lk) + select(0u, 1u, lo < j0);
    var ctr = vec2<u32>((lo >> 2u) | (hi << 30u), hi >> 2u);
    let first = lo & 3u; // key j0's word in its block
    var bits = 0u;
    for (var b = 0u; b < first + nr; b = b + 4u) {
        let words = philox(vec4<u32>(ctr, 0u, 0u), key);
        for (var w = 0u; w < 4u; w = w + 1u) {
            let x = b + w;
            if (x >= first && x - first < nr && words[w] >= threshold) {
                bits = bits | (1u << (x - first));
            }
        }
        ctr.x = ctr.x + 1u;
        if (ctr.x == 0u) {
            ctr.y = ctr.y + 1u;
        }
    }
    return bits;
}

// factor is M of bit r of kept's bits: the scale (p[44]) or 0.
fn factor(bits: u32, r: u32) -> f32 {
    return select(0.0, bitcast<f32>(p[44]), ((bits >> r) & 1u) != 0u);
}
{{end}}
