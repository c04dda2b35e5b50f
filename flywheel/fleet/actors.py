"""What both fleets share: actor slots that are replaced when an actor dies, a bounded dispatcher that
resubmits a dead actor's work elsewhere, and busy-time accounting for utilisation.

An actor that dies (killed, OOM, its node gone) surfaces as one of `ACTOR_DEATH`; its in-flight work
goes back to the queue and a fresh actor takes its slot, so a death costs time, never a result. An
exception the work itself raised inside the actor is not a death: it propagates to the caller.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import ray
import ray.exceptions as rex

from flywheel.fleet.config import FleetError

ACTOR_DEATH: tuple[type[BaseException], ...] = (
    rex.RayActorError,  # ActorDiedError, ActorUnavailableError
    rex.WorkerCrashedError,
    rex.NodeDiedError,
    rex.ObjectLostError,  # OwnerDiedError, ObjectReconstructionFailedError
)


class BusyMeter:
    """Actor side: wall seconds during which at least one call was running (calls may overlap)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._since = 0.0
        self.total_s = 0.0

    def __enter__(self) -> BusyMeter:
        with self._lock:
            if self._active == 0:
                self._since = time.perf_counter()
            self._active += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self.total_s += time.perf_counter() - self._since

    def now_s(self) -> float:
        """Busy seconds so far, the running stretch included."""
        with self._lock:
            return self.total_s + (time.perf_counter() - self._since if self._active else 0.0)


class ActorSlots:
    """`n` actors made by `make(i)`; `replace(i)` swaps a dead one for a fresh one (bounded by `max_restarts`).

    Busy time: each answer carries its actor's busy seconds so far (`record`); a slot's busy share is
    that over the fleet's wall time since `reset_clock`, a replaced actor's time carried over.
    """

    def __init__(self, make: Callable[[int], Any], n: int, name: str, max_restarts: int) -> None:
        self.make, self.name, self.max_restarts = make, name, max_restarts
        self.handles: list[Any] = [make(i) for i in range(n)]
        self.restarts = 0
        self._busy_done = [0.0] * n  # busy seconds of replaced actors, per slot
        self._busy_now = [0.0] * n  # the live actor's busy seconds as last reported
        self._busy_at_reset = [0.0] * n
        self.t0 = time.perf_counter()
        self.t_end: float | None = None  # set by close: utilisation stays readable after the fleet is gone

    def __len__(self) -> int:
        return len(self.handles)

    def replace(self, i: int, dead: Any) -> None:
        """A fresh actor in slot `i` unless `dead` was already replaced there (several calls fail at once)."""
        if self.handles[i] is not dead:
            return
        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise FleetError(f"{self.name} fleet: {self.restarts} actor deaths, more than the {self.max_restarts} "
                             "allowed; the cluster is failing (see the Ray dashboard / `ray status`)")
        try:
            ray.kill(dead, no_restart=True)
        except Exception:  # noqa: BLE001 - it is already gone
            pass
        self._busy_done[i] += self._busy_now[i]
        self._busy_now[i] = 0.0
        self.handles[i] = self.make(i)

    def record(self, i: int, handle: Any, busy_s: float) -> None:
        if self.handles[i] is handle:
            self._busy_now[i] = max(self._busy_now[i], busy_s)

    def busy_s(self, i: int) -> float:
        return self._busy_done[i] + self._busy_now[i] - self._busy_at_reset[i]

    def reset_clock(self) -> None:
        """Measure utilisation from now on (after actors started and warmed)."""
        self._busy_at_reset = [self._busy_done[i] + self._busy_now[i] for i in range(len(self))]
        self.t0 = time.perf_counter()

    def shares(self) -> dict[str, float]:
        """`fleet/<name>_busy.<i>` per actor, `idle/<name>_fleet` (1 - mean busy share), `fleet/<name>_restarts`."""
        wall = max((self.t_end or time.perf_counter()) - self.t0, 1e-9)
        busy = [min(1.0, self.busy_s(i) / wall) for i in range(len(self._busy_done))]
        out = {f"fleet/{self.name}_busy.{i}": b for i, b in enumerate(busy)}
        out[f"idle/{self.name}_fleet"] = 1.0 - (sum(busy) / len(busy) if busy else 0.0)
        out[f"fleet/{self.name}_restarts"] = float(self.restarts)
        return out

    def close(self) -> None:
        self.t_end = self.t_end or time.perf_counter()
        for h in self.handles:
            try:
                ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self.handles = []


def run_jobs(slots: ActorSlots, payloads: Sequence[Any], submit: Callable[[Any, Any], Any], *,
             max_in_flight: int, max_attempts: int, timeout_s: float) -> list[Any]:
    """Results of `submit(actor, payload)` for every payload, in payload order.

    `submit` returns an ObjectRef of `(result, actor_busy_s)`. At most `max_in_flight` calls per actor
    are outstanding (the rest wait here: backpressure). A call whose actor died is resubmitted to the
    slot's fresh actor or another one, up to `max_attempts` tries; any other exception propagates.
    """
    queue: deque[tuple[int, int]] = deque((i, 0) for i in range(len(payloads)))
    results: list[Any] = [None] * len(payloads)
    inflight: dict[Any, tuple[int, int, int, Any]] = {}  # ref -> (slot, payload index, attempt, handle)
    load = [0] * len(slots)
    while queue or inflight:
        while queue:
            slot = min(range(len(slots)), key=load.__getitem__)
            if load[slot] >= max_in_flight:
                break
            i, attempt = queue.popleft()
            handle = slots.handles[slot]
            inflight[submit(handle, payloads[i])] = (slot, i, attempt, handle)
            load[slot] += 1
        ready, _ = ray.wait(list(inflight), num_returns=1, timeout=timeout_s)
        if not ready:
            raise FleetError(f"{slots.name} fleet: no answer from {len(inflight)} call(s) in {timeout_s:.0f}s")
        for ref in ready:
            slot, i, attempt, handle = inflight.pop(ref)
            load[slot] -= 1
            try:
                out, busy_s = ray.get(ref)
            except ACTOR_DEATH as e:
                slots.replace(slot, handle)
                if attempt + 1 >= max_attempts:
                    raise FleetError(f"{slots.name} fleet: work item {i} lost its actor {attempt + 1} times; "
                                     f"last: {type(e).__name__}: {str(e).splitlines()[0][:200]}") from e
                queue.appendleft((i, attempt + 1))
                continue
            slots.record(slot, handle, busy_s)
            results[i] = out
    return results


def placement_group_for(n: int, cpus: float, gpus: float, timeout_s: float, strategy: str = "PACK") -> Any:
    """A placement group of `n` bundles (`cpus` CPU, `gpus` GPU each), placed within `timeout_s`.

    Raises FleetError naming what was asked and what the cluster has free when it cannot be placed
    (a CPU group waits forever where actors already hold every CPU: size actors fractionally).
    """
    from ray.util.placement_group import placement_group, remove_placement_group

    bundle = {"CPU": cpus, **({"GPU": gpus} if gpus else {})}
    pg = placement_group([dict(bundle) for _ in range(n)], strategy=strategy)
    try:
        ray.get(pg.ready(), timeout=timeout_s)
    except rex.GetTimeoutError:
        remove_placement_group(pg)
        raise FleetError(f"placement group of {n} x {bundle} ({strategy}) not placed within {timeout_s:.0f}s; "
                         f"free now: {ray.available_resources()}; lower actor_cpus/rollout_gpus or add nodes") from None
    return pg
