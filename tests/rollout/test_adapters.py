"""Adapter folders: recognised by their files, fingerprinted by their weight files' bytes (what an adapter checks
its base against before it is merged over it)."""

from __future__ import annotations


def test_adapter_folders_and_the_base_fingerprint(tmp_path):
    from flywheel.rollout.adapters import adapter_lineage, files_hash, is_adapter_dir
    from flywheel.rollout.checkpoint import is_checkpoint_dir

    base, adapter = tmp_path / "base", tmp_path / "adapter"
    base.mkdir(), adapter.mkdir()
    assert files_hash(base) is None and not is_adapter_dir(adapter)
    (base / "model.safetensors").write_bytes(b"weights")
    (base / "config.json").write_text("{}")
    h = files_hash(base)
    (base / "config.json").write_text('{"changed": "not the weights"}')
    assert files_hash(base) == h  # only the weight files count
    (base / "model.safetensors").write_bytes(b"weightz")
    assert files_hash(base) != h
    (adapter / "adapter_config.json").write_text(f'{{"base_model_name_or_path": "{base}", "r": 4}}')
    (adapter / "adapter_model.safetensors").write_bytes(b"lora")
    assert is_adapter_dir(adapter) and is_checkpoint_dir(adapter) and not is_adapter_dir(base)
    assert adapter_lineage(adapter)["adapter_base_model"] == str(base) and adapter_lineage(base) == {}
