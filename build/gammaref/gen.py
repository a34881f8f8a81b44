#!/usr/bin/python3
"""Prints the table of ops_gamma_test.go: lgamma, digamma and polygamma(n, x)
for n = 1 to 4, exact to 30 digits (mpmath, Debian's python3-mpmath) and
rounded to float64, at points that take each branch of lathe's kernels:
the recurrence, the series, the reflection, and the zeros of lgamma and
digamma.

    /usr/bin/python3 build/gammaref/gen.py
"""
import mpmath

mpmath.mp.dps = 30
XS = [1e-5, 0.1, 0.5, 1.0, 1.4616321449683622, 2.0, 2.5, 5.99, 6.0, 9.5, 10.0, 10.5, 30.0, 123.4, 1e4, 1e8,
      -0.5, -0.999, -0.99999, -1.5, -2.25, -3.6, -7.25, -100.3]


def g(v):
    return repr(float(v))


print("var gammaTable = []gammaRow{ // build/gammaref/gen.py")
for x in XS:
    m = mpmath.mpf(x)
    lg = mpmath.log(abs(mpmath.gamma(m)))
    psi = [mpmath.psi(n, m) for n in range(5)]
    print("\t{%s, %s, [5]float64{%s}}," % (g(x), g(lg), ", ".join(g(p) for p in psi)))
print("}")
