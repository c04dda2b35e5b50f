"""Redaction of secrets and personal data in task logs, before anything reaches a training set.

Each finding is replaced by a placeholder such as `[REDACTED:EMAIL]` and counted. The same
patterns run in two places:

- vectorized, as DuckDB `regexp_replace` over the JSON text columns during ingest (the fast path,
  see `sql_redact` / `sql_count` / `sql_any`);
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

    @property
    def placeholder(self) -> str:
        return f"[REDACTED:{self.kind}]"


_SEP = r"(\\[nrt]|[^A-Za-z0-9\\]|^)"  # a key must not be glued to a word ("task-..."); `\n` in JSON text counts as a break

PATTERNS: tuple[RedactionPattern, ...] = (
    # JWTs first: a bearer token is often a JWT, and each secret should be counted once.
    RedactionPattern("JWT", r"eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}", "[REDACTED:JWT]"),
    RedactionPattern("BEARER", r"([Bb]earer\s+)[A-Za-z0-9._~+/-]{8,}=*", r"\1[REDACTED:BEARER]"),
    RedactionPattern("API_KEY", _SEP + r"sk-[A-Za-z0-9_-]{20,}", r"\1[REDACTED:API_KEY]"),
    RedactionPattern("AWS_KEY", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "[REDACTED:AWS_KEY]"),
    RedactionPattern("GITHUB_TOKEN", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", "[REDACTED:GITHUB_TOKEN]"),
    RedactionPattern("EMAIL", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", "[REDACTED:EMAIL]"),
    RedactionPattern(
        "PHONE",
        r"(?:\+\d{1,3}[ .-]?\d{2,4}[ .-]\d{3,4}[ .-]\d{3,4}|(?:\+1[ .-]?)?(?:\(\d{3}\) ?|\b\d{3}[ .-])\d{3}[ .-]\d{4})\b",
        "[REDACTED:PHONE]",
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


def sql_any(col: str) -> str:
    """SQL: true when `col` may hold something to redact (one RE2 pass, the cheap prefilter)."""
    return f"regexp_matches({col}, {_lit(_ANY)})"


def sql_redact(col: str) -> str:
    """SQL: `col` with every pattern replaced by its placeholder."""
    expr = col
    for p in PATTERNS:
        expr = f"regexp_replace({expr}, {_lit(p.regex)}, {_lit(p.replacement)}, 'g')"
    return expr


def sql_count(col: str, kind: str) -> str:
    """SQL: how many findings of `kind` are in `col` (counted on the text before replacement)."""
    (p,) = [p for p in PATTERNS if p.kind == kind]
    return f"coalesce(len(regexp_extract_all({col}, {_lit(p.regex)})), 0)"


def redact_text(text: str) -> tuple[str, dict[str, int]]:
    """Redact one plain string; returns the new text and counts per kind (kinds with 0 omitted)."""
    counts: dict[str, int] = {}
    if not _ANY_RE.search(text):
        return text, counts
    for p, rx in _COMPILED:
        text, n = rx.subn(p.replacement.replace("\\1", r"\g<1>"), text)
        if n:
            counts[p.kind] = counts.get(p.kind, 0) + n
    return text, counts


def _walk(value: Any, counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        new, c = redact_text(value)
        for k, n in c.items():
            counts[k] = counts.get(k, 0) + n
        return new
    if isinstance(value, list):
        return [_walk(v, counts) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, counts) for k, v in value.items()}
    return value


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """Redact every string inside a decoded JSON value (keys are left alone)."""
    counts: dict[str, int] = {}
    return _walk(value, counts), counts


def redact_json_text(text: str | None) -> tuple[str | None, dict[str, int]]:
    """Redact the string values of a JSON document; output is compact JSON, always valid."""
    if text is None:
        return None, {}
    value, counts = redact_value(json.loads(text))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), counts
