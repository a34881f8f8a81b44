#!/usr/bin/python3
"""PyTorch's side of lathe-bench --vs-torch (cmd/lathe-bench).

A long-lived child: it reads one JSON request a line on stdin and writes one
JSON reply a line on stdout, so that lathe-bench can take a PyTorch sample
between two of lathe's and machine drift falls on both alike. Requests:

  {"op": "hello", "threads": N}      set torch's threads; reply info
  {"op": "setup", "spec": {...}, "device": "cpu", "warmup": W, "target_s": T}
                                     build the workload, run W warm-up steps,
                                     pick the steps per sample (reply reps)
  {"op": "sample"}                   reply seconds per step of one sample
  {"op": "release"}                  drop the workload

Every reply has "ok"; a failed one has "error". A spec is {kind, dtype,
dims, amp, ranks}, and each kind here is built as lathe-bench's workloads.go
builds it; a training step with amp ("bf16", "f16") runs its forward and
loss under torch.autocast in that dtype. A spec with ranks > 1 runs in a
gloo process group of that many: this process is rank 0 and starts the
others (this script with --rank), which it sends each request to; every
rank has an equal share of the threads.
The process ends at the end of its input.
"""

import argparse
import datetime
import json
import math
import os
import socket
import subprocess
import sys
import time

try:
    import torch
    import torch.distributed as tdist
    import torch.nn.functional as F
except ImportError as e:  # reported by hello, so lathe-bench can go on
    torch, tdist, F = None, None, None
    torch_missing = str(e)


def dtype_of(name):
    return {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16}[name]


def build_matmul_checked(dev, dt, dims):
    step = build_matmul(dev, dt, dims)
    try:
        step()
    except RuntimeError as e:
        # torch 1.13's cpu has no float16 matmul (addmm_impl_cpu_ is not
        # implemented for Half); say so rather than pass on the bare error.
        raise RuntimeError("torch %s on %s has no %s matmul (%s)" % (torch.__version__, dev, dt, e)) from None
    return step


def build_matmul(dev, dt, dims):
    *batch, m, k, n = dims
    a = torch.randn(*batch, m, k, dtype=dt, device=dev)
    b = torch.randn(*batch, k, n, dtype=dt, device=dev)
    return lambda: torch.matmul(a, b)


def build_add(dev, dt, dims):
    a, b = torch.rand(*dims, dtype=dt, device=dev), torch.rand(*dims, dtype=dt, device=dev)
    return lambda: torch.add(a, b)


def build_add_out(dev, dt, dims):
    # torch.add into a tensor it holds: the kernel alone, as lathe's add
    # into a block from its pool, without build_add's allocator.
    a, b = torch.rand(*dims, dtype=dt, device=dev), torch.rand(*dims, dtype=dt, device=dev)
    c = torch.empty(*dims, dtype=dt, device=dev)
    return lambda: torch.add(a, b, out=c)


def build_chain(dev, dt, dims):
    a, b, c = (torch.randn(*dims, dtype=dt, device=dev) for _ in range(3))
    return lambda: (a * b + c).relu()


def build_sum(dev, dt, dims):
    a = torch.rand(*dims, dtype=dt, device=dev)
    return lambda: a.sum()


def build_unary(op):
    """op of one tensor of normal values, as lathe-bench's buildUnary."""

    def build(dev, dt, dims):
        a = torch.randn(*dims, dtype=dt, device=dev)
        return lambda: op(a)

    return build


def build_topk(dev, dt, dims):
    rows, categories, k = dims
    logits = torch.randn(rows, categories, dtype=dt, device=dev)
    return lambda: torch.topk(logits, k, dim=-1)


def build_layer_norm(dev, dt, dims):
    x = torch.randn(*dims, dtype=dt, device=dev)
    w = torch.randn(dims[-1], dtype=dt, device=dev)
    b = torch.randn(dims[-1], dtype=dt, device=dev)
    return lambda: torch.nn.functional.layer_norm(x, dims[-1:], w, b, 1e-5)


def build_batch_norm(dev, dt, dims):
    """Batch norm in training, with running statistics, as lathe-bench's
    buildBatchNorm."""
    x = torch.randn(*dims, dtype=dt, device=dev)
    c = dims[1]
    w = torch.randn(c, dtype=dt, device=dev)
    b = torch.randn(c, dtype=dt, device=dev)
    mean = torch.zeros(c, dtype=dt, device=dev)
    var = torch.ones(c, dtype=dt, device=dev)
    return lambda: torch.nn.functional.batch_norm(x, mean, var, w, b, training=True, momentum=0.1, eps=1e-5)


def training_step(model, opt, x, y, amp=None):
    """One step of classifier training, as lathe-bench's trainingStep."""
    kind = "cuda" if x.is_cuda else "cpu"
    enabled = amp is not None

    def step():
        with torch.autocast(kind, dtype=dtype_of(amp) if enabled else None, enabled=enabled):
            loss = F.cross_entropy(model(x), y)
        # set_to_none, as lathe's ZeroGrad forgets the gradient
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def build_mlp_step(dev, dt, dims, amp=None):
    batch, n_in, hidden, n_out = dims
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(n_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_out)
    ).to(device=dev, dtype=dt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, n_in, dtype=dt, device=dev)
    y = (torch.arange(batch) % n_out).to(dev)

    return training_step(model, opt, x, y, amp)


class ResBlockNet(torch.nn.Module):
    """A stem conv and one ResNet basic block, then pooling and a classifier."""

    def __init__(self, c_in, width, classes):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(c_in, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.body = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, classes))

    def forward(self, x):
        h = self.stem(x)
        return self.head(F.relu(h + self.body(h)))


def build_resblock_step(dev, dt, dims, amp=None):
    batch, c_in, size, width, classes = dims
    torch.manual_seed(1)
    model = ResBlockNet(c_in, width, classes).to(device=dev, dtype=dt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, c_in, size, size, dtype=dt, device=dev)
    y = (torch.arange(batch) % classes).to(dev)

    return training_step(model, opt, x, y, amp)


def build_add1(grad):
    def build(dev, dt, dims):
        a = torch.full((1,), 1.0, dtype=dt, device=dev, requires_grad=grad)
        b = torch.full((1,), 2.0, dtype=dt, device=dev)
        return lambda: torch.add(a, b)

    return build


def build_multinomial(dev, dt, dims):
    rows, categories, samples, replacement = dims
    probs = torch.randn(rows, categories, dtype=dt, device=dev).softmax(-1)
    return lambda: torch.multinomial(probs, samples, replacement == 1).cpu()


def build_sdpa(dev, dt, dims):
    """Attention's training step, as lathe-bench's buildAttention, with the
    composite softmax(q·kᵀ·scale + mask)·v: torch 1.13 has no public
    scaled_dot_product_attention, and its private
    aten::_scaled_dot_product_attention is the same math on the cpu."""
    batch, heads, l, e, masking = dims
    torch.manual_seed(1)
    q, k, v = (torch.randn(batch, heads, l, e, dtype=dt, device=dev, requires_grad=True) for _ in range(3))
    scale = 1 / math.sqrt(e)
    # made once, as a caller would keep it: causal (1), -inf above the
    # diagonal; key padding (2), -inf over the last quarter of the keys;
    # dropout (3) has none
    mask = None
    if masking == 1:
        mask = torch.full((l, l), float("-inf"), dtype=dt, device=dev).triu(1)
    elif masking == 2:
        mask = torch.zeros(1, 1, 1, l, dtype=dt, device=dev)
        mask[..., 3 * l // 4:] = float("-inf")

    def step():
        s = q @ k.transpose(-2, -1) * scale
        if mask is not None:
            s = s + mask
        p = torch.softmax(s, dim=-1)
        if masking == 3:  # dropout of the weights, p = 0.1
            p = torch.nn.functional.dropout(p, 0.1)
        out = p @ v
        torch.autograd.grad(out.sum(), [q, k, v])

    return step


def build_encoder_step(dev, dt, dims):
    """A training step of one nn.TransformerEncoderLayer, as lathe-bench's
    buildEncoderStep: the output's mean square as the loss, backward, SGD."""
    batch, length, d, heads, ff = dims
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.1,
                                             batch_first=True).to(device=dev, dtype=dt)
    opt = torch.optim.SGD(layer.parameters(), lr=0.01)
    x = torch.randn(batch, length, d, dtype=dt, device=dev)

    def step():
        loss = layer(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def gpt_model(dev, dt, dims):
    """examples/gpt's model as build/torchref/gpt.py writes it (learned
    positions; attention as softmax(q·kᵀ/√d masked)·v, since torch 1.13 has
    no scaled_dot_product_attention)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torchref"))
    from gpt import GPT  # noqa: E402

    _, context, layers, dim, heads, vocab = dims
    torch.manual_seed(1)
    return GPT(vocab, context, layers, heads, dim, rotary=False).to(device=dev, dtype=dt)


def build_gpt_step(dev, dt, dims):
    """A GPT training step as examples/gpt's: next-token cross-entropy,
    backward, AdamW."""
    batch, context, _, _, _, vocab = dims
    model = gpt_model(dev, dt, dims)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    tokens = (torch.arange(batch * (context + 1)) * 7 % vocab).reshape(batch, context + 1).to(dev)
    x, y = tokens[:, :-1], tokens[:, 1:]

    def step():
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def build_gpt_generate(dev, dt, dims):
    """One generated token, as model.GPT.Generate: the logits of a full
    window of context tokens, the top 20, softmax at temperature 0.8, one
    draw; the window then slides by the new token."""
    _, context, _, _, _, vocab = dims
    model = gpt_model(dev, dt, dims)
    window = [(i * 7) % vocab for i in range(context)]

    def step():
        with torch.no_grad():
            logits = model(torch.tensor([window], device=dev))[0, -1]
            values, indices = logits.topk(20)
            j = torch.multinomial((values / 0.8).softmax(0), 1)
            window.append(int(indices[j]))
            del window[0]

    return step


def build_gpt_generate_cached(dev, dt, dims):
    """context-1 generated tokens from a prompt of one, as model.GPT.Generate
    within the context: each token is one position's forward, its learned
    position at its index, each layer's attention over its past keys and
    values concatenated with the new ones (a cache of our own: gpt.py's
    module has none), and no mask since the query is the last position;
    then the top 20, softmax at temperature 0.8, one draw."""
    _, context, _, dim, heads, vocab = dims
    model = gpt_model(dev, dt, dims)
    hd = dim // heads

    def position(token, pos, past):
        h = model.tok_emb(torch.tensor([[token]], device=dev)) + model.pos_emb(torch.tensor([pos], device=dev))
        for i, b in enumerate(model.blocks):
            q, k, v = b.attn.qkv(b.ln_1(h)).split(dim, dim=2)
            q, k, v = (t.reshape(1, 1, heads, hd).transpose(1, 2) for t in (q, k, v))
            if past[i] is not None:
                k, v = torch.cat([past[i][0], k], 2), torch.cat([past[i][1], v], 2)
            past[i] = (k, v)
            y = (q @ k.transpose(-2, -1) / math.sqrt(hd)).softmax(-1) @ v
            h = h + b.attn.proj(y.transpose(1, 2).reshape(1, 1, dim))
            h = h + b.mlp(b.ln_2(h))
        return F.linear(model.ln_f(h), model.tok_emb.weight)[0, -1]

    def step():
        with torch.no_grad():
            past = [None] * len(model.blocks)
            tokens = [0]
            for pos in range(context - 1):
                values, indices = position(tokens[-1], pos, past).topk(20)
                j = torch.multinomial((values / 0.8).softmax(0), 1)
                tokens.append(int(indices[j]))

    return step


BUILDERS = {
    "matmul": build_matmul_checked,
    "bmm": build_matmul_checked,
    "add": build_add,
    "add_out": build_add_out,
    "chain": build_chain,
    "sum": build_sum,
    "sigmoid": build_unary(torch.sigmoid),
    "tanh": build_unary(torch.tanh),
    "max": build_unary(torch.max),
    "cast_f64": build_unary(lambda a: a.to(torch.float64)),
    "dropout": build_unary(lambda a: torch.nn.functional.dropout(a, 0.1, True)),
    "softmax": build_unary(lambda a: torch.softmax(a, dim=-1)),
    "softmax_dim0": build_unary(lambda a: torch.softmax(a, dim=0)),
    "topk": build_topk,
    "layer_norm": build_layer_norm,
    "batch_norm": build_batch_norm,
    "mlp_step": build_mlp_step,
    "resblock_step": build_resblock_step,
    "add1": build_add1(False),
    "add1_grad": build_add1(True),
    "multinomial": build_multinomial,
    "sdpa": build_sdpa,
    "encoder_step": build_encoder_step,
    "gpt_step": build_gpt_step,
    "gpt_generate": build_gpt_generate,
    "gpt_generate_cached": build_gpt_generate_cached,
    "all_reduce": lambda dev, dt, dims: build_all_reduce(dims),
    "ddp_step": lambda dev, dt, dims: build_ddp_step(dims, after=False),
    "ddp_step_after": lambda dev, dt, dims: build_ddp_step(dims, after=True),
}


# The data-parallel rows, on cpu over gloo.


def build_all_reduce(dims):
    # in place, as torch.distributed's users call it (lathe's returns a new
    # tensor)
    x = torch.ones(dims[0])
    return lambda: tdist.all_reduce(x)


def build_ddp_step(dims, after):
    """build_mlp_step's step under DistributedDataParallel (broadcasting
    rank 0's parameters, averaging gradients in buckets during backward); with
    after, a plain model whose gradients are averaged after backward in one
    all-reduce of them all, flattened."""
    batch, n_in, hidden, n_out = dims
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(n_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_out))
    net = model if after else torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(batch, n_in)
    y = torch.arange(batch) % n_out
    params, world = list(model.parameters()), tdist.get_world_size()

    def step():
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if after:
            grads = [p.grad for p in params]
            flat = torch._utils._flatten_dense_tensors(grads)
            tdist.all_reduce(flat)
            flat /= world
            for g, f in zip(grads, torch._utils._unflatten_dense_tensors(flat, grads)):
                g.copy_(f)
        opt.step()

    return step


class Ranks:
    """The gloo group of the rows of several ranks: this process is rank 0;
    the others are started with the first such row and live until the end."""

    def __init__(self):
        self.size, self.helpers, self.threads = 0, [], 1

    def start(self, n):
        if self.size == n:
            return
        if self.size:
            raise RuntimeError("one group per run: it has %d ranks, this row wants %d" % (self.size, n))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.threads = max(1, torch.get_num_threads() // n)
        env = dict(os.environ, OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads))
        for r in range(1, n):
            argv = [sys.executable, "-u", __file__, "--rank", str(r), "--world", str(n), "--port", str(port)]
            self.helpers.append(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
        init_group(0, n, port)
        self.size = n

    def send(self, req):
        tdist.broadcast_object_list([req], src=0)

    def close(self):
        if not self.size:
            return
        self.send({"op": "quit"})
        for h in self.helpers:
            h.wait(timeout=30)
        tdist.destroy_process_group()


def init_group(rank, world, port):
    # The timeout bounds the start (a helper that died leaves rank 0
    # waiting for it) and each collective, the helper's wait for the next
    # request included: the dist rows come one after another, seconds apart.
    tdist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=world,
                             timeout=datetime.timedelta(minutes=5))


def helper(rank, world, port):
    """A rank other than 0: it takes rank 0's requests and answers none."""
    init_group(rank, world, port)
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    state = {}
    while True:
        box = [None]
        tdist.broadcast_object_list(box, src=0)
        if box[0]["op"] == "quit":
            break
        try:
            handle(box[0], state)
        except Exception as e:
            print("bench_torch.py rank %d: %s: %s" % (rank, type(e).__name__, e), file=sys.stderr)
    tdist.destroy_process_group()


class Bench:
    """The current workload: its step, its device's sync and its reps."""

    ranks = 1

    def __init__(self, step, device):
        self.step = step
        cuda = device.startswith("cuda")
        self.sync = torch.cuda.synchronize if cuda else (lambda: None)
        self.reps = 1

    def time_steps(self, n):
        step = self.step
        self.sync()
        start = time.perf_counter()
        for _ in range(n):
            step()
        self.sync()
        return time.perf_counter() - start

    def calibrate(self, warmup, target):
        # as lathe-bench's warmUp: warmup steps, then more until they have
        # taken WARM_SAMPLES samples' time
        warm = self.time_steps(max(warmup, 1))
        while warm < WARM_SAMPLES * target:
            warm += self.time_steps(1)
        # as lathe-bench's calibrateReps: double until a quarter of target
        n = 1
        while True:
            d = self.time_steps(n)
            if d >= target / 4 or n >= 1 << 24:
                self.reps = max(1, math.ceil(n * target / max(d, 1e-9)))
                return
            n *= 2


# how many samples' time a workload warms up for, at least (lathe-bench's
# warmSamples)
WARM_SAMPLES = 10


class RankBench(Bench):
    """A workload that every rank of the group runs together: each timing
    starts at a barrier and is rank 0's, on every rank, so that calibrate
    decides alike on all of them."""

    def time_steps(self, n):
        tdist.barrier()
        d = torch.tensor([Bench.time_steps(self, n)], dtype=torch.float64)
        tdist.broadcast(d, 0)
        return d.item()


def info():
    config = torch.__config__.show()
    blas = next((p.split("=", 1)[1] for p in config.replace(",", " ").split() if p.startswith("BLAS_INFO=")), "?")
    blas += ", mkl %s, mkldnn %s, openmp %s" % (
        torch.backends.mkl.is_available(),
        torch.backends.mkldnn.is_available(),
        torch.backends.openmp.is_available(),
    )
    return {
        "version": torch.__version__,
        "blas": blas,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "parallel": torch.__config__.parallel_info(),
    }


def handle(req, state):
    op = req.get("op")
    if op == "hello":
        if torch is None:
            return {"ok": False, "error": "PyTorch is not importable here: " + torch_missing}
        if req.get("threads"):
            torch.set_num_threads(req["threads"])
        return {"ok": True, "info": info()}
    if op == "setup":
        state.pop("bench", None)
        spec, device = req["spec"], req.get("device", "cpu")
        build = BUILDERS.get(spec["kind"])
        if build is None:
            return {"ok": False, "error": "bench_torch.py has no workload kind %r" % spec["kind"]}
        if device.startswith("cuda") and not torch.cuda.is_available():
            return {"ok": False, "error": "this torch has no CUDA device"}
        kw = {"amp": spec["amp"]} if spec.get("amp") else {}
        kind = RankBench if spec.get("ranks", 0) > 1 else Bench
        bench = kind(build(device, dtype_of(spec["dtype"]), spec["dims"], **kw), device)
        bench.calibrate(req.get("warmup", 2), req.get("target_s", 0.025))
        state["bench"] = bench
        return {"ok": True, "reps": bench.reps}
    if op == "sample":
        bench = state.get("bench")
        if bench is None:
            return {"ok": False, "error": "sample before setup"}
        return {"ok": True, "seconds": bench.time_steps(bench.reps) / bench.reps}
    if op == "release":
        state.pop("bench", None)
        return {"ok": True}
    return {"ok": False, "error": "unknown op %r" % op}


def of_ranks(req, state, ranks):
    """How many ranks req's workload runs on (1: this process alone)."""
    if req.get("op") == "setup":
        return max(1, req.get("spec", {}).get("ranks", 1) or 1)
    if req.get("op") in ("sample", "release") and isinstance(state.get("bench"), RankBench):
        return ranks.size
    return 1


def main():
    state, ranks, threads = {}, Ranks(), None
    for line in sys.stdin:
        try:
            req = json.loads(line)
            n = of_ranks(req, state, ranks)
            if n > 1:
                ranks.start(n)
                ranks.send(req)
                if req["op"] == "setup":
                    threads = threads or torch.get_num_threads()
                    torch.set_num_threads(ranks.threads)
            reply = handle(req, state)
            if n > 1 and req["op"] == "release":
                torch.set_num_threads(threads)
        except Exception as e:  # a failed workload must not end the run
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    ranks.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int)
    ap.add_argument("--world", type=int)
    ap.add_argument("--port", type=int)
    args = ap.parse_args()
    if args.rank:
        helper(args.rank, args.world, args.port)
    else:
        main()
