#!/usr/bin/python3
"""Prints the table of ops_airy_test.go: Ai(x) and Ai'(x), exact to 30 digits
(mpmath, Debian's python3-mpmath) and rounded to float64, at points on
both sides of each branch of lathe's kernels (±2.09), deep in the
oscillating tail and in the decaying one, up to the last normal float64.

    /usr/bin/python3 build/airy/ref.py
"""
import math

import mpmath

mpmath.mp.dps = 40
POINTS = [-1e6, -1000.0, -100.5, -30.0, -10.0, -5.0, -3.0, -2.1, -2.09, math.nextafter(-2.09, 0), -1.0, -0.5, -1e-10, 0.0,
          1e-10, 0.5, 1.0, 2.0, math.nextafter(2.09, 0), 2.09, 2.1, 3.0, 5.0, 8.32, 10.0, 25.0, 26.0, 50.0, 100.0, 103.8]

print("var airyTable = [][3]float64{ // x, Ai(x), Ai'(x): build/airy/ref.py")
for x in POINTS:
    X = mpmath.mpf(x)
    print("\t{%r, %r, %r}," % (x, float(mpmath.airyai(X)), float(mpmath.airyai(X, derivative=1))))
print("}")
