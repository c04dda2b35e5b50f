"""A deterministic tool environment for agent tasks: an inventory of items.

Tools: `add(item, qty)`, `remove(item, qty)`, `check(item)`, `finish()`. The goal is
a target inventory. The environment is pure: the same calls from the same initial
state give the same results and end state, which is what lets a verifier replay a
logged trajectory.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

TOOLS: list[dict[str, Any]] = [
    {"name": "add", "description": "Add qty units of item.", "parameters": {"item": "str", "qty": "int>0"}},
    {"name": "remove", "description": "Remove qty units of item.", "parameters": {"item": "str", "qty": "int>0"}},
    {"name": "check", "description": "Return how many units of item there are.", "parameters": {"item": "str"}},
    {"name": "finish", "description": "End the episode.", "parameters": {}},
]
_PARAMS = {t["name"]: t["parameters"] for t in TOOLS}


class IllegalCall(ValueError):
    """A call the environment rejects: unknown tool, bad arguments, or after the episode ended."""


@dataclass
class InventoryEnv:
    """Inventory state plus whether the episode has ended."""

    state: dict[str, int]
    done: bool = False
    steps: int = 0
    log: list[str] = field(default_factory=list)

    @classmethod
    def from_initial(cls, initial_state: dict[str, int]) -> InventoryEnv:
        return cls(state=copy.deepcopy(dict(initial_state)))

    def _validate(self, name: str, args: dict[str, Any]) -> None:
        if self.done:
            raise IllegalCall(f"call to {name!r} after the episode ended")
        if name not in _PARAMS:
            raise IllegalCall(f"unknown tool {name!r}; tools are {sorted(_PARAMS)}")
        expected = _PARAMS[name]
        if set(args) != set(expected):
            raise IllegalCall(f"{name} takes arguments {sorted(expected)}, got {sorted(args)}")
        if "item" in args and (not isinstance(args["item"], str) or not args["item"]):
            raise IllegalCall(f"{name}: 'item' must be a non-empty string, got {args['item']!r}")
        if "qty" in args:
            q = args["qty"]
            if isinstance(q, bool) or not isinstance(q, int) or q <= 0:
                raise IllegalCall(f"{name}: 'qty' must be a positive integer, got {q!r}")

    def call(self, name: str, args: dict[str, Any]) -> str:
        """Apply one call and return its result text; raises IllegalCall without changing state."""
        self._validate(name, args)
        self.steps += 1
        if name == "add":
            self.state[args["item"]] = self.state.get(args["item"], 0) + args["qty"]
            out = f"{args['item']}={self.state[args['item']]}"
        elif name == "remove":
            have = self.state.get(args["item"], 0)
            if have < args["qty"]:
                self.steps -= 1
                raise IllegalCall(f"remove: only {have} {args['item']}, cannot remove {args['qty']}")
            self.state[args["item"]] = have - args["qty"]
            out = f"{args['item']}={self.state[args['item']]}"
        elif name == "check":
            out = f"{args['item']}={self.state.get(args['item'], 0)}"
        else:
            self.done = True
            out = "done"
        self.log.append(f"{name}{args} -> {out}")
        return out

    def goal_reached(self, goal: dict[str, int]) -> bool:
        """Every item in the goal has exactly its target count (missing counts as 0)."""
        return all(self.state.get(k, 0) == v for k, v in goal.items())
