"""Cases of the modified Bessel functions i0, i0e, i1 and i1e and of the
window functions hann, hamming, blackman, bartlett and kaiser
(windows.json), and the Bessel functions' gradients (grad_windows.json).

Run it from the repository root with PyTorch 1.13:

    /usr/bin/python3 build/torchref/windows.py

(gen.py runs it too, with every other family.) Op keys and attributes are
listed with the Go table, internal/conformance/ops_windowfns.go (not ops_windows.go, which Go would build on Windows only).

A window case's one input is an empty tensor of the window's dtype: the Go
table makes the window on that tensor's device in its dtype, and the suite
narrows a float64 case to float32 on a device without float64 as any other.
torch's cpu refuses float16 for the Bessel functions and the windows but
bartlett's (and bfloat16 for i1 and i1e), and computes its 16-bit windows
in the 16-bit dtype, a few ulp off the exact values; the 16-bit references are torch's
float32 results rounded once, as lathe computes them.

The gradients cover x near 0 (where i0e's |x| has a kink: the exact 0 is a
nonsmooth case, torch's convention, with a second derivative), moderate x
in float32 and float64, and large |x| (to 100) where the e-scaled forms
matter; second derivatives (hvp) in float64.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from grad import GradFamily  # noqa: E402
from refcase import INF, NAN, SHORT, Family, L, rnd, vals  # noqa: E402

BESSEL = (("i0", torch.i0), ("i0e", torch.special.i0e), ("i1", torch.special.i1), ("i1e", torch.special.i1e))

SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1e-30, -1e-30, 8.0, -8.0, 7.999, 8.001]


def spread(dt, top, n=24):
    """n points from -top to top, off the grid so no one is 0 or 8."""
    return torch.linspace(-top, top, n, dtype=torch.float64).add(0.0137).to(getattr(torch, dt))


def rounded(fn, dt):
    """fn computed in float32 and rounded once to the 16-bit dtype dt."""
    return lambda x: fn(x.float()).to(getattr(torch, dt))


def bessel_values(fam):
    for op, fn in BESSEL:
        top = 100.0 if op.endswith("e") else 80.0
        fam.case(f"{op}/f32/special", op, [vals(SPECIAL, "float32")], fn)
        fam.case(f"{op}/f32/[-9,9]", op, [spread("float32", 9.0)], fn)
        fam.case(f"{op}/f32/[-{top:g},{top:g}]", op, [spread("float32", top)], fn)
        # float32's overflow of the unscaled functions past 88.72.
        fam.case(f"{op}/f32/edge", op, [vals([88.0, 88.7, 88.8, 89.0, -89.0, 100.0, 1e30, -1e30], "float32")], fn)
        fam.case(f"{op}/f64/[-9,9]", op, [spread("float64", 9.0)], fn)
        fam.case(f"{op}/f64/[-700,700]", op, [spread("float64", 700.0, 16)], fn)
        for dt in ("float16", "bfloat16"):
            fam.case(f"{op}/{SHORT[dt]}/[-9,9]", op, [spread(dt, 9.0, 12)], rounded(fn, dt))
        # Integers and bool are promoted to float32, as torch's.
        fam.case(f"{op}/i64/[-9,9]", op, [torch.arange(-9, 10, 3, dtype=torch.int64)], fn)
    fam.case("i0/f64/transposed[3,4]", "i0", [L(rnd([4, 3], "float64", "wide").t(), "transposed")], torch.i0)
    fam.case("i0/f32/0d", "i0", [vals(2.5, "float32")], torch.i0)
    fam.case("i0/f32/empty[0,3]", "i0", [rnd([0, 3], "float32")], torch.i0)
    fam.case("i1e/bool", "i1e", [vals([True, False], "bool")], torch.special.i1e)


WINDOWS = (("hann_window", torch.hann_window), ("hamming_window", torch.hamming_window),
           ("blackman_window", torch.blackman_window), ("bartlett_window", torch.bartlett_window),
           ("kaiser_window", torch.kaiser_window))


def like(dt):
    return torch.empty(0, dtype=getattr(torch, dt))


def window_case(fam, op, fn, n, periodic, dt, extra=(), half=False):
    """The window of length n; extra are torch's positional alpha and beta
    (or kaiser's beta)."""
    attrs = {"length": n, "periodic": periodic}
    if op == "hamming_window" and extra:
        attrs["alpha"], attrs["beta"] = extra
    elif op == "kaiser_window" and extra:
        attrs["beta"] = extra[0]
    tag = "".join(f",{k}={v:g}" for k, v in attrs.items() if k in ("alpha", "beta"))
    name = f"{op}/{SHORT[dt]}/n={n}/periodic={periodic}{tag}"

    def make(_):
        if half:
            return fn(n, periodic, *extra, dtype=torch.float32).to(getattr(torch, dt))
        return fn(n, periodic, *extra, dtype=getattr(torch, dt))
    fam.case(name, op, [like(dt)], make, attrs)


def window_values(fam):
    for op, fn in WINDOWS:
        for n, periodic in ((0, True), (1, False), (2, True), (10, True), (9, False)):
            window_case(fam, op, fn, n, periodic, "float32")
        window_case(fam, op, fn, 16, True, "float64")
        window_case(fam, op, fn, 8, True, "bfloat16", half=True)
    window_case(fam, "hamming_window", torch.hamming_window, 12, True, "float64", (0.5, 0.25))
    window_case(fam, "hamming_window", torch.hamming_window, 7, False, "float32", (1.0, -0.5))
    for beta in (0.0, -3.5, 30.0):
        window_case(fam, "kaiser_window", torch.kaiser_window, 9, False, "float64", (beta,))
    # torch refuses integer windows.
    fam.case("hann_window/i64/error", "hann_window", [like("int64")], lambda _: torch.hann_window(4, dtype=torch.int64),
             {"length": 4, "periodic": True}, error="dtype")


def windows():
    fam = Family("windows", 97)
    bessel_values(fam)
    window_values(fam)
    return fam


def grad_windows():
    fam = GradFamily("grad_windows", 98)
    g = fam.gcase
    for op, fn in BESSEL:
        top = 100.0 if op.endswith("e") else 30.0
        # First order only: torch's second derivative of i1 there, the
        # derivative of i0 - i1/x, cancels (1e-6 of the value at 3e-5).
        g(f"{op}/f64/near0", op, [vals([3e-5, -3e-5, 1e-3, -2e-3, 0.25, -0.5], "float64")], fn)
        g(f"{op}/f64/[-9,9]", op, [spread("float64", 9.0, 12)], fn, hvp=True)
        g(f"{op}/f64/[-{top:g},{top:g}]", op, [spread("float64", top, 12)], fn, hvp=True)
        g(f"{op}/f32/[-9,9]", op, [spread("float32", 9.0, 12)], fn)
        g(f"{op}/f32/[-{top:g},{top:g}]", op, [spread("float32", top, 12)], fn)
        # x = 0 exactly: torch's formulas' values there (limits, sign(0) = 0).
        g(f"{op}/f64/zero", op, [vals([0.0, 1.0], "float64")], fn, hvp=True, nonsmooth=True)
    # Past float32's overflow of e^|x| i0 and its gradient are ±Inf (near
    # it, finite). (torch's gradient of i1 there is NaN, i0 - i1/x = Inf -
    # Inf; lathe's is the limit, ±Inf.)
    for op, fn in BESSEL[:1]:
        g(f"{op}/f32/overflow", op, [vals([88.0, 88.7, 89.0, -89.0, 100.0, -100.0], "float32")], fn, nonsmooth=True,
          upstream=vals([1.5, -0.5, 1.25, 0.75, -1.0, -2.0], "float32"))
    return fam


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    for make in (windows, grad_windows):
        path, n = make().write(folder)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
