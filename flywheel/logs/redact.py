"""Redaction of secrets and personal data in task logs, before anything reaches a training set.

Each finding is replaced by a placeholder such as `[REDACTED:EMAIL]` and counted. The same
patterns run in two places:

- vectorized, as DuckDB `regexp_replace` over the JSON text columns during ingest (the fast path,
  see `sql_redact` / `sql_count`), on the rows that Arrow's RE2 prefilter (`prefilter_regex`) flags;
- in Python over decoded JSON string values (`redact_json_text`), for the few rows where a
  replacement on JSON text would cut through an escape sequence such as `\\n` and leave invalid
  JSON. Ingest checks `json_valid` after the fast path and falls back per row.

The patterns are RE2- and Python-compatible. What they do NOT catch: secrets with no recognizable
shape (plain passwords, private keys split over messages), phone numbers written without
separators (deliberately: bare digit runs are everywhere in math logs), names and addresses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RedactionPattern:
    """One kind of secret: a regex and its replacement (`\\1` keeps a captured prefix)."""

    kind: str
    regex: str
    replacement: str
    prefilter: str = ""  # cheap RE2 necessary condition (literal alternation); "" = use `regex`
    messages_only: bool = False  # only scan the `messages` column (prompts and responses)

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.kind}]"


_SEP = r"(\\[nrt]|[^A-Za-z0-9\\]|^)"  # a key must not be glued to a word ("task-..."); `\n` in JSON text counts as a break

PATTERNS: tuple[RedactionPattern, ...] = (
    # JWTs first: a bearer token is often a JWT, and each secret should be counted once.
    RedactionPattern("JWT", r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}", "[REDACTED:JWT]", "eyJ"),
    RedactionPattern("BEARER", r"([Bb]earer\s+)[A-Za-z0-9._~+/-]{8,}=*", r"\1[REDACTED:BEARER]", "earer"),
    RedactionPattern("API_KEY", _SEP + r"sk-[A-Za-z0-9_-]{20,}", r"\1[REDACTED:API_KEY]", "sk-"),
    RedactionPattern("AWS_KEY", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "[REDACTED:AWS_KEY]", "AKIA|ASIA"),
    RedactionPattern("GITHUB_TOKEN", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
                     "[REDACTED:GITHUB_TOKEN]", "gh[pousr]_|github_pat_"),
    RedactionPattern("EMAIL", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", "[REDACTED:EMAIL]", "@"),
    RedactionPattern(
        "PHONE",
        r"(?:\+\d{1,3}[ .-]?\d{2,4}[ .-]\d{3,4}[ .-]\d{3,4}|(?:\+1[ .-]?)?(?:\(\d{3}\) ?|\b\d{3}[ .-])\d{3}[ .-]\d{4})\b",
        "[REDACTED:PHONE]",
        r"\d(?:[ .-]|\) ?)\d",
        messages_only=True,
    ),
)
"""Applied in this order. Add a pattern here and both the SQL and the Python path pick it up."""

KINDS: tuple[str, ...] = tuple(p.kind for p in PATTERNS)

_COMPILED = [(p, re.compile(p.regex)) for p in PATTERNS]
_ANY = "|".join(f"(?:{p.regex})" for p in PATTERNS)
_ANY_RE = re.compile(_ANY)


def _lit(s: str) -> str:
    """A SQL string literal (DuckDB: backslashes are not escapes, quotes double)."""
    return "'" + s.replace("'", "''") + "'"


def patterns_for(col: str) -> tuple[RedactionPattern, ...]:
    """The patterns that apply to column `col` (phone numbers: `messages` only)."""
    return tuple(p for p in PATTERNS if col == "messages" or not p.messages_only)


def sql_any(col: str, column: str | None = None) -> str:
    """SQL: true when `col` may hold something to redact. A cheap necessary condition (literal
    anchors such as `@`, `sk-`, `eyJ`, plus a digit-separator-digit test for phone numbers) in one
    RE2 pass, so the exact patterns only run on the few rows that pass it."""
    pre = "|".join(p.prefilter or p.regex for p in patterns_for(column or col))
    return f"regexp_matches({col}, {_lit(pre)})"


def prefilter_regex(column: str) -> str:
    """RE2 necessary condition for anything in `column` to redact (literal anchors, phone digits in
    `messages` only); what `sql_any` runs, usable with `pyarrow.compute.match_substring_regex`."""
    return "|".join(p.prefilter or p.regex for p in patterns_for(column))


def sql_redact(col: str, column: str | None = None) -> str:
    """SQL: `col` with every pattern that applies to `column` (default: `col`) replaced."""
    expr = col
    for p in patterns_for(column or col):
        expr = f"regexp_replace({expr}, {_lit(p.regex)}, {_lit(p.replacement)}, 'g')"
    return expr


def sql_count(col: str, kind: str, column: str | None = None) -> str:
    """SQL: how many findings of `kind` are in `col` (counted on the text before replacement);
    `column` names the warehouse column `col` reads, which decides the patterns that apply."""
    ps = [p for p in patterns_for(column or col) if p.kind == kind]
    if not ps:
        return "0"
    return f"coalesce(len(regexp_extract_all({col}, {_lit(ps[0].regex)})), 0)"


def redact_text(text: str, messages: bool = True) -> tuple[str, dict[str, int]]:
    """Redact one plain string; returns the new text and counts per kind (kinds with 0 omitted).
    `messages=False` skips the messages-only patterns (phone numbers)."""
    counts: dict[str, int] = {}
    if not _ANY_RE.search(text):
        return text, counts
    for p, rx in _COMPILED:
        if p.messages_only and not messages:
            continue
        text, n = rx.subn(p.replacement.replace("\\1", r"\g<1>"), text)
        if n:
            counts[p.kind] = counts.get(p.kind, 0) + n
    return text, counts


def _walk(value: Any, counts: dict[str, int], messages: bool = True) -> Any:
    if isinstance(value, str):
        new, c = redact_text(value, messages)
        for k, n in c.items():
            counts[k] = counts.get(k, 0) + n
        return new
    if isinstance(value, list):
        return [_walk(v, counts, messages) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, counts, messages) for k, v in value.items()}
    return value


def redact_value(value: Any, messages: bool = True) -> tuple[Any, dict[str, int]]:
    """Redact every string inside a decoded JSON value (keys are left alone)."""
    counts: dict[str, int] = {}
    return _walk(value, counts, messages), counts


def redact_json_text(text: str | None, messages: bool = True) -> tuple[str | None, dict[str, int]]:
    """Redact the string values of a JSON document; output is compact JSON, always valid.
    `messages=False` for the outcome/reference/extra columns (no phone-number pattern)."""
    if text is None:
        return None, {}
    value, counts = redact_value(json.loads(text), messages)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), counts
