#!/usr/bin/python3
"""Prints the tables of ops_gamma_test.go: lgamma, digamma and polygamma(n, x)
for n = 1 to 4, and the Hurwitz zeta function zeta(x, q), exact to 30
digits (mpmath, Debian's python3-mpmath) and rounded to float64, at points
that take each branch of lathe's kernels: the recurrence, the series, the
reflection, the regrouped sum of a negative q, and the zeros of lgamma
and digamma.

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

ZS = [(2.0, 1.0), (3.0, 0.5), (4.5, 7.0), (2.5, 1e-3), (1.5, 1e4), (10.0, 2.0), (1.001, 1.0), (30.0, 0.9),
      (6.0, -1.5), (3.0, -100.3), (2.0, -0.25)]
print()
print("var zetaTable = [][3]float64{ // x, q, zeta(x, q): build/gammaref/gen.py")


def hurwitz(x, q):
    """The sum itself: below 0, its terms up to q + m > 0 one by one."""
    x, q = mpmath.mpf(x), mpmath.mpf(q)
    head = mpmath.mpf(0)
    while q <= 0:
        head += q ** -x
        q += 1
    return head + mpmath.zeta(x, q)


for x, q in ZS:
    print("\t{%s, %s, %s}," % (g(x), g(q), g(hurwitz(x, q))))
print("}")
