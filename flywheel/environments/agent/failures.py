"""Why an agent sample failed: the agent verifier's reason reduced to a class (the reason text carries
counts and item names), illegal calls split by what made them illegal."""

from __future__ import annotations

AGENT_CLASSES = (
    ("no tool calls", "no_tool_calls"), ("episode not finished", "not_finished"),
    ("goal not reached", "goal_not_reached"), ("changed items outside the goal", "side_effects"),
    ("too many tool calls", "too_many_calls"), ("response too long", "too_long"),
    ("malformed messages", "format"), ("response must be", "format"),
)
"""Prefix of the agent verifier's failure reason -> failure type (illegal calls are split below)."""


def agent_failure(reason: str) -> str:
    """The failure type of a failed agent verdict, from its reason."""
    if reason.startswith("illegal call"):
        detail = reason.split(":", 1)[-1].strip()
        if detail.startswith("tool call"):
            return "malformed_call"
        if "not offered" in detail or detail.startswith("unknown tool"):
            return "unknown_tool"
        return "call_after_finish" if "after the episode ended" in detail else "bad_arguments"
    return next((cls for prefix, cls in AGENT_CLASSES if reason.startswith(prefix)), "other")
