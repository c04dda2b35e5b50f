"""`flywheel train`: one training run of the base model on the task pool (or the embedded train suites):
RFT by default, GRPO with `--stage rl`, or RFT then GRPO (`--stage rft_rl`).

Every `TrainConfig` field is a flag (generated from the dataclass: same defaults and help as the
`rlvr_policy` Dagster config); the rest say which model and where the run lives.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path

from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env
from flywheel.config_fields import ConfigHelpFormatter, add_flags, from_args
from flywheel.defaults import DEFAULT_BASE_MODEL
from flywheel.train.config import TrainConfig
from flywheel.train.rft.config import RFT_PREFIX, RFT_RUN_FIELDS, RftConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train a policy on verified rewards (RFT by default; GRPO with --stage rl)",
                       formatter_class=ConfigHelpFormatter,
                       description="Train the base model on the mined task pool, the verifiers judging: --stage rft "
                                   "(fine-tune on the policy's verified samples; the default), rl (GRPO) or rft_rl "
                                   "(RFT, then GRPO from its weights). Every run is an MLflow run under "
                                   "$FLYWHEEL_HOME.")
    p.add_argument("--base-model", default=None, help="HF checkpoint folder (default: the tiny model, built if missing)")
    p.add_argument("--release", default=None, help="name of the policy (default: the base model folder name)")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint of this release")
    p.add_argument("--engine", default="torch", choices=["torch", "vllm"],
                   help="what samples the policy: torch (in process) or vllm (RFT's samples, and GRPO's rollouts "
                        "with weights synced in memory each step; needs vLLM: docs/vllm.md)")
    add_flags(p.add_argument_group("run config (TrainConfig; GRPO's settings apply to --stage rl and rft_rl)"),
              TrainConfig)
    add_flags(p.add_argument_group("the RFT stage (RftConfig; seed and device come from the run config)"),
              RftConfig, exclude=RFT_RUN_FIELDS, prefix=RFT_PREFIX)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from flywheel.train.api import train_policy  # heavy: torch, transformers

    try:
        cfg = from_args(TrainConfig, args)
        rft = from_args(RftConfig, args, prefix=RFT_PREFIX)
    except ValueError as e:
        return fail(str(e))
    if unread := stage_unread(cfg, rft):
        return fail(unread)
    if cfg.init_from == "rebase":  # it needs the registry's champion, which a turn resolves
        return fail("--init-from rebase is a turn's choice (the registry's champion samples, the base trains): "
                    "flywheel turn --set rlvr_policy.init_from=rebase")
    paths = storage_from_env().ensure()
    base = args.base_model
    if base is None:
        from flywheel.models.build import build_tiny_model  # heavy: torch, transformers

        base = str(build_tiny_model(paths.base_models / DEFAULT_BASE_MODEL).path)
    elif not Path(base).is_dir():
        return fail(f"--base-model {base} is not a folder")
    release = args.release or Path(base).name
    factory = sampler = None
    if args.engine == "vllm":
        from flywheel.rollout import build_engine
        from flywheel.rollout.vllm_engine import vllm_available
        from flywheel.train.grpo.vllm_generator import vllm_generator_factory

        if not vllm_available():
            return fail("--engine vllm: vLLM is not installed here (docs/vllm.md: the [gpu] extra, or "
                        "scripts/install_vllm_cpu.sh and .venv-vllm/bin/flywheel)")
        factory, sampler = vllm_generator_factory(), functools.partial(build_engine, "vllm")
    res = train_policy(cfg, base, release, paths=paths, resume=args.resume, rft=rft, generator_factory=factory,
                       sample_engine=sampler)
    out = res.to_dict()
    from flywheel.tracking import run_links  # the run's page, built now from today's MLflow address

    link = run_links(paths.mlflow_uri, {"run": res.mlflow_run_id}).get("run") if res.mlflow_run_id else None
    reward = "pass share of its samples" if cfg.stage == "rft" else "final reward"
    text = (f"trained {res.steps_done} steps in {res.wall_s:.0f}s ({cfg.stage}); {reward} {res.final_reward:.3f}\n"
            f"policy: {res.policy_dir}\nmlflow run: {link or res.mlflow_run_id} ({paths.mlflow_uri})"
            + (f"\nidle: update waited {res.idle_shares['idle/update_waiting_for_rollouts']:.0%}, "
               f"rollouts waited {res.idle_shares['idle/rollouts_waiting_for_update']:.0%}" if res.idle_shares else ""))
    emit(args, out, text)
    return 0


def stage_unread(cfg: TrainConfig, rft: RftConfig) -> str:
    """Why a flag set away from its default does nothing under `--stage` (`ignored_by_stage`), or ""."""
    from flywheel.train.config import ignored_by_stage

    base, base_rft = TrainConfig(), RftConfig()
    changed = [f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(base, f.name)]
    changed += [RFT_PREFIX + f.name for f in dataclasses.fields(rft) if f.name not in RFT_RUN_FIELDS
                and getattr(rft, f.name) != getattr(base_rft, f.name)]
    unread = ignored_by_stage(cfg.stage, changed, RFT_PREFIX)
    if not unread:
        return ""
    flag = "--" + unread[0].replace("_", "-")
    if cfg.stage == "rl":
        return f"{flag} is an RFT setting, which --stage rl never reads; RFT runs with --stage rft (the default) or rft_rl"
    own = f"RFT's own is --rft-{flag[2:]}; " if unread[0] in RftConfig.__dataclass_fields__ else ""
    return f"{flag} is a GRPO setting, which --stage rft (the default) never reads; {own}GRPO runs with --stage rl or rft_rl"
