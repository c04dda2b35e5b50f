"""Scoring entry points: one response, a batch, and a TRL-style reward function.

- `score(domain, task, response)` -> `Verdict`.
- `score_batch(items, concurrency=...)` -> verdicts in input order. Bounded concurrency (threads
  over the warm sandbox pool / math workers), a cache lookup first, retries for infrastructure
  errors (`VerifierInfraError`, `SandboxInfraError`) and the interpreter's own `SystemError` only,
  and a per-item wall-clock backstop on top of each verifier's own timeout. A task that cannot be
  judged (missing fields, unknown domain) gets a failed verdict with `details["error"] == "task"`,
  one whose plug-in broke the protocol (`flywheel.environments.boundary`: invalid verdict, hang) one
  with `"plugin"`; an item whose infrastructure kept failing raises `VerifierInfraError` (default)
  or yields `None` (`errors="none"`).
- `make_reward_func(...)` -> `reward_func(prompts, completions, **columns) -> list[float | None]`
  for TRL's `reward_funcs` (`None` = this verifier does not apply / could not judge).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from flywheel.environments import boundary
from flywheel.environments.boundary import PluginError
from flywheel.environments.registry import default_environments
from flywheel.sandbox.base import SandboxInfraError
from flywheel.verifiers.cache import Key, VerdictCache
from flywheel.verifiers.common import TaskError, failed, response_hash, task_key
from flywheel.verifiers.registry import VerifierRegistry, default_registry
from flywheel.verifiers.verdict import Verdict, VerifierInfraError

INFRA_ERRORS = (VerifierInfraError, SandboxInfraError)


@dataclass(frozen=True)
class ScoreItem:
    """One thing to judge: `domain`, the design's task dict, and the response (text or messages)."""

    domain: str
    task: dict[str, Any]
    response: Any


def as_item(x: Any) -> ScoreItem:
    """A ScoreItem from a ScoreItem, a `(domain, task, response)` tuple or a dict with those keys."""
    if isinstance(x, ScoreItem):
        return x
    if isinstance(x, dict):
        return ScoreItem(x.get("domain"), x.get("task"), x.get("response"))
    domain, task, response = x
    return ScoreItem(domain, task, response)


def task_error(e: Exception) -> Verdict:
    return failed(f"task error: {e}", error="task")


def plugin_error(e: PluginError) -> Verdict:
    return failed(str(e), error="plugin")


def _verify_with_retries(reg: VerifierRegistry, item: ScoreItem, retries: int, backoff_s: float,
                         deadline_s: float) -> Verdict:
    """One verdict through the plug-in boundary (checked, under a deadline), retried on infrastructure errors."""
    v = reg.get(item.domain)
    name = boundary.plugin_name(v)
    for attempt in range(retries + 1):
        try:
            got = boundary.within(lambda: v.verify(item.task, item.response), deadline_s, name, "verify")
            return boundary.check(got, name)
        except (*INFRA_ERRORS, SystemError):  # SystemError: the interpreter's fault, never the candidate's
            if attempt == retries:
                raise
            time.sleep(backoff_s * (2**attempt))
    raise AssertionError("unreachable")


def _key(reg: VerifierRegistry, item: ScoreItem) -> Key:
    v = reg.get(item.domain)
    return (task_key(item.domain, item.task), response_hash(item.task, item.response), v.name, v.version)


def score_batch(
    items: Iterable[Any],
    *,
    concurrency: int = 4,
    registry: VerifierRegistry | None = None,
    cache: VerdictCache | None = None,
    retries: int = 2,
    backoff_s: float = 0.2,
    item_timeout_s: float = 120.0,
    errors: str = "raise",
) -> list[Verdict | None]:
    """Verdicts for `items` in their order (see the module doc for errors and retries)."""
    if errors not in ("raise", "none"):
        raise ValueError("errors must be 'raise' or 'none'")
    reg = registry or default_registry()
    items = [as_item(x) for x in items]
    out: list[Verdict | None] = [None] * len(items)
    keys: dict[int, Key] = {}
    todo: list[int] = []
    for i, it in enumerate(items):
        try:
            if not isinstance(it.task, dict):
                raise TaskError(f"task must be a JSON object, got {type(it.task).__name__}")
            keys[i] = _key(reg, it)
        except TaskError as e:
            out[i] = task_error(e)
            continue
        todo.append(i)
    if cache is not None and todo:
        hit = cache.get_many(keys[i] for i in todo)
        for i in todo:
            if keys[i] in hit:
                out[i] = hit[keys[i]]
        todo = [i for i in todo if out[i] is None]
    infra: dict[int, BaseException] = {}
    fresh: list[tuple[Key, Verdict]] = []
    if todo:
        ex = ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(todo))), thread_name_prefix="verify")
        try:
            futs = {i: ex.submit(_verify_with_retries, reg, items[i], retries, backoff_s, item_timeout_s) for i in todo}
            deadline = time.monotonic() + item_timeout_s * (1 + len(todo) / max(1, concurrency))
            for i, fut in futs.items():
                try:
                    out[i] = fut.result(timeout=max(0.0, deadline - time.monotonic()))
                    fresh.append((keys[i], out[i]))
                except TaskError as e:
                    out[i] = task_error(e)
                except PluginError as e:  # the plug-in broke the protocol: an error verdict, never a reward
                    out[i] = plugin_error(e)
                except FutureTimeout:
                    infra[i] = VerifierInfraError(f"item {i}: judge did not answer in time")
                except INFRA_ERRORS as e:
                    infra[i] = e
                except Exception as e:  # noqa: BLE001 - a verifier bug is an infra error, never a reward
                    infra[i] = VerifierInfraError(f"item {i}: verifier crashed: {type(e).__name__}: {e}")
        finally:
            ex.shutdown(wait=not infra, cancel_futures=True)
    if cache is not None and fresh:
        cache.put_many(fresh)
    if infra and errors == "raise":
        first = next(iter(infra.items()))
        raise VerifierInfraError(f"{len(infra)} item(s) could not be judged; item {first[0]}: {first[1]}")
    return out


def score(domain: str, task: dict[str, Any], response: Any, *, registry: VerifierRegistry | None = None,
          cache: VerdictCache | None = None, retries: int = 2) -> Verdict:
    """The verdict of one response (cached when `cache` is given); raises VerifierInfraError only."""
    v = score_batch([ScoreItem(domain, task, response)], concurrency=1, registry=registry, cache=cache,
                    retries=retries)[0]
    assert v is not None
    return v


# --------------------------------------------------------------------------- TRL-style reward function
def _task_fields(domain: str) -> tuple[str, ...]:
    """The dataset columns that make `domain`'s task dict (`Environment.task_fields`); () for an unknown one."""
    envs = default_environments()
    return tuple(envs.for_domain(domain).task_fields) if envs.has_domain(domain) else ()


def _completion(c: Any) -> Any:
    """TRL completions: a string, or (conversational) a list of messages; the messages are the response."""
    return c


def _row_task(i: int, domain: str, columns: dict[str, Sequence[Any]], prompts: Sequence[Any] | None) -> dict:
    if "task" in columns:
        t = columns["task"][i]
        return json.loads(t) if isinstance(t, str) else dict(t)
    task = {f: columns[f][i] for f in _task_fields(domain) if f in columns}
    if "task_id" in columns:
        task["task_id"] = columns["task_id"][i]
    if "prompt" not in task and prompts is not None:
        p = prompts[i]
        task["prompt"] = p if isinstance(p, str) else json.dumps(p)
    for f in ("tools", "initial_state", "goal"):
        if isinstance(task.get(f), str):
            task[f] = json.loads(task[f])
    return task


def make_reward_func(
    domain: str | None = None,
    *,
    registry: VerifierRegistry | None = None,
    cache: VerdictCache | None = None,
    concurrency: int = 4,
) -> Callable[..., list[float | None]]:
    """A callable for TRL's `reward_funcs`: `f(prompts, completions, **dataset_columns)`.

    Each row's task comes from a `task` column (dict or JSON text) or from the domain's task
    columns (`answer`; `entry_point`, `test`; `tools`, `initial_state`, `goal`); the domain from
    a `domain` column or the `domain` argument. Returns the reward per completion, `None` where
    the row has no task for this verifier, its plug-in broke the protocol, or the judge could not decide
    (never a fake 0).
    """

    def flywheel_reward(prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (),
                        **columns: Any) -> list[float | None]:
        n = len(completions)
        items, where = [], []
        for i in range(n):
            d = columns["domain"][i] if "domain" in columns else domain
            if d is None:
                continue
            try:
                task = _row_task(i, d, columns, prompts)
            except (ValueError, TypeError, KeyError):
                continue
            items.append(ScoreItem(d, task, _completion(completions[i])))
            where.append(i)
        verdicts = score_batch(items, concurrency=concurrency, registry=registry, cache=cache, errors="none")
        out: list[float | None] = [None] * n
        for i, v in zip(where, verdicts, strict=True):
            if v is not None and v.details.get("error") not in ("task", "plugin"):
                out[i] = float(v.reward)
        return out

    flywheel_reward.__name__ = f"flywheel_{domain or 'verifier'}_reward"
    return flywheel_reward
