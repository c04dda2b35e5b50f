"""Chat messages in their canonical shape, and the precise reason when one is not a chat message.

Every format ingest reads (the flywheel schema, OpenAI Chat Completions, ShareGPT) ends up with the
same `messages`, so mining and training read one shape:

- `role`: one of ROLES;
- `content`: a string, or null (an assistant turn that only calls tools). A list of content parts
  (`[{"type": "text", "text": ...}, {"type": "image_url", ...}]`, as the OpenAI SDK dumps them) is
  split: the text parts joined by newlines become `content`, every other part is kept, typed, in
  `parts` -- an image or audio part never ends up inside a prompt string;
- `refusal`: the refusal text when the model refused (OpenAI's `refusal`); `content` then holds the
  same text, so a refusal never reads as an empty response;
- `tool_calls`: `[{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}]`
  (the OpenAI shape the demo traffic writes too); object arguments are serialised to JSON text. A
  string that is not valid JSON, or no `arguments` at all, is kept as it is: a model writing broken
  arguments is a failure to learn from (mining reads it as an invalid tool call), not a broken log.
- other keys of a message (`name`, `tool_call_id`, ...) are kept; keys whose value is null are dropped.
"""

from __future__ import annotations

import json
from typing import Any

ROLES: tuple[str, ...] = ("system", "developer", "user", "assistant", "tool", "function")
"""Roles a canonical message may have."""
TEXT_PART_TYPES: tuple[str, ...] = ("text", "input_text", "output_text")
"""Content part types whose `text` is joined into `content`."""


class RecordError(ValueError):
    """A record that cannot be ingested: `kind` (quarantine kind), `field` (path such as
    `messages[2].tool_calls[0].function.name`) and `why` (what is wrong, for a person)."""

    def __init__(self, kind: str, field: str | None, why: str):
        super().__init__(f"{field}: {why}" if field else why)
        self.kind, self.field, self.why = kind, field, why


def json_kind(v: Any) -> str:
    """The JSON type name of a decoded value, for messages ("got number 3")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object" if isinstance(v, dict) else type(v).__name__


def _shown(v: Any, n: int = 60) -> str:
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= n else text[: n - 3] + "..."


def _bad(field: str, why: str) -> RecordError:
    return RecordError("bad_message", field, why)


def compact(value: Any) -> str:
    """Compact JSON text (the form stored in the warehouse)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_call(tc: Any, path: str) -> dict[str, Any]:
    """One tool call in the canonical shape, or RecordError naming the bad part."""
    if not isinstance(tc, dict):
        raise _bad(path, f"expected a tool call object, got {json_kind(tc)} {_shown(tc)}")
    cid = tc.get("id")
    if not isinstance(cid, str) or not cid:
        raise _bad(f"{path}.id", "missing tool call id" if cid is None else f"expected a non-empty string, got {_shown(cid)}")
    typ = tc.get("type")
    if typ != "function":
        raise _bad(f"{path}.type", "missing (expected \"function\")" if typ is None else
                   f"expected \"function\", got {_shown(typ)}")
    fn = tc.get("function")
    if not isinstance(fn, dict):
        raise _bad(f"{path}.function", "missing" if fn is None else f"expected an object, got {json_kind(fn)}")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{path}.function.name", "missing" if name is None else f"expected a non-empty string, got {_shown(name)}")
    args = fn.get("arguments")
    if isinstance(args, dict):
        args = compact(args)
    elif args is not None and not isinstance(args, str):
        raise _bad(f"{path}.function.arguments",
                   f"expected a JSON string or an object, got {json_kind(args)} {_shown(args)}")
    function = {**{k: v for k, v in fn.items() if v is not None}, "name": name}
    if args is not None:  # a call the model made without arguments stays so (see the module doc)
        function["arguments"] = args
    out = {k: v for k, v in tc.items() if v is not None}
    out.update(id=cid, type="function", function=function)
    return out


def _content(content: Any, path: str) -> tuple[str | None, list[dict[str, Any]], str | None]:
    """(text, non-text parts, refusal text) of a message's content."""
    if content is None or isinstance(content, str):
        return content, [], None
    if not isinstance(content, list):
        raise _bad(path, f"expected a string or a list of typed parts, got {json_kind(content)} {_shown(content)}")
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    refusal: str | None = None
    for j, part in enumerate(content):
        p = f"{path}[{j}]"
        if isinstance(part, str):  # some SDKs dump bare strings in a part list
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise _bad(p, f"expected a content part object, got {json_kind(part)} {_shown(part)}")
        typ = part.get("type")
        if not isinstance(typ, str) or not typ:
            raise _bad(f"{p}.type", "missing part type" if typ is None else f"expected a string, got {_shown(typ)}")
        if typ in TEXT_PART_TYPES:
            text = part.get("text")
            if not isinstance(text, str):
                raise _bad(f"{p}.text", f"a {typ!r} part needs a string 'text', got {json_kind(text)}")
            texts.append(text)
        elif typ == "refusal":
            refusal = part.get("refusal")
            if not isinstance(refusal, str):
                raise _bad(f"{p}.refusal", f"a 'refusal' part needs a string 'refusal', got {json_kind(refusal)}")
        else:
            parts.append(part)
    return "\n".join(texts), parts, refusal


def message(m: Any, path: str) -> dict[str, Any]:
    """One chat message in the canonical shape (see the module doc), or RecordError naming the bad part."""
    if not isinstance(m, dict):
        raise _bad(path, f"expected a chat message object, got {json_kind(m)} {_shown(m)}")
    role = m.get("role")
    if role is None:
        raise _bad(f"{path}.role", "missing role")
    if role not in ROLES:
        raise _bad(f"{path}.role", f"{_shown(role)} is not one of {', '.join(ROLES)}")
    text, parts, part_refusal = _content(m.get("content"), f"{path}.content")
    out: dict[str, Any] = {"role": role, "content": text}
    out.update((k, v) for k, v in m.items() if v is not None and k not in ("role", "content", "function_call"))
    if parts:
        out["parts"] = parts
    refusal = m.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise _bad(f"{path}.refusal", f"expected a string, got {json_kind(refusal)}")
    refusal = refusal or part_refusal
    if refusal:
        out["refusal"] = refusal
        if not text:
            out["content"] = refusal
    calls = m.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise _bad(f"{path}.tool_calls", f"expected a list, got {json_kind(calls)} {_shown(calls)}")
    calls = [tool_call(tc, f"{path}.tool_calls[{j}]") for j, tc in enumerate(calls or [])]
    legacy = m.get("function_call")  # OpenAI's deprecated single call
    if isinstance(legacy, dict):
        calls.append(tool_call({"id": f"call_{len(calls)}", "type": "function", "function": legacy},
                               f"{path}.function_call"))
    elif legacy is not None:
        raise _bad(f"{path}.function_call", f"expected an object, got {json_kind(legacy)}")
    if calls:
        out["tool_calls"] = calls
    else:
        out.pop("tool_calls", None)
    return out


def messages(ms: list[Any], field: str = "messages") -> list[dict[str, Any]]:
    """Every message of a list in the canonical shape; the first bad one raises RecordError."""
    return [message(m, f"{field}[{i}]") for i, m in enumerate(ms)]


def refused(ms: list[dict[str, Any]]) -> bool:
    """True when the last assistant message of canonical `ms` is a refusal."""
    last = next((m for m in reversed(ms) if m.get("role") == "assistant"), None)
    return bool(last and last.get("refusal"))
