"""The validation boundary for plug-in environments: what a plug-in hands back is checked before use.

Why: environments are guests. A plug-in's reward of 2.0, -1 or NaN, a `passed` that disagrees
with its reward, or a bare float must never reach the trainer or `flywheel verify`'s JSON; a
plug-in that hangs (at import or in `verify`) must not hang the run or keep the process from
exiting. Every verdict on the scoring path (`flywheel.verifiers.batch.score_batch`, which
`make_reward_func`, the trainer's `BatchScorer` and `flywheel verify` all use) passes `check`,
and runs under `within` (a daemon thread: a hung plug-in is abandoned, never joined) with
`score_batch`'s `item_timeout_s` as its deadline.

A verdict is valid when it is a `Verdict`, its reward a finite real number in [0, 1], `passed` a
bool with `passed` only at reward 1.0 and never a full reward without `passed` (the project's
convention: partial credit is not a pass), `reason` a string, `details` a dict that is JSON
without NaN or infinities. Lone surrogates (model output quoted in a reason) are replaced by "?", so
the verdict cache and `--json` output always take the verdict.
"""

from __future__ import annotations

import json
import math
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from flywheel.environments.verdict import Verdict

T = TypeVar("T")

IMPORT_DEADLINE_S = 30.0
"""Wall-clock limit for importing and building one plug-in environment."""


class PluginError(RuntimeError):
    """A plug-in broke the protocol (invalid verdict, hang): not the model's failure, not worth a retry.

    `plugin` names it; the message says what it did."""

    def __init__(self, plugin: str, why: str) -> None:
        super().__init__(f"plug-in {plugin}: {why}")
        self.plugin = plugin


def plugin_name(verifier: Any) -> str:
    """How to name a verifier's plug-in in an error: its environment and domain where it has them."""
    env = getattr(verifier, "env", None)
    dom = getattr(verifier, "name", "?")
    return f"{getattr(env, 'name', '?')!r} (domain {dom!r})" if env is not None else repr(dom)


def check(v: Any, plugin: str) -> Verdict:
    """`v` as a plain, valid `Verdict`; PluginError naming `plugin` and the fault otherwise."""
    if not isinstance(v, Verdict):
        raise PluginError(plugin, f"verify returned {type(v).__name__} {str(v)[:80]!r}, not a Verdict")
    r = v.reward
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r):
        raise PluginError(plugin, f"reward {r!r} is not a finite number")
    if not 0.0 <= r <= 1.0:
        raise PluginError(plugin, f"reward {r!r} is outside [0, 1]")
    if not isinstance(v.passed, bool):
        raise PluginError(plugin, f"passed must be a bool, got {type(v.passed).__name__}")
    if v.passed != (r >= 1.0):
        raise PluginError(plugin, f"passed={v.passed} disagrees with reward {r!r} (a pass is reward 1.0)")
    if not isinstance(v.reason, str):
        raise PluginError(plugin, f"reason must be a string, got {type(v.reason).__name__}")
    if not isinstance(v.details, dict):
        raise PluginError(plugin, f"details must be a dict, got {type(v.details).__name__}")
    try:
        text = json.dumps(v.details, allow_nan=False, default=str, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError) as e:
        raise PluginError(plugin, f"details are not JSON: {type(e).__name__}: {e}") from None
    return Verdict(float(r), v.passed, _utf8(v.reason), json.loads(_utf8(text)))


def _utf8(text: str) -> str:
    """`text` with lone surrogates (model output quoted in a reason) replaced: every store takes UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def within(fn: Callable[[], T], deadline_s: float, plugin: str, what: str) -> T:
    """`fn()` in a daemon thread; its result or exception, or PluginError when it outlasts `deadline_s`.

    A thread that never returns is left behind as a daemon: it cannot keep the process from exiting."""
    box: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)

    def run() -> None:
        try:
            box.put((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, raised there
            box.put((False, e))

    threading.Thread(target=run, name=f"plugin-{what}", daemon=True).start()
    try:
        ok, val = box.get(timeout=deadline_s)
    except queue.Empty:
        raise PluginError(plugin, f"{what} did not finish within {deadline_s:g}s") from None
    if not ok:
        raise val
    return val
