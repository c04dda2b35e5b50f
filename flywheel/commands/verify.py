"""`flywheel verify FILE.jsonl`: one verdict per input line, in the same order.

Each input line is `{"domain": ..., "task": {...}, "response": "..."}`. A line that cannot be
judged (bad JSON, missing keys, unusable task) gets an error verdict naming the line and why;
the other lines are judged regardless. On a terminal each verdict is one readable line; `--json`
prints the verdicts as JSON lines, or with `--out` (where the JSON lines go) one summary object.
Exit 0: every line judged; 1: some input lines are broken (named on stderr); 3: the judge's
infrastructure failed for some lines (safe to re-run).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from flywheel.commands.argtypes import positive_int
from flywheel.commands.output import (
    EXIT_FAILED,
    EXIT_INFRA,
    add_json_flag,
    data_stream,
    emit,
    fail,
    mark_emitted,
    utf8_text,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("verify", help="judge responses: one verdict JSON per input line",
                              description=__doc__.splitlines()[0])
    p.add_argument("file", help="JSONL file ('-' for stdin): {domain, task, response} per line")
    p.add_argument("--out", help="write the verdict lines here instead of stdout")
    p.add_argument("--concurrency", type=positive_int, default=4, help="verifications in flight (default 4)")
    p.add_argument("--cache", help="DuckDB file holding the verdict cache (default: none)")
    p.add_argument("--grader", help="OpenAI-style grader spec (JSON; a grader object or an RFT job body) judging "
                                    "every line; a task's own 'grader' field judges its line (docs/verifiers.md)")
    add_json_flag(p)
    p.set_defaults(func=run)


def _error(lineno: int, why: str) -> dict[str, Any]:
    return {"reward": 0.0, "passed": False, "reason": f"line {lineno}: {why}",
            "details": {"error": "input", "line": lineno}}


def _parse(lineno: int, line: str) -> dict[str, Any] | str:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as e:
        return f"not valid JSON ({e.msg} at column {e.colno})"
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {type(obj).__name__}"
    missing = [k for k in ("domain", "task", "response") if k not in obj]
    if missing:
        return f"missing key(s) {missing}"
    if not isinstance(obj["domain"], str):
        return "'domain' must be a string"
    if not isinstance(obj["task"], dict):
        return "'task' must be a JSON object"
    return obj


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, so `flywheel --help` stays fast
    import duckdb

    from flywheel.verifiers.batch import ScoreItem, score_batch
    from flywheel.verifiers.cache import VerdictCache

    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as e:
        return fail(f"cannot read {args.file}: {e.strerror or e}")
    text, why = utf8_text(data)
    if text is None:
        return fail(f"{'<stdin>' if args.file == '-' else args.file}: {why}")
    lines = json_lines(text)
    out: list[dict[str, Any] | None] = [None] * len(lines)
    items, where = [], []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            out[n - 1] = _error(n, "empty line")
            continue
        obj = _parse(n, line)
        if isinstance(obj, str):
            out[n - 1] = _error(n, obj)
            continue
        items.append(ScoreItem(obj["domain"], obj["task"], obj["response"]))
        where.append(n - 1)
    registry = None
    if args.grader or any("grader" in it.task for it in items):
        from flywheel.verifiers.graders import GraderRegistry, load_spec

        try:
            registry = GraderRegistry(load_spec(args.grader) if args.grader else None)
        except ValueError as e:  # TaskError: the spec file is unreadable or malformed, naming the field
            return fail(str(e))
    try:
        cache = VerdictCache(args.cache) if args.cache else None
    except (OSError, duckdb.Error) as e:  # an unwritable or foreign file: the user's to fix, not a crash
        return fail(f"cannot open the verdict cache {args.cache}: {type(e).__name__}: {e}")
    try:
        verdicts = score_batch(items, concurrency=args.concurrency, cache=cache, errors="none",
                               registry=registry)
    finally:
        if cache is not None:
            cache.close()
    for i, v in zip(where, verdicts, strict=True):
        if v is None:
            out[i] = _error(i + 1, "the judge's infrastructure failed after retries (safe to re-run)")
            out[i]["details"]["error"] = "infra"
        else:
            d = v.to_dict()
            if v.details.get("error") == "task":
                d["reason"] = f"line {i + 1}: {v.reason}"
                d["details"] = dict(d["details"], line=i + 1)
            out[i] = d
    body = "".join(json.dumps(d, default=str, sort_keys=True) + "\n" for d in out)
    summary = {
        "lines": len(out),
        "passed": sum(1 for d in out if d and d["passed"]),
        "failed": sum(1 for d in out if d and not d["passed"] and "error" not in d["details"]),
        "errors": sum(1 for d in out if d and "error" in d["details"]),
    }
    name = "<stdin>" if args.file == "-" else args.file
    counts = f"{summary['lines']} lines: {summary['passed']} passed, {summary['failed']} failed, {summary['errors']} errors"
    if args.out:
        Path(args.out).write_text(body, encoding="utf-8")
        emit(args, dict(summary, out=args.out), f"{counts} -> {args.out}")
    elif args.json:
        data_stream().write(body)
        mark_emitted()
    else:
        emit(args, summary, "\n".join([*(readable(name, n, d) for n, d in enumerate(out, 1)), counts]))
    return _status(name, out)


def json_lines(text: str) -> list[str]:
    """The lines of a JSON Lines text: split at "\n" only (with a "\r" before it dropped), so U+2028, U+0085 or a
    form feed inside a JSON string stays in its line (`str.splitlines` would cut there); no final empty line."""
    lines = [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines


def readable(name: str, lineno: int, verdict: dict[str, Any]) -> str:
    """One verdict as `FILE:LINE: passed|failed|error (reward R): reason`."""
    reason = " ".join(str(verdict["reason"]).removeprefix(f"line {lineno}: ").split())
    status = "error" if "error" in verdict["details"] else "passed" if verdict["passed"] else "failed"
    return f"{name}:{lineno}: {status} (reward {verdict['reward']:.2f})" + (f": {reason}" if reason else "")


def _status(name: str, out: list[dict[str, Any]]) -> int:
    """0, or 3 when the judge's infrastructure failed for a line, else 1 when input lines are broken."""
    infra = [n for n, d in enumerate(out, 1) if d["details"].get("error") == "infra"]
    broken = [(n, d) for n, d in enumerate(out, 1) if "error" in d["details"] and d["details"]["error"] != "infra"]
    if infra:
        return fail(f"{name}: the judge's infrastructure failed for line(s) {', '.join(map(str, infra[:10]))} "
                    "(safe to re-run)", EXIT_INFRA)
    if broken:
        shown = "; ".join(f"line {n}: {str(d['reason']).removeprefix(f'line {n}: ')}" for n, d in broken[:5])
        shown += "; ..." if len(broken) > 5 else ""
        return fail(f"{name}: {len(broken)} of {len(out)} input line(s) could not be judged: {shown}", EXIT_FAILED)
    return 0
