"""Verifier fleet on Ray vs the in-process warm pool, the rollout fleet vs the in-process engine, and the
64-node calculation from the per-worker figures measured here.

Measures, in one run on this machine (local Ray, as many CPUs as the machine has):
- verifications/s of a mixed batch (half code in the sandbox, math, agent; every response distinct, so no
  memo or cache hit) through `score_batch` over one warm `SandboxPool` and through `FleetScorer` with 1
  and 2 actors, the same sandbox slots in total; rounds interleaved, best round of each kept;
- Ray's overhead per verification: the round trip of a call that carries a batch but judges nothing,
  divided by the batch size (what the driver pays per verification), and the wall-time difference;
- rollout tokens/s of the tiny model in process and in one rollout actor (one torch thread each);
- `flywheel.fleet.sizing.plan_run` for 64 nodes from those per-worker figures, bottleneck named.
Prints a table and ratios; the last line is one JSON object of the figures.

    .venv/bin/python benchmarks/bench_fleet.py [--items 240] [--workers 2] [--batch 16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import ray
import torch

from flywheel.fleet.config import FleetConfig
from flywheel.fleet.rollout_fleet import RolloutFleet
from flywheel.fleet.sizing import NodeShape, WorkerFigures, plan_run
from flywheel.fleet.verifier_fleet import FleetScorer
from flywheel.rollout.checkpoint import load_model
from flywheel.rollout.types import SamplingParams
from flywheel.sandbox.pool import SandboxPool
from flywheel.tasks.suites import train_suite
from flywheel.train.common.rollouts import PolicyGenerator
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.registry import VerifierRegistry


def mixed_items(n: int, tag: str) -> list[tuple[str, dict, str]]:
    """`n` items, half code, 30% math, 20% agent; right answers, each response made distinct by `tag`."""
    per = {"code": n // 2, "math": n * 3 // 10}
    per["agent"] = n - sum(per.values())
    items = []
    for d, k in per.items():
        ts = train_suite(d, max(k, 1))
        for i in range(k):
            t = ts[i % len(ts)]
            if d == "math":  # the note goes first: the answer stays the response's last line
                items.append((d, t.verifier_task(), f"Working ({tag} {i}). " + t.solution))
            else:
                note = f"\n# {tag} {i}\n" if d == "code" else f" ({tag} {i})"
                items.append((d, t.verifier_task(), t.solution + note))
    return items


def timed(fn, items) -> float:
    t0 = time.perf_counter()
    out = fn(items)
    dt = time.perf_counter() - t0
    bad = [v for v in out if v is None or not v.passed]
    if bad:
        raise SystemExit(f"benchmark batch judged wrong: {len(bad)} item(s), e.g. {bad[0]}")
    return len(items) / dt


def call_overhead_ms(scorer: FleetScorer, items: list, batch: int, calls: int = 200) -> float:
    """Mean round trip of one Ray call carrying `batch` items to an actor that judges nothing."""
    h = scorer.slots.handles[0]
    payload = items[:batch]
    ray.get(h.ping.remote(payload))
    t0 = time.perf_counter()
    for _ in range(calls):
        ray.get(h.ping.remote(payload))
    return (time.perf_counter() - t0) * 1000 / calls


def rollout_tokens_per_s(gen, tasks, n: int, max_new: int) -> tuple[float, float]:
    """(sampled tokens/s, tokens per rollout) over two generate calls (the first warms up)."""
    sp = SamplingParams(temperature=1.0, max_new_tokens=max_new, seed=1)
    gen.generate(tasks[:2], 2, sp)
    t0 = time.perf_counter()
    groups = gen.generate(tasks, n, sp)
    dt = time.perf_counter() - t0
    toks = sum(sum(r.loss_mask) for g in groups for r in g)
    return toks / dt, toks / sum(len(g) for g in groups)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=240, help="verifications per measured batch")
    ap.add_argument("--workers", type=int, default=2, help="sandbox slots in total (local pool and each fleet)")
    ap.add_argument("--batch", type=int, default=16, help="verifications per Ray call")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds; the best of each setup is kept")
    ap.add_argument("--no-rollout", action="store_true", help="skip the rollout figures (the sizing then has none)")
    args = ap.parse_args()
    cpus = os.cpu_count() or 1
    fig: dict = {"machine": f"{cpus} CPUs, load avg {os.getloadavg()[0]:.1f} at start", "workers": args.workers,
                 "batch": args.batch, "items": args.items}
    torch.set_num_threads(1)
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    pool = SandboxPool(workers=args.workers)
    reg = VerifierRegistry(sandbox=pool, workers=args.workers)
    w2 = max(1, args.workers // 2)
    fleets = {
        "fleet_1": FleetScorer(FleetConfig(verifier_actors=1, sandbox_workers=args.workers, batch_size=args.batch),
                               memo_size=0),
        "fleet_2": FleetScorer(FleetConfig(verifier_actors=2, sandbox_workers=w2, batch_size=args.batch),
                               memo_size=0),
    }
    runs = {"local": lambda it: score_batch(it, concurrency=args.workers, registry=reg),
            **{k: f.many for k, f in fleets.items()}}
    try:
        for name, fn in runs.items():  # warm: fork servers, math workers, imports in every actor
            timed(fn, mixed_items(24, f"warm-{name}"))
        best = {k: 0.0 for k in runs}
        busy: dict[str, float] = {}  # mean actor busy share while the fleet's own batch ran (its best round)
        for r in range(args.rounds):
            order = list(runs) if r % 2 == 0 else list(runs)[::-1]  # drift in machine load hits all alike
            for name in order:
                if name in fleets:
                    fleets[name].slots.reset_clock()
                per_s = timed(runs[name], mixed_items(args.items, f"r{r}-{name}"))
                if per_s > best[name] and name in fleets:
                    busy[name] = 1.0 - fleets[name].stats()["idle/verifier_fleet"]
                best[name] = max(best[name], per_s)
        call_ms = call_overhead_ms(fleets["fleet_1"], mixed_items(args.batch, "ping"), args.batch)
    finally:
        for f in fleets.values():
            f.close()
        pool.close()
    fleet_best = max(best["fleet_1"], best["fleet_2"])
    fig.update({
        "local_per_s": round(best["local"], 1), "fleet1_per_s": round(best["fleet_1"], 1),
        "fleet2_per_s": round(best["fleet_2"], 1), "fleet_per_s": round(fleet_best, 1),
        "fleet_vs_local": round(fleet_best / best["local"], 3),
        "fleet1_vs_local": round(best["fleet_1"] / best["local"], 3),
        "fleet2_vs_local": round(best["fleet_2"] / best["local"], 3),
        "call_ms": round(call_ms, 3), "overhead_ms": round(call_ms / args.batch, 3),
        "wall_overhead_ms": round(1000 / best["fleet_1"] - 1000 / best["local"], 3),
        "fleet1_busy_share": round(busy["fleet_1"], 3), "fleet2_busy_share": round(busy["fleet_2"], 3),
    })
    if not args.no_rollout:
        with tempfile.TemporaryDirectory() as d:
            from flywheel.models.build import build_untrained_checkpoint

            model, tok = load_model(build_untrained_checkpoint(d))
            tasks = train_suite("math", 16)
            local = PolicyGenerator(model, tok, "cpu")
            fleet = RolloutFleet(model, tok, FleetConfig(rollout_actors=1))
            local_tps = fleet_tps = per_rollout = 0.0
            try:
                for _ in range(args.rounds):  # interleaved, best of each
                    tps, per_rollout = rollout_tokens_per_s(local, tasks, 4, 48)
                    local_tps = max(local_tps, tps)
                    fleet_tps = max(fleet_tps, rollout_tokens_per_s(fleet, tasks, 4, 48)[0])
            finally:
                fleet.close()
        fig.update({"rollout_local_tok_per_s": round(local_tps, 1), "rollout_fleet_tok_per_s": round(fleet_tps, 1),
                    "tokens_per_rollout": round(per_rollout, 1)})
    ray.shutdown()

    print(f"{fig['machine']}; {args.items} mixed verifications per batch, {args.workers} sandbox slots in total, "
          f"{args.batch} per Ray call, best of {args.rounds} rounds")
    print(f"{'':34s} {'local pool':>11s} {'fleet 1 actor':>14s} {'fleet 2 actors':>15s}")
    print(f"{'verifications /s':34s} {best['local']:11.1f} {best['fleet_1']:14.1f} {best['fleet_2']:15.1f}")
    print(f"{'vs local pool':34s} {1.0:11.2f} {fig['fleet1_vs_local']:14.2f} {fig['fleet2_vs_local']:15.2f}")
    print(f"{'actor busy share (own batch)':34s} {'':11s} {fig['fleet1_busy_share']:14.2f} {fig['fleet2_busy_share']:15.2f}")
    print(f"Ray call round trip {call_ms:.2f} ms with {args.batch} items -> {fig['overhead_ms']:.3f} ms per "
          f"verification; wall-time difference fleet(1) - local: {fig['wall_overhead_ms']:.2f} ms per verification")
    if "rollout_fleet_tok_per_s" in fig:
        print(f"rollout tokens/s, one torch thread: in process {fig['rollout_local_tok_per_s']:.0f}, one actor "
              f"{fig['rollout_fleet_tok_per_s']:.0f} ({fig['rollout_fleet_tok_per_s'] / fig['rollout_local_tok_per_s']:.2f}x); "
              f"{fig['tokens_per_rollout']:.1f} tokens per rollout")
        figures = WorkerFigures(
            verify_per_s=fleet_best / args.workers, rollout_tokens_per_s=fig["rollout_fleet_tok_per_s"],
            tokens_per_rollout=fig["tokens_per_rollout"], driver_ms_per_call=call_ms, batch_size=args.batch)
        plan = plan_run(figures, nodes=64, node=NodeShape(cpus=32))
        big = plan_run(WorkerFigures(**{**figures.__dict__, "batch_size": 256}), nodes=64, node=NodeShape(cpus=32))
        print(f"per worker: {figures.verify_per_s:.1f} verif/s, {figures.rollout_tokens_per_s:.0f} rollout tok/s")
        print(f"64 x 32-core CPU nodes, batch {args.batch}: {plan.describe()}")
        print(f"64 x 32-core CPU nodes, batch 256: {big.describe()}")
        fig.update({"sizing_64": plan.to_dict(), "sizing_64_batch256": big.to_dict()})
    print(json.dumps(fig))


if __name__ == "__main__":
    main()
