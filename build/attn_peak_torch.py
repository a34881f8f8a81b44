#!/usr/bin/python3
"""PyTorch's peak memory for one attention training step, for comparison
with lathe's TestAttentionPeakMemory (ops_attention_bench_test.go).

For each sequence length L, causal or not, and each of torch 1.13's two
cpu paths, a fresh child process builds float32 q, k, v of [1, 8, L, 64],
runs the forward and the gradients of q, k and v of the output's sum, as
lathe-bench's sdpa rows do, and reports how much its maximum resident set
grew over the step (getrusage; tracemalloc does not see torch's allocator,
and a fresh process per length keeps one length's peak from hiding the
next; Linux carries maxrss across exec, but this parent never imports
torch, so its few MiB stay under the child's baseline). The paths:

  composite  softmax(q·kᵀ·scale + mask)·v, as build/bench_torch.py's build_sdpa
  aten       torch._C._nn._scaled_dot_product_attention, the private op of
             1.13, which on the cpu is _scaled_dot_product_attention_math:
             the same unfused math in C++

Both hold 8·L² scores, so their peak is quadratic in L.

  /usr/bin/python3 build/attn_peak_torch.py [L ...]
"""

import math
import resource
import subprocess
import sys

HEADS, E = 8, 64


def step(path, l, causal):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, HEADS, l, E, requires_grad=True) for _ in range(3))
    mask = torch.full((l, l), float("-inf")).triu(1) if causal and path == "composite" else None
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if path == "composite":
        s = q @ k.transpose(-2, -1) * (1 / math.sqrt(E))
        if mask is not None:
            s = s + mask
        out = torch.softmax(s, dim=-1) @ v
        del s
    else:
        out = torch._C._nn._scaled_dot_product_attention(q, k, v, None, 0.0, False, causal)[0]
    torch.autograd.grad(out.sum(), [q, k, v])
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print((after - before) * 1024)  # kilobytes on Linux


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        step(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "True")
        return
    lengths = [int(a) for a in sys.argv[1:]] or [512, 1024, 2048, 4096]
    print("path       causal      L   peak MiB  bytes per query row")
    for path in ["composite", "aten"]:
        for causal in [False, True]:
            for l in lengths:
                out = subprocess.run([sys.executable, __file__, "--child", path, str(l), str(causal)],
                                     capture_output=True, text=True, check=True)
                peak = int(out.stdout.split()[-1])
                print("%-10s %-6s %6d %10.1f %20.0f" % (path, causal, l, peak / 2**20, peak / (HEADS * l)))


if __name__ == "__main__":
    main()
