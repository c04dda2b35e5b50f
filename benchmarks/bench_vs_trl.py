"""Flywheel's GRPO trainer against TRL's `GRPOTrainer` in one run: seconds per step and held-out gain.

    .venv/bin/python benchmarks/bench_vs_trl.py [--steps 60] [--tasks 400] [--seed 0]

Both trainers start from the same tiny base model (flywheel builds it, or reuses its cached
build; nothing is downloaded) and train on the same math train-suite tasks with flywheel's
recipe (`GRPOConfig`'s defaults): learning rate and its cosine schedule, temperature,
group size (TRL's `num_generations`), prompts per step, micro-batch, max new tokens, clip range,
steps; flywheel also runs with `FLYWHEEL_SPEED` (its rollout pipeline, no refill rounds). Flywheel's mean-only (Dr. GRPO) advantages are TRL's `loss_type="dr_grpo"` with
`scale_rewards="none"`; TRL's `beta` is flywheel's `kl_coef`. TRL's rewards come from
flywheel's verifiers through `flywheel.verifiers.make_reward_func`. Both run in this process,
one after the other, with one torch thread (flywheel's pipeline adds a generation thread beside its
update thread, so it can use a second core), and their steps are timed by the same clock
(time between consecutive step ends, the first `--warmup` steps left out; wall time is the
headline, this process's CPU time per step is printed beside it because on a shared machine
other load stretches wall time but not CPU time). Then the base model
and both policies are evaluated on the same held-out math tasks at the same temperature and
seed (`flywheel.evaluation.runner`), and each gain is a paired difference against the base
with its bootstrap CI. Needs the [dev] extra (trl). Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# TRL, datasets and transformers must never reach the network: set before any of them is imported.
for _var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ[_var] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flywheel.commands.storage import storage_from_env  # noqa: E402
from flywheel.evaluation.runner import EvalReport, compare, evaluate_policy  # noqa: E402
from flywheel.evaluation.suites import EvalConfig  # noqa: E402
from flywheel.models import resolve_base_model  # noqa: E402
from flywheel.paths import FlywheelPaths  # noqa: E402
from flywheel.rollout.chat import render_prompt  # noqa: E402
from flywheel.tasks.base import Task  # noqa: E402
from flywheel.tasks.suites import train_suite  # noqa: E402
from flywheel.train.config import GRPOConfig  # noqa: E402

THREADS = 1
"""torch intra-op threads for both trainers (fairness; on a shared 2-core box 2 threads spin-wait)."""

DEFAULT_STEPS = 60
"""Half the RL recipe's 120 steps: the whole bench (both trainings, three evaluations) takes ~1.5 minutes on 2 quiet
CPU cores (flywheel ~0.45, TRL ~0.8 CPU s/step), 2-3x that in wall time on a loaded box."""


FLYWHEEL_SPEED = {"off_policy_pipeline": True, "max_refill_rounds": 0}
"""The two trainer settings this bench turns on beside the recipe, both flywheel features TRL's CPU path lacks:
generating step k+1 in a thread while step k updates (one-step-off-policy, as verl and OpenRLHF run async), and
generating TRL's 8 groups a step, then updating on the groups with signal only instead of regenerating the flat
ones (TRL back-propagates through zero-advantage groups). Measured on tiny-v1, 12 steps, 2 cores: CPU s/step
0.81 (recipe default: 11 groups generated a step), 0.47 without refill, 0.46 with the pipeline too; TRL 0.71."""


def flywheel_config(steps: int, seed: int) -> GRPOConfig:
    """The turn's recipe on math only, CPU, one thread, with `FLYWHEEL_SPEED`; no early stop (both run `steps`),
    no periodic checkpoint (TRL saves none); the dev split still picks the best checkpoint, as in a turn."""
    return GRPOConfig(steps=steps, seed=seed, domain_weights={"math": 1.0}, checkpoint_every=0,
                      patience=0, num_threads=THREADS, device="cpu", **FLYWHEEL_SPEED)


Stamp = tuple[float, float, bool]
"""(wall clock, this process's CPU time, whether the step also scored the dev split) at the end of a step."""


def stamp(dev: bool = False) -> Stamp:
    return time.perf_counter(), time.process_time(), dev


def step_seconds(ends: list[Stamp], warmup: int, clock: int = 0) -> list[float]:
    """Per-step times (clock 0: wall, 1: CPU) from the step-end stamps, the first `warmup` steps left out,
    and the steps that also scored flywheel's dev split (an evaluation, not a step's work) left out."""
    gaps = [(b[clock] - a[clock], b[2]) for a, b in zip(ends, ends[1:], strict=False)]  # gaps[i]: step i + 1
    return [g for g, dev in gaps[max(0, warmup - 1):] if not dev]


def run_flywheel(cfg: GRPOConfig, base: Path, tasks: list[Task], work: FlywheelPaths,
                 out: Path) -> tuple[list[Stamp], list[float], dict[str, Any]]:
    """Train with flywheel's trainer; (step-end stamps, mean reward per step, run facts)."""
    from flywheel.train.common.telemetry import Telemetry
    from flywheel.train.grpo.trainer import RunInputs, train_rlvr

    ends: list[Stamp] = []
    res = train_rlvr(cfg, RunInputs(str(base), tasks, work, "bench-vs-trl-flywheel", output_dir=out),
                     telemetry=Telemetry(None, enabled=False),
                     on_step=lambda _s, m: ends.append(stamp("time/dev_s" in m)))
    facts = {"groups_generated_per_step": statistics.fmean(h.get("groups/generated", cfg.prompts_per_step)
                                                           for h in res.history),
             "groups_kept_per_step": statistics.fmean(h.get("groups/kept", cfg.prompts_per_step)
                                                      for h in res.history),
             "dev_s": sum(h.get("time/dev_s", 0.0) for h in res.history),
             "dev_best_step": res.dev_best.get("step"), "steps_done": res.steps_done}
    return ends, [h["reward/mean"] for h in res.history if "reward/mean" in h], facts


def trl_args(cfg: GRPOConfig, out: Path) -> Any:
    """TRL's `GRPOConfig` carrying flywheel's recipe field by field."""
    from trl import GRPOConfig as TRLConfig  # optional: the [dev] extra

    per_step = cfg.prompts_per_step * cfg.group_size
    micro = min(cfg.micro_batch_size, per_step)
    while per_step % micro:  # TRL splits one generation batch into equal micro-batches
        micro -= 1
    loss_type, scale = {"dr_grpo": ("dr_grpo", "none"), "grpo": ("grpo", "group")}[cfg.advantage]
    sched: dict[str, Any] = {"lr_scheduler_type": "constant"}
    if cfg.lr_schedule == "cosine":  # flywheel decays to 10% of the peak
        sched = {"lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1}}
    return TRLConfig(
        output_dir=str(out), max_steps=cfg.steps, seed=cfg.seed, use_cpu=True, bf16=False, fp16=False,
        report_to="none", save_strategy="no", logging_steps=1, disable_tqdm=True, log_completions=False,
        dataloader_num_workers=0, gradient_checkpointing=False,  # TRL's default recomputes; flywheel does not
        learning_rate=cfg.lr, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
        adam_beta1=cfg.adam_betas[0], adam_beta2=cfg.adam_betas[1], max_grad_norm=cfg.max_grad_norm, **sched,
        per_device_train_batch_size=micro, gradient_accumulation_steps=per_step // micro,
        num_generations=cfg.group_size, max_completion_length=cfg.max_new_tokens,
        temperature=cfg.temperature, top_p=cfg.top_p, top_k=0,
        loss_type=loss_type, scale_rewards=scale, beta=cfg.kl_coef,
        epsilon=cfg.clip_low, epsilon_high=cfg.clip_high, num_iterations=cfg.ppo_epochs,
    )


def run_trl(cfg: GRPOConfig, base: Path, tasks: list[Task], out: Path) -> tuple[list[Stamp], list[float]]:
    """Train with TRL's GRPOTrainer (rewards from flywheel's verifiers); (step-end timestamps, mean reward per step)."""
    # optional heavy imports: the [dev] extra
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, PrinterCallback, TrainerCallback
    from trl import GRPOTrainer

    from flywheel.rollout.checkpoint import load_tokenizer
    from flywheel.verifiers import make_reward_func

    tok = load_tokenizer(base)
    probe = render_prompt("math", tasks[0].prompt)
    if tok(probe)["input_ids"] != tok(probe, add_special_tokens=False)["input_ids"]:
        raise RuntimeError("the tokenizer adds special tokens TRL would put in front of every prompt")
    rows = [{"prompt": render_prompt(t.domain, t.prompt), "task": json.dumps(t.verifier_task()), "domain": t.domain}
            for t in tasks]

    ends: list[Stamp] = []

    class StepClock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            ends.append(stamp())

    model = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype="float32")
    trainer = GRPOTrainer(model=model, reward_funcs=[make_reward_func()], args=trl_args(cfg, out / "run"),
                          train_dataset=Dataset.from_list(rows), processing_class=tok, callbacks=[StepClock()])
    trainer.remove_callback(PrinterCallback)  # its per-step dicts would bury the bench's lines
    trainer.train()
    trainer.save_model(str(out))
    tok.save_pretrained(str(out))
    return ends, [h["reward"] for h in trainer.state.log_history if "reward" in h]


def reward_trend(rewards: list[float], k: int = 5) -> str:
    """Mean train reward over the first and the last `k` steps (a single step is noisy)."""
    if not rewards:
        return "no reward logged"
    k = max(1, min(k, len(rewards) // 2))
    return f"train reward {statistics.fmean(rewards[:k]):.3f} (first {k} steps) -> {statistics.fmean(rewards[-k:]):.3f} (last {k})"


def gain(policy: EvalReport, base: EvalReport) -> dict[str, Any]:
    """Held-out math pass@1 of `policy` minus the base's, paired over tasks, with its CI."""
    d = compare(policy, base).diffs["math"]
    return {"value": round(d.value, 4), "ci": [round(d.lo, 4), round(d.hi, 4)], "n_tasks": d.n}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="optimizer steps for each trainer")
    ap.add_argument("--tasks", type=int, default=400, help="math train-suite tasks both trainers sample from")
    ap.add_argument("--seed", type=int, default=0, help="training and evaluation seed")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of the per-step time")
    ap.add_argument("--eval-tasks", type=int, default=100, help="held-out math tasks (the suite holds 100)")
    ap.add_argument("--eval-samples", type=int, default=8, help="samples per held-out task")
    ap.add_argument("--eval-temperature", type=float, default=EvalConfig().temperature,
                    help="evaluation temperature (default: the serving temperature)")
    ap.add_argument("--release", default="tiny-v1", help="tiny-* base model release (built or reused)")
    args = ap.parse_args(argv)
    if args.steps <= args.warmup:
        ap.error("--steps must exceed --warmup")

    import torch  # heavy

    torch.set_num_threads(THREADS)
    import trl  # optional: the [dev] extra; fail here, before any training, when it is missing

    t_all = time.perf_counter()
    info = resolve_base_model(args.release, storage_from_env().ensure())
    cfg = flywheel_config(args.steps, args.seed)
    tasks = train_suite("math", args.tasks)
    print(f"base model {info.release}: {info.params:,} params ({'cached' if info.cached else f'built in {info.seconds:.0f}s'})")
    print(f"recipe: {cfg.steps} steps x {cfg.prompts_per_step} prompts x {cfg.group_size} samples, lr {cfg.lr} "
          f"{cfg.lr_schedule}, T={cfg.temperature}, max_new_tokens {cfg.max_new_tokens}, advantage {cfg.advantage}, "
          f"kl_coef {cfg.kl_coef}; {len(tasks)} math train tasks; TRL {trl.__version__} loss_type=dr_grpo, "
          f"scale_rewards=none, beta={cfg.kl_coef}")
    print(f"torch threads: {THREADS} for both trainers (same process, run one after the other)")

    with tempfile.TemporaryDirectory(prefix="bench-vs-trl-") as tmp:
        work = FlywheelPaths(home=Path(tmp) / "home").ensure()
        fw_dir, trl_dir = Path(tmp) / "flywheel_policy", Path(tmp) / "trl_policy"
        t0 = time.perf_counter()
        fw_ends, fw_rewards, fw_facts = run_flywheel(cfg, info.path, tasks, work, fw_dir)
        fw_wall = time.perf_counter() - t0
        print(f"flywheel trained {len(fw_ends)} steps in {fw_wall:.1f}s; {reward_trend(fw_rewards)}; "
              f"{fw_facts['groups_generated_per_step']:.1f} groups generated per step, "
              f"{fw_facts['groups_kept_per_step']:.1f} with signal trained on; pipeline "
              f"{'on' if cfg.off_policy_pipeline else 'off'}; dev split scored every {cfg.dev_every} steps ({fw_facts['dev_s']:.0f}s, "
              f"not counted in s/step), best at step {fw_facts['dev_best_step']} is its policy")
        t0 = time.perf_counter()
        trl_ends, trl_rewards = run_trl(cfg, info.path, tasks, trl_dir)
        trl_wall = time.perf_counter() - t0
        print(f"TRL trained {len(trl_ends)} steps in {trl_wall:.1f}s; {reward_trend(trl_rewards)}; "
              f"{cfg.prompts_per_step} groups generated and trained per step "
              f"(torch threads still {torch.get_num_threads()})")

        fw_steps, trl_steps = step_seconds(fw_ends, args.warmup), step_seconds(trl_ends, args.warmup)
        s_fw, s_trl = statistics.fmean(fw_steps), statistics.fmean(trl_steps)
        print(f"seconds/step (mean of steps {args.warmup + 1}..{args.steps}): flywheel {s_fw:.2f}s "
              f"(median {statistics.median(fw_steps):.2f}), TRL {s_trl:.2f}s (median {statistics.median(trl_steps):.2f})"
              f" -> flywheel {s_trl / s_fw:.2f}x faster per step")
        c_fw = statistics.fmean(step_seconds(fw_ends, args.warmup, clock=1))
        c_trl = statistics.fmean(step_seconds(trl_ends, args.warmup, clock=1))
        print(f"CPU seconds/step (this process, load-independent): flywheel {c_fw:.2f}s, TRL {c_trl:.2f}s "
              f"-> {c_trl / c_fw:.2f}x")

        ecfg = EvalConfig(n_samples=args.eval_samples, temperature=args.eval_temperature, seed=args.seed,
                          tasks_per_domain={"math": args.eval_tasks})
        t0 = time.perf_counter()
        reps = {name: evaluate_policy(str(path), ecfg, model=name)
                for name, path in (("base", info.path), ("flywheel", fw_dir), ("trl", trl_dir))}
        eval_s = time.perf_counter() - t0
    n_eval = len(reps["base"].tasks)
    print(f"held-out math: {n_eval} tasks x {args.eval_samples} samples at T={args.eval_temperature}, "
          f"seed {args.seed} ({eval_s:.0f}s for 3 models)")
    pass1 = {k: round(r.metrics["math"]["pass@1"].value, 4) for k, r in reps.items()}
    g_fw, g_trl = gain(reps["flywheel"], reps["base"]), gain(reps["trl"], reps["base"])
    head = gain(reps["flywheel"], reps["trl"])
    print(f"pass@1: base {pass1['base']:.3f}, flywheel {pass1['flywheel']:.3f}, TRL {pass1['trl']:.3f}")
    for name, g in (("flywheel - base", g_fw), ("TRL - base", g_trl), ("flywheel - TRL", head)):
        print(f"{name:16s} {g['value']:+.3f}  paired 95% CI [{g['ci'][0]:+.3f}, {g['ci'][1]:+.3f}]")
    total = time.perf_counter() - t_all
    print(f"total {total:.0f}s")
    out = {
        "step_speedup_vs_trl": round(s_trl / s_fw, 3),
        "s_per_step_flywheel": round(s_fw, 3), "s_per_step_trl": round(s_trl, 3),
        "cpu_s_per_step_flywheel": round(c_fw, 3), "cpu_s_per_step_trl": round(c_trl, 3),
        "cpu_step_speedup_vs_trl": round(c_trl / c_fw, 3),
        "gain_flywheel": g_fw["value"], "gain_trl": g_trl["value"],
        "ci_gain_flywheel": g_fw["ci"], "ci_gain_trl": g_trl["ci"],
        "flywheel_minus_trl": head["value"], "ci_flywheel_minus_trl": head["ci"],
        "pass1": pass1, "flywheel_groups_generated_per_step": round(fw_facts["groups_generated_per_step"], 2),
        "flywheel_groups_kept_per_step": round(fw_facts["groups_kept_per_step"], 2), "flywheel_speed": FLYWHEEL_SPEED,
        "flywheel_dev_best_step": fw_facts["dev_best_step"], "flywheel_dev_s": round(fw_facts["dev_s"], 1), "train_wall_s": {"flywheel": round(fw_wall, 1), "trl": round(trl_wall, 1)},
        "steps": args.steps, "warmup_steps_excluded": args.warmup, "train_tasks": len(tasks), "seed": args.seed,
        "eval_tasks": n_eval, "eval_samples": args.eval_samples, "eval_temperature": args.eval_temperature,
        "torch_threads": THREADS, "trl_version": trl.__version__, "base_model": info.release,
        "machine": f"{os.cpu_count()} CPUs, {platform.machine()}, torch {torch.__version__}", "total_s": round(total, 1),
    }
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
