"""The failure taxonomy: which class a failing log record belongs to, read from its outcome.

Classes, first match wins:

1. `refused`: `outcome.status == "refused"`, or a short assistant reply that opens with an
   apology/refusal ("I'm sorry", "I cannot", "As an AI", ...) and makes no tool call.
2. `timeout`: `status == "timeout"` or the error says timeout / timed out.
3. `invalid_tool_call`: `status == "invalid_tool_call"` or the error names an illegal call
   (`IllegalCall`, "invalid tool call", "unknown tool").
4. `runtime_error`: `status == "error"`, or the error's last line is a Python exception
   other than `AssertionError` (a failed assert is a wrong answer: the code ran). Grouped by
   exception type and a normalized traceback signature.
5. `format_error`: no final answer in the form the domain's environment expects
   (`Environment.missing_answer`: math without `Answer: N` / `answer is N` / `\\boxed{}`, code without
   a function definition or code block, agent without any tool call); or `status == "format_error"`.
6. `wrong_answer`: everything else that did not pass.

The rules exist twice: as DuckDB SQL (what mining runs) and as plain Python (`classify`,
`normalize_traceback`), the readable spec that tests and the benchmark's pandas baseline
check the SQL against.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from flywheel.environments.registry import default_environments
from flywheel.tracebacks import EXC_TYPE_RE as EXC_TYPE_RE
from flywheel.tracebacks import WRONG_ANSWER_EXCEPTION
from flywheel.tracebacks import exception_type as exception_type

FAILURE_TYPES: tuple[str, ...] = (
    "wrong_answer", "format_error", "runtime_error", "timeout", "invalid_tool_call", "refused",
)

# One set of regular expressions for SQL (RE2) and Python (re): keep them in the common subset.
REFUSAL_RE = r"(?i)^\s*(i'm sorry|i am sorry|sorry|i cannot|i can't|i can not|i won't|i will not|as an ai)\b"
REFUSAL_MAX_CHARS = 300
TIMEOUT_RE = r"(?i)(\btimeout|timed out)"
INVALID_TOOL_RE = r"(?i)(IllegalCall|invalid tool call|unknown tool)"
FORMAT_ERROR_RE = r"(?i)(no final answer|could not parse|no code found)"
MAX_TEXT_CHARS = 2000
"""`error_line` and `response` are stored truncated to this many characters in `failure_cases`."""

# Traceback normalization: (pattern, replacement), applied in order.
SIGNATURE_STEPS: tuple[tuple[str, str], ...] = (
    (r'File "[^"]*"', 'File "<path>"'),  # frame paths
    (r"\n[ \t]*[~^][~^ \t]*", ""),  # 3.11+ caret lines: differ by Python version, carry nothing
    (r"0x[0-9A-Fa-f]+", "<addr>"),  # object addresses
    (r"(/[A-Za-z0-9_.\-]+){2,}", "<path>"),  # other paths
    (r"[0-9]+", "N"),  # line numbers and every other number
)


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def sql_signature(col: str) -> str:
    """DuckDB expression: the normalized traceback signature of text column `col`."""
    expr = col
    for pat, rep in SIGNATURE_STEPS:
        expr = f"regexp_replace({expr}, {_sql_str(pat)}, {_sql_str(rep)}, 'g')"
    return f"trim({expr}, E' \\t\\r\\n')"


def normalize_traceback(text: str) -> str:
    """Python mirror of `sql_signature`: strip paths, line numbers, addresses, numbers, layout."""
    for pat, rep in SIGNATURE_STEPS:
        text = re.sub(pat, rep, text)
    return text.strip(" \t\r\n")


def signature_hash(signature: str) -> str:
    """Short stable id of a signature (the first 16 hex digits of its MD5, as DuckDB's md5())."""
    return hashlib.md5(signature.encode()).hexdigest()[:16]


def sql_last_line(error_col: str) -> str:
    """DuckDB expression: the last non-empty line of an error text (where Python names the exception)."""
    return f"regexp_extract(rtrim({error_col}, E' \\t\\r\\n'), '[^\\n]*$')"


def sql_exception_type_of_line(line_col: str) -> str:
    """DuckDB expression: the exception type a last line names, or NULL."""
    return f"nullif(regexp_extract({line_col}, {_sql_str(EXC_TYPE_RE)}, 1), '')"


def sql_exception_type(error_col: str) -> str:
    """DuckDB expression: exception type on the error text's last non-empty line, or NULL."""
    return sql_exception_type_of_line(sql_last_line(error_col))


def sql_missing_answer(domain: str, response: str, n_tool_calls: str) -> str:
    """DuckDB condition over column expressions: the environment serving the row's domain finds no final
    answer in the response (`Environment.missing_answer_sql`); false for a domain without the rule."""
    envs = default_environments()
    clauses = []
    for d in envs.domains():
        cond = envs.for_domain(d).missing_answer_sql(response, n_tool_calls)
        if cond:
            clauses.append(f"({domain} = {_sql_str(d)} AND {cond})")
    return "(" + " OR ".join(clauses) + ")" if clauses else "false"


def missing_answer(domain: str, response: str, n_tool_calls: int) -> bool:
    """Python mirror of `sql_missing_answer`."""
    envs = default_environments()
    return envs.has_domain(domain) and envs.for_domain(domain).missing_answer(response, n_tool_calls)


def sql_failure_type(domain: str, status: str, error: str, response: str, n_tool_calls: str, exc: str) -> str:
    """DuckDB CASE over column expressions: the taxonomy class of a failing record."""
    err = f"coalesce({error}, '')"
    resp = f"coalesce({response}, '')"
    st = f"coalesce({status}, '')"
    return f"""CASE
      WHEN {st} = 'refused' OR ({n_tool_calls} = 0 AND length({resp}) <= {REFUSAL_MAX_CHARS}
           AND regexp_matches({resp}, {_sql_str(REFUSAL_RE)})) THEN 'refused'
      WHEN {st} = 'timeout' OR regexp_matches({err}, {_sql_str(TIMEOUT_RE)}) THEN 'timeout'
      WHEN {st} = 'invalid_tool_call' OR regexp_matches({err}, {_sql_str(INVALID_TOOL_RE)}) THEN 'invalid_tool_call'
      WHEN {st} = 'error' OR coalesce({exc}, {_sql_str(WRONG_ANSWER_EXCEPTION)}) <> {_sql_str(WRONG_ANSWER_EXCEPTION)} THEN 'runtime_error'
      WHEN {st} = 'format_error' OR regexp_matches({err}, {_sql_str(FORMAT_ERROR_RE)})
        OR {sql_missing_answer(domain, resp, n_tool_calls)} THEN 'format_error'
      ELSE 'wrong_answer' END"""


def judged_passed(outcome: dict[str, Any]) -> bool | None:
    """`outcome.passed` if it is a boolean, else `status == "success"`; None if neither is logged."""
    p = outcome.get("passed")
    if isinstance(p, bool):
        return p
    s = outcome.get("status")
    return None if s is None else str(s).lower() == "success"


SQL_PASSED = """CASE json_extract_string({o}, '$.passed') WHEN 'true' THEN true WHEN 'false' THEN false
  ELSE lower(json_extract_string({o}, '$.status')) = 'success' END"""
"""DuckDB mirror of `judged_passed` for an outcome JSON column `{o}` (NULL = unjudged)."""


def _content(m: dict[str, Any]) -> str:
    c = m.get("content")
    return c if isinstance(c, str) else "" if c is None else json.dumps(c)


def response_and_calls(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """Assistant contents joined by newlines, and the number of tool calls they make."""
    am = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    calls = sum(len(m.get("tool_calls") or []) for m in am)
    return "\n".join(_content(m) for m in am), calls


def classify(domain: str, outcome: dict[str, Any], messages: list[dict[str, Any]]) -> tuple[str, str | None, str | None]:
    """(failure type, exception type, signature) of one failing record: the spec of the SQL."""
    status = str(outcome.get("status") or "").lower()
    error = outcome.get("error")
    err = error if isinstance(error, str) else "" if error is None else json.dumps(error)
    resp, calls = response_and_calls(messages)
    exc = exception_type(err)
    if status == "refused" or (calls == 0 and len(resp) <= REFUSAL_MAX_CHARS and re.search(REFUSAL_RE, resp)):
        kind = "refused"
    elif status == "timeout" or re.search(TIMEOUT_RE, err):
        kind = "timeout"
    elif status == "invalid_tool_call" or re.search(INVALID_TOOL_RE, err):
        kind = "invalid_tool_call"
    elif status == "error" or (exc or WRONG_ANSWER_EXCEPTION) != WRONG_ANSWER_EXCEPTION:
        kind = "runtime_error"
    elif status == "format_error" or re.search(FORMAT_ERROR_RE, err) or missing_answer(domain, resp, calls):
        kind = "format_error"
    else:
        kind = "wrong_answer"
    sig = normalize_traceback(err) if kind == "runtime_error" and err else None
    return kind, exc, sig
