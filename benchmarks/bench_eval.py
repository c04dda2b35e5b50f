"""Evaluation cost: bootstrap intervals (vectorised vs a Python loop), verifier scoring (batch vs one
by one), and a champion re-evaluation (cold vs the per-version report cache).

Prints side-by-side ratios; the last line is one JSON object with the measured figures.

    python benchmarks/bench_eval.py
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from flywheel.tasks.suites import DOMAINS


def bench_bootstrap(n_tasks: int = 200, n_boot: int = 2000) -> dict[str, float]:
    from flywheel.evaluation.metrics import bootstrap_ci

    x = np.random.default_rng(0).binomial(1, 0.4, n_tasks).astype(float)
    t = time.perf_counter()
    vec = bootstrap_ci(x, n_boot=n_boot, seed=0)
    t_vec = time.perf_counter() - t
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    boots = [float(np.mean(x[rng.integers(0, n_tasks, n_tasks)])) for _ in range(n_boot)]
    t_loop = time.perf_counter() - t
    lo, hi = np.quantile(boots, [0.025, 0.975])
    assert abs(lo - vec.lo) < 0.03 and abs(hi - vec.hi) < 0.03
    return {"bootstrap_vectorised_ms": t_vec * 1000, "bootstrap_loop_ms": t_loop * 1000,
            "bootstrap_speedup": t_loop / max(t_vec, 1e-9)}


def bench_scoring() -> dict[str, float]:
    from flywheel.evaluation.runner import score_all
    from flywheel.tasks.suites import heldout_suite
    from flywheel.verifiers import score

    items = [(t.domain, t.verifier_task(), t.solution) for d in DOMAINS for t in heldout_suite(d)[:8]]
    t = time.perf_counter()
    one = [score(*it) for it in items]
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    batch = score_all(items)
    t_batch = time.perf_counter() - t
    assert [v.passed for v in one] == [v.passed for v in batch] and all(v.passed for v in batch)
    return {"items": len(items), "score_one_by_one_s": t_one, "score_batch_s": t_batch,
            "score_batch_speedup": t_one / max(t_batch, 1e-9)}


def bench_champion_cache() -> dict[str, float]:
    import torch

    from flywheel.evaluation.runner import evaluate_policy
    from flywheel.evaluation.suites import EvalConfig
    from flywheel.models.build import build_untrained_checkpoint

    torch.set_num_threads(2)
    cfg = EvalConfig(n_samples=2, tasks_per_domain={"math": 6, "code": 3, "agent": 3}, max_new_tokens=48)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_untrained_checkpoint(Path(tmp) / "m")
        t = time.perf_counter()
        cold = evaluate_policy(str(path), cfg, model="champ:1", cache_dir=f"{tmp}/cache")
        t_cold = time.perf_counter() - t
        t = time.perf_counter()
        warm = evaluate_policy(str(path), cfg, model="champ:1", cache_dir=f"{tmp}/cache")
        t_warm = time.perf_counter() - t
    assert cold.pass_rates() == warm.pass_rates()
    return {"champion_eval_cold_s": t_cold, "champion_eval_cached_s": t_warm,
            "champion_cache_speedup": t_cold / max(t_warm, 1e-9), "eval_tasks": len(cold.tasks)}


def main() -> None:
    out: dict[str, float] = {}
    out.update(bench_bootstrap())
    print(f"bootstrap 200 tasks x 2000: vectorised {out['bootstrap_vectorised_ms']:.1f} ms vs loop "
          f"{out['bootstrap_loop_ms']:.1f} ms  -> {out['bootstrap_speedup']:.1f}x")
    out.update(bench_scoring())
    print(f"verifiers on {out['items']} gold responses: batch {out['score_batch_s']:.2f} s vs one by one "
          f"{out['score_one_by_one_s']:.2f} s  -> {out['score_batch_speedup']:.2f}x")
    out.update(bench_champion_cache())
    print(f"champion re-evaluation ({out['eval_tasks']} tasks): cached {out['champion_eval_cached_s']:.3f} s vs cold "
          f"{out['champion_eval_cold_s']:.2f} s  -> {out['champion_cache_speedup']:.0f}x")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()
