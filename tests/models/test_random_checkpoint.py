"""A brought checkpoint (random Qwen2 weights, Qwen2.5's chat template, built offline) goes through what a tiny
model does: resolved, sampled by `flywheel model sample`, trained (RFT and GRPO), evaluated and registered,
every prompt rendered by its own template (`apply_chat_template`), never the project format."""

from __future__ import annotations

import json

from flywheel.tasks.suites import train_suite
from flywheel.verifiers.verdict import Verdict


def _digits(domain: str, task: dict, response: str) -> Verdict:
    n = sum(c.isdigit() for c in response)  # a random policy writes digits sometimes
    return Verdict(min(n, 3) / 3, n >= 3, f"{n} digits")


def _templated(tok, task) -> str:
    return tok.apply_chat_template([{"role": "user", "content": task.prompt}], tokenize=False,
                                   add_generation_prompt=True)


def test_the_checkpoint_is_resolved_and_sampled_in_its_own_template(qwen_checkpoint, flywheel_home, capsys):
    from flywheel.cli import main
    from flywheel.models import resolve_base_model
    from flywheel.rollout import build_engine, generate_for_tasks
    from flywheel.rollout.types import SamplingParams

    info = resolve_base_model(str(qwen_checkpoint), flywheel_home)
    assert info.kind == "hf" and info.params > 0
    engine = build_engine("torch", str(qwen_checkpoint))
    tasks = train_suite("math", 3)
    rs = generate_for_tasks(engine, tasks, 2, SamplingParams(max_new_tokens=6, seed=1))
    assert [r.prompt for r in rs] == [_templated(engine.tokenizer, t) for t in tasks for _ in range(2)]
    assert all(r.prompt_ids == engine.encode(r.prompt) for r in rs)
    assert main(["model", "sample", "--model", str(qwen_checkpoint), "--n", "2", "--max-new-tokens", "4",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(out["samples"]) == 2 and out["model"] == str(qwen_checkpoint)


def test_the_trainer_renders_rollouts_and_sft_examples_in_the_checkpoints_template(qwen_checkpoint):
    from flywheel.rollout.checkpoint import load_model
    from flywheel.rollout.types import SamplingParams
    from flywheel.train.common.rollouts import PolicyGenerator
    from flywheel.train.common.sft import tokenize_examples

    model, tok = load_model(qwen_checkpoint)
    tasks = train_suite("math", 2)
    groups = PolicyGenerator(model, tok).generate(tasks, 2, SamplingParams(max_new_tokens=4))
    assert [g[0].prompt for g in groups] == [_templated(tok, t) for t in tasks]
    (ids, plen), = tokenize_examples(tok, [("math", tasks[0].prompt, tasks[0].solution)], 512)
    assert tok.decode(ids[:plen], skip_special_tokens=False) == _templated(tok, tasks[0])
    assert ids[-1] == tok.convert_tokens_to_ids("<|im_end|>")


def test_rft_then_grpo_evaluation_and_registration_of_the_checkpoint(qwen_checkpoint, flywheel_home,
                                                                     seed_mlflow_db, log_gold):
    from flywheel.evaluation.runner import evaluate_policy
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.registry.mlflow_registry import Registry
    from flywheel.rollout.chat import checkpoint_chat_template
    from flywheel.train.api import train_policy
    from flywheel.train.config import TrainConfig
    from flywheel.train.rft.config import RftConfig

    seed_mlflow_db(flywheel_home)
    log_gold(flywheel_home, train_suite("math", 4))  # RFT's examples: logged successes (random samples run long)
    cfg = TrainConfig(stage="rft_rl", steps=1, prompts_per_step=2, group_size=2, max_new_tokens=8, dev_every=0,
                      domain_weights={"math": 1.0}, replay_tasks_per_domain=0, checkpoint_every=0)
    rft = RftConfig(tasks_per_domain={"math": 4}, samples_per_task=2, max_new_tokens=8, steps=1, batch_size=2,
                    include_logs=True)
    res = train_policy(cfg, qwen_checkpoint, "qwen2-random", paths=flywheel_home, tasks=train_suite("math", 4),
                       rft=rft)
    assert res.finished and res.steps_done == 1
    # the trained policy keeps the checkpoint's template, so it is served and evaluated in it too
    assert checkpoint_chat_template(res.policy_dir) == checkpoint_chat_template(qwen_checkpoint)
    rep = evaluate_policy(str(res.policy_dir), EvalConfig(n_samples=1, greedy=False, max_new_tokens=4,
                                                          tasks_per_domain={"math": 2}, suites=("heldout",)),
                          score=_digits)
    assert rep.tasks and all(r.domain == "math" for r in rep.tasks)
    ref = Registry(flywheel_home.mlflow_uri).register(res.policy_dir, lineage={"base_model": str(qwen_checkpoint)})
    assert ref.version
