#!/usr/bin/python3
"""How torch 1.13 prints tensors (torch/_tensor_str.py), for
format_torchref_test.go: writes testdata/repr/cases.json.

Each case is a recipe that both sides follow the same way: float64 values
(from arange, linspace or an explicit list), cast to the case's dtype,
reshaped, and, where "t" is set, transposed (a view that is not
contiguous). A value written "nan", "inf" or "-inf" is that float.

lathe keeps its own suffixes after the data: "dtype=int32" where torch has
"dtype=torch.int32", device='wgpu:0', and it lists the dtype before the
device. So the expected strings are built from torch's own parts: the data
as torch's _tensor_str prints it, then lathe's suffixes placed by torch's
_add_suffixes (which puts a suffix on a new line when the last line would
pass 80 characters). "want" holds that string for each device name lathe
may print; "torch" is torch's repr itself, and the script checks that
torch's parts with torch's own suffixes give exactly that repr, so that
building the string from the parts changes nothing but the suffixes.

Run: /usr/bin/python3 build/torchref/repr.py (gen.py runs it too);
deterministic, so re-running it without changes gives no diff.
"""

import json
import math
import os

import torch
from torch import _tensor_str as ts

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "testdata", "repr", "cases.json")

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
          "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
          "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
DEVICES = ["cpu", "wgpu:0", "cuda:0"]
NAN, INF, NINF = "nan", "inf", "-inf"


def arange(*args):
    return {"make": "arange", "args": list(args)}


def linspace(start, end, steps):
    return {"make": "linspace", "args": [start, end, steps]}


def values(*vs):
    return {"make": "values", "values": list(vs)}


# (name, recipe, dtype, shape or None, transposed)
CASES = [
    # The five differences the audit found.
    ("whole/wide_ratio", values(1, 2000), "float32", None, False),
    ("whole/arange2000", arange(0, 2000, 1), "float32", None, False),
    ("whole/1e8", values(1e8), "float32", None, False),
    ("whole/above_1e8", values(1e8, 2e8), "float64", None, False),
    ("width/neg_inf", values(NINF, 5), "float32", None, False),
    ("summary/ellipsis", arange(0, 1001, 1), "int32", None, False),
    ("wrap/arange30", arange(0, 30, 1), "float32", None, False),
    # Floats: whole, fixed and scientific, and what does not count.
    ("special/only", values(NAN, INF, NINF, 0, "-0"), "float32", None, False),
    ("special/mixed", values("-0", 1.5, NAN, -2.25), "float32", None, False),
    ("special/2d", values(NAN, 1.5, INF, -2.25), "float32", [2, 2], False),
    ("whole/linspace", linspace(-3, 3, 7), "float32", None, False),
    ("fixed/thirds", values(1 / 3, -2 / 3, 10), "float32", None, False),
    ("fixed/linspace", linspace(-1, 1, 5), "float32", None, False),
    # 1e-4 is below 1e-4 once rounded to float32, not in float64.
    ("sci/min_1e-4_f32", values(0.0001, 0.001), "float32", None, False),
    ("fixed/min_1e-4_f64", values(0.0001, 0.001), "float64", None, False),
    ("sci/small", values(0.1, 1e-5), "float32", None, False),
    ("sci/ratio", values(0.001, 1.0, 1000.5), "float32", None, False),
    ("sci/negative", values(-123456.7, 5.5), "float32", None, False),
    ("sci/whole_big", values(123456789), "float32", None, False),
    ("sci/whole_ratio", values(1e8, 1, 0), "float32", None, False),
    ("whole/negative", arange(-5, 5, 1), "float32", [2, 5], False),
    # float64's suffix past the end of a full line goes on a new line.
    ("wrap/f64_suffix", linspace(-1, 1, 8), "float64", None, False),
    # An even count: torch's linspace(-1, 1, 25) has 5.6e-17 in the middle,
    # lathe's 0 (a vectorised kernel's rounding), which prints otherwise.
    ("wrap/f64_linspace", linspace(-1, 1, 24), "float64", None, False),
    ("wrap/sci", linspace(0.5, 5000, 20), "float32", None, False),
    ("wrap/2d_rows", linspace(0, 1, 60), "float32", [3, 20], False),
    ("wrap/3d_rows", arange(-40, 40, 1), "float32", [2, 2, 20], False),
    ("wrap/summary_wide", linspace(-1e5, 1e5, 2000), "float32", None, False),
    # Integers and bool.
    ("int32/wrap", arange(-50, 50, 3), "int32", None, False),
    ("int32/suffix_wrap", arange(10, 34, 1), "int32", None, False),
    ("int64/2d", arange(-5, 5, 1), "int64", [2, 5], False),
    ("int64/wide", values(1e12, -3, 0), "int64", None, False),
    ("int8/edges", values(-128, 127, 0, -1), "int8", None, False),
    ("uint8/arange", arange(0, 256, 17), "uint8", None, False),
    ("bool/1d", values(1, 0, 1), "bool", None, False),
    ("bool/2d", values(0, 1, 1, 0, 0, 1), "bool", [2, 3], False),
    # The 16-bit floats print as float32 does.
    ("float16/linspace", linspace(-2, 2, 9), "float16", None, False),
    ("float16/whole_ratio", values(65504, 1, -7), "float16", None, False),
    ("bfloat16/linspace", linspace(0, 100, 11), "bfloat16", None, False),
    ("bfloat16/small", values(1e-3, 3.0), "bfloat16", None, False),
    ("float16/summary", arange(0, 2048, 1), "float16", None, False),
    # 0-d.
    ("0d/float", values(3.5), "float32", [], False),
    ("0d/int64", values(-7), "int64", [], False),
    ("0d/bool", values(1), "bool", [], False),
    ("0d/neg_inf", values(NINF), "float32", [], False),
    ("0d/sci", values(1e-10), "float64", [], False),
    # Empty: the dtype is printed unless float32, int64's and bool's too.
    ("empty/float32", values(), "float32", [0], False),
    ("empty/int64", values(), "int64", [0], False),
    ("empty/bool_2d", values(), "bool", [2, 0], False),
    ("empty/float64_2d", values(), "float64", [0, 3], False),
    # 3-D, 4-D, views.
    ("3d/arange", arange(0, 24, 1), "float32", [2, 3, 4], False),
    ("4d/int32", arange(-24, 24, 1), "int32", [2, 2, 3, 4], False),
    ("view/transposed", arange(0, 12, 1), "float32", [3, 4], True),
    # Summarised.
    ("summary/2d", arange(0, 2000, 1), "float32", [40, 50], False),
    ("summary/2d_t", arange(0, 2000, 1), "float32", [40, 50], True),
    ("summary/2d_int32", arange(0, 2002, 1), "int32", [2, 1001], False),
    ("summary/3d", linspace(-1, 1, 1200), "float32", [10, 12, 10], False),
    ("summary/1d_int64", arange(-1000, 1000, 1), "int64", None, False),
    ("summary/3d_bool", arange(0, 1100, 1), "bool", [11, 10, 10], False),
]


def build(recipe, dtype, shape, transposed):
    if recipe["make"] == "arange":
        x = torch.arange(*recipe["args"], dtype=torch.float64)
    elif recipe["make"] == "linspace":
        x = torch.linspace(*recipe["args"], dtype=torch.float64)
    else:
        x = torch.tensor([{NAN: math.nan, INF: math.inf, NINF: -math.inf, "-0": -0.0}.get(v, v)
                          for v in recipe["values"]], dtype=torch.float64)
    x = x.to(DTYPES[dtype])
    if shape is not None:
        x = x.reshape(shape)
    if transposed:
        x = x.t()
    return x


def suffixes(x, dtype_name, device):
    """The suffixes after the data, in lathe's order, or in torch's (device
    first) with torch's dtype names when dtype_name is str."""
    out = []
    if x.numel() == 0:
        if x.dim() != 1:
            out.append("size=" + str(tuple(x.shape)))
        if x.dtype != torch.float32:
            out.append("dtype=" + dtype_name(x.dtype))
    elif x.dtype not in (torch.float32, torch.int64, torch.bool):
        out.append("dtype=" + dtype_name(x.dtype))
    if device != "cpu":
        if dtype_name is str:
            out.insert(0, "device='" + device + "'")
        else:
            out.append("device='" + device + "'")
    return out


def main():
    lathe_name = {v: k for k, v in DTYPES.items()}.get
    cases = []
    for name, recipe, dtype, shape, transposed in CASES:
        x = build(recipe, dtype, shape, transposed)
        data = "tensor(" + ("[]" if x.numel() == 0 else ts._tensor_str(x, len("tensor(")))
        torch_repr = repr(x)
        rebuilt = ts._add_suffixes(data, suffixes(x, str, "cpu"), len("tensor("), False)
        assert rebuilt == torch_repr, (name, rebuilt, torch_repr)
        want = {d: ts._add_suffixes(data, suffixes(x, lathe_name, d), len("tensor("), False) for d in DEVICES}
        cases.append({"name": name, **recipe, "dtype": dtype, "shape": shape, "t": transposed,
                      "torch": torch_repr, "want": want})
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write('{"torch": "%s", "cases": [\n' % torch.__version__)
        f.write(",\n".join(json.dumps(c) for c in cases))
        f.write("\n]}\n")
    print(f"{os.path.relpath(OUT, ROOT)}: {len(cases)} cases")


if __name__ == "__main__":
    main()
