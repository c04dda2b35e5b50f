"""Which reasoning-gym generators can be domains: the survey behind `reasoning_gym.TESTED`.

A generator qualifies when, offline and within `budget_s`:
1. two generations from one seed are identical (after a JSON round trip, as tasks travel),
2. at its default config and at every curriculum level, on train and held-out tasks, the
   environment's own validation holds (gold 1.0; empty, wrong and every hack probe 0.0).

    python -m flywheel.environments.rg_survey            # prints the qualifying names as a tuple
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

from flywheel.environments.base import validate
from flywheel.environments.reasoning_gym import PREFIX, ReasoningGymEnvironment


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def check_generator(env: ReasoningGymEnvironment, name: str, n: int = 3, seed: int = 11) -> str | None:
    """Why generator `name` does not qualify, or None when it does."""
    domain = PREFIX + name
    if env.entries(name, seed, 6) != env.entries(name, seed, 6):
        return "not deterministic: one seed gave two different generations"
    for level in (None, *env.levels(domain)):
        for split, k in (("train", n), ("heldout", 1)):
            tasks = env.tasks(domain, split, k, seed, level)
            if not tasks:
                return f"no {split} tasks at level {level}"
            for t in tasks:
                if not t.reference["answer"]:
                    return "entries carry no gold answer"
                r = validate(env, t)
                if not r.ok:
                    return f"level {level}: {r.failures[0]}"
    return None


def survey(names: list[str] | None = None, budget_s: float = 20.0) -> dict[str, str | None]:
    """name -> None (qualifies) or the reason it does not; runs in the main thread (uses SIGALRM)."""
    from reasoning_gym.factory import DATASETS

    names = sorted(DATASETS) if names is None else names
    env = ReasoningGymEnvironment(names=tuple(names))
    out: dict[str, str | None] = {}
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for name in names:
            t0 = time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, budget_s)
            try:
                out[name] = check_generator(env, name)
            except _Timeout:
                out[name] = f"slower than {budget_s:.0f}s to generate and validate"
            except Exception as e:  # noqa: BLE001 - any failure disqualifies the generator, with its reason
                out[name] = f"{type(e).__name__}: {str(e)[:160]}"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            print(f"{name:32s} {time.monotonic() - t0:6.2f}s {out[name] or 'ok'}", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGALRM, old)
    return out


if __name__ == "__main__":
    res = survey(sys.argv[1:] or None)
    print(tuple(sorted(n for n, why in res.items() if why is None)))
