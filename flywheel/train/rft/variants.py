"""Variants of the mined failures RFT trains on: each chosen pool task's environment draws fresh tasks of the
same kind (`Environment.variants`: same level, new numbers and names), so one failure production showed
becomes a small curriculum of its own kind instead of one prompt sampled a few times.

Variants are training tasks like replay: from the train split, and decontaminated with the mining pool's own
rule (`flywheel.mining.pool.heldout_prompts`, n-gram containment against every evaluation suite: held-out,
production, frozen test), so none is, or nearly is, a prompt any suite scores. They take the places under each
domain's `tasks_per_domain` after the pool's own tasks and before replay, but never replay's reserved share
(`replay_share`: without replay the policy drifts on the distribution it was built on); a run without pool tasks
(replay only) gets none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa

from flywheel.tasks.base import Task
from flywheel.tasks.sources import POOL, VARIANT, source_of, tagged
from flywheel.warehouse import scratch


def is_pool(task: Task) -> bool:
    return source_of(task) == POOL


def is_variant(task: Task) -> bool:
    return source_of(task) == VARIANT


def draw_variants(pool: Sequence[Task], n: int, seed: int) -> list[Task]:
    """Up to `n` variants of each task in `pool` (its environment's `variants`; none where it has no hook),
    each id once, in pool order, tagged `meta["source"] = "variant"` and `meta["variant_of"]`."""
    from flywheel.environments.registry import default_environments

    if n <= 0 or not pool:
        return []
    envs = default_environments()
    seen = {t.task_id for t in pool}
    out: list[Task] = []
    for t in pool:
        fn = getattr(envs.for_domain(t.domain), "variants", None)
        for v in (fn(t, n, seed) if fn else []):
            if v.task_id not in seen:
                seen.add(v.task_id)
                out.extend(tagged([v], VARIANT, variant_of=t.task_id))
    return decontaminated(out)


def decontaminated(tasks: list[Task]) -> list[Task]:
    """`tasks` without those whose prompt overlaps an evaluation prompt by the mining pool's rule
    (`MiningConfig.decontam_ngram` / `decontam_threshold`), or equals one."""
    from flywheel.mining.config import MiningConfig
    from flywheel.mining.pool import heldout_prompts
    from flywheel.mining.textsim import heldout_overlap

    if not tasks:
        return []
    cfg = MiningConfig()
    held = heldout_prompts(tuple(sorted({t.domain for t in tasks})))
    held_ids = {h[1] for h in held}
    con = scratch()
    try:
        con.register("_v", pa.table({"task_id": [t.task_id for t in tasks], "prompt": [t.prompt for t in tasks]}))
        con.register("_h", pa.table({"task_id": [h[1] for h in held], "prompt": [h[2] for h in held]}))
        con.execute("CREATE TEMP TABLE _vs AS SELECT * FROM _v; CREATE TEMP TABLE _hs AS SELECT * FROM _h")
        heldout_overlap(con, "_vs", "_hs", "_vo", cfg.decontam_ngram)
        bad = {r[0] for r in con.execute(f"SELECT task_id FROM _vo WHERE overlap >= {cfg.decontam_threshold}")
               .fetchall()}
    finally:
        con.close()
    return [t for t in tasks if t.task_id not in bad and t.task_id not in held_ids]


def mined_budget(cap: int, replay_share: float) -> int:
    """How many of a domain's `cap` RFT tasks the pool and its variants may take: the rest is replay's."""
    return cap - math.ceil(cap * replay_share)


def with_variants(chosen: Sequence[Task], per_domain: dict[str, int], n: int, seed: int,
                  replay_share: float = 0.0) -> list[Task]:
    """`chosen` (RFT's task choice) with up to `n` variants of each pool task among them, each domain still at most
    `per_domain[d]` tasks: its pool tasks, then variants, then replay (in `chosen`'s order). Pool and variants
    together take at most `mined_budget(cap, replay_share)` places; when the variants do not all fit, each pool
    task keeps the same number (round robin), so no mined failure loses its curriculum to another's."""
    variants = draw_variants([t for t in chosen if is_pool(t)], n, seed)
    if not variants:
        return list(chosen)
    ids = {t.task_id for t in chosen}
    out: list[Task] = []
    for domain in dict.fromkeys(t.domain for t in [*chosen, *variants]):
        cap = per_domain.get(domain, 0)
        own = [t for t in chosen if t.domain == domain]
        pool = [t for t in own if is_pool(t)]
        room = max(0, mined_budget(cap, replay_share) - len(pool))
        extra = _round_robin([v for v in variants if v.domain == domain and v.task_id not in ids], room)
        rest = [t for t in own if not is_pool(t)][: max(0, cap - len(pool) - len(extra))]
        out += [*pool, *extra, *rest]
    return out


def _round_robin(variants: list[Task], room: int) -> list[Task]:
    """The first `room` of `variants` taken one per pool task in turn (first variants of every task, then the
    second ones, ...), returned in their drawn order."""
    if len(variants) <= room:
        return variants
    drawn: Counter[str] = Counter()  # variants of each pool task seen so far
    order = []
    for i, v in enumerate(variants):
        parent = (v.meta or {}).get("variant_of", "")
        order.append((drawn[parent], i))
        drawn[parent] += 1
    keep = {i for _, i in sorted(order)[:room]}
    return [v for i, v in enumerate(variants) if i in keep]
