"""Does mining matter? The flywheel against replay alone and against no training, from the same base.

Three arms, each in its own home, from the same base build, with the same compute per turn:

- `flywheel`: `--turns N` real turns (`flywheel turn`): served traffic, ingest, mining, the mined pool
  first in RFT, then replay, the gate, the next day served by the new champion;
- `replay_only`: the same turns with `rlvr_policy.use_pool=false`: the mined pool ignored, the same replay
  and the same number of RFT tasks and steps (the traffic, ingest and gate still run);
- `uniform_traffic`: the same turns with `task_pool.selection=uniform`: the pool is a sample of the day's logged
  tasks in the order of a hash of their ids (no outcome informs it), solved ones included, with the same verifier budget, variants and reference solutions:
  the teacher spent on traffic mining did not choose. The flywheel minus this arm is what choosing failures adds
  beyond training on production traffic with a teacher;
- `none`: the base itself (no training).

Every arm runs once per training seed (`--seeds`; the seed of RFT's task choice, sampling and batch order;
the traffic seed is shared). Each arm's final champion is then scored with the base on the production and
frozen test suites under one fixed evaluation seed, so every comparison is paired by task; across seeds a
task's difference is its mean over seeds, and the 95% interval is a bootstrap over tasks.

Prints per arm and seed the overall pass@1 (and pass@8: sharpening vs new capability), then one JSON line:
`gain_flywheel`, `gain_replay_only`, `gain_uniform_traffic`, `mining_gain_over_replay` and
`mining_gain_over_uniform` with `_ci` ([low, high]) and `_per_seed`,
the same on the test suite (`…_test`) and on the production suite's production-only levels (`…_new_levels`: the
levels the SFT data never held, where only mined tasks can teach), and how many turns each arm promoted.

    python benchmarks/bench_ablation.py --base tiny-v3 --base-dir $HOME/models/base --seeds 0,1,2 --turns 3
    python benchmarks/bench_ablation.py --quick      # minutes: tiny-quick, one turn, a handful of tasks
    python benchmarks/bench_ablation.py --one-round $HOME --seeds 0   # one training round from a mined day
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from flywheel.defaults import DEFAULT_BASE_MODEL

ARMS: dict[str, dict[str, dict[str, Any]]] = {
    "flywheel": {},
    "replay_only": {"rlvr_policy": {"use_pool": False}},
    "uniform_traffic": {"task_pool": {"selection": "uniform"}},
}
CONTRASTS = {"mining_gain_over_replay": ("flywheel", "replay_only"),
             "mining_gain_over_uniform": ("flywheel", "uniform_traffic")}
"""Each paired figure: the first arm minus the second, where both ran."""
QUICK_SETS = {
    "verifiers": {"max_tasks": 24},
    "rlvr_policy": {"rft_steps": 10, "rft_tasks_per_domain": {"math": 24, "code": 4, "agent": 4},
                    "rft_samples_per_task": 2, "replay_tasks_per_domain": 40, "dev_every": 0},
    "eval_report": {"n_samples": 1, "tasks_math": 4, "tasks_code": 2, "tasks_agent": 2, "max_new_tokens": 48,
                    "max_steps": 3, "test_tasks": 2},
}


def _sets(overrides: dict[str, dict[str, Any]]) -> list[str]:
    return [a for asset, fields in overrides.items() for k, v in fields.items()
            for a in ("--set", f"{asset}.{k}={json.dumps(v)}")]


def _merge(*layers: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for layer in layers:
        for asset, fields in layer.items():
            out.setdefault(asset, {}).update(fields)
    return out


def run_arm(arm: str, seed: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """`args.turns` real turns of one arm in a fresh home; its final champion and what each turn decided."""
    from flywheel.paths import FlywheelPaths
    from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry

    home = root / f"{arm}-s{seed}"
    done = home / "ablation_arm.json"
    if args.resume and done.exists():  # this arm's turns ran to the end before: its record, not a re-run
        return json.loads(done.read_text())
    paths = FlywheelPaths(home=home).ensure()
    base_src = Path(args.base_dir) / args.base if args.base_dir else None
    if base_src is not None and base_src.is_dir():  # the same build for every arm (and no rebuild per arm)
        shutil.copytree(base_src, paths.models / "base" / args.base, dirs_exist_ok=True)
    sets = _merge(QUICK_SETS if args.quick else {}, ARMS[arm], {"rlvr_policy": {"seed": seed}},
                  json.loads(args.set_json))
    cmd = [sys.executable, "-m", "flywheel.cli", "turn", "--turns", str(args.turns), "--day", args.day,
           "--base-model", args.base, "--records", str(args.records), "--train-budget-s", str(args.train_budget_s),
           "--json", *_sets(sets)]
    env = {**os.environ, "FLYWHEEL_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    env.pop("MLFLOW_TRACKING_URI", None)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{arm} seed {seed}: flywheel turn exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout)
    turns = out.get("turns", [out])
    champ = Registry(paths.mlflow_uri, DEFAULT_MODEL_NAME).champion()
    record = {"arm": arm, "seed": seed, "wall_s": round(wall, 1), "champion": champ.uri if champ else None,
              "champion_path": champ.model_path if champ else None,
              "promoted": [bool(t.get("promoted")) for t in turns], "reasons": [t.get("reason", "") for t in turns]}
    done.write_text(json.dumps(record))
    return record


ROUND_FLAGS = {"flywheel": [], "replay_only": ["--no-use-pool"], "uniform_traffic": []}


def uniform_pool(home: Path) -> dict[str, int]:
    """Rebuild HOME's pool as the uniform control (`MiningConfig(selection="uniform")`) with as many valid
    verifiers per domain as the mined pool had there: the same budget, spent on traffic mining did not choose."""
    import duckdb

    from flywheel.mining import MiningConfig, build_task_pool
    from flywheel.verifiers.construct import ConstructConfig, build_verifiers
    from flywheel.verifiers.registry import VerifierRegistry

    con = duckdb.connect(str(home / "warehouse.duckdb"))
    try:
        mined = dict(con.execute("SELECT domain, count(*) FROM verifiers WHERE valid GROUP BY 1").fetchall())
        build_task_pool(con, MiningConfig(selection="uniform"))
        registry = VerifierRegistry()
        try:
            build_verifiers(con, ConstructConfig(max_tasks=sum(mined.values()), domain_weights=mined), registry)
        finally:
            registry.close()
        return dict(con.execute("SELECT domain, count(*) FROM verifiers WHERE valid GROUP BY 1").fetchall())
    finally:
        con.close()


def train_arm(arm: str, seed: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """One training round of an arm (`--one-round HOME`): `flywheel train` from the base on a copy of HOME, whose
    warehouse holds a day's mined pool; same code, replay and steps for both arms, only the pool differs."""
    home = root / f"{arm}-s{seed}"
    done = home / "ablation_arm.json"
    if args.resume and done.exists():
        return json.loads(done.read_text())
    if home.exists():
        shutil.rmtree(home)
    shutil.copytree(args.one_round, home, ignore=shutil.ignore_patterns("checkpoints", "policies", "dagster"))
    if arm == "uniform_traffic":
        print(f"{arm} seed {seed}: uniform pool, valid verifiers {uniform_pool(home)}", flush=True)
    base = home / "models" / "base" / args.base
    cmd = [sys.executable, "-m", "flywheel.cli", "train", "--base-model", str(base), "--release", f"abl-{arm}",
           "--init-from", "base", "--seed", str(seed), "--json", *ROUND_FLAGS[arm]]
    env = {**os.environ, "FLYWHEEL_HOME": str(home)}
    env.pop("MLFLOW_TRACKING_URI", None)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{arm} seed {seed}: flywheel train exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout)
    record = {"arm": arm, "seed": seed, "wall_s": round(time.perf_counter() - t0, 1), "champion": f"abl-{arm}-s{seed}",
              "champion_path": out["policy_dir"], "promoted": [True], "reasons": ["one training round, no gate"]}
    done.write_text(json.dumps(record))
    return record


def per_task(report: Any, suite: str) -> dict[str, float]:
    """pass@1 per task of one suite (`task_id` keys, suite-prefixed as the report names them)."""
    from flywheel.tasks.world_suites import suite_of

    return {t.task_id: t.pass1 for t in report.tasks if suite_of(t.domain) == suite}


def production_only_levels(cfg: Any) -> set[str]:
    """Task ids of the production suite's tasks at a production-only level (one the SFT data never held)."""
    from flywheel.environments.registry import default_environments
    from flywheel.evaluation.suites import eval_tasks

    envs, out = default_environments(), set()
    for unit, tasks in eval_tasks(cfg).items():
        for t in tasks if unit.startswith("production/") else ():
            env = envs.for_domain(t.domain)
            level_of = getattr(env, "task_level", None)
            if level_of is not None and level_of(t) in getattr(env, "production_levels", {}):
                out.add(t.task_id)
    return out


def paired(a_by_seed: list[dict[str, float]], b_by_seed: list[dict[str, float]], n_boot: int,
           seed: int) -> dict[str, Any]:
    """Mean over seeds of a - b (overall pass@1), per-seed values, and a bootstrap-over-tasks 95% interval of
    the per-task difference averaged over seeds."""
    tasks = sorted(set.intersection(*(set(d) for d in a_by_seed + b_by_seed)))
    diffs = np.array([[a[t] - b[t] for t in tasks] for a, b in zip(a_by_seed, b_by_seed, strict=True)])
    per_task_mean = diffs.mean(axis=0)
    rng = np.random.default_rng(seed)
    boots = per_task_mean[rng.integers(0, len(tasks), (n_boot, len(tasks)))].mean(axis=1)
    return {"value": round(float(per_task_mean.mean()), 4),
            "ci": [round(float(np.quantile(boots, 0.025)), 4), round(float(np.quantile(boots, 0.975)), 4)],
            "per_seed": [round(float(r.mean()), 4) for r in diffs], "tasks": len(tasks)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default=DEFAULT_BASE_MODEL, help="base-model release every arm starts from")
    ap.add_argument("--base-dir", default="", help="folder holding a built <base> to copy into each arm's home "
                                                   "(default: each arm builds it)")
    ap.add_argument("--seeds", default="0,1,2", help="training seeds, comma-separated")
    ap.add_argument("--arms", default=",".join(ARMS), help="arms to run, comma-separated (flywheel always)")
    ap.add_argument("--turns", type=int, default=3, help="turns per arm and seed")
    ap.add_argument("--day", default="2026-11-20", help="log day of each arm's first turn")
    ap.add_argument("--records", type=int, default=0, help="requests served per day (0: the turn's default)")
    ap.add_argument("--train-budget-s", type=float, default=0, help="training CPU-seconds cap per turn (0: none, so "
                                                                    "every arm gets the same steps)")
    ap.add_argument("--set-json", default="{}", help="extra overrides for every arm, {asset: {field: value}}")
    ap.add_argument("--eval-tasks", default="math:300,code:60,agent:60", help="final evaluation tasks per domain")
    ap.add_argument("--test-tasks", type=int, default=100, help="final evaluation: tasks per domain of the test suite")
    ap.add_argument("--eval-samples", type=int, default=8)
    ap.add_argument("--eval-seed", type=int, default=4242)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads of the final evaluation (0: torch's default); on a shared 2-core box two threads "
                         "beside another job made one model's evaluation ~20x slower than one thread")
    ap.add_argument("--work", default="", help="where the arms' homes go (default: a temporary folder, removed)")
    ap.add_argument("--resume", action="store_true", help="with --work: keep arms whose turns already ran there")
    ap.add_argument("--one-round", default="", metavar="HOME",
                    help="instead of whole turns: one training round per arm from the mined pool in HOME's warehouse "
                         "(a home after a turn's mining), the gate and traffic left out: mining vs replay on the "
                         "same day's data")
    ap.add_argument("--quick", action="store_true", help="tiny-quick, one turn, a handful of tasks: a smoke run")
    args = ap.parse_args(argv)
    if args.quick:
        args.base, args.turns, args.seeds, args.records = "tiny-quick", 1, "0", 200
        args.eval_tasks, args.test_tasks, args.eval_samples, args.n_boot = "math:6,code:2,agent:2", 4, 2, 200

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    from flywheel.evaluation.runner import evaluate_policy
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.paths import FlywheelPaths
    from flywheel.tasks.world_suites import suite_of

    seeds = [int(s) for s in args.seeds.split(",")]
    arms = ["flywheel", *(a for a in args.arms.split(",") if a and a != "flywheel")]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        ap.error(f"--arms: unknown {unknown}; choose from {', '.join(ARMS)}")
    contrasts = {k: v for k, v in CONTRASTS.items() if v[1] in arms}
    tmp = tempfile.TemporaryDirectory(prefix="flywheel-ablation-") if not args.work else None
    root = Path(args.work or tmp.name)  # type: ignore[union-attr]
    run = train_arm if args.one_round else run_arm
    runs = [run(arm, s, args, root) for s in seeds for arm in arms]
    for r in runs:
        print(f"{r['arm']:<15} seed {r['seed']}: promoted {sum(r['promoted'])}/{len(r['promoted'])} "
              f"in {r['wall_s']:.0f}s, champion {r['champion']}", flush=True)

    tasks = {d: int(n) for d, n in (kv.split(":") for kv in args.eval_tasks.split(","))}
    cfg = EvalConfig(n_samples=args.eval_samples, tasks_per_domain=tasks, test_tasks=args.test_tasks,
                     production_tasks=max(tasks.values()), suites=("production", "test"), derive_seed=False,
                     seed=args.eval_seed)
    base_path = FlywheelPaths(home=root / f"flywheel-s{seeds[0]}").models / "base" / args.base
    cache = str(root / "eval_cache")  # with --resume, an arm's report under the same config is not recomputed
    reports = {("none", s): None for s in seeds}
    base_rep = evaluate_policy(str(base_path), cfg, model=args.base, cache_dir=cache)
    for r in runs:
        reports[(r["arm"], r["seed"])] = (evaluate_policy(r["champion_path"], cfg, model=r["champion"],
                                                          cache_dir=cache)
                                          if r["champion_path"] else base_rep)
    figures: dict[str, Any] = {"base": args.base, "seeds": seeds, "turns": args.turns, "eval_seed": args.eval_seed,
                               "eval_tasks": tasks, "test_tasks": args.test_tasks, "arms": arms,
                               "promoted": {arm: sum(sum(r["promoted"]) for r in runs if r["arm"] == arm)
                                            for arm in arms},
                               "arm_wall_s": {f"{r['arm']}-s{r['seed']}": r["wall_s"] for r in runs}}
    for suite, suffix in (("production", ""), ("test", "_test")):
        base_tasks = per_task(base_rep, suite)
        if not base_tasks:
            continue
        arm_tasks = {arm: [per_task(reports[(arm, s)], suite) for s in seeds] for arm in arms}
        base_k = base_rep.metrics[f"{suite}/overall"]
        print(f"[{suite}] base pass@1 {base_k['pass@1'].value:.3f}"
              + (f" pass@8 {base_k['pass@8'].value:.3f}" if "pass@8" in base_k else ""))
        for arm in arms:
            for s in seeds:
                m = reports[(arm, s)].metrics[f"{suite}/overall"]
                print(f"[{suite}] {arm:<15} seed {s}: pass@1 {m['pass@1'].value:.3f}"
                      + (f" pass@8 {m['pass@8'].value:.3f}" if "pass@8" in m else ""))
        estimates = {f"gain_{arm}": paired(arm_tasks[arm], [base_tasks] * len(seeds), args.n_boot, args.eval_seed)
                     for arm in arms}
        estimates.update({name: paired(arm_tasks[a], arm_tasks[b], args.n_boot, args.eval_seed)
                          for name, (a, b) in contrasts.items()})
        for unit in sorted({t.domain for t in base_rep.tasks if suite_of(t.domain) == suite}):  # where it moved
            cells = {arm: np.mean([reports[(arm, s)].metrics[unit]["pass@1"].value for s in seeds]) for arm in arms}
            base_u = base_rep.metrics[unit]["pass@1"].value
            print(f"[{suite}] {unit:<20} base {base_u:.3f}  " + "  ".join(f"{a} {v:.3f}" for a, v in cells.items()))
            figures.setdefault("per_unit", {})[unit] = {"base": round(base_u, 4), **{a: round(float(v), 4)
                                                                                   for a, v in cells.items()}}
        for name, est in estimates.items():
            figures[name + suffix] = est["value"]
            figures[f"{name}{suffix}_ci"] = est["ci"]
            figures[f"{name}{suffix}_per_seed"] = est["per_seed"]
            print(f"[{suite}] {name}: {est['value']:+.4f} [{est['ci'][0]:+.4f}, {est['ci'][1]:+.4f}] "
                  f"per seed {est['per_seed']} over {est['tasks']} tasks", flush=True)
    new_ids = production_only_levels(cfg)  # where the base rarely samples a pass: what only mining can teach
    if new_ids:
        def new_levels(rep: Any) -> dict[str, float]:
            return {t: v for t, v in per_task(rep, "production").items() if t.split("/", 1)[-1] in new_ids}

        base_new = new_levels(base_rep)
        by_arm = {arm: [new_levels(reports[(arm, s)]) for s in seeds] for arm in arms}
        pairs = {**{f"gain_{arm}": (by_arm[arm], [base_new] * len(seeds)) for arm in arms},
                 **{name: (by_arm[a], by_arm[b]) for name, (a, b) in contrasts.items()}}
        for name, (a, b) in pairs.items():
            est = paired(a, b, args.n_boot, args.eval_seed)
            figures[f"{name}_new_levels"], figures[f"{name}_new_levels_ci"] = est["value"], est["ci"]
            print(f"[production, production-only levels] {name}: {est['value']:+.4f} [{est['ci'][0]:+.4f}, "
                  f"{est['ci'][1]:+.4f}] per seed {est['per_seed']} over {est['tasks']} tasks", flush=True)
    for name in contrasts:  # mining_gain_over_replay -> mining_beats_replay: its interval above 0
        if f"{name}_ci" in figures:
            figures[name.replace("_gain_over_", "_beats_")] = bool(figures[f"{name}_ci"][0] > 0)
    if tmp is not None:
        tmp.cleanup()
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
