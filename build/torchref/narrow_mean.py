"""Prints torch 1.13's cpu mean (and var, std) of float16 and bfloat16
vectors long enough that the count does not fit the dtype's significand,
for ops_reduce_narrow_test.go to paste. The inputs are exact dyadic values
that the test rebuilds from the same integer formula.

torch 1.13's cpu mean of a 16-bit float is at::sum (accumulated in float32,
rounded once to the dtype) divided by the count converted to the dtype: the
sum rounds, the count rounds past 2048 (float16) or 256 (bfloat16), and the
quotient rounds again. Its var and std accumulate in float32 and round once.

Run with /usr/bin/python3 build/torchref/narrow_mean.py
"""
import torch


def vec(dt, n):
    if dt == torch.float16:  # (k - 896)/256, |k - 896| < 2048: exact in float16
        return torch.tensor([((i * 7919) % 1999 - 896) / 256 for i in range(n)], dtype=torch.float64).to(dt)
    return torch.tensor([((i * 613) % 239 + 16) / 64 for i in range(n)], dtype=torch.float64).to(dt)  # < 256/64: exact


for dt, name in [(torch.float16, "Float16"), (torch.bfloat16, "BFloat16")]:
    for n in ([5000, 2049, 5001] if dt == torch.float16 else [300, 257, 301]):
        x = vec(dt, n)
        bits = lambda t: "0x%04x" % (t.view(torch.int16).item() & 0xFFFF)
        once = x.float().mean().to(dt)
        print('{lathe.%s, %d, %s, %s, %s, %s}, // mean %r, float32 mean rounded once %r' % (
            name, n, bits(x.mean()), bits(once), bits(x.var()), bits(x.std()), x.mean().item(), once.item()))
