"""`{{item.*}}` / `{{sample.*}}` templating of OpenAI grader specs, and the `sample` namespace a response makes.

`item` is the task dict (the dataset row an OpenAI RFT job would have held); `sample` is what the model
answered: `output_text`, `output_json` (the text parsed as JSON, None when it is not), `output_tools` (its tool
calls, OpenAI shape) and `choices` (one chat-completion choice). A path may index lists (`choices[0]`). A path
missing from `item` is the task's problem (`TaskError` naming it); one missing from `sample` renders as "" (the
model did not produce it, so the grade says so). Rendering never evaluates anything: values are substituted as
text (strings as they are, anything else as JSON).
"""

from __future__ import annotations

import json
import re
from typing import Any

from flywheel.environments.judging import text_to_judge
from flywheel.environments.verdict import TaskError

_TAG = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+|\[\d+\])*)\s*\}\}")
_STEP = re.compile(r"\.([A-Za-z0-9_]+)|\[(\d+)\]")
NAMESPACES = ("item", "sample")
_MISSING = object()


def sample_of(response: Any) -> dict[str, Any]:
    """The `sample` namespace of a response (text, a message, or OpenAI messages)."""
    text = text_to_judge(response)
    tools: list[Any] = []
    msgs = response if isinstance(response, list) else [response] if isinstance(response, dict) else []
    for m in msgs:
        if isinstance(m, dict) and m.get("role", "assistant") == "assistant" and isinstance(m.get("tool_calls"), list):
            tools += m["tool_calls"]
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    message = {"role": "assistant", "content": text, **({"tool_calls": tools} if tools else {})}
    return {"output_text": text, "output_json": parsed, "output_tools": tools,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}


def lookup(path: str, item: dict[str, Any], sample: dict[str, Any]) -> Any:
    """The value at `item.a.b[0]` / `sample.output_text` (see the module doc for a missing one)."""
    head = re.split(r"[.\[]", path, maxsplit=1)[0]
    rest = path[len(head):]
    if head not in NAMESPACES:
        raise TaskError(f"grader template {{{{{path}}}}}: unknown namespace {head!r} (use item.* or sample.*)")
    value: Any = item if head == "item" else sample
    for m in _STEP.finditer(rest):
        key, idx = m.group(1), m.group(2)
        if key is not None and isinstance(value, dict):
            value = value.get(key, _MISSING)
        elif idx is not None and isinstance(value, list) and int(idx) < len(value):
            value = value[int(idx)]
        else:
            value = _MISSING
        if value is _MISSING:
            if head == "item":
                raise TaskError(f"grader template {{{{{path}}}}}: the task has no field {path.removeprefix('item.')!r}")
            return ""
    return value


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, ensure_ascii=False)


def render(template: Any, item: dict[str, Any], sample: dict[str, Any]) -> str:
    """`template` with every `{{ns.path}}` replaced by its value as text."""
    if not isinstance(template, str):
        raise TaskError(f"grader template must be a string, got {type(template).__name__}")
    return _TAG.sub(lambda m: as_text(lookup(m.group(1), item, sample)), template)


def paths(template: str) -> list[str]:
    """The `{{...}}` paths a template names (checked when the spec is built)."""
    return [m.group(1) for m in _TAG.finditer(template)]
