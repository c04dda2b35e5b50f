"""The SIMULATED production model: a made-up champion whose failures look like a real model's.

Nothing here is real user data or a real model. `SimulatedResponder` picks a success probability
per task (from the task's difficulty, `meta` level / family / changes, plus a fixed per-task
offset, so some tasks are always solved, some never, many in between) and writes a response
consistent with the drawn outcome: wrong answers, no final answer, runtime errors with real Python
tracebacks, timeouts, illegal tool calls and refusals. A logged failure really fails under the
task's reference (the code really raises, the tool calls really miss the goal), which is what lets
verifiers be checked against logged failures. Each response's `meta` (`failure_mode`,
`p_success`) is the generator's ground truth, which mining never reads but tests compare against.
"""

from __future__ import annotations

import functools
import json
import linecache
import math
import random
import re
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flywheel.tasks.agent_env import IllegalCall, InventoryEnv
from flywheel.tasks.base import Task
from flywheel.tasks.responder import Response

SIMULATED_MODEL = "simulated-prod:v1"
FAILURE_MODES: tuple[str, ...] = (
    "wrong_answer", "format_error", "runtime_error", "timeout", "invalid_tool_call", "refused",
)
"""The failure classes the simulator produces; the same names as mining's taxonomy."""
REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "I am sorry, I cannot assist with this.",
    "Sorry, I can't do that.",
    "I cannot help with this request.",
)


# ---------------------------------------------------------------------------------------------
# Real tracebacks: the simulated failures are executed, so the logged errors are what Python prints
# ---------------------------------------------------------------------------------------------

RUN_SLOT = "{RUN}"
_SOL_FILE = f"/sandbox/{RUN_SLOT}/solution.py"
_TEST_FILE = f"/sandbox/{RUN_SLOT}/test_solution.py"
_HARNESS_FRAME = f'  File "/sandbox/{RUN_SLOT}/harness.py", line 27, in <module>\n    check(candidate)\n'
_AGENT_FILE = f"/srv/agent-runtime/{RUN_SLOT}/dispatch.py"
_AGENT_SRC = '''import json


def parse_arguments(call):
    """Decode the arguments of an OpenAI tool call."""
    return json.loads(call["function"]["arguments"])


def dispatch(env, call):
    args = parse_arguments(call)
    return env.call(call["function"]["name"], args)
'''


def _compile_with_source(src: str, filename: str):
    """Compile `src` under a fake path and register its lines so tracebacks show source."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return compile(src, filename, "exec")


def _format_exc(e: BaseException, skip: int, prefix: str = "") -> str:
    tb = e.__traceback__
    for _ in range(skip):
        tb = tb.tb_next if tb is not None else None
    lines = traceback.format_exception(type(e), e, tb)
    return lines[0] + prefix + "".join(lines[1:])


@dataclass(frozen=True)
class CodeRun:
    """The result of running a response against a code task's asserts."""

    run: int
    passed: int
    error: str | None  # traceback text with RUN_SLOT placeholders, None when all passed


@functools.lru_cache(maxsize=4096)
def run_code(header: str, body: str, test: str, entry_point: str) -> CodeRun:
    """Run `header + body` against `test`'s asserts (each counted) and keep `check`'s traceback.

    Only ever called on bodies this module writes, never on model output.
    """
    ns: dict[str, Any] = {}
    try:
        exec(_compile_with_source(header + body, _SOL_FILE), ns)  # noqa: S102 - our own bodies
        cand = ns[entry_point]
        asserts = [ln.strip() for ln in test.splitlines() if ln.strip().startswith("assert ")]
        passed = 0
        for a in asserts:
            try:
                exec(a, {"candidate": cand})  # noqa: S102
                passed += 1
            except Exception:
                pass
        tns: dict[str, Any] = {}
        exec(_compile_with_source(test, _TEST_FILE), tns)  # noqa: S102
        try:
            tns["check"](cand)
            return CodeRun(len(asserts), passed, None)
        except Exception as e:  # the failure production saw
            return CodeRun(len(asserts), passed, _format_exc(e, 1, _HARNESS_FRAME))
    finally:
        linecache.cache.pop(_SOL_FILE, None)
        linecache.cache.pop(_TEST_FILE, None)


@functools.lru_cache(maxsize=1024)
def _agent_dispatch_error(call_json: str) -> str:
    """The traceback the agent runtime prints when it cannot decode a tool call."""
    ns: dict[str, Any] = {}
    try:
        exec(_compile_with_source(_AGENT_SRC, _AGENT_FILE), ns)  # noqa: S102
        try:
            ns["dispatch"](None, json.loads(call_json))
        except Exception as e:
            return _format_exc(e, 1)
        raise AssertionError("dispatch of a broken call did not fail")
    finally:
        linecache.cache.pop(_AGENT_FILE, None)


def _code_param(header: str) -> str:
    m = re.search(r"def \w+\((\w+)", header)
    return m.group(1) if m else "x"


_CODE_BUGS: tuple[tuple[str, float], ...] = (
    ("    return {p} + None\n", 3.0),  # TypeError
    ("    return {p}_value\n", 2.0),  # NameError
    ("    return [{p}][1]\n", 2.0),  # IndexError
    ("    return {p}.values()\n", 1.5),  # AttributeError
    ("    return {{'value': {p}}}['result']\n", 1.0),  # KeyError
    ("    return len(str({p})) // 0\n", 1.0),  # ZeroDivisionError
    ("    return {name}({p})\n", 0.5),  # RecursionError
    ("    raise ValueError(f'unexpected input {{{p}!r}} for {{object()}}')\n", 1.0),  # address in message
)

# ---------------------------------------------------------------------------------------------
# The simulated production model
# ---------------------------------------------------------------------------------------------

_CODE_FAMILY_DIFFICULTY = {
    "add": 0.0, "times": 0.1, "sum_list": 0.1, "max_list": 0.2, "reverse_string": 0.2, "repeat": 0.3,
    "count": 0.4, "is_multiple_of": 0.5, "greater_than": 0.7, "clamp": 0.8,
}
_FAILURE_WEIGHTS = {
    "math": {"wrong_answer": 0.62, "format_error": 0.2, "timeout": 0.08, "refused": 0.1},
    "code": {"wrong_answer": 0.4, "runtime_error": 0.35, "format_error": 0.1, "timeout": 0.08, "refused": 0.07},
    "agent": {"wrong_answer": 0.33, "invalid_tool_call": 0.3, "runtime_error": 0.1, "format_error": 0.12,
              "timeout": 0.08, "refused": 0.07},
}
_BASE_LOGIT = {"math": 2.5, "code": 2.1, "agent": 1.6}


def task_difficulty(task: Task) -> float:
    """0 (easy) .. 1 (hard) from the suite's own knobs: math level, code family, agent changes."""
    meta = task.meta or {}
    if task.domain == "math":
        return (int(meta.get("level", 2)) - 1) / 2
    if task.domain == "agent":
        return (int(meta.get("changes", 2)) - 1) / 2
    if task.domain == "code":
        fam = str(meta.get("family", ""))
        return next((v for k, v in _CODE_FAMILY_DIFFICULTY.items() if fam.startswith(k)), 0.5)
    return 0.5


@dataclass(frozen=True)
class SimulatedResponder:
    """A made-up production model. Not a model: it picks a success probability per task and
    writes a response consistent with the drawn outcome.

    `p_success(task) = sigmoid(base[domain] + skill - 4 * difficulty + offset(task))` with a
    fixed per-task offset ~ N(0, 2) (seeded by `seed` and the task id, so a task is equally hard
    every day), clipped to exactly 0 below 3% and 1 above 97%: some tasks are always solved,
    some never. `skill` shifts the whole model (a better champion has a higher skill).
    """

    model: str = SIMULATED_MODEL
    skill: float = 0.0
    seed: int = 0

    def p_success(self, task: Task) -> float:
        key = (task.meta or {}).get("variant_of", task.task_id)
        offset = random.Random(f"{self.seed}:{key}").gauss(0.0, 2.0)
        z = _BASE_LOGIT.get(task.domain, 1.0) + self.skill - 4.0 * task_difficulty(task) + offset
        p = 1.0 / (1.0 + math.exp(-z))
        return 0.0 if p < 0.03 else 1.0 if p > 0.97 else p

    def __call__(self, task: Task, rng: random.Random) -> Response:
        p = self.p_success(task)
        if rng.random() < p:
            mode = "success"
        else:
            weights = _FAILURE_WEIGHTS.get(task.domain, _FAILURE_WEIGHTS["math"])
            mode = rng.choices(list(weights), list(weights.values()))[0]
        build = {"math": _math_response, "code": _code_response, "agent": _agent_response}[task.domain]
        messages, outcome = build(task, mode, rng)
        return Response(messages, outcome, self.model, {"failure_mode": None if mode == "success" else mode,
                                                         "p_success": round(p, 4)})


def _outcome(mode: str, **kw: Any) -> dict[str, Any]:
    status = {"success": "success", "runtime_error": "error", "timeout": "timeout", "refused": "refused"}
    return {"status": status.get(mode, "failure"), "passed": mode == "success", "error": None, **kw}


def _math_response(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    answer = int(task.reference["answer"])
    if mode == "success":
        text = rng.choice(["", "Let's solve it step by step. "]) + task.solution
    elif mode == "wrong_answer":
        wrong = answer + rng.choice([d for d in (-10, -2, -1, 1, 2, 10) if answer + d >= 0] or [1])
        work = task.solution.rsplit("Answer:", 1)[0].rstrip()
        text = f"{work} Answer: {wrong}" if rng.random() < 0.5 else f"I think it is {wrong}. Answer: {wrong}"
    elif mode == "format_error":
        text = rng.choice([
            "Let me work through this step by step. First, I need to figure out what the question is asking",
            "The answer can be found by combining the quantities in the question.",
            "We should add or subtract the numbers given in the problem, depending on the wording",
        ])
    elif mode == "timeout":
        return [{"role": "assistant", "content": ""}], _outcome(
            mode, error="TimeoutError: generation exceeded the 30 s deadline", latency_ms=30000)
    else:  # refused
        text = rng.choice(REFUSALS)
    return [{"role": "assistant", "content": text}], _outcome(mode)


def _code_response(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    ref = task.reference
    header, entry = task.prompt.lstrip("\n").rstrip("\n") + "\n", ref["entry_point"]
    p = _code_param(header)
    if mode == "success":
        return [{"role": "assistant", "content": task.solution}], _outcome(
            mode, tests={"run": ref["test"].count("assert "), "passed": ref["test"].count("assert ")})
    if mode == "format_error":
        text = rng.choice([
            "You can solve this by returning the value computed from the input.",
            "Use a loop over the input and return the result at the end.",
            "Sure! The function should compute the result from its argument and return it.",
        ])
        return [{"role": "assistant", "content": text}], _outcome(mode, tests={"run": 0, "passed": 0})
    if mode == "refused":
        return [{"role": "assistant", "content": rng.choice(REFUSALS)}], _outcome(mode, tests={"run": 0, "passed": 0})
    if mode == "timeout":
        body = f"    while True:\n        {p} = {p}\n"
        return [{"role": "assistant", "content": f"```python\n{header}{body}```"}], _outcome(
            mode, tests={"run": 0, "passed": 0}, latency_ms=10000,
            error="TimeoutError: sandbox execution exceeded the 10 s limit")
    if mode == "wrong_answer":
        body = f"    return {p}\n"
        run = run_code(header, body, ref["test"], entry)
        if run.error is None:
            body = "    return None\n"
            run = run_code(header, body, ref["test"], entry)
    else:  # runtime_error
        bugs, weights = zip(*_CODE_BUGS, strict=True)
        body = rng.choices(bugs, weights)[0].format(p=p, name=entry)
        run = run_code(header, body, ref["test"], entry)
    error = _fill_run(run.error or "", rng)
    return [{"role": "assistant", "content": f"```python\n{header}{body}```"}], _outcome(
        mode, tests={"run": run.run, "passed": run.passed}, error=error)


_STDLIB = str(Path(json.__file__).resolve().parent.parent)
_CANON_STDLIB = f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}"


def _fill_run(tb: str, rng: random.Random) -> str:
    """Per-record details production tracebacks vary in: sandbox run folder, object addresses.

    The local interpreter's stdlib folder is replaced by a canonical one, so the same seed
    writes the same bytes on every machine with the same Python version.
    """
    tb = tb.replace(_STDLIB, _CANON_STDLIB).replace(RUN_SLOT, f"run_{rng.getrandbits(32):08x}")
    return re.sub(r"0x[0-9a-f]{6,}", lambda _: f"0x7f{rng.getrandbits(40):010x}", tb)


def _tool_call_msg(i: int, name: str, arguments: str, content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}]}


def _play(initial: dict[str, int], calls: Sequence[tuple[str, dict]]) -> tuple[list[dict], InventoryEnv, str | None]:
    """Run calls on the environment, logging messages; stops at the first illegal call."""
    env = InventoryEnv.from_initial(initial)
    msgs: list[dict] = []
    for i, (name, args) in enumerate(calls):
        msgs.append(_tool_call_msg(i, name, json.dumps(args, separators=(",", ":"))))
        try:
            result = env.call(name, args)
        except IllegalCall as e:
            msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"Error: {e}"})
            return msgs, env, str(e)
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": result})
    return msgs, env, None


def _agent_response(task: Task, mode: str, rng: random.Random) -> tuple[list[dict], dict]:
    ref = task.reference
    initial, goal = ref["initial_state"], ref["goal"]
    gold = [(c[0], dict(c[1])) for c in ref["solution_calls"]]
    if mode == "refused":
        return [{"role": "assistant", "content": rng.choice(REFUSALS)}], _outcome(mode, tool_calls=0)
    if mode == "format_error":
        plan = ", ".join(f"{a['item']} by {a['qty']}" for n, a in gold if n != "finish") or "nothing"
        text = f"To reach the goal you should change {plan}, and then you are done."
        return [{"role": "assistant", "content": text}], _outcome(mode, tool_calls=0, goal_reached=False)
    if mode == "timeout":
        item = rng.choice(sorted(initial))
        calls = [("check", {"item": item})] * rng.randint(6, 10)
        msgs, _, _ = _play(initial, calls)
        return msgs, _outcome(mode, tool_calls=len(calls), goal_reached=False, latency_ms=60000,
                              error=f"TimeoutError: episode exceeded the 60 s limit after {len(calls)} tool calls")
    if mode == "runtime_error":
        steps = gold[:-1]
        k = rng.randrange(len(steps)) if steps else 0
        msgs, _, _ = _play(initial, steps[:k])
        name, args = steps[k] if steps else ("add", {"item": "apple", "qty": 1})
        if rng.random() < 0.7:  # truncated arguments JSON
            raw = json.dumps(args, separators=(",", ":"))[: -rng.randint(1, 4)]
            call = {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": raw}}
        else:  # arguments missing altogether
            call = {"id": f"call_{k}", "type": "function", "function": {"name": name}}
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        err = _fill_run(_agent_dispatch_error(json.dumps(call, sort_keys=True)), rng)
        return msgs, _outcome(mode, tool_calls=k + 1, goal_reached=False, error=err)
    if mode == "invalid_tool_call":
        steps = gold[:-1]
        k = rng.randrange(len(steps) + 1)
        item = steps[k][1]["item"] if k < len(steps) else rng.choice(sorted(goal))
        bad = rng.choice([
            (rng.choice(["set", "set_quantity", "update_inventory", "add_item"]), {"item": item, "qty": 2}),
            ("add", {"item": item, "quantity": 2}),
            ("remove", {"item": item, "qty": -rng.randint(1, 5)}),
            ("add", {"item": item, "qty": str(rng.randint(1, 5))}),
            ("remove", {"item": item, "qty": 100}),
        ])
        msgs, env, err = _play(initial, [*steps[:k], bad, *gold[k:]])
        if err is None:  # cannot happen: every `bad` call is illegal
            raise AssertionError(f"illegal call {bad} was accepted")
        return msgs, _outcome(mode, tool_calls=k + 1, goal_reached=False, error=f"IllegalCall: {err}")
    calls = list(gold)
    if mode == "wrong_answer":
        idx = [i for i, (n, _) in enumerate(calls) if n != "finish"]
        i = rng.choice(idx)
        name, args = calls[i]
        if name == "add" or args["qty"] > 1:
            delta = rng.randint(1, 2) if name == "add" else -1
            calls[i] = (name, {"item": args["item"], "qty": args["qty"] + delta})
        else:
            del calls[i]
    msgs, env, _ = _play(initial, calls)
    reached = env.goal_reached(goal)
    if reached != (mode == "success"):
        raise AssertionError(f"simulated agent {mode} ended with goal_reached={reached}")
    msgs.append({"role": "assistant", "content": "Done: the inventory now matches the goal."})
    return msgs, _outcome(mode, tool_calls=len(calls), goal_reached=reached)
