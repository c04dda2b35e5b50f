"""Scoring a reasoning-gym answer without running it: safe parsers, and a one-shot child under a deadline.

Why: four of reasoning-gym's scorers `eval` the answer or hand it to sympy's `parse_expr`
(countdown, spiral_matrix, string_insertion, binary_matrix), so an answer could create files,
patch the verifier so later wrong answers pass, or run `9**9**9` with no deadline. Here:

* those four are replaced (`SAFE_SCORERS`): countdown by a small arithmetic evaluator over the
  syntax tree (integers, `+ - * /`, unary minus, parentheses; every given number used exactly once; exact
  fractions with bounded size); the other three by exact comparison (their `eval` branch only
  ever gave 0.1, never a pass);
* every scorer, replaced or not, runs in a forked child that the next verdict does not share,
  with stdout/stderr sent to /dev/null and a deadline after which it is killed. The child hands
  back one number through a pipe; nothing it does reaches the parent (which alone writes the
  verdict cache).
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import re
import select
import signal
import sys
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

SCORER_DEADLINE_S = 5.0
"""Wall-clock limit for one scorer call (generous: every tested scorer answers in milliseconds)."""
MAX_BITS = 256
"""Countdown: a numerator or denominator beyond this many bits is refused (no task needs it)."""
_ARITH_CHARS = re.compile(r"[0-9+\-*/() \t]+")
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b}


class Refused(ValueError):
    """The answer is not of the form the task asks for."""


def _arith(node: ast.AST, used: list[int]) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):  # generated golds start "-1 + ..."
        return -_arith(node.operand, used)
    if isinstance(node, ast.BinOp) and (type(node.op) in _OPS or isinstance(node.op, ast.Div)):
        a, b = _arith(node.left, used), _arith(node.right, used)
        if isinstance(node.op, ast.Div):
            if b == 0:
                raise Refused("division by zero")
            r = a / b
        else:
            r = _OPS[type(node.op)](a, b)
        if max(r.numerator.bit_length(), r.denominator.bit_length()) > MAX_BITS:
            raise Refused("intermediate value too large")
        return r
    raise Refused(f"{type(node).__name__} is not allowed: integers, + - * / and parentheses only")


def arithmetic(expr: str) -> tuple[Fraction, list[int]]:
    """The exact value of `expr` and the integers it uses; Refused for anything but + - * / over integers."""
    if not _ARITH_CHARS.fullmatch(expr):
        raise Refused("only digits, + - * /, parentheses and spaces are allowed")
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise Refused(f"not an expression: {type(e).__name__}") from e
    used: list[int] = []
    return _arith(tree.body, used), used


def countdown_score(answer: str, entry: dict[str, Any]) -> float:
    """1.0 when `answer` uses each given number exactly once and equals the target; else 0.0."""
    meta = entry["metadata"]
    try:
        value, used = arithmetic(answer.strip())
    except Refused:
        return 0.0
    if sorted(used) != sorted(int(n) for n in meta["numbers"]):
        return 0.0
    return 1.0 if value == Fraction(int(meta["target"])) else 0.0


def exact_score(answer: str, entry: dict[str, Any]) -> float:
    """1.0 for the gold answer as written (the upstream scorer's only full score), else 0.0."""
    return 1.0 if answer.strip() == str(entry["answer"]).strip() else 0.0


SAFE_SCORERS: dict[str, Callable[[str, dict[str, Any]], float]] = {
    "countdown": countdown_score,
    "spiral_matrix": exact_score,
    "string_insertion": exact_score,
    "binary_matrix": exact_score,
}
"""Generators whose upstream scorer evaluates the answer as code: scored here instead."""


def _one_mapping(answer: str) -> str | None:
    keys = [pair.split("=", 1)[0].strip() for pair in answer.split(",") if "=" in pair]
    return "a letter is mapped twice: a response states one mapping" if len(keys) != len(set(keys)) else None


REFUSALS: dict[str, Callable[[str], str | None]] = {
    "cryptarithm": _one_mapping,  # upstream builds a dict from "A=1,B=2": a second mapping would win
}
"""Forms an upstream scorer reads leniently, refused before it runs: the reason, or None."""


def refusal(name: str, answer: str) -> str | None:
    """Why `answer` is refused for generator `name` before scoring (None: score it)."""
    check = REFUSALS.get(name)
    return check(answer) if check else None


def _child(fn: Callable[[str, dict[str, Any]], Any], answer: str, entry: dict[str, Any], w: int) -> None:
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child ends with os._exit
        try:
            out: dict[str, Any] = {"score": float(fn(answer, entry))}
        except BaseException as e:  # noqa: BLE001 - the scorer choking on the answer is reported, not raised
            out = {"error": type(e).__name__, "text": str(e)[:200]}
        os.write(w, json.dumps(out).encode()[:4096])
    finally:
        os._exit(0)


def score_isolated(fn: Callable[[str, dict[str, Any]], Any], answer: str, entry: dict[str, Any],
                   deadline_s: float = SCORER_DEADLINE_S) -> dict[str, Any]:
    """`fn(answer, entry)` in a fresh forked child under `deadline_s`: `{"score": x}`, `{"error", "text"}`
    (the scorer raised) or `{"error": "deadline"|"died"}`. OSError (no fork) is the machine's fault."""
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        _child(fn, answer, entry, w)
    os.close(w)
    buf = b""
    end = time.monotonic() + deadline_s
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                return {"error": "deadline", "text": f"scorer exceeded {deadline_s:g}s"}
            chunk = os.read(r, 4096)
            if not chunk:
                break
            buf += chunk
            if len(buf) > 4096:
                break
    finally:  # whatever interrupted the wait (the deadline, a signal's exception), the child does not outlive it
        os.close(r)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    try:
        out = json.loads(buf)
    except ValueError:
        return {"error": "died", "text": "scorer process ended without a result"}
    return out if isinstance(out, dict) else {"error": "died", "text": "malformed result"}
