"""The text format of tool calls in model output, and conversion to/from OpenAI messages.

A call is `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the Hermes/Qwen
convention); the environment answers with `<tool_result>...</tool_result>`. Logs store
the same calls as OpenAI `tool_calls` on assistant messages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
RESULT_OPEN, RESULT_CLOSE = "<tool_result>", "</tool_result>"
_CALL_RE = re.compile(re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE), re.S)


@dataclass(frozen=True)
class ToolCall:
    """One parsed call. `error` is set when the text could not be parsed into name + arguments."""

    name: str
    arguments: dict[str, Any]
    raw: str = ""
    error: str | None = None


def format_call(name: str, arguments: dict[str, Any]) -> str:
    return f"{CALL_OPEN}{json.dumps({'name': name, 'arguments': arguments}, separators=(',', ':'))}{CALL_CLOSE}"


def format_result(result: str) -> str:
    return f"{RESULT_OPEN}{result}{RESULT_CLOSE}"


def parse_call(raw: str) -> ToolCall:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as e:
        return ToolCall("", {}, raw, f"tool call is not valid JSON: {e.msg}")
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall("", {}, raw, "tool call must be an object with a string 'name'")
    args = obj.get("arguments", {})
    if isinstance(args, str):  # OpenAI style: arguments as a JSON string
        try:
            args = json.loads(args)
        except json.JSONDecodeError as e:
            return ToolCall(obj["name"], {}, raw, f"tool call arguments are not valid JSON: {e.msg}")
    if not isinstance(args, dict):
        return ToolCall(obj["name"], {}, raw, "tool call 'arguments' must be an object")
    return ToolCall(obj["name"], args, raw)


def parse_calls(text: str) -> list[ToolCall]:
    """Every `<tool_call>` block in `text`, in order."""
    return [parse_call(m.group(1)) for m in _CALL_RE.finditer(text)]


def first_call_end(text: str) -> int | None:
    """Index just past the first complete call, where a multi-step rollout stops to run it."""
    i = text.find(CALL_CLOSE)
    return None if i < 0 else i + len(CALL_CLOSE)


def calls_from_messages(messages: list[dict[str, Any]]) -> list[ToolCall]:
    """Tool calls of an OpenAI-format conversation: `tool_calls` fields and inline text blocks."""
    out: list[ToolCall] = []
    for m in messages:
        if m.get("role") != "assistant":
            continue
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", tc)
            out.append(parse_call(json.dumps({"name": fn.get("name"), "arguments": fn.get("arguments", {})})))
        if isinstance(m.get("content"), str):
            out.extend(parse_calls(m["content"]))
    return out
