"""Helpers every verifier shares: the response text to judge, canonical JSON, required task fields."""

from __future__ import annotations

import json
from typing import Any

from flywheel.environments.verdict import TaskError

MAX_RESPONSE_CHARS = 200_000
"""Longer responses fail outright: no judge should parse megabytes of model output."""


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


def require(task: Any, *fields: str) -> dict[str, Any]:
    """The task as a dict holding `fields`, or TaskError naming what is missing."""
    if not isinstance(task, dict):
        raise TaskError(f"task must be a JSON object, got {type(task).__name__}")
    missing = [f for f in fields if f not in task or task[f] is None]
    if missing:
        raise TaskError(f"task is missing field(s) {missing}")
    return task
