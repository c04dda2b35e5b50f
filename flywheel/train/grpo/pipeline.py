"""Rollout production for the trainer: synchronous, or one-step-off-policy in a thread.

Synchronous: generate step k, then update on it. One-step-off-policy: while the
trainer updates on batch k, a background thread generates batch k+1 with the policy
as it was before that update (version k), so generation and update overlap; the new
weights are pushed to the generator before it starts batch k+2. Staleness (policy
version of the update minus version that sampled) is then 1; `max_staleness` bounds it
and a batch older than that is regenerated.

Both modes account idle time the way the design asks: the share of wall time the
update waited for rollouts, and the share the rollouts waited for the update.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any


@dataclass
class IdleClock:
    """Wall time split: update waiting for rollouts, rollouts waiting for the update."""

    update_waited_s: float = 0.0
    rollout_waited_s: float = 0.0
    start: float = 0.0

    def shares(self) -> dict[str, float]:
        wall = max(time.perf_counter() - self.start, 1e-9)
        return {
            "idle/update_waiting_for_rollouts": self.update_waited_s / wall,
            "idle/rollouts_waiting_for_update": self.rollout_waited_s / wall,
        }


class RolloutPipeline:
    """`get(step, version)` returns the batch for `step`; `produce(step)` makes one.

    `produce` must read the generator's weights only (never the trainer's), and
    `sync(version)` copies the trainer's weights into the generator.
    """

    def __init__(
        self,
        produce: Callable[[int], Any],
        sync: Callable[[int], None],
        off_policy: bool = False,
        max_staleness: int = 1,
    ) -> None:
        self.produce, self.sync = produce, sync
        self.off_policy, self.max_staleness = off_policy, max_staleness
        self.clock = IdleClock(start=time.perf_counter())
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollouts") if off_policy else None
        self._future: Future | None = None
        self._future_step: int | None = None
        self._gen_version: int | None = None
        self._gen_idle_since: float | None = time.perf_counter()

    def reset_clock(self) -> None:
        """Start idle accounting now (after model loading and setup)."""
        self.clock = IdleClock(start=time.perf_counter())
        self._gen_idle_since = self.clock.start

    def _run(self, step: int) -> Any:
        out = self.produce(step)
        self._gen_idle_since = time.perf_counter()  # generator idle from here until the next submit
        return out

    def _submit(self, step: int, version: int) -> None:
        assert self._pool is not None
        self.sync(version)
        self._gen_version = version
        now = time.perf_counter()
        if self._gen_idle_since is not None:
            self.clock.rollout_waited_s += now - self._gen_idle_since
        self._gen_idle_since = None
        self._future = self._pool.submit(self._run, step)
        self._future_step = step

    def get(self, step: int, version: int, last_step: int) -> tuple[Any, int]:
        """The batch for `step` and the policy version that sampled it; prefetches `step + 1`."""
        if not self.off_policy:
            self.sync(version)
            t0 = time.perf_counter()
            if self._gen_idle_since is not None:
                self.clock.rollout_waited_s += t0 - self._gen_idle_since
            batch = self.produce(step)
            t1 = time.perf_counter()
            self.clock.update_waited_s += t1 - t0
            self._gen_idle_since = t1
            return batch, version
        if self._future is None or self._future_step != step or version - (self._gen_version or 0) > self.max_staleness:
            self._drain()
            self._submit(step, version)
        t0 = time.perf_counter()
        assert self._future is not None
        batch = self._future.result()
        t1 = time.perf_counter()
        self.clock.update_waited_s += t1 - t0
        made_with = self._gen_version if self._gen_version is not None else version
        self._future = None
        if step + 1 <= last_step:
            self._submit(step + 1, version)  # overlaps the update on `batch`
        return batch, made_with

    def pending(self) -> tuple[int, Any, int] | None:
        """Wait for the prefetched batch (for checkpoints): (step, batch, version) or None."""
        if self._future is None:
            return None
        batch = self._future.result()
        step, version = self._future_step, self._gen_version
        fut = Future()
        fut.set_result(batch)
        self._future = fut
        return step, batch, version  # type: ignore[return-value]

    def preload(self, step: int, batch: Any, version: int) -> None:
        """Restore a prefetched batch from a checkpoint so a resumed run sees the same data."""
        fut: Future = Future()
        fut.set_result(batch)
        self._future, self._future_step, self._gen_version = fut, step, version

    def _drain(self) -> None:
        if self._future is not None:
            try:
                self._future.result()
            finally:
                self._future = None

    def close(self) -> None:
        if self._pool is not None:
            if self._future is not None:
                self._future.cancel()
            self._pool.shutdown(wait=True)
