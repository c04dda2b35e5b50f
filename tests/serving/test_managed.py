"""Serving a LoRA policy: its full-weight base with the adapter as a LoRA module under the served name."""

from __future__ import annotations

import pytest


def test_an_adapter_folder_is_served_as_its_base_plus_a_lora_module(qwen_checkpoint, tmp_path):
    from flywheel.gpu import GpuSpec
    from flywheel.registry.serving import serving_manifest
    from flywheel.rollout.checkpoint import load_model
    from flywheel.serving.managed import adapter_args
    from flywheel.train.common.lora import LoraSpec, apply_lora, write_adapter_info

    model, tok = load_model(qwen_checkpoint, trainable=True)
    policy = tmp_path / "policy"
    apply_lora(model, LoraSpec(lora_rank=4), qwen_checkpoint).save_pretrained(str(policy))
    tok.save_pretrained(str(policy))
    write_adapter_info(policy)
    full = serving_manifest(qwen_checkpoint, "flywheel-policy:1", GpuSpec(count=0), port=8123)
    assert adapter_args(full["variants"]["default"]["args"], "flywheel-policy:1") == full["variants"]["default"]["args"]
    args = adapter_args(serving_manifest(policy, "flywheel-policy:2", GpuSpec(count=0),
                                         port=8123)["variants"]["default"]["args"], "flywheel-policy:2")
    assert args[0] == str(qwen_checkpoint.resolve())
    assert args[args.index("--served-model-name") + 1] == "flywheel-policy:2-base"
    assert args[args.index("--lora-modules") + 1] == f"flywheel-policy:2={policy}"
    assert args[args.index("--max-lora-rank") + 1] == "8" and "--enable-lora" in args
    assert args[args.index("--chat-template") + 1] == str(policy / "chat_template.jinja")  # the policy's template
    try:
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:
        return
    parsed = make_arg_parser(FlexibleArgumentParser()).parse_args(["--model", *args])
    assert parsed.enable_lora and parsed.max_lora_rank == 8


def test_an_adapter_over_an_adapter_is_refused(tmp_path):
    from flywheel.serving.managed import adapter_args

    inner, outer = tmp_path / "inner", tmp_path / "outer"
    for d, base in ((inner, "/nowhere"), (outer, str(inner))):
        d.mkdir()
        (d / "adapter_config.json").write_text(f'{{"base_model_name_or_path": "{base}", "r": 4}}')
        (d / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="merge_adapter"):
        adapter_args([str(outer), "--served-model-name", "x"], "x")
