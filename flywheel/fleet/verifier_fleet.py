"""The verifier fleet: verification batches fanned out to Ray actors, each with its own warm sandbox pool.

    scorer = FleetScorer(FleetConfig(verifier_actors=2), cache=VerdictCache(warehouse))
    verdicts = scorer.many([(domain, task, response), ...])   # in order; what `BatchScorer.many` returns

The driver resolves task errors, the verdict cache and a run-local memo first (as `BatchScorer` and
`score_batch` do), then sends the rest in chunks of `batch_size` to the actors, at most `max_in_flight`
chunks per actor. Inside an actor `score_batch` runs the chunk over that actor's `VerifierRegistry`
(its own `SandboxPool`, math workers) and hands back `None` for an item whose infrastructure kept
failing. Such items, and every item of an actor that died, are retried on the fleet; an item that still
has no verdict after `max_attempts` raises `VerifierInfraError`: never a reward of 0.
"""

from __future__ import annotations

import json
import time
from typing import Any

import ray

from flywheel.fleet.actors import ActorSlots, BusyMeter, run_jobs
from flywheel.fleet.config import FleetConfig, FleetError
from flywheel.verifiers.batch import _key, as_item, task_error
from flywheel.verifiers.cache import Key
from flywheel.verifiers.common import TaskError
from flywheel.verifiers.registry import VerifierRegistry
from flywheel.verifiers.verdict import Verdict, VerifierInfraError


class VerifierWorker:
    """One verifier actor: a warm `SandboxPool` and the verifiers over it."""

    def __init__(self, backend: str, workers: int) -> None:
        from flywheel.sandbox.pool import SandboxPool

        self.workers = workers
        self.pool = SandboxPool(backend=backend, workers=workers, warm=True)
        self.registry = VerifierRegistry(sandbox=self.pool, workers=workers)
        self.busy = BusyMeter()

    def ready(self) -> int:
        import os

        return os.getpid()

    def ping(self, items: list[Any]) -> int:
        """A call that carries a batch and judges nothing: Ray's own cost per call (`bench_fleet.py`)."""
        return len(items)

    def score(self, items: list[tuple[str, dict, Any]]) -> tuple[list[Verdict | None], float]:
        """Verdicts in order (`None`: infrastructure kept failing for that item) and this actor's busy seconds."""
        from flywheel.verifiers.batch import score_batch

        with self.busy:
            out = score_batch(items, concurrency=self.workers, registry=self.registry, errors="none")
        return out, self.busy.now_s()

    def close(self) -> None:
        self.pool.close()


class FleetScorer:
    """A `ScoreFn` (`scorer(domain, task, response)`, `scorer.many(items)`) whose judging runs on Ray actors.

    Ray must already be connected. `cache` (a `VerdictCache`) is read and written on the driver, keyed
    exactly as `score_batch` keys it. `stats()` gives each actor's busy share and the fleet's idle share.
    """

    def __init__(self, config: FleetConfig | None = None, cache: Any = None, memo_size: int = 200_000,
                 start: bool = True) -> None:
        self.config = config or FleetConfig()
        if self.config.verifier_actors < 1:
            raise ValueError("FleetScorer needs verifier_actors >= 1 (0 means: score in process, without a fleet)")
        self.cache, self.memo_size = cache, memo_size
        self.memo: dict[tuple[str, str, str], Verdict] = {}
        self.hits = 0
        self.keys = VerifierRegistry()  # names and versions for cache keys; never judges (no pool starts)
        self._slots: ActorSlots | None = None
        if start:
            self.start()

    def start(self) -> None:
        """Start the actors and wait until each has its warm pool (`start=False` defers this to first use)."""
        if self._slots is not None:
            return
        cfg = self.config
        if not ray.is_initialized():
            raise FleetError("FleetScorer: Ray is not connected (ray.init(...) or the `ray` resource first)")
        remote = ray.remote(VerifierWorker).options(
            num_cpus=cfg.actor_cpus, max_concurrency=cfg.max_in_flight, scheduling_strategy="SPREAD")
        slots = ActorSlots(lambda i: remote.remote(cfg.sandbox_backend, cfg.sandbox_workers),
                           cfg.verifier_actors, "verifier", max_restarts=cfg.max_attempts * cfg.verifier_actors)
        ray.get([h.ready.remote() for h in slots.handles], timeout=cfg.call_timeout_s)
        slots.reset_clock()
        self._slots = slots

    @property
    def slots(self) -> ActorSlots:
        self.start()
        assert self._slots is not None
        return self._slots

    def __call__(self, domain: str, task: dict, response: str) -> Verdict:
        return self.many([(domain, task, response)])[0]

    def many(self, items: list[Any]) -> list[Verdict]:
        """Verdicts of `items` (`(domain, task, response)` tuples, dicts or `ScoreItem`s) in their order."""
        return [v for _, v in self.many_with_keys(items)]

    def many_with_keys(self, items: list[Any]) -> list[tuple[Key | None, Verdict]]:
        """(cache key, verdict) per item in order; the key is None where the task could not be judged."""
        items = [as_item(x) for x in items]
        memo_keys = [(it.domain, json.dumps(it.task, sort_keys=True, default=str), str(it.response)) for it in items]
        out: list[Verdict | None] = [None] * len(items)
        keys: list[Key | None] = [None] * len(items)
        first: dict[tuple[str, str, str], int] = {}  # the first of identical items is judged, the rest copy it
        for i, (it, mk) in enumerate(zip(items, memo_keys, strict=True)):
            try:
                if not isinstance(it.task, dict):
                    raise TaskError(f"task must be a JSON object, got {type(it.task).__name__}")
                keys[i] = _key(self.keys, it)
            except TaskError as e:
                out[i] = task_error(e)
                continue
            if mk in self.memo:
                out[i] = self.memo[mk]
                self.hits += 1
            elif mk in first:
                self.hits += 1
            else:
                first[mk] = i
        todo = list(first.values())
        if self.cache is not None and todo:
            hit = self.cache.get_many(keys[i] for i in todo)
            for i in todo:
                if keys[i] in hit:
                    out[i] = hit[keys[i]]
            todo = [i for i in todo if out[i] is None]
        fresh = self._judge(items, todo, out)
        if self.cache is not None and fresh:
            self.cache.put_many((keys[i], out[i]) for i in fresh)  # type: ignore[misc]
        for i in first.values():
            v = out[i]
            if v is not None and v.details.get("cacheable", True) and len(self.memo) < self.memo_size:
                self.memo[memo_keys[i]] = v
        for i, mk in enumerate(memo_keys):
            if out[i] is None and mk in first:
                out[i] = out[first[mk]]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            raise VerifierInfraError(f"{len(missing)} item(s) got no verdict from the fleet (first: {missing[0]})")
        return list(zip(keys, out, strict=True))  # type: ignore[arg-type]

    def _judge(self, items: list[Any], todo: list[int], out: list[Verdict | None]) -> list[int]:
        """Fill `out[i]` for `todo` on the fleet; returns the indices judged. Infra failures are retried."""
        cfg, judged = self.config, []
        for attempt in range(cfg.max_attempts):
            if not todo:
                break
            chunks = [todo[j:j + cfg.batch_size] for j in range(0, len(todo), cfg.batch_size)]
            payloads = [[(items[i].domain, items[i].task, items[i].response) for i in c] for c in chunks]
            results = run_jobs(self.slots, payloads, lambda h, p: h.score.remote(p),
                               max_in_flight=cfg.max_in_flight, max_attempts=cfg.max_attempts,
                               timeout_s=cfg.call_timeout_s)
            left = []
            for chunk, verdicts in zip(chunks, results, strict=True):
                for i, v in zip(chunk, verdicts, strict=True):
                    if v is None:
                        left.append(i)
                    else:
                        out[i] = v
                        judged.append(i)
            todo = left
            if todo and attempt + 1 < cfg.max_attempts:
                time.sleep(0.2 * 2**attempt)
        if todo:
            raise VerifierInfraError(f"{len(todo)} item(s) could not be judged after {cfg.max_attempts} "
                                     f"attempts on the fleet (first: item {todo[0]}, domain {items[todo[0]].domain})")
        return judged

    def stats(self) -> dict[str, float]:
        """Busy share per verifier actor, the fleet's idle share and its restarts (for MLflow); {} before start."""
        return self._slots.shares() if self._slots is not None else {}

    def close(self) -> None:
        """Stop the actors (their sandbox pools go with their processes)."""
        if self._slots is None:
            return
        for h in self.slots.handles:
            try:
                ray.get(h.close.remote(), timeout=10)
            except Exception:  # noqa: BLE001 - a dead actor has nothing to close
                pass
        self.slots.close()
