"""Where one RL step's time goes: generate / verify / update, tokens/s; synchronous vs one-step-off-policy.

    .venv/bin/python benchmarks/bench_train_step.py [--base-model DIR] [--steps 4]

Runs a few GRPO steps of the tiny base model (real engine, real verifiers) twice: with
synchronous rollouts and with the one-step-off-policy pipeline, and prints the median
split of a step plus the idle shares. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-model", default=None)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: on a shared box 2 threads spin-wait and crawl)")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from flywheel.commands.storage import storage_from_env
    from flywheel.tasks.suites import train_suite
    from flywheel.train.common.telemetry import Telemetry
    from flywheel.train.config import GRPOConfig
    from flywheel.train.grpo.trainer import RunInputs, train_rlvr

    paths = storage_from_env().ensure()
    base = args.base_model
    if base is None:
        from flywheel.models.build import build_tiny_model

        base = str(build_tiny_model(paths.base_models / "tiny-v1").path)
    tasks = train_suite("math", 400) + train_suite("code", 80) + train_suite("agent", 80)
    # the step this benchmark has always timed (its published figures): shorter responses than the recipe,
    # up to 3 refill rounds, no intermediate checkpoints
    cfg = GRPOConfig(steps=args.steps, max_new_tokens=40, lr=5e-4, lr_schedule="constant", advantage="grpo",
                     max_refill_rounds=3, checkpoint_every=0, domain_weights={"math": 0.8, "code": 0.1, "agent": 0.1},
                     num_threads=args.threads)
    out: dict = {"machine": f"{torch.get_num_threads()} torch threads, {'cuda' if torch.cuda.is_available() else 'cpu'}",
                 "steps": args.steps, "rollouts_per_step": cfg.prompts_per_step * cfg.group_size}
    for mode, pipelined in (("sync", False), ("pipelined", True)):
        t0 = time.perf_counter()
        res = train_rlvr(cfg.replace(off_policy_pipeline=pipelined), RunInputs(base, tasks, paths, f"bench-{mode}-{int(t0)}"),
                         telemetry=Telemetry(None, enabled=False))
        wall = time.perf_counter() - t0
        h = res.history[1:] or res.history  # step 0 pays warm-up

        def med(key: str, hist=h) -> float:
            return statistics.median(x.get(key, 0.0) for x in hist)

        gen, ver, upd, step = med("time/generate_s"), med("time/verify_s"), med("time/update_s"), med("time/step_s")
        out[mode] = {
            "step_s": round(step, 3), "generate_s": round(gen, 3), "verify_s": round(ver, 3), "update_s": round(upd, 3),
            "generate_tokens_per_s": round(med("tokens_per_s/generate"), 1),
            "update_tokens_per_s": round(med("update/tokens") / upd, 1) if upd else 0.0,
            "share_generate": round(gen / (gen + ver + upd), 3), "share_verify": round(ver / (gen + ver + upd), 3),
            "share_update": round(upd / (gen + ver + upd), 3), "wall_s": round(wall, 1),
            **{k.split("/")[1]: round(v, 3) for k, v in res.idle_shares.items()},
        }
        r = out[mode]
        print(f"{mode:9s} step {r['step_s']:.2f}s = generate {r['generate_s']:.2f}s ({r['share_generate']:.0%}) + "
              f"verify {r['verify_s']:.2f}s ({r['share_verify']:.0%}) + update {r['update_s']:.2f}s ({r['share_update']:.0%}); "
              f"gen {r['generate_tokens_per_s']:.0f} tok/s, update {r['update_tokens_per_s']:.0f} tok/s; "
              f"idle: update waited {r['update_waiting_for_rollouts']:.0%}, rollouts waited {r['rollouts_waiting_for_update']:.0%}")
    out["pipelined_vs_sync_wall_ratio"] = round(out["pipelined"]["wall_s"] / out["sync"]["wall_s"], 3)
    print(f"pipelined / sync wall time: {out['pipelined_vs_sync_wall_ratio']:.2f}x")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
