"""Redaction of secrets and personal data in task logs, before anything reaches a training set.

Each finding is replaced by a placeholder such as `[REDACTED:EMAIL]` and counted. The patterns
(`redact_patterns.PATTERNS`) run in two places:

- vectorized, as Arrow RE2 replacements over the JSON text cells that the prefilter
  (`prefilter_regex`) flags during ingest, each pattern only where its own prefilter matches (the
  fast path, `arrow_ops.redact_cells`);
- in Python over decoded JSON string values (`redact_json_text`), for the rows the fast path cannot
  do right: a replacement that cut through an escape such as `\\n` (invalid JSON after it), text
  holding escapes that may hide a finding (`\\u0040`, `\\/`, the `\\\\` of JSON nested in a string,
  such as a tool call's `arguments`), and kinds that need a check regexes cannot make (card numbers:
  Luhn) -- see `ROUTE_TO_PYTHON`.

The Python path sees decoded text: JSON nested in a string is parsed and walked, and `\\uXXXX`
escapes left in a string are decoded before matching. Plain-text fields (`id`, `task_id`, `domain`,
`model`, quarantined `raw`) go through `redact_key` / `redact_raw`.

What is NOT caught: secrets with no recognizable shape (plain passwords), phone numbers written
without separators or `+` (deliberately: bare digit runs are everywhere in math logs), names and postal
addresses. A bare 40-character AWS secret is caught only when it looks random (`aws_secret`), and a bare
card number only with a network's prefix and length and a valid Luhn digit (`bare_card_number`).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from flywheel.logs.redact_patterns import ESCAPED_ANCHOR, ESCAPED_ASCII, PATTERNS, RedactionPattern

__all__ = ["KINDS", "PATTERNS", "RedactionPattern", "prefilter_regex", "redact_json_text", "redact_key",
           "raw_read_chars", "redact_raw", "redact_text", "redact_value"]

KINDS: tuple[str, ...] = tuple(dict.fromkeys(p.kind for p in PATTERNS))  # a kind may have two patterns
KEY_COLUMNS = ("id", "task_id", "domain", "model")
"""The plain string fields redacted before keys are computed (`redact_key`)."""

ROUTE_TO_PYTHON = "|".join([ESCAPED_ASCII, r"\\/", *(p.regex for p in PATTERNS if p.check)])
"""RE2, over a row's original JSON text: the row goes to the Python path (escapes that may hide a
finding or split a token; candidates of the checked kinds). See `arrow_ops.redact_cells` for the other cases."""


ANY_ESCAPE = r"\\u[0-9A-Fa-f]{4}"
"""With an `@` in the same text: an internationalised address may be written escaped (Python path)."""

_ESCAPE = re.compile(r"\\+u([0-9a-fA-F]{4})|\\+/")
_COMPILED = [(p, re.compile(p.regex), re.compile(p.prefilter or p.regex), re.sub(r"\\(\d)", r"\\g<\1>", p.replacement))
             for p in PATTERNS]
"""Per pattern: the regex, its prefilter (skips the regex where it cannot match) and the replacement
as a Python template."""


def patterns_for(col: str) -> tuple[RedactionPattern, ...]:
    """The patterns that apply to column `col` (a pattern may name its columns; today all apply everywhere)."""
    return tuple(p for p in PATTERNS if p.columns is None or col in p.columns)


def prefilter_regex(column: str) -> str:
    """RE2 necessary condition for anything in `column` to redact (literal anchors, phone digits in
    groups, escaped ASCII); usable with `pyarrow.compute.match_substring_regex`."""
    return "|".join([*(p.prefilter or p.regex for p in patterns_for(column)), ESCAPED_ANCHOR])


_PRE = {c: re.compile(prefilter_regex(c) + r"|\\") for c in ("messages", "outcome", "id", "raw")}


def _pre(column: str) -> re.Pattern[str]:
    return _PRE["messages" if column in ("messages", "extra") else column if column in _PRE else
                "id" if column in KEY_COLUMNS else "outcome"]


def _sub(p: RedactionPattern, rx: re.Pattern[str], repl: str, text: str) -> tuple[str, int]:
    if not p.check:
        return rx.subn(repl, text)
    n = 0

    def one(m: re.Match[str]) -> str:
        nonlocal n
        g = max(i for i in range(1, (rx.groups or 0) + 1) if m.group(i) is not None)
        if not p.check(m.group(g)):  # type: ignore[misc]
            return m.group(0)
        n += 1
        s, e = m.start(g) - m.start(), m.end(g) - m.start()
        return m.group(0)[:s] + p.placeholder + m.group(0)[e:]
    before = -1
    while n != before:  # a match consumes its right edge: a finding right after a replaced one is found next pass
        before = n
        text = rx.sub(one, text)
    return text, n


def _apply(text: str, column: str) -> tuple[str, dict[str, int]]:
    counts: dict[str, int] = {}
    for p, rx, pre, repl in _COMPILED:
        if p.columns is not None and column not in p.columns or not pre.search(text):
            continue
        text, n = _sub(p, rx, repl, text)
        if n:
            counts[p.kind] = counts.get(p.kind, 0) + n
    return text, counts


def _unescape(m: re.Match[str]) -> str:
    if m.group(1) is None:
        return "/"
    cp = int(m.group(1), 16)
    return m.group(0) if cp < 0x20 or 0xD800 <= cp <= 0xDFFF else chr(cp)


def redact_text(text: str, column: str = "messages") -> tuple[str, dict[str, int]]:
    """Redact one decoded string of `column`; returns the new text and counts per kind (kinds with 0
    omitted). A string holding a JSON object or array (a tool call's `arguments`) is parsed and walked,
    re-serialised only if something was found; `\\uXXXX` / `\\/` escapes left in the text are decoded
    first when that reveals a finding."""
    if not _pre(column).search(text):
        return text, {}
    t = text.strip()
    if t[:1] in "{[" and t[-1:] in "}]":
        try:
            inner = json.loads(t)
        except (ValueError, RecursionError):
            inner = None
        if isinstance(inner, (dict, list)):
            value, counts = redact_value(inner, column)
            return (json.dumps(value, ensure_ascii=False) if counts else text), counts
    out, counts = _apply(text, column)
    decoded = _ESCAPE.sub(_unescape, out)
    if decoded != out:
        more, extra = _apply(decoded, column)
        if extra:
            out = more
            for k, v in extra.items():
                counts[k] = counts.get(k, 0) + v
    return out, counts


def _walk(value: Any, counts: dict[str, int], column: str) -> Any:
    if isinstance(value, str):
        new, c = redact_text(value, column)
        for k, n in c.items():
            counts[k] = counts.get(k, 0) + n
        return new
    if isinstance(value, list):
        return [_walk(v, counts, column) for v in value]
    if isinstance(value, dict):
        return {_walk_key(k, counts, column): _walk(v, counts, column) for k, v in value.items()}
    return value


def _walk_key(key: str, counts: dict[str, int], column: str) -> str:
    """An object key redacted like an id (a digest keeps two redacted keys two keys)."""
    new, c = redact_key(key, column)
    for k, n in c.items():
        counts[k] = counts.get(k, 0) + n
    return new  # type: ignore[return-value]


def redact_value(value: Any, column: str = "messages") -> tuple[Any, dict[str, int]]:
    """Redact every string inside a decoded JSON value, object keys included."""
    counts: dict[str, int] = {}
    return _walk(value, counts, column), counts


def redact_json_text(text: str | None, column: str = "messages") -> tuple[str | None, dict[str, int]]:
    """Redact the string values of a JSON document of `column`; output is compact JSON, always valid."""
    if text is None:
        return None, {}
    value, counts = redact_value(json.loads(text), column)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), counts


def redact_key(text: str | None, column: str = "id") -> tuple[str | None, dict[str, int]]:
    """Redact a plain identifier (`id`, `task_id`, `domain`, `model`). A changed value gets `~` and 12
    hex digits of the original's SHA-256, so two ids that differ only in their secret stay two keys
    (and the same input always gives the same key: re-ingest still finds it)."""
    if text is None:
        return None, {}
    new, counts = redact_text(text, column)
    if not counts:
        return text, counts
    return f"{new}~{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}", counts


_TAIL = re.compile(r"[\w.@%+/=\\-]+$")


def raw_read_chars(limit: int) -> int:
    """How much of a quarantined text `redact_raw` reads to keep `limit` characters of it."""
    return 2 * limit + 4096


def redact_raw(text: str, limit: int) -> str:
    """A quarantined line or row as kept for people to read: every kind redacted (on the whole text,
    with escapes decoded where that reveals a finding), then cut to `limit` characters; a cut text
    loses its last partial word, so no prefix of a secret is kept."""
    text = text[: raw_read_chars(limit)]  # a huge line is not read whole: what is kept is cut anyway
    new, _ = redact_text(text, "raw") if text else (text, {})
    if len(new) >= limit:
        new = _TAIL.sub("", new[:limit]) if limit else ""
    return new
