#!/usr/bin/python3
"""Prints the table of ops_igamma_test.go: P(a, x) and Q(a, x), the
regularized incomplete gamma functions, exact to 30 digits (mpmath,
Debian's python3-mpmath) and rounded to float64, at points that take
each branch of lathe's kernels: the series of P, the series of Q, the
continued fraction, 1 - P and 1 - Q, Temme's expansion for 20 < a < 200
and beyond 200, and the Lanczos form of x^a e^-x/Γ(a) on both sides of
a, x = 200.

    /usr/bin/python3 build/igamma/ref.py
"""
import mpmath

mpmath.mp.dps = 40
POINTS = [
    (0.5, 0.25), (1.0, 1.0), (2.0, 3.0), (3.0, 2.0), (0.1, 0.05), (5.0, 0.3), (0.01, 1e-3), (1e-3, 0.7),
    (10.0, 0.6), (0.3, 0.8), (30.0, 2.0), (1.5, 40.0), (4.0, 4.4), (12.0, 7.0), (7.0, 12.0),
    (25.0, 24.0), (25.0, 30.0), (100.0, 80.0), (150.0, 160.0), (199.0, 199.5),
    (500.0, 510.0), (1e4, 1e4 - 100), (1e6, 1e6 + 1500), (1e8, 1e8 + 2e4),
    (250.0, 180.0), (250.0, 330.0), (180.0, 230.0), (50.0, 120.0), (1e-300, 1.0), (2.5, 1e-200),
    (1000.0, 100.0), (0.5, 700.0), (170.5, 1.0), (1e-10, 0.1), (1e-5, 0.9), (150.0, 100.0), (190.0, 250.0),
    (5000.0, 4000.0), (5000.0, 6000.0),
]


def g(v):
    return repr(float(v))


print("var igammaTable = [][4]float64{ // a, x, P(a, x), Q(a, x): build/igamma/ref.py")
for a, x in POINTS:
    A, X = mpmath.mpf(a), mpmath.mpf(x)
    try:
        p = mpmath.gammainc(A, 0, X, regularized=True)
        q = mpmath.gammainc(A, X, mpmath.inf, regularized=True)
    except mpmath.libmp.NoConvergence:  # a past 1e6: the sum with a Q of its own
        q = mpmath.gammainc(A, X, mpmath.inf, regularized=True)
        p = 1 - q
    print("\t{%s, %s, %s, %s}," % (g(a), g(x), g(p), g(q)))
print("}")
