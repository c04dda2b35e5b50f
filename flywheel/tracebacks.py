"""What a Python error text says: its last line and the exception type that line names.

Below both the environments (the simulated users make near-miss code failures: a wrong answer that runs
and fails an assert) and mining (the taxonomy tells a wrong answer from a runtime error), so the rule that
a failed assert is a wrong answer is written once.
"""

from __future__ import annotations

import re

EXC_TYPE_RE = r"^([A-Za-z_][A-Za-z0-9_.]*(Error|Exception|Exit|Interrupt|Warning|Iteration))(:|$)"
"""An exception type at the start of a traceback's last line (`ValueError: ...`, `pkg.CustomError`)."""
WRONG_ANSWER_EXCEPTION = "AssertionError"
"""The one exception that means the code ran and gave a wrong answer (any other is a runtime error)."""


def last_line(error: str) -> str:
    """The error text's last non-blank line."""
    return error.rstrip(" \t\r\n").rsplit("\n", 1)[-1]


def exception_type(error: str | None) -> str | None:
    """The exception type named on the error text's last line, or None."""
    if not error:
        return None
    m = re.match(EXC_TYPE_RE, last_line(error))
    return m.group(1) if m else None


def failed_an_assert(error: str | None) -> bool:
    """The code ran and an assert failed: a wrong answer, not a runtime error."""
    return exception_type(error) == WRONG_ANSWER_EXCEPTION
