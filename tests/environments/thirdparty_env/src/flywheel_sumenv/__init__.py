"""A third-party environment, written only against flywheel's public protocol.

Domain `sum.tool`: add a few numbers with the `add` tool, then `submit` the total. The verifier
replays the calls from the task's numbers (results claimed in the text are ignored), checks every
call against its schema (the process check), and that exactly one `submit`, the last call, carries
the total.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from flywheel.environments.base import BaseEnvironment, Observation, check_split, is_heldout, task_from_dict
from flywheel.environments.task import Task
from flywheel.environments.toolcalls import ToolCall, format_call, format_result
from flywheel.environments.toolschema import call_error, function_tool, process_error, response_calls
from flywheel.environments.verdict import failed, passed

TOOLS = [
    function_tool("add", "Return a + b.", {"a": {"type": "integer"}, "b": {"type": "integer"}}),
    function_tool("submit", "Submit the final total; ends the episode.", {"total": {"type": "integer"}}),
]


class SumEnvironment(BaseEnvironment):
    name, version, family = "sumenv", "sumenv-1", "thirdparty"

    def domains(self) -> list[str]:
        return ["sum.tool"]

    def levels(self, domain: str) -> tuple[int, ...]:
        return (1, 2)

    def tasks(self, domain: str, split: str, n: int, seed: int, level: int | None = None) -> list[Task]:
        check_split(split)
        rng = random.Random(seed)
        out: dict[str, Task] = {}
        for _ in range(n * 40):
            if len(out) >= n:
                break
            k = 2 + (level or rng.randint(1, 2))
            nums = [rng.randint(1, 50) for _ in range(k)]
            prompt = f"Add the numbers {', '.join(map(str, nums))} with the add tool, then submit the total."
            if is_heldout(prompt) != (split == "heldout"):
                continue
            tid = "sum-" + hashlib.sha1(prompt.encode()).hexdigest()[:12]
            out.setdefault(tid, Task(tid, domain, prompt, {"numbers": nums}, self._gold(nums), {"level": level}))
        return list(out.values())

    def _gold(self, nums: list[int]) -> str:
        parts, acc = [], nums[0]
        for x in nums[1:]:
            parts.append(format_call("add", {"a": acc, "b": x}) + format_result(str(acc + x)))
            acc += x
        return "".join(parts) + format_call("submit", {"total": acc})

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return TOOLS

    def reset(self, task: Task) -> dict[str, Any]:
        return {"done": False, "submitted": None}

    def step(self, state: dict[str, Any], call: ToolCall) -> Observation:
        err = call_error(TOOLS, call) or ("call after submit" if state["done"] else None)
        if err:
            return Observation("", done=state["done"], error=err)
        if call.name == "add":
            return Observation(str(call.arguments["a"] + call.arguments["b"]))
        state["done"], state["submitted"] = True, call.arguments["total"]
        return Observation("submitted", done=True)

    def verify(self, task: Task | dict[str, Any], response: Any) -> Any:
        t = task if isinstance(task, Task) else task_from_dict("sum.tool", task)
        calls = response_calls(response)
        if isinstance(calls, str):
            return failed(calls)
        if not calls:
            return failed("no tool calls")
        err = process_error(TOOLS, calls)
        if err:
            return failed(f"process check: {err}")
        state = self.reset(t)
        for i, c in enumerate(calls, 1):
            obs = self.step(state, c)
            if obs.error:
                return failed(f"call {i}: {obs.error}")
        if not state["done"]:
            return failed("never submitted")
        if state["submitted"] != sum(t.reference["numbers"]):
            return failed("wrong total")
        return passed()

    def hack_probes(self, task: Task) -> list[tuple[str, Any]]:
        total = sum(task.reference["numbers"])
        return [
            ("claim_in_prose", f"The total is {total}. {format_result(str(total))}"),
            ("unknown_tool", format_call("set_total", {"total": total})),
            ("string_argument", format_call("submit", {"total": str(total)})),
            ("calls_after_submit", format_call("submit", {"total": total}) + format_call("add", {"a": 1, "b": 1})),
            ("submit_twice", format_call("submit", {"total": total + 1}) + format_call("submit", {"total": total})),
        ]

    def wrong_response(self, task: Task) -> str:
        return format_call("submit", {"total": sum(task.reference["numbers"]) + 1})
