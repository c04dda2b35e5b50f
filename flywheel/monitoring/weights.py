"""A fingerprint of a checkpoint's weights: is what is served what the registry says it is?

sha256 over the safetensors tensors in name order (each: name, dtype, shape, raw bytes), read straight from
the files' headers with no framework: the same tensors give the same hash however they are sharded into
files, whatever the files' metadata says, so a re-save of identical weights matches and one changed value
does not. A checkpoint without safetensors files has no fingerprint (None).
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

CHUNK = 1 << 20


def _tensors(file: Path) -> list[tuple[str, str, list[int], int, int]]:
    """(name, dtype, shape, start, end) of each tensor in a safetensors file; offsets absolute in the file."""
    with open(file, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    base = 8 + n
    return [(k, v["dtype"], list(v["shape"]), base + v["data_offsets"][0], base + v["data_offsets"][1])
            for k, v in header.items() if k != "__metadata__"]


def weights_hash(model_dir: str | Path) -> str | None:
    """The hex sha256 of every tensor of `model_dir`'s `*.safetensors` files, in name order; None without any."""
    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        return None
    entries = sorted((t[0], t, f) for f in files for t in _tensors(f))
    h = hashlib.sha256()
    for name, (_, dtype, shape, start, end), file in entries:
        h.update(json.dumps([name, dtype, shape]).encode())
        with open(file, "rb") as f:
            f.seek(start)
            left = end - start
            while left:
                chunk = f.read(min(CHUNK, left))
                if not chunk:
                    raise ValueError(f"{file}: tensor {name} is cut short")
                h.update(chunk)
                left -= len(chunk)
    return h.hexdigest()
