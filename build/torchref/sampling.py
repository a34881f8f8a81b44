#!/usr/bin/python3
"""Which argument sets torch 1.13 accepts and which it refuses for
torch.randint, randint_like, randperm and multinomial, for
random_torchref_test.go: writes testdata/sampling.json.

torch's generator is not lathe's, so no drawn value is compared; each case
records the outcome ("ok", "warn": accepted with a warning, or "error"),
torch's message, and for an accepted case the result's dtype and shape.
The Go test runs the same arguments through RandInt, RandIntLike, RandPerm
and Multinomial and checks that lathe accepts what torch accepts (with
that dtype and shape) and refuses what torch refuses, apart from the
deviations that the test lists with their reasons (lathe refuses the
ranges that torch only warns about, for instance).

A weight written "nan", "inf" or "-inf" is that float; {"fill": v,
"shape": s} is a tensor of shape s full of v, for the sizes too large to
write out.

Run: /usr/bin/python3 build/torchref/sampling.py (make refs runs it);
deterministic, so re-running it without changes gives no diff.
"""

import json
import math
import os
import warnings

import torch

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "testdata", "sampling.json")

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
          "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}

I64_MIN, I64_MAX = -2 ** 63, 2 ** 63 - 1

# (low, high, dtype, shape)
RANDINT = [
    (0, 10, "int64", [3]), (-5, 5, "int32", [2, 3]), (0, 5, "float32", [2, 2]), (0, 10, "float32", [0]),
    (3, 3, "int64", [2]), (4, 3, "int64", [2]), (0, 10, "int64", [-1]),
    (I64_MIN, I64_MAX, "int64", [4]), (-2 ** 31, 2 ** 31, "int32", [4]),
    (-2 ** 31, 2 ** 31 + 1, "int32", [4]), (-2 ** 31 - 1, 0, "int32", [4]),
    (0, 256, "uint8", [4]), (0, 257, "uint8", [4]), (-1, 2, "uint8", [4]),
    (-128, 128, "int8", [4]), (-129, 0, "int8", [4]), (0, 129, "int8", [4]),
    (0, 2, "bool", [4]), (1, 2, "bool", [4]), (0, 1, "bool", [4]), (0, 3, "bool", [4]), (-1, 1, "bool", [4]),
    (0, 2049, "float16", [4]), (-2048, 0, "float16", [4]), (0, 2050, "float16", [4]),
    (-2049, 0, "float16", [4]), (0, 70000, "float16", [4]),
    (-256, 257, "bfloat16", [4]), (0, 258, "bfloat16", [4]),
    (-2 ** 24, 2 ** 24 + 1, "float32", [4]), (0, 2 ** 24 + 2, "float32", [4]),
    (-2 ** 53, 2 ** 53 + 1, "float64", [4]), (0, 2 ** 53 + 2, "float64", [4]),
]

# (dtype and shape of x, low, high)
RANDINT_LIKE = [
    ("int32", [2, 3], 0, 10), ("float32", [4], -3, 3), ("bool", [3], 0, 2), ("float16", [2], 0, 5000),
    ("uint8", [2], -1, 3), ("int64", [0, 2], 0, 1), ("float64", [2], 2, 2),
]

# (n, dtype)
RANDPERM = [
    (0, "int64"), (1, "int64"), (10, "int64"), (-1, "int64"), (10, "int32"), (10, "float64"),
    (128, "int8"), (129, "int8"), (256, "uint8"), (257, "uint8"),
    (2049, "float16"), (2050, "float16"), (257, "bfloat16"), (258, "bfloat16"),
    (2 ** 24 + 1, "float32"), (2 ** 24 + 2, "float32"), (5, "bool"),
]

NAN, INF = "nan", "inf"

# (weights, dtype, num_samples, replacement)
MULTINOMIAL = [
    ([1, 2, 0], "float32", 2, False), ([1, 2, 0], "float32", 3, False), ([1, 2, 0], "float32", 4, False),
    ([1, 2, 0], "float32", 4, True), ([1, 2, 0], "float32", 1, False),
    ([1, 2, 0], "float32", 0, True), ([1, 2, 0], "float32", -1, True), ([1, 2, 0], "float32", 0, False),
    ([1, -1], "float32", 1, False), ([1, -1], "float32", 2, True),
    ([1, NAN], "float32", 1, False), ([1, NAN], "float32", 2, True),
    ([1, INF], "float32", 1, False), ([1, INF], "float32", 2, True),
    ([0, 0], "float32", 1, False), ([0, 0], "float32", 2, True),
    ([[0, 0], [1, 1]], "float32", 1, False), ([[1, 1], [0, 0]], "float32", 3, True),
    ([[1, 2, 3], [3, 0, 1]], "float32", 2, False), ([[1, 2, 3], [3, 0, 1]], "float32", 5, True),
    (1, "float32", 1, False), ({"fill": 1, "shape": [2, 2, 2]}, "float32", 1, False),
    ([1, 1], "int64", 1, False), ([1, 1], "bool", 1, False), ([1, 1], "int32", 1, True),
    ([1, 1], "bfloat16", 1, False), ([1, 1], "float64", 2, True), ([1, 1], "float16", 1, False),
    ({"fill": 1, "shape": [2, 0]}, "float32", 1, False), ({"fill": 1, "shape": [2, 0]}, "float32", 1, True),
    ({"fill": 1, "shape": [0, 3]}, "float32", 1, False), ({"fill": 1, "shape": [0, 3]}, "float32", 5, True),
    ({"fill": 1, "shape": [0, 3]}, "float32", 5, False),
    ({"fill": 1, "shape": [0]}, "float32", 1, False), ({"fill": 1, "shape": [0]}, "float32", 1, True),
    ({"fill": 1, "shape": [2 ** 24 + 1]}, "float32", 1, True), ({"fill": 1, "shape": [2 ** 24]}, "float32", 1, True),
    ([1e308, 1e308, 1e308], "float64", 2, True), ([1e308, 1e308, 1e308], "float64", 2, False),
    ([3e38, 3e38, 3e38, 3e38], "float32", 2, False), ([1e-45, 0], "float32", 1, False),
]


def weights(spec, dtype):
    if isinstance(spec, dict):
        return torch.full(spec["shape"], float(spec["fill"])).to(DTYPES[dtype])
    return torch.tensor(decode(spec), dtype=torch.float64).to(DTYPES[dtype])


def decode(spec):
    if isinstance(spec, list):
        return [decode(v) for v in spec]
    return {NAN: math.nan, INF: math.inf}.get(spec, spec)


def outcome(fn):
    """torch's outcome of fn: ("ok" or "warn", message, result) or
    ("error", message, None)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out = fn()
        except RuntimeError as e:
            return "error", str(e).split("\n")[0], None
    if caught:
        return "warn", str(caught[0].message).split("\n")[0], out
    return "ok", "", out


def record(case, fn):
    kind, message, out = outcome(fn)
    case.update(outcome=kind, message=message)
    if out is not None:
        case.update(dtype=NAMES[out.dtype], shape=list(out.shape))
    return case


def main():
    torch.manual_seed(18)
    cases = []
    for low, high, dtype, shape in RANDINT:
        cases.append(record({"op": "randint", "low": low, "high": high, "in_dtype": dtype, "in_shape": shape},
                            lambda: torch.randint(low, high, shape, dtype=DTYPES[dtype])))
    for dtype, shape, low, high in RANDINT_LIKE:
        cases.append(record({"op": "randint_like", "low": low, "high": high, "in_dtype": dtype, "in_shape": shape},
                            lambda: torch.randint_like(torch.zeros(shape, dtype=DTYPES[dtype]), low, high)))
    for n, dtype in RANDPERM:
        cases.append(record({"op": "randperm", "n": n, "in_dtype": dtype},
                            lambda: torch.randperm(n, dtype=DTYPES[dtype])))
    for spec, dtype, k, replacement in MULTINOMIAL:
        cases.append(record({"op": "multinomial", "probs": spec, "in_dtype": dtype, "num_samples": k,
                             "replacement": replacement},
                            lambda: torch.multinomial(weights(spec, dtype), k, replacement)))
    with open(OUT, "w") as f:
        f.write('{"torch": "%s", "cases": [\n' % torch.__version__)
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"{os.path.relpath(OUT, ROOT)}: {len(cases)} cases")


if __name__ == "__main__":
    main()
