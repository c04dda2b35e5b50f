"""Tool schemas in OpenAI function-calling form, and the process check: is a call legal under them?

Only the JSON Schema subset tool schemas use is checked (type, properties, required,
additionalProperties, enum, minimum/maximum, minLength/maxLength, items), so the check needs no
dependency and an unknown keyword is ignored rather than guessed at. A call is illegal when it
names no offered tool, its arguments are not an object, or they break the tool's `parameters`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from flywheel.environments.toolcalls import ToolCall, calls_from_messages, parse_calls

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}


def function_tool(name: str, description: str, properties: dict[str, Any] | None = None,
                  required: Iterable[str] | None = None) -> dict[str, Any]:
    """An OpenAI tool: `{"type": "function", "function": {"name", "description", "parameters"}}`,
    closed to extra arguments; every property is required unless `required` says otherwise."""
    props = dict(properties or {})
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props,
                       "required": sorted(props) if required is None else list(required),
                       "additionalProperties": False},
    }}


def tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("function", tool).get("name", ""))


def _type_ok(value: Any, t: str) -> bool:
    if t in ("integer", "number") and isinstance(value, bool):
        return False  # JSON has no 1 == true
    if t == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(t, (object,)))


def schema_error(value: Any, schema: dict[str, Any], where: str = "arguments") -> str | None:
    """Why `value` breaks `schema` (the first reason found), or None when it conforms."""
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_type_ok(value, x) for x in types):
            return f"{where} must be {'/'.join(types)}, got {type(value).__name__} {value!r:.60}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {schema['enum']}, got {value!r:.60}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"{where} must be >= {schema['minimum']}, got {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{where} must be <= {schema['maximum']}, got {value}"
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            return f"{where} must have at least {schema['minLength']} characters"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"{where} must have at most {schema['maxLength']} characters"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            err = schema_error(item, schema["items"], f"{where}[{i}]")
            if err:
                return err
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        missing = [k for k in schema.get("required") or [] if k not in value]
        if missing:
            return f"{where} missing required {missing}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"{where} has unexpected {extra}"
        for k, sub in props.items():
            if k in value:
                err = schema_error(value[k], sub, f"{where}.{k}")
                if err:
                    return err
    return None


def call_error(tools: list[dict[str, Any]], call: ToolCall) -> str | None:
    """Why `call` is illegal under `tools`, or None when it is legal."""
    if call.error:
        return call.error
    by_name = {tool_name(t): t for t in tools}
    if call.name not in by_name:
        return f"unknown tool {call.name!r}; tools are {sorted(by_name)}"
    params = by_name[call.name].get("function", by_name[call.name]).get("parameters") or {"type": "object"}
    err = schema_error(call.arguments, params)
    return f"{call.name}: {err}" if err else None


def process_error(tools: list[dict[str, Any]], calls: Iterable[ToolCall]) -> str | None:
    """The process check: the first illegal call's reason (numbered from 1), or None when all are legal."""
    for i, c in enumerate(calls, 1):
        err = call_error(tools, c)
        if err:
            return f"call {i}: {err}"
    return None


def response_calls(response: Any, text_filter: Callable[[str], str] | None = None) -> list[ToolCall] | str:
    """The tool calls of a response: `<tool_call>` blocks in text, or OpenAI messages (`tool_calls` fields
    and inline blocks; also as a JSON string). A reason string when the response has no usable shape.
    `text_filter` cleans plain text before parsing (e.g. drops echoed tool results that may hold call text)."""
    if isinstance(response, str):
        s = response.strip()
        if s.startswith("[") and '"role"' in s[:200]:
            try:
                msgs = json.loads(s)
            except json.JSONDecodeError:
                msgs = None
            if isinstance(msgs, list):
                return response_calls(msgs)
        return parse_calls(text_filter(response) if text_filter else response)
    if isinstance(response, list) and all(isinstance(m, dict) for m in response):
        try:
            return calls_from_messages(response)
        except (AttributeError, TypeError) as e:
            return f"malformed messages: {e}"
    return f"response must be text or a list of messages, got {type(response).__name__}"
