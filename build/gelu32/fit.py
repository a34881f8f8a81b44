"""Fits the polynomial of shim.c's float32 GELU (run: /usr/bin/python3 build/gelu32/fit.py).

GELU(x) = x·Φ(x), and Φ is 1 - Q(|x|) for x ≥ 0 and Q(|x|) below, Q(a) the
normal tail P(X > a), so no value of Φ comes from a difference that cancels.
Q(a) = e^(-a²/2)·N(a) with N(a) = Q(a)·e^(a²/2) smooth, from 1/2 at 0 down to
about 1/(a√(2π)); N is a degree-10 polynomial in t = 2/(2 + a) ∈ (0, 1],
fitted for relative error on [0, 15] (past 15, Q and e^(-a²/2) are 0 in
float32) by least squares reweighted towards the worst points. GELU's
gradient Φ(x) + x·φ(x) reuses e: φ = e/√(2π).

It prints the coefficients as C float literals (lowest power first), the
relative error of N in float64 with those float32 coefficients, and that of
its float32 evaluation (t and Horner's rule in float32), which is most of
the kernel's error; cpu's TestGelu32 measures the kernel's.
"""
import math

import numpy as np

DEGREE, A, P = 10, 15.0, 0.5


def n_of(a):  # Q(a)·e^(a²/2)
    return np.array([0.5 * math.erfc(v / math.sqrt(2)) * math.exp(v * v / 2) for v in a])


a = np.linspace(0, A, 30001)
n = n_of(a)
t = 1 / (1 + P * a)
V = np.vstack([t**k for k in range(DEGREE + 1)]).T
w = np.ones_like(a)
for _ in range(40):
    c, *_ = np.linalg.lstsq(V * (w / n)[:, None], w, rcond=None)
    r = np.abs(V @ c - n) / n
    w = w * (r / r.max()) ** 0.3 + 1e-3
c32 = c.astype(np.float32)

t32 = (np.float32(2) / (np.float32(2) + a.astype(np.float32))).astype(np.float32)
h = np.full_like(t32, c32[-1])
for k in range(DEGREE - 1, -1, -1):
    h = (h * t32 + c32[k]).astype(np.float32)
h64 = np.polynomial.polynomial.polyval(t, c32.astype(np.float64))
print("coefficients:", ", ".join("%.9gf" % v for v in c32))
print("relative error of N, float32 coefficients: %.3g" % (np.abs(h64 - n) / n).max())
print("relative error of N evaluated in float32:  %.3g" % (np.abs(h.astype(np.float64) - n) / n).max())
