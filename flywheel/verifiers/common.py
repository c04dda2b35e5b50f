"""The verdict cache's keys (task fingerprint, task key, response hash), and the judging helpers under their
old import path (they live in `flywheel.environments.verdict` and `.judging`, below the environments)."""

from __future__ import annotations

import hashlib
from typing import Any

from flywheel.environments.judging import MAX_RESPONSE_CHARS, canonical, parts_text, require, text_to_judge
from flywheel.environments.verdict import TaskError, failed, passed

__all__ = ["MAX_RESPONSE_CHARS", "TaskError", "canonical", "failed", "parts_text", "passed", "require", "response_hash",
           "task_fingerprint", "task_key", "text_to_judge"]


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
