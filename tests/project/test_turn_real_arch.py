"""A brought checkpoint through whole `flywheel turn`s: the random Qwen2 model (Qwen2.5's chat template) put in the
home's base-model folder, trained with LoRA on CPU by the default stage (RFT) and then by GRPO, evaluated and
registered; the prompts the evaluation sampled are the tokenizer's own `apply_chat_template`."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

import pytest

RELEASE = "qwen2-random"
EVAL = {"n_samples": 1, "tasks_math": 3, "tasks_code": 2, "tasks_agent": 2, "max_new_tokens": 16, "max_steps": 2,
        "suites": ["heldout"]}
RFT = {"stage": "rft", "lora_rank": 8, "rft_tasks_per_domain": {"math": 8, "code": 2, "agent": 2},
       "rft_samples_per_task": 1, "rft_max_new_tokens": 16, "rft_steps": 2, "rft_batch_size": 2,
       "rft_include_logs": True}
GRPO = {"stage": "rl", "lora_rank": 8, "steps": 1, "prompts_per_step": 2, "group_size": 2, "max_new_tokens": 16,
        "checkpoint_every": 0}


@pytest.fixture
def qwen_home(flywheel_home, qwen_checkpoint, tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shutil.copytree(qwen_checkpoint, flywheel_home.base_models / RELEASE)  # `--base-model qwen2-random`
    return flywheel_home


def _turn(day: str | None, rlvr: dict, records: int) -> dict:
    from flywheel_dagster.assets.turn import run_turn
    from flywheel_dagster.assets.turn_config import TurnConfig

    overrides = {"verifiers": {"max_tasks": 16}, "rlvr_policy": rlvr, "eval_report": EVAL}
    return run_turn(TurnConfig(day=day, base_model=RELEASE, records=records, train_budget_s=0, overrides=overrides),
                    progress=lambda _: None)


def _newest_candidate(registry):
    return [v for v in registry.versions() if not v.is_base][-1]


def test_a_qwen_checkpoint_turns_with_lora_rft_then_grpo_in_its_own_template(qwen_home):
    from flywheel.environments.registry import default_environments
    from flywheel.evaluation.suites import eval_tasks
    from flywheel.registry.candidate import eval_dir, load_candidate_eval
    from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry
    from flywheel.rollout import task_prompt
    from flywheel.rollout.checkpoint import load_tokenizer

    base = (qwen_home.base_models / RELEASE).resolve()
    first = _turn("2026-12-01", RFT, 100)
    assert first["traffic_served_by"] == "simulated-prod" and first["task_pool"] > 0
    assert {"math", "code", "agent", "overall"} <= set(first["eval_after"])
    registry = Registry(qwen_home.mlflow_uri, DEFAULT_MODEL_NAME)
    cand = _newest_candidate(registry)
    assert cand.tags["flywheel.adapter"] == "lora" and cand.tags["flywheel.lora_rank"] == "8"
    assert cand.tags["flywheel.adapter_base_model"] == str(base)
    assert "2026-12-01" in json.loads(cand.tags["flywheel.log_partitions"])
    run = registry.client.get_run(registry.client.get_model_version(registry.name, cand.version).run_id)
    assert run.data.tags["flywheel.stage"] == "rft"

    # what the evaluation sampled: each task's prompt in the checkpoint's own template, token for token
    ev = load_candidate_eval(eval_dir(qwen_home, RELEASE))
    tok, envs = load_tokenizer(base), default_environments()
    for rep in (ev.candidate, ev.champion):
        tasks = {t.task_id: t for ts in eval_tasks(rep.config).values() for t in ts}
        assert rep.tasks and {r.domain for r in rep.tasks} == {"math", "code", "agent"}
        for r in rep.tasks:
            t = tasks[r.task_id]
            tools = envs.for_domain(t.domain).tools(t) or None
            want = tok.apply_chat_template([{"role": "user", "content": t.prompt}], tools=tools, tokenize=False,
                                           add_generation_prompt=True)
            assert want.startswith("<|im_start|>system\n") and want.endswith("<|im_start|>assistant\n")
            assert task_prompt(tok, t) == want
            assert r.prompt_tokens == len(tok(want, add_special_tokens=False)["input_ids"]), r.task_id

    second = _turn(None, GRPO, 60)  # GRPO, over the day's traffic served by the first turn's champion
    assert second["day"] == "2026-12-02" and second["traffic_served_by"] == first["champion_after"]
    cand2 = _newest_candidate(registry)
    assert cand2.version != cand.version and cand2.tags["flywheel.adapter"] == "lora"
    # trained from the champion: the base's registered snapshot, or the first adapter (over the base) if promoted
    over = Path(cand2.tags["flywheel.adapter_base_model"])
    assert over == base or filecmp.cmp(over / "model.safetensors", base / "model.safetensors", shallow=False)
    run2 = registry.client.get_run(registry.client.get_model_version(registry.name, cand2.version).run_id)
    assert run2.data.tags["flywheel.stage"] == "rlvr"  # GRPO's run

