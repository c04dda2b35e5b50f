"""`ast.parse` behind one process-wide lock, for the verifiers that parse model output in threads.

CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter state, so two threads
building trees at once can fail with `SystemError: AST constructor recursion depth mismatch`
(python/cpython gh-106905). `score_batch` judges in threads, and a turn's evaluation failed on it
(one code verdict of 22k): every parse of a response in a judging thread goes through here. Parsing
is fast next to the sandbox run it precedes, so the lock costs little. Not for a forked child (a lock
another thread held at the fork stays held there): reasoning-gym's scorers parse in theirs, alone.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """`ast.parse(source, mode=mode)`, one thread at a time."""
    with _LOCK:
        return ast.parse(source, mode=mode)
