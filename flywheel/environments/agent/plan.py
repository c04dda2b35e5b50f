"""The worked plan before each tool call: what a ~400k-parameter model can learn to do in small steps.

Answering an inventory task directly asks the model to find an item's count in the inventory and in the
goal, far apart in the prompt, and emit their difference in one token step. The plan walks the goal's
items in order and writes each step out, so every token is a copy or a one-fact step:

    apple: have 3 want 7, 7-3=4, add 4. <tool_call>{"name":"add",...}</tool_call><tool_result>apple=7</tool_result>
    pear: have 5 want 5, keep. plum: have 12 want 0, 12-0: 2-0=2, 1-0=1 so 12, remove 12. <tool_call>...
    all done. <tool_call>{"name":"finish","arguments":{}}</tool_call><tool_result>done</tool_result>

The difference is worked as math's scratchpad works it (`flywheel.models.sft_data`): a one-digit top
directly, else digit by digit, units first, with borrows. The verifier reads only the calls; `parse_plan`
reads the plan back (tests check the gold plan against its calls).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flywheel.environments.agent.inventory import InventoryEnv
from flywheel.environments.toolcalls import format_call, format_result

DONE = "all done. "
_STEP = re.compile(r"(\w+): have (\d+) want (\d+), (?:keep|(.+?), (add|remove) (\d+))\. ")


@dataclass(frozen=True)
class PlanStep:
    """One item's line of the plan: its counts, the work, and the call it leads to (None: keep)."""

    item: str
    have: int
    want: int
    work: str = ""
    action: str | None = None
    qty: int = 0


def worked_difference(big: int, small: int) -> str:
    """`big - small` worked as math's scratchpad does: `7-3=4`, or `12-4: 12-4=8, 0-0=0 so 8`."""
    if big < 10:
        return f"{big}-{small}={big - small}"
    db = [int(c) for c in reversed(str(big))]
    ds = [int(c) for c in reversed(str(small))]
    borrow, parts = 0, []
    for i, d in enumerate(db):
        top, b = d - borrow, (ds[i] if i < len(ds) else 0)
        borrow = 1 if top < b else 0
        top += 10 * borrow
        parts.append(f"{top}-{b}={top - b}")
    return f"{big}-{small}: " + ", ".join(parts) + f" so {big - small}"


def plan_line(item: str, have: int, want: int) -> str:
    """The plan text for one goal item, ending where its call (if any) begins."""
    if have == want:
        return f"{item}: have {have} want {want}, keep. "
    action = "add" if want > have else "remove"
    work = worked_difference(max(have, want), min(have, want))
    return f"{item}: have {have} want {want}, {work}, {action} {abs(want - have)}. "


def render_plan_trajectory(initial: dict[str, int], goal: dict[str, int]) -> str:
    """The gold trajectory with its worked plan: each goal item in order, its call after its line, then finish."""
    env = InventoryEnv.from_initial(initial)
    parts: list[str] = []
    for item, want in goal.items():
        have = initial.get(item, 0)
        parts.append(plan_line(item, have, want))
        if have != want:
            name, args = ("add" if want > have else "remove"), {"item": item, "qty": abs(want - have)}
            parts.append(format_call(name, args) + format_result(env.call(name, args)))
    parts.append(DONE + format_call("finish", {}) + format_result(env.call("finish", {})))
    return "".join(parts)


def parse_plan(text: str) -> list[PlanStep]:
    """The plan lines of a response, in order (calls and results in between are skipped)."""
    out = []
    for m in _STEP.finditer(text):
        item, have, want, work, action, qty = m.groups()
        out.append(PlanStep(item, int(have), int(want), work or "", action, int(qty) if qty else 0))
    return out
