#!/usr/bin/python3
"""Generate lathe's conformance references with PyTorch 1.13.

Each op family's cases go to testdata/conformance/<family>.json, which
internal/conformance loads and runs on every device lathe can open. A case has
a name ("add/f32/bcast[3,1]x[1,4]"), an op key that the Go table maps to a
lathe call, attrs, inputs, and either the output torch computed in the case's
dtype or the kind of error lathe must return; then literals.py writes the
reference values of the unit tests outside the suite. See README.md for the format
and how to run it; refcase.py holds the table and the encoding, and one
module per group of families holds their cases.

Inputs are seeded (one seed per family, so adding a case to one family leaves
the others' data as it was) and rounded to three decimals, which keeps the
JSON small; outputs are torch's exact values.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree

from conv import conv, grad_conv  # noqa: E402
from elementwise import binary, elementwise  # noqa: E402
from gradtensor import grad  # noqa: E402
from grad_narrow import grad_narrow  # noqa: E402
from interp import grad_interp, interp_cases  # noqa: E402
import half  # noqa: E402
import promote  # noqa: E402
import autocast  # noqa: E402
import gradscaler  # noqa: E402
import literals  # noqa: E402
from narrow import narrow  # noqa: E402
from nn import nn  # noqa: E402
from norm import grad_norm, norm  # noqa: E402
from pool import grad_pool, pool  # noqa: E402
from reduce import matmul, reductions  # noqa: E402
from shape import indexing, views  # noqa: E402
from shapeops import grad_shape_ops, shape_ops  # noqa: E402
from lossweight import grad_loss_weight, loss_weight  # noqa: E402
from pad import grad_pad, pad  # noqa: E402
from stress import stress  # noqa: E402
from sort import grad_sort, sort  # noqa: E402
from attention import attention, grad_attention  # noqa: E402
import transformer_ref  # noqa: E402
import nnmods_ref  # noqa: E402
import sampling  # noqa: E402
import repr as tensor_repr  # noqa: E402  (the builtin repr is not used here)
from grid import grad_grid, grid_cases  # noqa: E402
from selection import grad_select, select  # noqa: E402  (select.py would be the stdlib module)
from moreops import grad_moreops, moreops  # noqa: E402
from losses import grad_losses, losses  # noqa: E402
from mathops import grad_mathops, mathops  # noqa: E402
from scan import grad_scan, scan  # noqa: E402
from linalg import grad_linalg, linalg  # noqa: E402
from ctc import ctc_values, grad_ctc  # noqa: E402
from linalg2 import grad_linalg2, linalg2  # noqa: E402
from index2 import grad_index2, index2  # noqa: E402
from mathextra import grad_mathextra, mathextra  # noqa: E402
from linalg3 import grad_linalg3, linalg3  # noqa: E402
from linalg4 import grad_linalg4, linalg4  # noqa: E402
from windows import grad_windows, windows  # noqa: E402
from shapes3 import grad_shapes3, shapes3  # noqa: E402
from special import grad_special, special  # noqa: E402
import gpt  # noqa: E402


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    folder = os.path.join(root, "testdata", "conformance")
    os.makedirs(folder, exist_ok=True)
    total, size = 0, 0
    for make in (elementwise, binary, reductions, matmul, views, indexing, nn, grad,
                 pool, grad_pool, interp_cases, grad_interp, norm, grad_norm, conv, grad_conv, stress, narrow,
                 pad, grad_pad, loss_weight, grad_loss_weight, shape_ops, grad_shape_ops, sort, grad_sort,
                 attention, grad_attention, grid_cases, grad_grid, select, grad_select, grad_narrow,
                 moreops, grad_moreops, losses, grad_losses, mathops, grad_mathops, scan, grad_scan, linalg, grad_linalg,
                 ctc_values, grad_ctc, linalg2, grad_linalg2, index2, grad_index2, mathextra, grad_mathextra,
                 linalg3, grad_linalg3, windows, grad_windows, shapes3, grad_shapes3, linalg4, grad_linalg4,
                 special, grad_special):
        path, n = make().write(folder)
        total += n
        size += os.path.getsize(path)
        print(f"{os.path.relpath(path, root)}: {n} cases, {os.path.getsize(path)} bytes")
    print(f"total: {total} cases, {size} bytes")
    # The unit tests' reference values outside the suite (literals.py).
    literals.main()
    # internal/half's float16 and bfloat16 roundings (half.py).
    half.main()
    # The type promotion tables of promote_test.go (promote.py).
    promote.main()
    # Autocast's linear, matmul and gradients (autocast.py).
    autocast.main()
    # nn.GradScaler's steps (gradscaler.py).
    gradscaler.main()
    # nn's transformer layers (transformer_ref.py).
    transformer_ref.main()
    # nn's activation, pooling, padding and rearranging modules (nnmods_ref.py).
    nnmods_ref.main()
    # Which arguments torch's randint, randperm and multinomial take (sampling.py).
    sampling.main()
    # How torch prints tensors, for format_torchref_test.go (repr.py).
    tensor_repr.main()
    # examples/gpt/model's weights, logits, gradients and AdamW losses (gpt.py).
    gpt.main()


if __name__ == "__main__":
    main()
