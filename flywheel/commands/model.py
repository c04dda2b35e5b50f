"""`flywheel model build|sample|merge`: build the tiny base model, sample from any checkpoint, or export a
LoRA policy merged into its base."""

from __future__ import annotations

import argparse
from pathlib import Path

from flywheel.commands.argtypes import count, non_negative, positive_int
from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.storage import storage_from_env
from flywheel.defaults import DEFAULT_BASE_MODEL


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("model", help="build the tiny base model or sample from a checkpoint")
    sub = p.add_subparsers(dest="model_command", metavar="ACTION")

    b = sub.add_parser("build", help="build (or reuse the cached) tiny base model of a release")
    b.add_argument("--release", default=DEFAULT_BASE_MODEL, help="tiny-* release (tiny-quick for tests)")
    b.add_argument("--out", default=None, help="output folder (default $FLYWHEEL_HOME/models/base/<release>)")
    b.add_argument("--force", action="store_true", help="rebuild even if a build with the same recipe exists")
    add_json_flag(b)
    b.set_defaults(func=_build)

    s = sub.add_parser("sample", help="sample responses to held-out tasks from a checkpoint folder")
    s.add_argument("--model", default=None, help=f"checkpoint folder or release (default: {DEFAULT_BASE_MODEL}, built if needed)")
    s.add_argument("--domain", default="math", choices=["math", "code", "agent"])
    s.add_argument("--n", type=positive_int, default=3, help="held-out tasks")
    s.add_argument("--temperature", type=non_negative, default=1.0, help="0: greedy")
    s.add_argument("--max-new-tokens", type=positive_int, default=160)
    s.add_argument("--seed", type=count, default=0)
    s.add_argument("--engine", default="torch", choices=["torch", "vllm"])
    add_json_flag(s)
    s.set_defaults(func=_sample)

    m = sub.add_parser("merge", help="export a LoRA adapter folder merged into its base as a plain checkpoint")
    m.add_argument("adapter", help="adapter folder (a LoRA policy: adapter_config.json naming its base)")
    m.add_argument("--out", required=True, help="output folder for the merged HF checkpoint")
    add_json_flag(m)
    m.set_defaults(func=_merge)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _build(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.models.build import build_tiny_model
    from flywheel.models.recipe import is_tiny_release, recipe_for

    if not is_tiny_release(args.release):
        return fail(f"--release must be a tiny-* release, got {args.release!r}")
    out = Path(args.out) if args.out else storage_from_env().base_models / args.release
    r = build_tiny_model(out, recipe_for(args.release), force=args.force)
    lines = [f"{r.release}: {r.params:,} params, vocab {r.vocab}, at {r.path}"
             f" ({'cached' if r.cached else f'built in {r.seconds:.0f}s'})"]
    for d, rates in r.pass_rates.items():
        lines.append(f"  held-out {d:5s} " + "  ".join(f"{k}={v:.2f}" for k, v in rates.items() if k != "n_tasks"))
    emit(args, r.to_dict(), "\n".join(lines))
    return 0


def _sample(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.models import resolve_base_model
    from flywheel.rollout import build_engine, generate_for_tasks
    from flywheel.rollout.types import SamplingParams
    from flywheel.tasks.suites import heldout_suite

    try:
        info = resolve_base_model(args.model or DEFAULT_BASE_MODEL, storage_from_env())
    except FileNotFoundError as e:
        return fail(str(e))
    engine = build_engine(args.engine, str(info.path))
    tasks = heldout_suite(args.domain)[: args.n]
    sp = SamplingParams(temperature=args.temperature, max_new_tokens=args.max_new_tokens, seed=args.seed)
    rs = generate_for_tasks(engine, tasks, 1, sp)
    samples = [{"task_id": r.task_id, "prompt": tasks[r.group_id].prompt, "response": r.text,
                "finish_reason": r.finish_reason, "tokens": len(r.token_ids)} for r in rs]
    text = "\n\n".join(f"[{s['task_id']}] {s['prompt'].strip()}\n-> {s['response']}" for s in samples)
    emit(args, {"model": str(info.path), "samples": samples}, text)
    return 0


def _merge(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    from flywheel.rollout.adapters import is_adapter_dir, merge_adapter

    if not is_adapter_dir(args.adapter):
        return fail(f"{args.adapter} is not a LoRA adapter folder (adapter_config.json + adapter_model.*)")
    try:
        out = merge_adapter(args.adapter, args.out)
    except (FileNotFoundError, ValueError) as e:
        return fail(str(e))
    emit(args, {"adapter": str(args.adapter), "merged": str(out)}, f"merged {args.adapter} into its base: {out}")
    return 0
