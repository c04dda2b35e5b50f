"""Helpers every verifier shares: the task error, verdict builders, response text and hashing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flywheel.verifiers.verdict import Verdict

MAX_RESPONSE_CHARS = 200_000
"""Longer responses fail outright: no judge should parse megabytes of model output."""


class TaskError(ValueError):
    """The task itself is unusable (missing field, unparseable reference): not the model's fault.

    Raised before any model output is looked at; `flywheel verify` turns it into an error verdict,
    verifier construction marks the verifier invalid.
    """


def passed(reason: str = "passed", **details: Any) -> Verdict:
    return Verdict(1.0, True, reason, details)


def failed(reason: str, **details: Any) -> Verdict:
    return Verdict(0.0, False, reason, details)


def parts_text(content: Any) -> str | None:
    """A message content as text: a string, or a list of OpenAI-style parts (`{"type": "text", "text": ...}`)
    joined; None when it holds no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p if isinstance(p, str) else p.get("text") for p in content
                 if isinstance(p, str) or (isinstance(p, dict) and p.get("type", "text") in ("text", "output_text"))]
        texts = [t for t in texts if isinstance(t, str)]
        return "".join(texts) if texts else None
    return None


def text_to_judge(response: Any) -> str:
    """The text to judge: a string as is; OpenAI messages -> the assistant turns joined; a content
    that is a list of text parts (in a message or as the response itself) -> the parts joined.

    Never raises: anything else is rendered with `str` so a malformed response is judged
    (and fails) instead of crashing the judge.
    """
    if isinstance(response, str):
        return response
    if isinstance(response, list):
        if response and all(isinstance(p, dict) and "role" not in p and "type" in p for p in response):
            return parts_text(response) or ""  # the content parts themselves
        turns = []
        for m in response:
            if isinstance(m, dict) and m.get("role", "assistant") == "assistant":
                text = parts_text(m.get("content"))
                if text is not None:
                    turns.append(text)
        return "\n".join(turns)
    if isinstance(response, dict):
        text = parts_text(response.get("content"))
        if text is not None:
            return text
    return "" if response is None else str(response)


def canonical(obj: Any) -> str:
    """Canonical JSON (sorted keys, no spaces), tolerant of non-JSON values."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def task_fingerprint(task: dict[str, Any]) -> str:
    """sha256 of the task's canonical JSON: a task whose tests or answer change scores anew."""
    return hashlib.sha256(canonical(task).encode()).hexdigest()


def task_key(domain: str, task: dict[str, Any]) -> str:
    """The task's id, or a content-derived one when the task carries none."""
    tid = task.get("task_id") if isinstance(task, dict) else None
    return str(tid) if tid else f"{domain}-{task_fingerprint(task)[:16]}"


def response_hash(task: dict[str, Any], response: Any) -> str:
    """sha256 of (task content, response): the cache key's response part.

    Folding the task content in means a task re-issued under the same id with different
    tests or answer never reuses a stale verdict.
    """
    body = response if isinstance(response, str) else canonical(response)
    h = hashlib.sha256()
    h.update(task_fingerprint(task).encode())
    h.update(b"\0")
    h.update(body.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def require(task: Any, *fields: str) -> dict[str, Any]:
    """The task as a dict holding `fields`, or TaskError naming what is missing."""
    if not isinstance(task, dict):
        raise TaskError(f"task must be a JSON object, got {type(task).__name__}")
    missing = [f for f in fields if f not in task or task[f] is None]
    if missing:
        raise TaskError(f"task is missing field(s) {missing}")
    return task
