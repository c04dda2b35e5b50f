"""Which reasoning-gym generators can be domains: the survey behind `reasoning_gym.TESTED`.

A generator qualifies when, offline and within `budget_s`:
1. two generations from one seed are identical (after a JSON round trip, as tasks travel),
2. at its default config and at every curriculum level, on train and held-out tasks, the
   environment's own validation holds (gold 1.0; empty, wrong and every hack probe 0.0). The
   probes include, per domain, multiple answers (two markers, two tags, a second answer after a
   blank line or a comma, `gold; wrong`), hedges (text after `</answer>`, `gold (or possibly
   wrong)`) and padding (words before or after the gold answer): a scorer that takes any of them
   disqualifies its generator unless the environment refuses the form first (`rg_scoring.REFUSALS`);
3. its scorer runs only in the one-shot child, under the deadline (`rg_scoring.score_isolated`), and
   where upstream evaluates the answer as code a safe scorer replaces it (`rg_scoring.SAFE_SCORERS`).

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


def fast_levels(env: ReasoningGymEnvironment, name: str, per_entry_s: float = 0.02, k: int = 8) -> int:
    """How many curriculum levels, from the easiest, generate at most `per_entry_s` per entry (3 seeds)."""
    n = 0
    for lv in range(1, env.curriculum_levels(name) + 1):
        t0 = time.perf_counter()
        for s in (1, 2, 3):
            env.entries(name, 1000 + s, k, lv)
        if (time.perf_counter() - t0) / (3 * k) > per_entry_s:
            break
        n = lv
    return n


def check_generator(env: ReasoningGymEnvironment, name: str, n: int = 3, seed: int = 11,
                    per_entry_s: float = 0.02) -> str | None:
    """Why generator `name` does not qualify, or None when it does (its fast levels go into `env`)."""
    domain = PREFIX + name
    if env.entries(name, seed, 6) != env.entries(name, seed, 6):
        return "not deterministic: one seed gave two different generations"
    env._max_level[name] = fast_levels(env, name, per_entry_s)
    if not env._max_level[name]:  # no curriculum (or none fast): the default config is what tasks use
        t0 = time.perf_counter()
        env.entries(name, seed, 8)
        if (time.perf_counter() - t0) / 8 > per_entry_s:
            return f"default config slower than {per_entry_s}s per task and no fast curriculum level"
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


def survey(names: list[str] | None = None, budget_s: float = 20.0,
           levels_out: dict[str, int] | None = None) -> dict[str, str | None]:
    """name -> None (qualifies) or the reason it does not; runs in the main thread (uses SIGALRM).
    `levels_out` receives each qualifying generator's fast curriculum levels."""
    from reasoning_gym.factory import DATASETS

    names = sorted(DATASETS) if names is None else names
    env = ReasoningGymEnvironment(names=tuple(names), levels={})
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
            if out[name] is None and levels_out is not None:
                levels_out[name] = env._max_level.get(name, 0)
            print(f"{name:32s} {time.monotonic() - t0:6.2f}s {out[name] or 'ok'}", file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGALRM, old)
    return out


if __name__ == "__main__":
    lv: dict[str, int] = {}
    res = survey(sys.argv[1:] or None, levels_out=lv)
    print(tuple(sorted(n for n, why in res.items() if why is None)))
    print({k: lv[k] for k in sorted(lv)})
