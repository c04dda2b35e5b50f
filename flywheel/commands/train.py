"""`flywheel train`: one RLVR run of the base model on the task pool (or the embedded train suites)."""

from __future__ import annotations

import argparse
from pathlib import Path

from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.train.recipe import TINY_RLVR, domain_weights


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="GRPO-train a policy with verifiable rewards",
                       description="Train the base model with GRPO on the mined task pool (verifiers' rewards); "
                                   "every run is an MLflow run under $FLYWHEEL_HOME.")
    p.add_argument("--base-model", default=None, help="HF checkpoint folder (default: the tiny model, built if missing)")
    p.add_argument("--release", default=None, help="name of the policy (default: the base model folder name)")
    p.add_argument("--steps", type=int, default=TINY_RLVR["steps"], help="policy updates")
    p.add_argument("--domains", nargs="+", default=["math", "code", "agent"], help="domains to train on")
    p.add_argument("--weights", nargs="+", type=float, default=None, help="domain weights, same order as --domains")
    p.add_argument("--backend", choices=["torch", "deepspeed"], default="torch")
    p.add_argument("--zero-stage", type=int, default=0)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--lr", type=float, default=TINY_RLVR["lr"])
    p.add_argument("--lr-schedule", choices=["constant", "cosine"], default=TINY_RLVR["lr_schedule"],
                   help="cosine decays to 0 over --steps")
    p.add_argument("--advantage", choices=["grpo", "dr_grpo"], default=TINY_RLVR["advantage"],
                   help="grpo: (r - mean) / std per group; dr_grpo: r - mean")
    p.add_argument("--max-refill-rounds", type=int, default=TINY_RLVR["max_refill_rounds"],
                   help="extra generation rounds to replace groups whose rewards are all equal")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--prompts-per-step", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-every", type=int, default=10)
    p.add_argument("--off-policy", action="store_true", help="one-step-off-policy pipelining")
    p.add_argument("--time-budget-s", type=float, default=None, help="stop (and save) after this wall time")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of this release")
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from flywheel.paths import FlywheelPaths
    from flywheel.train.api import train_policy
    from flywheel.train.config import GRPOConfig

    paths = FlywheelPaths.from_env().ensure()
    base = args.base_model
    if base is None:
        from flywheel.models.build import build_tiny_model

        base = str(build_tiny_model(paths.models / "base" / "tiny-v1").path)
    elif not Path(base).is_dir():
        return fail(f"--base-model {base} is not a folder")
    weights = args.weights or list(domain_weights(args.domains).values())
    if len(weights) != len(args.domains):
        return fail("--weights needs one weight per domain")
    try:
        cfg = GRPOConfig(
            seed=args.seed, steps=args.steps, prompts_per_step=args.prompts_per_step, group_size=args.group_size,
            lr=args.lr, lr_schedule=args.lr_schedule, advantage=args.advantage,
            max_refill_rounds=args.max_refill_rounds, micro_batch_size=TINY_RLVR["micro_batch_size"],
            temperature=TINY_RLVR["temperature"], backend=args.backend, zero_stage=args.zero_stage, device=args.device,
            domain_weights=dict(zip(args.domains, weights, strict=True)), checkpoint_every=args.checkpoint_every,
            off_policy_pipeline=args.off_policy, max_new_tokens=TINY_RLVR["max_new_tokens"],
        )
    except ValueError as e:
        return fail(str(e))
    release = args.release or Path(base).name
    res = train_policy(cfg, base, release, paths=paths, resume=args.resume, time_budget_s=args.time_budget_s)
    out = res.to_dict()
    text = (f"trained {res.steps_done} steps in {res.wall_s:.0f}s; final reward {res.final_reward:.3f}\n"
            f"policy: {res.policy_dir}\nmlflow run: {res.mlflow_run_id} ({paths.mlflow_uri})\n"
            f"idle: update waited {res.idle_shares['idle/update_waiting_for_rollouts']:.0%}, "
            f"rollouts waited {res.idle_shares['idle/rollouts_waiting_for_update']:.0%}")
    emit(args, out, text)
    return 0
