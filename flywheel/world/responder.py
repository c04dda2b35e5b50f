"""The responder seam: what serves production traffic, and the logged shape of what it answered.

A `Responder` maps a `Task` to a `Response` (the assistant-side messages, the outcome production
observed, the model name); a `BatchResponder` serves a whole day at once. The champion served in
production (`flywheel.serving.champion`) and the traffic simulator (`flywheel.world.simulated_model`)
both plug in here, and the day's log writer (`flywheel.world.traffic`) only speaks to this seam.
`messages_from_text` / `text_from_messages` convert between the training text format (what a
verifier scores and a trainer trains on) and the OpenAI chat messages a log record holds.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from flywheel.environments.registry import default_environments
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import (
    CALL_CLOSE,
    CALL_OPEN,
    RESULT_CLOSE,
    RESULT_OPEN,
    format_call,
    format_result,
)


@dataclass(frozen=True)
class Response:
    """What a served model did on one task, as production logged it.

    `messages` are the assistant-side messages that follow the prompt (assistant turns,
    with OpenAI `tool_calls`, and `tool` results). `outcome` holds the OUTCOME_KEYS
    production observed; `passed` must be set (a real responder fills it from a verifier).
    Missing latency/token/cost fields are filled in by the generator. `meta` is logged
    under the record's `sim` field (ground truth for tests; never read by mining).
    """

    messages: list[dict[str, Any]]
    outcome: dict[str, Any]
    model: str
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Responder(Protocol):
    """Serves one task: `responder(task, rng) -> Response`. `rng` is the day's seeded RNG."""

    def __call__(self, task: Task, rng: random.Random) -> Response: ...


@runtime_checkable
class BatchResponder(Protocol):
    """Optional: a responder that serves a whole day at once (a real model batches)."""

    def respond_batch(self, tasks: Sequence[Task], rng: random.Random) -> list[Response]: ...


def messages_from_text(domain: str, text: str) -> list[dict[str, Any]]:
    """A response in the training text format as OpenAI messages.

    The text of a multi-turn domain (`Environment.multi_turn`, agent:
    `<tool_call>{..}</tool_call><tool_result>..</tool_result>` ...) becomes one
    assistant message with `tool_calls` per call, each followed by its `tool` result. A call with no
    readable function name stays assistant text, verbatim (a log needs a name; the verifier still
    sees the malformed call and fails it).
    """
    envs = default_environments()
    if not (envs.has_domain(domain) and envs.for_domain(domain).multi_turn):
        return [{"role": "assistant", "content": text}]
    pat = re.compile(
        re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE)
        + r"(?:\s*" + re.escape(RESULT_OPEN) + r"(.*?)" + re.escape(RESULT_CLOSE) + r")?",
        re.S,
    )
    out: list[dict[str, Any]] = []
    pos = 0
    for i, m in enumerate(pat.finditer(text)):
        before, start = text[pos:m.start()].strip() or None, pos
        pos = m.end()
        raw = m.group(1)
        try:
            obj = json.loads(raw)
            name = str(obj.get("name", "")) if isinstance(obj, dict) else ""
            args = obj.get("arguments", {}) if isinstance(obj, dict) else {}
            arguments = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
        except json.JSONDecodeError:  # keep the malformed call as logged: a verifier must see it fail
            mm = re.match(r'\s*\{\s*"name"\s*:\s*"([^"]*)"\s*,\s*"arguments"\s*:\s*(.*?)\}?\s*$', raw, re.S)
            name, arguments = (mm.group(1), mm.group(2)) if mm else ("", raw)
        if not name:  # no readable function name: not an OpenAI tool call, so the text stays as written
            out.append({"role": "assistant", "content": text[start:pos].strip()})
            continue
        call_id = f"call_{i}"
        out.append({"role": "assistant", "content": before, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]})
        if m.group(2) is not None:
            out.append({"role": "tool", "tool_call_id": call_id, "content": m.group(2)})
    tail = text[pos:].strip()
    if tail or not out:
        out.append({"role": "assistant", "content": tail})
    return out


def text_from_messages(messages: Sequence[dict[str, Any]]) -> str:
    """The assistant side of a logged conversation in the training text format.

    Inverse of `messages_from_text`: what a verifier scores and a trainer trains on.
    Everything after the last user message is rendered; tool calls whose arguments are not
    valid JSON keep their raw text, so a verifier sees the same malformed call.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    parts: list[str] = []
    for m in messages[last_user + 1:]:
        role = m.get("role")
        if role == "assistant":
            content = m.get("content")
            if isinstance(content, str) and content:
                parts.append(content)
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", tc) if isinstance(tc, dict) else {}
                name, args = fn.get("name", ""), fn.get("arguments", "{}")
                if isinstance(args, dict):
                    parts.append(format_call(name, args))
                    continue
                try:
                    parsed = json.loads(args)
                except (TypeError, json.JSONDecodeError):
                    parsed = None
                if isinstance(parsed, dict):
                    parts.append(format_call(name, parsed))
                else:
                    parts.append(f'{CALL_OPEN}{{"name":{json.dumps(name)},"arguments":{args}}}{CALL_CLOSE}')
        elif role == "tool":
            parts.append(format_result(str(m.get("content", ""))))
    return "".join(parts)


def response_from_text(task: Task, text: str, model: str, passed: bool, **outcome: Any) -> Response:
    """A real model's answer as a logged `Response`; `passed` comes from the task's verifier."""
    status = outcome.pop("status", "success" if passed else "failure")
    return Response(messages_from_text(task.domain, text), {"status": status, "passed": bool(passed), **outcome},
                    model)
