"""The shared shape of flywheel's built-in domains: a seeded task suite split by prompt hash, a verifier
object built once, and hack probes that validation and verifier construction both run.

The split is by a hash of the prompt (one prompt in five is held out), so no seed or size ever lets a
held-out prompt into training, and `tasks(d, "heldout", ...)` is the evaluation set whatever asks.

Three distributions, disjoint by construction (each level is its own templates or sizes):
- the SFT distribution: `levels_`, what the base model is taught and replay draws from (`tasks`);
- production: the SFT levels plus `production_levels`, which appear on later world days (drift): what
  simulated users ask (`production_tasks`), so some failures exist only in the logs;
- the frozen test suite: `test_levels`, in neither of the others (`test_tasks`, its own seed space).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from flywheel.environments.base import (
    DEFAULT_HELDOUT_SIZE,
    BaseEnvironment,
    Probe,
    ValidationCase,
    check_split,
    is_heldout,
)
from flywheel.environments.task import Task
from flywheel.environments.verdict import Verdict

TEST_SEED = 77_000
"""The frozen test suite's seed: no other suite or training draw uses it."""


class SuiteEnvironment(BaseEnvironment):
    """One built-in domain: the environment's name is the domain's.

    `verifiers`: where the verifier comes from (anything with `get(domain)`, e.g. a `VerifierRegistry`
    sharing a sandbox pool); None: the environment builds its own on first use (`make_verifier(None)`).
    Subclasses set `name`, `levels_`, `heldout_tasks`, and implement `suite`, `make_verifier`, `probes`.
    """

    family = "builtin"
    levels_: tuple[int, ...] = ()
    heldout_tasks: int = DEFAULT_HELDOUT_SIZE
    production_levels: Mapping[int, int] = MappingProxyType({})
    """Production-only levels (never in the SFT data) -> the first world day production asks them."""
    test_levels: tuple[int, ...] = ()
    """The frozen test suite's levels: in neither the SFT data nor production."""

    def __init__(self, verifiers: Any = None) -> None:
        self._reg = verifiers
        self._own: Any = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:  # type: ignore[override]
        """The verifier's version (the code verifier's includes its harness hash)."""
        return str(self.verifier().version)

    def verifier(self) -> Any:
        """The verifier `verify` uses."""
        if self._reg is not None:
            return self._reg.get(self.name)
        with self._lock:
            if self._own is None:
                self._own = self.make_verifier(None)
            return self._own

    def domains(self) -> list[str]:
        return [self.name]

    def levels(self, domain: str) -> tuple[int, ...]:
        return self.levels_

    def heldout_size(self, domain: str) -> int:
        return self.heldout_tasks

    def _check(self, domain: str, split: str, level: int | None) -> None:
        if domain != self.name:
            raise ValueError(f"environment {self.name!r} serves only domain {self.name!r}, not {domain!r}")
        check_split(split)
        allowed = (*self.levels_, *self.production_levels)  # test levels only through test_tasks
        if level is not None and level not in allowed:
            raise ValueError(f"{domain}: level must be one of {allowed or '(none: no difficulty knob)'}, "
                             f"got {level!r}")

    def world_levels(self, day: int | None = None) -> tuple[int, ...]:
        """The levels production asks on world day `day` (None: every one that ever appears)."""
        later = tuple(lv for lv, first in sorted(self.production_levels.items()) if day is None or first <= day)
        return (*self.levels_, *later)

    def production_tasks(self, domain: str, split: str, n: int, seed: int, day: int | None = None) -> list[Task]:
        self._check(domain, split, None)
        want = split == "heldout"
        return self._mixed(n, seed, self.world_levels(day), lambda t: is_heldout(t.prompt) == want)

    def test_tasks(self, domain: str, n: int) -> list[Task]:
        self._check(domain, "heldout", None)
        return self._mixed(n, TEST_SEED, self.test_levels, lambda t: True) if self.test_levels else []

    def task_level(self, task: Task) -> int | None:
        """The level `task` belongs to: `meta["level"]` where a suite wrote it; a mined log record carries no
        meta, so each built-in environment reads it from the prompt or reference. None: unknown."""
        level = (task.meta or {}).get("level")
        return level if isinstance(level, int) else None

    def variants(self, task: Task, n: int, seed: int) -> list[Task]:
        """Up to `n` fresh train-split tasks of `task`'s level (SFT or production-only, never a test level):
        by the prompt-hash split none is a held-out or production-suite prompt, and a test level is never drawn."""
        level = self.task_level(task)
        if n <= 0 or level is None or level not in (*self.levels_, *self.production_levels):
            return []
        digest = hashlib.sha256(f"variants:{seed}:{task.task_id}".encode()).digest()
        own = task.prompt.strip()
        drawn = self.suite(n, int.from_bytes(digest[:4], "big"), level,
                           lambda t: not is_heldout(t.prompt) and t.prompt.strip() != own)
        return drawn[:n]

    def _mixed(self, n: int, seed: int, levels: tuple[int, ...], keep: Callable[[Task], bool]) -> list[Task]:
        """`n` tasks spread evenly over `levels`, interleaved; a prefix of a longer draw (sizes only add tasks)."""
        if not levels:
            return self.suite(n, seed, None, keep)
        per = -(-n // len(levels))
        drawn = [self.suite(per, seed * 1_009 + lv, lv, keep) for lv in levels]
        out: dict[str, Task] = {}
        for i in range(per):
            for ts in drawn:
                if i < len(ts):
                    out.setdefault(ts[i].task_id, ts[i])
        return list(out.values())[:n]

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        self._check(domain, split, level)
        want = split == "heldout"
        return self.suite(n, seed, level, lambda t: is_heldout(t.prompt) == want)

    def suite(self, n: int, seed: int, level: int | None, keep: Callable[[Task], bool]) -> list[Task]:
        raise NotImplementedError

    def verify(self, task: Task | dict[str, Any], response: Any) -> Verdict:
        vt = task.verifier_task() if isinstance(task, Task) else task
        return self.verifier().verify(vt, response)

    def validation(self, task: Task) -> list[ValidationCase]:
        cases = [ValidationCase("gold", "gold", task.solution), ValidationCase("wrong", "empty", "")]
        wrong = self.wrong_response(task)
        if wrong is not None:
            cases.append(ValidationCase("wrong", "wrong", wrong))
        cases += [ValidationCase("hack", p.name, p.response, p.slow) for p in self.probes(task.verifier_task())]
        return cases

    def probes(self, task: dict[str, Any]) -> list[Probe]:
        raise NotImplementedError
