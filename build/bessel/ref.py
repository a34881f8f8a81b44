#!/usr/bin/python3
"""Prints the table of ops_bessel_j_test.go: J0, J1, Y0 and Y1 exact to 30
digits (mpmath, Debian's python3-mpmath) and rounded to float64, at points
on both sides of the branch at 5 (where torch 1.13's approximations, which
drop the leading 1 of Cephes's monic denominators, are up to 6e-6 off),
near 0, and far out, away from the functions' zeros.

    /usr/bin/python3 build/bessel/ref.py
"""
import mpmath

mpmath.mp.dps = 30
XS = [1e-20, 1e-5, 0.1, 0.5, 1.0, 1.5, 3.0, 4.2, 4.99, 5.0, 5.01, 6.5, 10.0, 17.3, 30.0, 100.25, 1000.5]


def g(v):
    return repr(float(v))


print("var besselJYTable = [][5]float64{ // x, J0, J1, Y0, Y1: build/bessel/ref.py")
for x in XS:
    m = mpmath.mpf(x)
    vals = [mpmath.besselj(0, m), mpmath.besselj(1, m), mpmath.bessely(0, m), mpmath.bessely(1, m)]
    print("\t{%s, %s}," % (g(x), ", ".join(g(v) for v in vals)))
print("}")
