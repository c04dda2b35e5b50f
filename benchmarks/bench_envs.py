"""Verification throughput of a mixed-domain batch beside single-domain batches of the same items.

Items: `--per-domain` tasks of each of code, math, agent and `--rg` reasoning-gym domains, each
judged twice (its gold response and a wrong one), through `score_batch` over the default verifier
registry (code in a warm sandbox pool of `--workers`). Measured in one run:
- single: each domain's items as their own batch, one domain after another (what a one-domain
  stream costs); the sum of those times is what the same items cost unmixed;
- mixed: all items shuffled into one batch (what a many-domain training stream sends).
The ratio unmixed-time / mixed-time says whether mixing costs throughput (target: >= 0.8). Also
printed: the code-only batch's items/s (the sandbox-bound figure of bench_sandbox.py) beside the
mixed batch's. The last line is one JSON object of the figures.

    .venv/bin/python benchmarks/bench_envs.py [--per-domain 16] [--rg 24] [--workers 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time

from flywheel.environments.registry import default_environments
from flywheel.tasks.suites import train_suite
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.registry import VerifierRegistry


def wrong(domain: str, task) -> str:
    if domain == "code":
        return f"```python\ndef {task.reference['entry_point']}(*a, **k):\n    return None\n```"
    if domain == "agent":
        return '<tool_call>{"name": "finish", "arguments": {}}</tool_call>'
    return "Answer: -987654"


def items_for(domains: list[str], per: int) -> dict[str, list[tuple]]:
    out = {}
    for d in domains:
        ts = train_suite(d, per, seed=77)
        out[d] = [(d, t.verifier_task(), r) for t in ts for r in (t.solution, wrong(d, t))]
    return out


def timed(reg: VerifierRegistry, items: list[tuple], workers: int) -> float:
    t0 = time.perf_counter()
    vs = score_batch(items, registry=reg, concurrency=workers)
    dt = time.perf_counter() - t0
    bad = sum(1 for v in vs if v is None)
    assert not bad, f"{bad} items not judged"
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-domain", type=int, default=16)
    ap.add_argument("--rg", type=int, default=24, help="reasoning-gym domains in the mix")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="repeats; the best of each is kept")
    args = ap.parse_args()
    rg = [d for d in default_environments().domains() if d.startswith("rg.")]
    domains = ["code", "math", "agent", *random.Random(0).sample(rg, min(args.rg, len(rg)))]
    per = items_for(domains, args.per_domain)
    reg = VerifierRegistry(workers=args.workers)
    try:
        timed(reg, [x for d in domains for x in per[d][:2]], args.workers)  # warm pools, imports, scorers
        single: dict[str, float] = {}
        mixed_s = float("inf")
        for r in range(args.rounds):
            for d in domains:
                single[d] = min(single.get(d, float("inf")), timed(reg, per[d], args.workers))
            allx = [x for d in domains for x in per[d]]
            random.Random(r).shuffle(allx)
            mixed_s = min(mixed_s, timed(reg, allx, args.workers))
    finally:
        reg.close()
    n = sum(len(v) for v in per.values())
    unmixed_s = sum(single.values())
    code_ips = len(per["code"]) / single["code"]
    mixed_ips = n / mixed_s
    ratio = unmixed_s / mixed_s
    print(f"{len(domains)} domains, {n} verifications ({args.per_domain} tasks x gold+wrong each), "
          f"{args.workers} workers, load {os.getloadavg()[0]:.2f}")
    print(f"{'batch':<28}{'items':>8}{'seconds':>10}{'items/s':>10}")
    print(f"{'code only (sandbox-bound)':<28}{len(per['code']):>8}{single['code']:>10.2f}{code_ips:>10.1f}")
    print(f"{'each domain alone, summed':<28}{n:>8}{unmixed_s:>10.2f}{n / unmixed_s:>10.1f}")
    print(f"{'all domains mixed':<28}{n:>8}{mixed_s:>10.2f}{mixed_ips:>10.1f}")
    print(f"mixed / unmixed throughput: {ratio:.2f} (target >= 0.80)")
    print(json.dumps({"domains": len(domains), "items": n, "workers": args.workers,
                      "code_items_per_s": round(code_ips, 2), "unmixed_items_per_s": round(n / unmixed_s, 2),
                      "mixed_items_per_s": round(mixed_ips, 2), "mixed_vs_unmixed": round(ratio, 3),
                      "load1": round(os.getloadavg()[0], 2)}))


if __name__ == "__main__":
    main()
