"""The promotion gate under realistic candidates: how often it promotes a model that is no better, how often
it promotes a +5-point gain carried by one domain, and how often a domain that did not change fails
non-inferiority.

Each simulated turn (`flywheel.registry.gate_sim`) draws the champion's per-task pass rates (a Beta spread
per domain matched to measured pass@1 and pass@8, or a real report's per-task rates with `--report`), moves
every task's logit unevenly (noise tau, 1.0 and 1.5 by default) and then each domain by its gain (none: the
null; +5 points on math alone, code and agent unchanged: power), samples both models 8 times per task on the
same tasks, builds the `EvalReport`s the evaluation builds and runs the real `compare` and `decide`. Two
worlds: the default evaluation (EvalConfig's sizes) and the same plus many small reasoning-gym domains,
judged as their family. Each figure is the worst over tau, with its Monte-Carlo 95 % interval.
`--baseline REV` runs that revision's gate on the same simulated turns, and at that revision's eval sizes.
The last line is one JSON object of the figures.

    python benchmarks/bench_gate.py [--sims 1000] [--rg-sims 300] [--report report.json] [--baseline REV]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from flywheel.environments.registry import default_environments  # noqa: E402
from flywheel.evaluation.suites import EvalConfig, eval_tasks  # noqa: E402
from flywheel.registry import gate  # noqa: E402
from flywheel.registry.gate_sim import TARGETS, Rule, World, gate_figures  # noqa: E402
from flywheel.tasks.suites import heldout_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def rule_of(module: ModuleType) -> Rule:
    """A gate module's default rule: (promoted, units failing non-inferiority)."""
    cfg = module.GateConfig()
    return lambda c: (module.decide(c, cfg)[0], module.not_non_inferior(c, cfg))


def git_show(rev: str, path: str) -> str | None:
    got = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, cwd=ROOT)
    return got.stdout.decode() if got.returncode == 0 else None


def baseline_gate(rev: str, into: Path) -> ModuleType:
    """`flywheel/registry/gate.py` as of `rev`, imported under its own name beside today's."""
    src = git_show(rev, "flywheel/registry/gate.py")
    if src is None:
        raise SystemExit(f"--baseline {rev}: no flywheel/registry/gate.py at that revision")
    path = into / "baseline_gate.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("baseline_gate", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_gate"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _dict_literal(src: str | None, name: str) -> dict[str, int] | None:
    """The dict literal assigned to `name` (a constant, or a field whose default is `option({...}, ...)`)."""
    for node in ast.walk(ast.parse(src or "")):
        target = getattr(node, "target", None) or (getattr(node, "targets", None) or [None])[0]
        if isinstance(target, ast.Name) and target.id == name and getattr(node, "value", None) is not None:
            value = node.value.args[0] if isinstance(node.value, ast.Call) and node.value.args else node.value
            try:
                return dict(ast.literal_eval(value))
            except ValueError:
                return None
    return None


def baseline_sizes(rev: str, today: dict[str, int]) -> dict[str, int]:
    """The tasks per domain a default evaluation scored at `rev` (its EvalConfig's sizes, capped by its
    held-out suite sizes and by the held-out tasks that exist), else today's."""
    asked = _dict_literal(git_show(rev, "flywheel/evaluation/suites.py"), "tasks_per_domain")
    cap = _dict_literal(git_show(rev, "flywheel/tasks/suites.py"), "HELDOUT_SIZE") or {}
    if not asked:
        return dict(today)
    return {d: len(heldout_suite(d, min(n, cap.get(d, n)))) for d, n in asked.items() if n}


def measured_rates(report: str) -> dict[str, np.ndarray]:
    """Per-task pass rates per domain of a report.json (an eval_report's: its champion's side)."""
    payload = json.loads(Path(report).read_text())
    tasks = payload.get("baseline", payload)["tasks"]
    out: dict[str, list[float]] = {}
    for t in tasks:
        out.setdefault(t["domain"], []).append(sum(t["passed"]) / len(t["passed"]))
    return {d: np.array(v) for d, v in out.items()}


def with_rg(sizes: dict[str, int], domains: int, tasks: int) -> dict[str, int]:
    rg = [d for d in default_environments().domains() if d.startswith("rg.")][:domains]
    return {**sizes, **{d: tasks for d in rg}}


def line(name: str, f: dict) -> str:
    def fmt(k: str) -> str:
        lo, hi = f[f"{k}_ci"]
        return f"{f[k]:6.1%} [{lo:.1%}, {hi:.1%}]"

    return (f"  {name:22s} null promotion {fmt('null_promotion_rate')}  power (+5 on math) "
            f"{fmt('power_at_5pts_one_domain')}  unchanged domain fails NI {fmt('ni_false_fail_rate')}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 allow_abbrev=False)
    ap.add_argument("--sims", type=int, default=1000, help="simulated turns per scenario, default evaluation")
    ap.add_argument("--rg-sims", type=int, default=300, help="simulated turns per scenario with reasoning-gym")
    ap.add_argument("--taus", default="1.0,1.5", help="logit noise of the per-task changes (worst one reported)")
    ap.add_argument("--coupling", type=float, default=0.0,
                    help="share of the candidate's samples drawn with the champion's random numbers (shared seed)")
    ap.add_argument("--rg-domains", type=int, default=16, help="reasoning-gym domains in the second world")
    ap.add_argument("--rg-tasks", type=int, default=20, help="held-out tasks per reasoning-gym domain")
    ap.add_argument("--report", default=None, help="report.json to read the champion's per-task rates from "
                                                   "(default: Beta spreads matched to gate_sim.BASE)")
    ap.add_argument("--baseline", metavar="REV", help="also run the gate of this git revision, on the same turns "
                                                      "and at that revision's eval sizes")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    taus = tuple(float(t) for t in args.taus.split(","))
    sizes = {d: len(ts) for d, ts in eval_tasks(EvalConfig()).items()}
    measured = measured_rates(args.report) if args.report else {}
    rules = {"gate": rule_of(gate)}
    tmp = tempfile.TemporaryDirectory()
    if args.baseline:
        rules["baseline"] = rule_of(baseline_gate(args.baseline, Path(tmp.name)))
    samples = EvalConfig().n_samples
    worlds = {"default": (World(sizes, measured, samples), args.sims),
              "with_rg": (World(with_rg(sizes, args.rg_domains, args.rg_tasks), measured, samples), args.rg_sims)}
    print(f"rates: {'per-task rates of ' + args.report if args.report else 'Beta spreads matched to gate_sim.BASE'}; "
          f"tau {taus}; coupling {args.coupling}; {samples} samples per task; targets {TARGETS}")
    figures: dict[str, object] = {"taus": list(taus), "coupling": args.coupling, "samples": samples,
                                  "rates": args.report or "beta", "gate": gate.GateConfig().to_dict()}
    for wname, (world, sims) in worlds.items():
        t = time.perf_counter()
        figs = gate_figures(world, rules, sims, taus, seed=args.seed, coupling=args.coupling)
        if args.baseline and wname == "default":
            own = baseline_sizes(args.baseline, sizes)
            figs["baseline_own_sizes"] = {"tasks": own, **gate_figures(
                World(own, measured, samples), {"b": rules["baseline"]}, sims, taus, seed=args.seed,
                coupling=args.coupling)["b"]}
        print(f"{wname}: {'/'.join(map(str, world.sizes.values())) if wname == 'default' else ''} "
              f"{len(world.sizes)} domains, {sum(world.sizes.values())} tasks, {sims} turns per scenario "
              f"[{time.perf_counter() - t:.0f}s]")
        for name, f in figs.items():
            print(line(name, f))
        figures[wname] = {"tasks": dict(world.sizes) if wname == "default" else
                          {"domains": len(world.sizes), "tasks": sum(world.sizes.values())}, "sims": sims, **figs}
    main_figs = figures["default"]["gate"]
    figures.update({k: main_figs[k] for k in (*TARGETS, *(f"{k}_ci" for k in TARGETS))})
    figures["meets_targets"] = main_figs["meets_targets"] and figures["with_rg"]["gate"]["meets_targets"]
    if args.baseline:
        figures["baseline_rev"] = args.baseline
    tmp.cleanup()
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
