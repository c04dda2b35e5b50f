"""The weights fingerprint: same tensors, same hash (however sharded or re-saved); one changed value, another."""

from __future__ import annotations

import numpy as np
from safetensors.numpy import save_file

from flywheel.monitoring.weights import weights_hash

RNG = np.random.default_rng(0)
TENSORS = {"model.embed.weight": RNG.standard_normal((8, 4)).astype(np.float32),
           "lm_head.weight": RNG.standard_normal((8, 4)).astype(np.float32),
           "model.norm.weight": np.ones(4, dtype=np.float16)}


def test_same_tensors_hash_alike_whatever_the_files(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    save_file(TENSORS, str(one / "model.safetensors"), metadata={"format": "pt"})
    names = sorted(TENSORS)
    save_file({k: TENSORS[k] for k in names[:1]}, str(two / "model-00001-of-00002.safetensors"))
    save_file({k: TENSORS[k] for k in names[1:]}, str(two / "model-00002-of-00002.safetensors"))
    h = weights_hash(one)
    assert h is not None and len(h) == 64 and h == weights_hash(two)


def test_one_changed_value_or_dtype_changes_the_hash(tmp_path):
    save_file(TENSORS, str(tmp_path / "model.safetensors"))
    before = weights_hash(tmp_path)
    changed = dict(TENSORS, **{"lm_head.weight": TENSORS["lm_head.weight"].copy()})
    changed["lm_head.weight"][3, 1] += 1e-3
    save_file(changed, str(tmp_path / "model.safetensors"))
    assert weights_hash(tmp_path) != before
    save_file(dict(TENSORS, **{"model.norm.weight": np.ones(4, dtype=np.float32)}), str(tmp_path / "model.safetensors"))
    assert weights_hash(tmp_path) != before


def test_no_safetensors_no_fingerprint(tmp_path):
    (tmp_path / "pytorch_model.bin").write_bytes(b"\0" * 16)
    assert weights_hash(tmp_path) is None
