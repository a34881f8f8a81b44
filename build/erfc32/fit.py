"""Fits the polynomial of math.wgsl's erfc_mid (run: /usr/bin/python3 build/erfc32/fit.py).

For a in [1/2, 1), erfc_mid takes erfc(a) = exp(-a²)·h(s)/a with s = 1/a in
(1, 2] and h(s) = a·erfc(a)·exp(a²), as erfc_tail does from 1 on: there
1 - erf(a) loses up to three bits to cancellation (erfc(0.96) = 0.17 from
erf's 0.83), ten float32 ulps in all. h is fitted in s - 1.5 by least
squares at 400 Chebyshev nodes to mpmath's values (30 digits); the printed
error is the fit's, relative to h, in float64: far under float32's half
ulp, so that the float32 evaluation's own roundings are what
backends/wgpu/ops_elementwise_test.go bounds.
"""
import mpmath
import numpy as np
from numpy.polynomial import polynomial as P

mpmath.mp.dps = 30
N, DEGREE = 400, 9

s = 1.5 + 0.5 * np.cos(np.pi * (np.arange(N) + 0.5) / N)


def target(v):  # h at s = v: a·erfc(a)·exp(a²), a = 1/v
    a = 1 / mpmath.mpf(v)
    return float(a * mpmath.erfc(a) * mpmath.exp(a * a))


h = np.array([target(v) for v in s])
c = P.polyfit(s - 1.5, h, DEGREE)
err = np.max(np.abs(P.polyval(s - 1.5, c) - h) / np.abs(h))
print("relative error %.2g" % err)
for v in reversed(c):
    print("%.9e" % v)
