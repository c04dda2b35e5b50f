"""Why a code sample failed: the code verifier's (and its judge's) reason, reduced to a class (the reason
text carries line numbers and counts), and the taxonomy's format rule for code."""

from __future__ import annotations

CODE_RE = r"(def\s+[A-Za-z_][A-Za-z0-9_]*\s*\(|```)"
"""A response that holds code: a function definition or a fenced block (RE2 and Python re alike)."""

CODE_CLASSES = (
    ("syntax error", "syntax_error"), ("solution does not load", "load_error"),
    ("assertion failed", "wrong_output"), ("test raised", "runtime_error"), ("timeout", "timeout"),
    ("killed by the sandbox", "killed"), ("candidate process", "crash"), ("candidate broke", "protocol"),
    ("candidate sent", "protocol"), ("response too long", "too_long"), ("code too long", "too_long"),
    ("forged verdict", "tampering"), ("work dir tampered", "tampering"), ("test code was altered", "tampering"),
    ("judge exited", "tampering"),
)
"""Prefix of the code verifier's (and its judge's) failure reason -> failure type."""


def code_failure(reason: str) -> str:
    """The failure type of a failed code verdict, from its reason."""
    return next((cls for prefix, cls in CODE_CLASSES if reason.startswith(prefix)), "other")
