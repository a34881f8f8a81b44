"""Fits the polynomial of shim.c's tanh8 (run: /usr/bin/python3 build/tanh32/fit.py).

Below |x| = 0.5625, tanh8 takes tanh(x) = x·(1 + z·p(z)), z = x², where
1 - 2/(e^2|x| + 1) would lose bits to cancellation; from there on it takes
that form. p is fitted to (tanh(x)/x - 1)/z in float64 at 400 Chebyshev nodes
in z (near-minimax) and turned into power-basis coefficients. The printed
error is that of x·(1 + z·p(z)) relative to tanh(x), in float64: far under
float32's half ulp (2^-24, 6e-8), so the float32 evaluation's own roundings
are what backends/cpu/unary_test.go bounds (1 ulp over a million values).
"""
import numpy as np
from numpy.polynomial import chebyshev as C
from numpy.polynomial import polynomial as P

SPLIT = 0.5625
DEGREE = 5


def target(z):  # (tanh(x)/x - 1)/z at z = x², -1/3 at 0
    z = np.asarray(z, dtype=float)
    x = np.sqrt(np.where(z == 0, 1.0, z))
    return np.where(z == 0, -1 / 3, (np.tanh(x) / x - 1) / np.where(z == 0, 1.0, z))


def main():
    hi = SPLIT * SPLIT
    zs = (np.cos(np.pi * (np.arange(400) + 0.5) / 400) + 1) * hi / 2
    pc = C.cheb2poly(C.chebfit(zs, target(zs), DEGREE))
    xs = np.linspace(1e-4, SPLIT, 200001)
    approx = xs + xs * xs * xs * P.polyval(xs * xs, pc)
    err = (np.abs(approx - np.tanh(xs)) / np.tanh(xs)).max()
    print("tanh8's polynomial below |x| = %g (relative error %.2g):" % (SPLIT, err))
    for c in pc:
        print("  %.17g" % c)


if __name__ == "__main__":
    main()
