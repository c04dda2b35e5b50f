"""SIMULATED production traffic: demo task logs for when no real logs exist yet.

Nothing here is real user data. Every record is marked: the serving model is
`simulated-prod:v1` by default and each line carries a top-level `"simulated": true`
(ingest keeps unknown top-level fields in `extra`) plus `"sim"`, the generator's ground
truth (`failure_mode`, `p_success`) that mining never reads but tests compare against.

A simulated day draws tasks from the training suites of the three domains, serves each
several times (so pass rates exist), and fails in the ways production models fail:
wrong answers, no final answer, runtime errors with real Python tracebacks, timeouts,
illegal tool calls and refusals. Whether an attempt succeeds depends on the task's
difficulty (`meta` level / family / changes) plus a fixed per-task offset, so some tasks
are always solved, some never, many in between. Every logged response is consistent with
its outcome: a logged failure really fails under the task's reference (the code really
raises, the tool calls really miss the goal), which is what lets verifiers be checked
against logged failures. About 1% of lines are malformed and a few are delivered twice,
so ingest's quarantine and de-duplication get exercised.

The `Responder` protocol is the seam where a real model plugs in (the closed loop serves
the deployed champion through it): a responder maps a `Task` to a `Response` (the
assistant-side messages, the outcome production observed, the model name).
`response_from_text` turns a model's text in the training format into such a response.
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from flywheel.tasks.agent_env import IllegalCall, InventoryEnv
from flywheel.tasks.base import Task, stable_task_id
from flywheel.tasks.suites import DOMAINS, heldout_suite, train_suite
from flywheel.tasks.toolcalls import (
    CALL_CLOSE,
    CALL_OPEN,
    RESULT_CLOSE,
    RESULT_OPEN,
    format_call,
    format_result,
)

SIMULATED_MODEL = "simulated-prod:v1"
FAILURE_MODES: tuple[str, ...] = (
    "wrong_answer", "format_error", "runtime_error", "timeout", "invalid_tool_call", "refused",
)
"""The failure classes the simulator produces; the same names as mining's taxonomy."""

SYSTEM_PROMPTS = {
    "math": "You are a helpful math tutor. Work step by step and end with 'Answer: <number>'.",
    "code": "You are a coding assistant. Reply with the complete Python function in a ```python block.",
    "agent": "You manage an inventory through tools. Call tools one at a time, then call finish.",
}
REFUSALS = (
    "I'm sorry, but I can't help with that request.",
    "I am sorry, I cannot assist with this.",
    "Sorry, I can't do that.",
    "I cannot help with this request.",
)

# ---------------------------------------------------------------------------------------------
# The responder seam
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Response:
    """What a served model did on one task, as production logged it.

    `messages` are the assistant-side messages that follow the prompt (assistant turns,
    with OpenAI `tool_calls`, and `tool` results). `outcome` holds the OUTCOME_KEYS
    production observed; `passed` must be set (a real responder fills it from a verifier).
    Missing latency/token/cost fields are filled in by the generator. `meta` is logged
    under the record's `sim` field (ground truth for tests; never read by mining).
    """

    messages: list[dict[str, Any]]
    outcome: dict[str, Any]
    model: str
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Responder(Protocol):
    """Serves one task: `responder(task, rng) -> Response`. `rng` is the day's seeded RNG."""

    def __call__(self, task: Task, rng: random.Random) -> Response: ...


@runtime_checkable
class BatchResponder(Protocol):
    """Optional: a responder that serves a whole day at once (a real model batches)."""

    def respond_batch(self, tasks: Sequence[Task], rng: random.Random) -> list[Response]: ...


def messages_from_text(domain: str, text: str) -> list[dict[str, Any]]:
    """A response in the training text format as OpenAI messages.

    Agent text (`<tool_call>{..}</tool_call><tool_result>..</tool_result>` ...) becomes one
    assistant message with `tool_calls` per call, each followed by its `tool` result.
    """
    if domain != "agent":
        return [{"role": "assistant", "content": text}]
    pat = re.compile(
        re.escape(CALL_OPEN) + r"(.*?)" + re.escape(CALL_CLOSE)
        + r"(?:\s*" + re.escape(RESULT_OPEN) + r"(.*?)" + re.escape(RESULT_CLOSE) + r")?",
        re.S,
    )
    out: list[dict[str, Any]] = []
    pos = 0
    for i, m in enumerate(pat.finditer(text)):
        before = text[pos:m.start()].strip() or None
        pos = m.end()
        raw = m.group(1)
        try:
            obj = json.loads(raw)
            name = str(obj.get("name", "")) if isinstance(obj, dict) else ""
            args = obj.get("arguments", {}) if isinstance(obj, dict) else {}
            arguments = args if isinstance(args, str) else json.dumps(args, separators=(",", ":"))
        except json.JSONDecodeError:  # keep the malformed call as logged: a verifier must see it fail
            mm = re.match(r'\s*\{\s*"name"\s*:\s*"([^"]*)"\s*,\s*"arguments"\s*:\s*(.*?)\}?\s*$', raw, re.S)
            name, arguments = (mm.group(1), mm.group(2)) if mm else ("", raw)
        call_id = f"call_{i}"
        out.append({"role": "assistant", "content": before, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]})
        if m.group(2) is not None:
            out.append({"role": "tool", "tool_call_id": call_id, "content": m.group(2)})
    tail = text[pos:].strip()
    if tail or not out:
        out.append({"role": "assistant", "content": tail})
    return out


def response_text(messages: Sequence[dict[str, Any]]) -> str:
    """The assistant side of a logged conversation in the training text format.

    Inverse of `messages_from_text`: what a verifier scores and a trainer trains on.
    Everything after the last user message is rendered; tool calls whose arguments are not
    valid JSON keep their raw text, so a verifier sees the same malformed call.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    parts: list[str] = []
    for m in messages[last_user + 1:]:
        role = m.get("role")
        if role == "assistant":
            content = m.get("content")
            if isinstance(content, str) and content:
                parts.append(content)
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", tc) if isinstance(tc, dict) else {}
                name, args = fn.get("name", ""), fn.get("arguments", "{}")
                if isinstance(args, dict):
                    parts.append(format_call(name, args))
                    continue
                try:
                    parsed = json.loads(args)
                except (TypeError, json.JSONDecodeError):
                    parsed = None
                if isinstance(parsed, dict):
                    parts.append(format_call(name, parsed))
                else:
                    parts.append(f'{CALL_OPEN}{{"name":{json.dumps(name)},"arguments":{args}}}{CALL_CLOSE}')
        elif role == "tool":
            parts.append(format_result(str(m.get("content", ""))))
    return "".join(parts)


def response_from_text(task: Task, text: str, model: str, passed: bool, **outcome: Any) -> Response:
    """A real model's answer as a logged `Response`; `passed` comes from the task's verifier."""
    status = outcome.pop("status", "success" if passed else "failure")
    return Response(messages_from_text(task.domain, text), {"status": status, "passed": bool(passed), **outcome},
                    model)


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


# ---------------------------------------------------------------------------------------------
# A day of traffic
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrafficConfig:
    """Shape of a simulated day. Rates are per log line."""

    domain_mix: tuple[tuple[str, float], ...] = field(
        default=(("math", 0.4), ("code", 0.35), ("agent", 0.25)), metadata={"help": "share of records per domain"})
    universe: tuple[tuple[str, int], ...] = field(
        default=(("math", 600), ("code", 200), ("agent", 400)),
        metadata={"help": "training tasks per domain that traffic is drawn from (the same every day)"})
    repeats: float = field(default=5.0, metadata={"help": "mean attempts per served task per day"})
    malformed_rate: float = field(default=0.01, metadata={"help": "share of lines written malformed"})
    duplicate_rate: float = field(default=0.002, metadata={"help": "share of lines delivered twice"})
    variant_rate: float = field(
        default=0.02, metadata={"help": "share of requests whose prompt is a near-duplicate rewording"})
    heldout_rate: float = field(
        default=0.005, metadata={"help": "share of requests that are held-out eval prompts (decontamination)"})
    system_prompt_rate: float = field(default=0.7, metadata={"help": "share of requests with a system message"})
    shard_size: int = field(default=20_000, metadata={"help": "lines per JSONL file"})


MALFORMED_KINDS = ("truncated_json", "wrong_type", "missing_field", "invalid_utf8")


@dataclass
class DayTraffic:
    """One simulated day before it is written: the lines and what went into them."""

    date: Date
    lines: list[bytes]
    records: int = 0  # well-formed records generated (duplicates not counted)
    malformed: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    failure_modes: dict[str, int] = field(default_factory=dict)


@functools.lru_cache(maxsize=16)
def _universe(domain: str, n: int) -> tuple[Task, ...]:
    return tuple(train_suite(domain, n))


@functools.lru_cache(maxsize=4)
def _heldout(domain: str) -> tuple[Task, ...]:
    return tuple(heldout_suite(domain))


def _variant(task: Task, rng: random.Random) -> Task:
    """A near-duplicate rewording: same tokens (case/whitespace) or one extra leading word."""
    p = task.prompt
    if task.domain == "code":
        prompt = rng.choice(["\n" + p, p + "\n\n"])
    else:
        prompt = rng.choice(["Question: " + p, p.lower(), "  " + p.replace(". ", ".  ")])
    return Task(stable_task_id(task.domain, prompt), task.domain, prompt, task.reference, task.solution,
                {**task.meta, "variant_of": task.task_id})


def day_tasks(day: Date, n: int, rng: random.Random, config: TrafficConfig) -> list[Task]:
    """The `n` requests of a day: each domain serves a random subset of its universe ~`repeats` times."""
    domains, weights = zip(*config.domain_mix, strict=True)
    picks = rng.choices(domains, weights, k=n)
    universe = dict(config.universe)
    active: dict[str, list[Task]] = {}
    for d in domains:
        pool = list(_universe(d, universe.get(d, 200)))
        k = max(1, min(len(pool), round(picks.count(d) / max(config.repeats, 1e-9))))
        active[d] = rng.sample(pool, k)
    out = []
    for d in picks:
        r = rng.random()
        if r < config.heldout_rate:
            out.append(rng.choice(_heldout(d)))
        elif r < config.heldout_rate + config.variant_rate:
            out.append(_variant(rng.choice(active[d]), rng))
        else:
            out.append(rng.choice(active[d]))
    return out


def _fill_costs(task: Task, messages: list[dict], outcome: dict, rng: random.Random) -> dict:
    out = dict(outcome)
    prompt_chars = sum(len(m["content"]) for m in messages if m["role"] in ("system", "user"))
    completion_chars = len(response_text(messages))
    out.setdefault("prompt_tokens", max(1, math.ceil(prompt_chars / 4)))
    out.setdefault("completion_tokens", max(1, math.ceil(completion_chars / 4)))
    if out.get("latency_ms") is None:
        out["latency_ms"] = int(150 + out["completion_tokens"] * 18 * rng.lognormvariate(0.0, 0.35))
    out.setdefault("cost_usd", round(out["prompt_tokens"] * 5e-7 + out["completion_tokens"] * 1.5e-6, 8))
    if "user_feedback" not in out:
        r = rng.random()
        up, down = (0.25, 0.02) if out.get("passed") else (0.03, 0.35)
        out["user_feedback"] = "thumbs_up" if r < up else "thumbs_down" if r < up + down else None
    return out


def _malform(rec: dict[str, Any], rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(MALFORMED_KINDS)
    if kind == "truncated_json":
        line = json.dumps(rec, ensure_ascii=False).encode()
        return kind, line[: rng.randint(10, max(11, len(line) - 10))]
    bad = dict(rec)
    if kind == "wrong_type":
        key, value = rng.choice([("messages", "see attached conversation"), ("outcome", ["passed"]),
                                 ("task_id", {"id": 7}), ("timestamp", "yesterday afternoon")])
        bad[key] = value
    elif kind == "missing_field":
        del bad[rng.choice(["timestamp", "task_id", "domain", "model", "messages", "outcome"])]
    line = json.dumps(bad, ensure_ascii=False).encode()
    if kind == "invalid_utf8":
        pos = line.find(b'"content": "') + len(b'"content": "')
        line = line[:pos] + b"\xff\xfe" + line[pos:]
    return kind, line


def generate_records(day: Date, n_records: int, seed: int, responder: Responder | None = None,
                     model: str = SIMULATED_MODEL, config: TrafficConfig | None = None,
                     rng: random.Random | None = None) -> Iterator[dict[str, Any]]:
    """`n_records` well-formed log records of one day (dicts in the JSONL format), time-ordered."""
    cfg = config or TrafficConfig()
    rng = rng or random.Random(f"traffic:{seed}:{day.isoformat()}")
    responder = responder or SimulatedResponder(model=model)
    tasks = day_tasks(day, n_records, rng, cfg)
    if isinstance(responder, BatchResponder):
        responses = responder.respond_batch(tasks, rng)
    else:
        responses = [responder(t, rng) for t in tasks]
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    seconds = sorted(rng.random() * 86_400 for _ in tasks)
    for i, (task, resp, s) in enumerate(zip(tasks, responses, seconds, strict=True)):
        messages = []
        if rng.random() < cfg.system_prompt_rate and task.domain in SYSTEM_PROMPTS:
            messages.append({"role": "system", "content": SYSTEM_PROMPTS[task.domain]})
        messages.append({"role": "user", "content": task.prompt})
        messages.extend(resp.messages)
        yield {
            "id": f"sim-{day:%Y%m%d}-{i:07d}-{rng.getrandbits(32):08x}",
            "timestamp": (start + timedelta(seconds=s)).isoformat().replace("+00:00", "Z"),
            "task_id": task.task_id,
            "domain": task.domain,
            "model": resp.model,
            "messages": messages,
            "outcome": _fill_costs(task, messages, resp.outcome, rng),
            "reference": task.reference,
            "simulated": True,
            "sim": resp.meta,
        }


def generate_day(day: Date | str, n_records: int, seed: int, responder: Responder | None = None,
                 model: str = SIMULATED_MODEL, config: TrafficConfig | None = None) -> DayTraffic:
    """One day as JSONL lines (bytes, since some are deliberately not valid UTF-8)."""
    day = Date.fromisoformat(day) if isinstance(day, str) else day
    cfg = config or TrafficConfig()
    rng = random.Random(f"traffic:{seed}:{day.isoformat()}")
    n_dup = sum(rng.random() < cfg.duplicate_rate for _ in range(n_records))
    out = DayTraffic(day, [])
    good: list[bytes] = []
    for rec in generate_records(day, n_records - n_dup, seed, responder, model, cfg, rng):
        out.records += 1
        mode = (rec.get("sim") or {}).get("failure_mode") or "success"
        out.failure_modes[mode] = out.failure_modes.get(mode, 0) + 1
        if rng.random() < cfg.malformed_rate:
            kind, line = _malform(rec, rng)
            out.malformed[kind] = out.malformed.get(kind, 0) + 1
        else:
            line = json.dumps(rec, ensure_ascii=False).encode()
            good.append(line)
        out.lines.append(line)
    for _ in range(n_dup):  # at-least-once delivery: a few records arrive twice, later
        if good:
            out.lines.insert(rng.randint(0, len(out.lines)), rng.choice(good))
            out.duplicates += 1
    return out


def write_day(out_dir: str | Path, traffic: DayTraffic, shard_size: int = 20_000) -> Path:
    """Write `out_dir/YYYY-MM-DD/traffic-NNNNN.jsonl` shards; returns the day folder."""
    folder = Path(out_dir) / traffic.date.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("traffic-*.jsonl"):
        old.unlink()
    for k in range(0, max(len(traffic.lines), 1), shard_size):
        with open(folder / f"traffic-{k // shard_size:05d}.jsonl", "wb") as f:
            for line in traffic.lines[k:k + shard_size]:
                f.write(line + b"\n")
    return folder


def simulate_day(out_dir: str | Path, date: Date | str, n_records: int, seed: int,
                 responder: Responder | None = None, model: str = SIMULATED_MODEL,
                 config: TrafficConfig | None = None) -> Path:
    """Write one day of SIMULATED traffic (`n_records` lines) as JSONL; deterministic in `seed`.

    Returns `out_dir/YYYY-MM-DD/`. Re-running with the same arguments rewrites identical files.
    """
    cfg = config or TrafficConfig()
    return write_day(out_dir, generate_day(date, n_records, seed, responder, model, cfg), cfg.shard_size)


def simulate_days(out_dir: str | Path, start: Date | str, days: int, n_records: int, seed: int,
                  responder: Responder | None = None, model: str = SIMULATED_MODEL,
                  config: TrafficConfig | None = None) -> list[Path]:
    """`days` consecutive simulated days starting at `start`."""
    start = Date.fromisoformat(start) if isinstance(start, str) else start
    return [simulate_day(out_dir, start + timedelta(days=i), n_records, seed, responder, model, config)
            for i in range(days)]


__all__ = [
    "DOMAINS", "FAILURE_MODES", "SIMULATED_MODEL", "BatchResponder", "CodeRun", "DayTraffic", "Responder",
    "Response", "SimulatedResponder", "TrafficConfig", "generate_day", "generate_records", "messages_from_text",
    "response_from_text", "response_text", "run_code", "simulate_day", "simulate_days", "task_difficulty",
    "write_day",
]
