"""`flywheel evaluate MODEL_PATH`: evaluation of a checkpoint on the held-out, production and frozen test suites
(optionally against a baseline or the champion); `--suite test` scores the frozen test suite alone."""

from __future__ import annotations

import argparse
from pathlib import Path

from flywheel.commands.argtypes import domain_counts
from flywheel.commands.output import add_json_flag, emit, fail
from flywheel.commands.rollback import (
    RegistryLookupError,
    add_registry_flags,
    open_registry,
    tracking_uri_from,
)
from flywheel.config_fields import ConfigHelpFormatter, add_flags, from_args
from flywheel.evaluation.suites import EvalConfig
from flywheel.tasks.world_suites import SUITES


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("evaluate", help="evaluate a checkpoint on the held-out suites", description=__doc__,
                              formatter_class=ConfigHelpFormatter)
    p.add_argument("model_path", help="HF checkpoint folder (the tiny model, a policy, any causal LM)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--baseline", default=None, help="checkpoint to compare against on the same tasks")
    g.add_argument("--champion", action="store_true", help="compare against the registry's champion")
    group = p.add_argument_group("evaluation config (EvalConfig)")
    add_flags(group, EvalConfig)
    group.add_argument("--tasks", dest="tasks_per_domain", type=domain_counts, default=argparse.SUPPRESS,
                       metavar="DOMAIN:COUNT,...", help="held-out tasks per domain, e.g. math:5,code:3 (domains "
                                                        "left out are not evaluated; same as --tasks-per-domain)")
    group.add_argument("--suite", dest="suites", nargs="+", choices=SUITES, default=argparse.SUPPRESS,
                       metavar="SUITE", help="evaluation suites, e.g. --suite test for the frozen test suite alone "
                                             "(same as --suites)")
    p.add_argument("--out", default=None, help="write report.md, pass_rates.png, report.json here")
    p.add_argument("--mlflow", action="store_true", help="also log the report as an MLflow run")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--engine", default="torch", choices=["torch", "vllm"],
                   help="rollout engine that samples the answers (vllm needs vLLM installed: docs/vllm.md)")
    add_registry_flags(p)
    add_json_flag(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # heavy: the runner loads torch and the rollout engines, the report matplotlib
    from flywheel.evaluation.report import fmt_estimate, log_to_mlflow, metrics_table, write_report
    from flywheel.evaluation.runner import compare, evaluate_policy

    if not Path(args.model_path).is_dir():
        return fail(f"{args.model_path} is not a checkpoint folder")
    try:
        cfg = from_args(EvalConfig, args)
    except ValueError as e:
        return fail(str(e))
    champ = None
    if args.champion:
        try:
            champ = open_registry(args).champion()
        except RegistryLookupError as e:
            return fail(str(e), e.code)
        if champ is None:
            return fail("no champion in the registry yet")
    base_id = champ.uri if champ else (Path(args.baseline).name if args.baseline else None)
    name = Path(args.model_path).name
    cfg = cfg.seeded_from(name, [base_id] if base_id else [])  # both models share the seed
    note = cfg.seed_note(f"checkpoint `{name}`" + (f" and baseline `{base_id}`" if base_id else ""))
    baseline = None
    if champ is not None:
        baseline = evaluate_policy(champ.model_path, cfg, model=champ.uri, device=args.device, engine=args.engine)
    elif args.baseline:
        baseline = evaluate_policy(args.baseline, cfg, device=args.device, engine=args.engine)
    rep = evaluate_policy(args.model_path, cfg, device=args.device, engine=args.engine)
    cmp = compare(rep, baseline) if baseline else None
    result = {"model": rep.model, "pass_rates": rep.pass_rates(), "greedy_rates": rep.greedy_rates(),
              "failure_types": rep.failure_counts(), "seed": cfg.seed, "seed_note": note,
              "metrics": {d: {k: e.to_dict() for k, e in m.items()} for d, m in rep.metrics.items()},
              "baseline": baseline.pass_rates() if baseline else None,
              "comparison": cmp.to_dict() if cmp else None, "wall_s": round(rep.wall_s, 2)}
    if args.out:
        result["report"] = {k: str(v) for k, v in write_report(args.out, rep, baseline, cmp, seed_note=note).items()}
    if args.mlflow:
        result["mlflow_run_id"] = log_to_mlflow(rep, baseline, cmp, tracking_uri=tracking_uri_from(args),
                                                seed_note=note)
    text = [metrics_table(rep), note]
    if cmp:
        text.append("\n" + "\n".join(f"{d}: pass@1 {e.fmt()}, greedy@1 {fmt_estimate(cmp.greedy_diffs.get(d))} "
                                     f"vs {cmp.baseline}" for d, e in cmp.diffs.items()))
    emit(args, result, "\n".join(text))
    return 0
