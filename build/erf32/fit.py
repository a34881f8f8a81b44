"""Fits the polynomials of backends/cpu/erf32.go (run: /usr/bin/python3 build/erf32/fit.py).

erf(a)/a is fitted in float64 on four pieces of [0, 3.92], the range where
float32 erf is not yet ±1: [0,1), [1,2), [2,3) and [3,3.92), so that the
piece is int(a). Each is a degree-10 polynomial in (a - the piece's middle),
interpolated at 400 Chebyshev nodes (near-minimax) and turned into power-basis
coefficients. erf(x) = x·p(|x| - mid) then has a relative error under 1.2e-10
everywhere (printed below), far under float32's half ulp (2^-24, 6e-8), so
the result rounded to float32 is almost always the correctly rounded one; the
test in erf32_test.go measures the worst case over every float32.
"""
import math

import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

erf = np.vectorize(math.erf)
DEGREE = 10


def erf_over_a(a):  # erf(a)/a, 2/√π at 0
    a = np.asarray(a, dtype=float)
    r = np.where(a == 0, 1.0, a)
    return np.where(a == 0, 2 / math.sqrt(math.pi), erf(r) / r)


def fit(lo, hi, mid):
    xs = np.cos(np.pi * (np.arange(400) + 0.5) / 400) * (hi - lo) / 2 + mid
    pc = C.cheb2poly(C.chebfit(xs - mid, erf_over_a(xs), DEGREE))
    xt = np.linspace(lo, hi, 200001)
    return pc, (np.abs(P.polyval(xt - mid, pc) - erf_over_a(xt)) / erf_over_a(xt)).max()


def main():
    # The saturation point: the least x with 1 - erf(x) <= 2^-25, past
    # which float32 erf rounds to 1.
    lo, hi = 3.0, 5.0
    for _ in range(100):
        m = (lo + hi) / 2
        lo, hi = (lo, m) if 1 - math.erf(m) <= 2**-25 else (m, hi)
    print(f"// erf32Saturate: float32 erf(x) rounds to ±1 from here on.\nconst erf32Saturate = {hi!r}\n")
    print("// erf32Pieces: erf(a)/a on [i, i+1) (the last ends at erf32Saturate).")
    print(f"var erf32Pieces = [...]erfPiece{{")
    for lo, hi in [(0, 1), (1, 2), (2, 3), (3, 3.92)]:
        mid = (lo + hi) / 2
        pc, err = fit(lo, hi, mid)
        print(f"\t{{mid: {mid!r}, c: [{DEGREE + 1}]float64{{ // relative error {err:.1e}")
        for c in pc:
            print(f"\t\t{float(c)!r},")
        print("\t}},")
    print("}")


main()
