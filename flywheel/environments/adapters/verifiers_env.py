"""PrimeIntellect `verifiers` environments as flywheel environments.

A `verifiers` environment package exposes `load_environment(**kwargs)`, returning an environment with a
`dataset` (rows with `question` or `prompt` messages, `answer`, optional `info` / `task`), an optional
`eval_dataset`, an optional `system_prompt`, and a `rubric` (reward functions `funcs` with `weights`, and a
`parser`). This adapter reads exactly that duck-typed interface (the one the Environments Hub packages are
written against), so it neither imports nor requires the `verifiers` package.

- Its dataset rows become the tasks of one domain `vf.<name>` (`eval_dataset`: the held-out split).
- Its rubric is the reward: each reward function is called the way `verifiers` calls it (keyword arguments
  picked by its signature from `prompt`, `completion`, `answer`, `state`, `task`, `info`, `parser`; `async`
  ones awaited) and the weighted sum over the positive weights, divided by their sum, is the score. A reward
  function that executes code gets flywheel's sandbox as its `sandbox` argument (`run(code, ...)` ->
  `ExecResult`), so the model's code runs there, never in this process.
- Gold: the row's `answer`, formatted by the parser's `format(answer=...)` when it has one.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import math
import threading
from typing import Any

from flywheel.environments.adapters.dataset_env import DatasetEnvironment, verdict_of
from flywheel.environments.judging import text_to_judge
from flywheel.environments.task import Task
from flywheel.environments.verdict import TaskError, Verdict

ARG_NAMES = ("prompt", "completion", "answer", "state", "task", "info", "parser", "sandbox")


def is_verifiers_env(obj: Any) -> bool:
    """`obj` is a `verifiers` package (has `load_environment`) or a loaded environment (dataset + rubric)."""
    return (inspect.ismodule(obj) and callable(getattr(obj, "load_environment", None))) or (
        hasattr(obj, "rubric") and (hasattr(obj, "dataset") or hasattr(obj, "eval_dataset")))


def _rows(dataset: Any, system_prompt: str | None) -> list[dict[str, Any]]:
    out = []
    for row in dataset or []:
        row = dict(row)
        question = row.get("question")
        messages = row.get("prompt")
        if question is None and isinstance(messages, list):
            question = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        if not isinstance(question, str) or not question:
            raise TaskError(f"a dataset row has neither 'question' nor user 'prompt' messages: {sorted(row)}")
        info = row.get("info") or {}
        out.append({"prompt": question, "solution": "", "answer": row.get("answer", ""),
                    "info": json.loads(info) if isinstance(info, str) else info,
                    "vf_task": row.get("task") or "default", "system_prompt": system_prompt,
                    "messages": messages if isinstance(messages, list) else None})
    return out


class VerifiersEnvironment(DatasetEnvironment):
    """One loaded `verifiers` environment as one flywheel domain, `vf.<name>`."""

    def __init__(self, vf_env: Any, name: str, version: str = "") -> None:
        if not is_verifiers_env(vf_env):
            raise TypeError(f"{name}: not a verifiers environment (needs dataset and rubric)")
        if inspect.ismodule(vf_env):
            vf_env = vf_env.load_environment()
        self.vf_env = vf_env
        rubric = vf_env.rubric
        funcs = list(getattr(rubric, "funcs", None) or getattr(rubric, "reward_funcs", None) or [])
        if not funcs:
            raise TypeError(f"{name}: its rubric has no reward functions")
        weights = list(getattr(rubric, "weights", None) or getattr(rubric, "reward_weights", None) or [1.0] * len(funcs))
        self.funcs, self.weights = funcs, [float(w) for w in weights]
        self.parser = getattr(rubric, "parser", None) or getattr(vf_env, "parser", None)
        self.message_type = getattr(vf_env, "message_type", "chat")
        system = getattr(vf_env, "system_prompt", None)
        train, held = _rows(getattr(vf_env, "dataset", None), system), _rows(getattr(vf_env, "eval_dataset", None), system)
        for r in train + held:
            r["solution"] = self.gold(r["answer"])
        digest = hashlib.sha256(json.dumps([r["prompt"] for r in train + held]).encode()).hexdigest()[:8]
        super().__init__(name, "verifiers", f"vf-{name}-{version or digest}", f"vf.{name}", train, held or None)
        self._sandbox: Any = None
        self._lock = threading.Lock()

    def gold(self, answer: Any) -> str:
        fmt = getattr(self.parser, "format", None)
        if callable(fmt):
            try:
                return str(fmt(answer=answer))
            except TypeError:
                pass
        return str(answer)

    def sandbox(self) -> Any:
        with self._lock:
            if self._sandbox is None:
                from flywheel.sandbox import get_sandbox  # started when a reward function first asks for it

                self._sandbox = get_sandbox()
            return self._sandbox

    def _call(self, fn: Any, args: dict[str, Any]) -> float:
        params = inspect.signature(fn).parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            kw = dict(args)
        else:
            kw = {k: v for k, v in args.items() if k in params}
        if "sandbox" in kw:
            kw["sandbox"] = self.sandbox()
        else:
            kw.pop("sandbox", None)
        out = fn(**kw)
        if inspect.isawaitable(out):
            out = asyncio.run(_await(out))
        value = float(out)
        if not math.isfinite(value):
            raise TaskError(f"reward function {getattr(fn, '__name__', fn)!r} returned {value}")
        return value

    def score(self, task: Task, response: Any) -> Verdict:
        text = text_to_judge(response)
        ref = task.reference
        prompt = ref.get("messages") or [*([{"role": "system", "content": ref["system_prompt"]}]
                                           if ref.get("system_prompt") else []),
                                         {"role": "user", "content": task.prompt}]
        completion = text if self.message_type == "completion" else [{"role": "assistant", "content": text}]
        args = {"prompt": prompt, "completion": completion, "answer": ref.get("answer", ""), "state": {},
                "task": ref.get("vf_task", "default"), "info": ref.get("info") or {}, "parser": self.parser,
                "sandbox": None}
        scores = {getattr(fn, "__name__", f"f{i}"): self._call(fn, args) for i, fn in enumerate(self.funcs)}
        positive = sum(w for w in self.weights if w > 0) or 1.0
        total = sum(w * s for w, s in zip(self.weights, scores.values(), strict=False)) / positive
        return verdict_of(total, "rubric " + ", ".join(f"{k}={v:g}" for k, v in scores.items()), self.partial_credit,
                          rewards=scores)


async def _await(x: Any) -> Any:
    return await x
