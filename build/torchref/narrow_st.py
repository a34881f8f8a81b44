"""Writes nn/testdata/torch_narrow.safetensors: torch tensors of the narrow
dtypes (float16, bfloat16, int8, uint8) at their edge values, and torch's
own casts of some of them, which nn/safetensors_narrow_test.go loads.

The file is assembled by hand from each tensor's bytes, as the format says
(an 8-byte little-endian header length, the JSON header, the raw
little-endian data), so the safetensors package is not needed. It is
written the way lathe's Save writes (names sorted, the data in that order,
the header compact and padded with spaces to a multiple of 8), so that the
test can also check that Save reproduces it byte for byte.

Run with a Python that has torch (Debian's /usr/bin/python3):
    /usr/bin/python3 build/torchref/narrow_st.py
"""
import json
import os
import struct

import torch


def bits16(dt, patterns):
    """A tensor of dt whose elements have the given 16-bit patterns."""
    return torch.tensor([p - 0x10000 if p >= 0x8000 else p for p in patterns], dtype=torch.int16).view(dt)


# ±0, the smallest and largest subnormals, the smallest normal, ±max, ±Inf,
# torch's NaN, a NaN with a payload, a signalling NaN, 1, 1/3, -2.
f16 = bits16(torch.float16, [0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7c00,
                             0xfc00, 0x7e00, 0xfe55, 0x7c01, 0x3c00, 0x3555, 0xc000, 0x0200]).reshape(2, 8)
bf16 = bits16(torch.bfloat16, [0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x7f7f, 0xff7f, 0x7f80,
                               0xff80, 0x7fc0, 0xffd5, 0x7f81, 0x3f80, 0x3eab, 0xc000, 0x0040]).reshape(2, 8)
f32 = torch.tensor([1 / 3, 65520.0, -65519.0, 2.0 ** -25, 2.0 ** -25 * 1.5, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
                    float("nan"), -float("inf"), 3.0e38, -1e-40, 0.1], dtype=torch.float32)

tensors = {
    "f16": f16,
    "bf16": bf16,
    "bf16_scalar": bits16(torch.bfloat16, [0xc0a0]).reshape(()),  # -5
    "i8": torch.tensor([-128, -1, 0, 1, 127, -2], dtype=torch.int8).reshape(3, 2),
    "u8": torch.tensor([0, 1, 127, 128, 254, 255], dtype=torch.uint8),
    # torch's casts, the references for nn.CastDType.
    "f16_f32": f16.float(),
    "bf16_f32": bf16.float(),
    "f32": f32,
    "f32_f16": f32.half(),
    "f32_bf16": f32.bfloat16(),
}

names = {torch.float16: "F16", torch.bfloat16: "BF16", torch.int8: "I8", torch.uint8: "U8", torch.float32: "F32"}
header, data = {}, b""
for name in sorted(tensors):
    t = tensors[name].contiguous()
    # The raw bytes: view 16-bit floats as int16 so numpy can hold them.
    raw = (t.view(torch.int16) if t.dtype in (torch.float16, torch.bfloat16) else t).numpy().astype(
        {torch.float16: "<i2", torch.bfloat16: "<i2", torch.int8: "i1", torch.uint8: "u1", torch.float32: "<f4"}[t.dtype]
    ).tobytes()
    header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
js = json.dumps(header, separators=(",", ":")).encode()
js += b" " * (-len(js) % 8)
out = os.path.join(os.path.dirname(__file__), "..", "..", "nn", "testdata", "torch_narrow.safetensors")
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(js)) + js + data)
print(out, 8 + len(js) + len(data), "bytes")
