"""Serving the champion with vLLM's OpenAI server: the chat template, the manifest, `flywheel serve`."""

from __future__ import annotations

import json

import pytest

from flywheel.rollout.chat import render_example, render_prompt
from flywheel.serving.vllm_server import server_command, write_chat_template


def test_the_chat_template_renders_exactly_the_trained_format(policy_dir):
    from transformers import AutoTokenizer

    write_chat_template(policy_dir)
    tok = AutoTokenizer.from_pretrained(policy_dir)
    q, a = "What is 2 + 3?", "5"
    user = [{"role": "user", "content": q}]
    assert tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True, domain="math") \
        == render_prompt("math", q)
    turn = [{"role": "system", "content": "ignored"}, *user, {"role": "assistant", "content": a}]
    assert tok.apply_chat_template(turn, tokenize=False, domain="math") == render_example("math", q, a)


@pytest.mark.vllm
def test_every_manifest_variant_parses_with_vllms_own_parser(policy_dir, require_vllm):
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    from flywheel.gpu import GpuSpec
    from flywheel.registry.serving import serving_manifest

    write_chat_template(policy_dir)  # as write_serving_manifest does beside serving.json
    for device, gpus in (("cpu", 0), ("cuda", 2)):
        m = serving_manifest(policy_dir, "flywheel-policy:1", GpuSpec(count=gpus), port=8123)
        assert m["device"] == device
        for name, variant in m["variants"].items():
            args = make_arg_parser(FlexibleArgumentParser()).parse_args(server_command(variant["args"])[3:])
            validate_parsed_serve_args(args)
            assert args.model == str(policy_dir) and args.host == "127.0.0.1" and args.port == 8123
            assert args.enable_chunked_prefill is (device == "cuda"), (device, name)
            assert variant["runs_on_target"] is (device == "cuda" or name == "default")
    cpu = serving_manifest(policy_dir, "flywheel-policy:1", GpuSpec(count=0))["variants"]["default"]["args"]
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(server_command(cpu)[3:])
    config = AsyncEngineArgs.from_cli_args(args).create_engine_config()  # what the CPU server would start with
    assert config.model_config.max_model_len == json.loads((policy_dir / "config.json").read_text())[
        "max_position_embeddings"]


def _production_traffic_through_the_endpoint(base_url, champ, policy_dir):
    """The champion responder with the served engine: greedy tokens equal the torch engine's, tools run."""
    import random

    from flywheel.rollout import build_engine
    from flywheel.rollout.types import SamplingParams
    from flywheel.serving.champion import ChampionResponder, ServeConfig
    from flywheel.serving.vllm_server import served_engine
    from flywheel.tasks.suites import heldout_suite

    served = served_engine(base_url, champ.uri)(str(policy_dir))
    prompts = [render_prompt("math", f"What is {i} + 4?") for i in range(3)]
    sp = SamplingParams(temperature=0.0, max_new_tokens=8)
    local = build_engine("torch", str(policy_dir)).generate(prompts, 1, sp)
    assert [r.token_ids for r in served.generate(prompts, 1, sp)] == [r.token_ids for r in local]
    responder = ChampionResponder(policy_dir, champ.uri, ServeConfig(max_new_tokens=8, max_steps=2),
                                  engine=served_engine(base_url, champ.uri))
    tasks = heldout_suite("math", 2) + heldout_suite("agent", 1)
    out = responder.respond_batch(tasks, random.Random(0))
    assert len(out) == 3 and all(r.model == champ.uri for r in out)


@pytest.mark.vllm
def test_flywheel_serve_answers_an_openai_chat_request_and_stops_with_no_process_left(
        policy_dir, mlflow_registry, capsys, require_vllm):
    import openai

    from flywheel.cli import main
    from flywheel.rollout.checkpoint import load_tokenizer
    from flywheel.serving.vllm_server import group_pids, pid_alive

    champ = mlflow_registry.ensure_champion(policy_dir, "tiny")
    assert main(["serve", "--variant", "fast", "--device", "cpu"]) == 2  # fp8 + speculative: GPU only
    capsys.readouterr()
    assert main(["serve", "--detach", "--port", "0", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    pids = group_pids(info["pid"])
    try:
        assert info["base_url"].startswith("http://127.0.0.1:") and len(pids) >= 2  # API server + engine core
        assert main(["serve", "--detach", "--json"]) == 2  # one at a time
        capsys.readouterr()
        client = openai.OpenAI(base_url=info["base_url"], api_key="unused", timeout=60)
        q = "What is 2 + 3?"
        r = client.chat.completions.create(
            model=champ.uri, messages=[{"role": "user", "content": q}], max_tokens=8, temperature=0.7, seed=1,
            extra_body={"chat_template_kwargs": {"domain": "math"}})
        assert isinstance(r.choices[0].message.content, str) and r.usage.completion_tokens >= 1
        # the served prompt is exactly the trained one: same token count as render_prompt's
        tok = load_tokenizer(policy_dir)
        assert r.usage.prompt_tokens == len(tok(render_prompt("math", q), add_special_tokens=False)["input_ids"])
        _production_traffic_through_the_endpoint(info["base_url"], champ, policy_dir)
    finally:
        assert main(["serve", "--stop", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["left"] == []
    assert [p for p in pids if pid_alive(p)] == []
    assert main(["serve", "--stop"]) == 2  # nothing left to stop
