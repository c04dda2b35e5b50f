"""The SIMULATED traffic generator: deterministic, realistic failure mix, consistent with references, and
the responder seam that lets another model answer."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict

import pytest

from flywheel.environments.agent.inventory import IllegalCall, InventoryEnv
from flywheel.environments.toolcalls import parse_calls
from flywheel.tasks.base import Task
from flywheel.tasks.suites import train_suite
from flywheel.world.responder import Response, response_from_text, text_from_messages
from flywheel.world.simulated_model import FAILURE_MODES, SIMULATED_MODEL, SimulatedResponder
from flywheel.world.traffic import generate_day, simulate_day, write_day

DAY = "2026-12-01"


@pytest.fixture(scope="module")
def day():
    return generate_day(DAY, 3000, seed=7)


def _records(traffic):
    out = []
    for line in traffic.lines:
        try:
            r = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if _well_formed(r):
            out.append(r)
    return out


def _well_formed(r) -> bool:
    return (isinstance(r.get("task_id"), str) and isinstance(r.get("messages"), list)
            and isinstance(r.get("outcome"), dict) and isinstance(r.get("domain"), str)
            and isinstance(r.get("model"), str) and isinstance(r.get("timestamp"), str)
            and r["timestamp"].startswith(DAY))


def test_deterministic_in_seed(tmp_path):
    a = simulate_day(tmp_path / "a", DAY, 400, seed=1)
    b = simulate_day(tmp_path / "b", DAY, 400, seed=1)
    c = simulate_day(tmp_path / "c", DAY, 400, seed=2)
    assert a.name == DAY and [p.name for p in a.glob("*.jsonl")] == ["traffic-00000.jsonl"]
    read = lambda p: (p / "traffic-00000.jsonl").read_bytes()  # noqa: E731
    assert read(a) == read(b) != read(c)
    assert len(read(a).splitlines()) == 400


def test_records_are_marked_simulated_and_in_the_log_format(day):
    recs = _records(day)
    assert {r["model"] for r in recs} == {SIMULATED_MODEL}
    assert all(r["simulated"] is True and "failure_mode" in r["sim"] for r in recs)
    assert len({r["id"] for r in recs}) == len(recs) - day.duplicates
    for r in recs[:200]:
        roles = [m["role"] for m in r["messages"]]
        assert roles[0] in ("system", "user") and "assistant" in roles
        o = r["outcome"]
        assert isinstance(o["passed"], bool) and o["status"] in ("success", "failure", "error", "timeout", "refused")
        assert o["latency_ms"] > 0 and o["prompt_tokens"] > 0 and o["cost_usd"] > 0
        assert r["reference"] and r["domain"] in ("math", "code", "agent")
        if r["domain"] == "code":
            assert set(o["tests"]) == {"run", "passed"}
    agent = [r for r in recs if r["domain"] == "agent" and r["sim"]["failure_mode"] is None]
    assert any(m.get("tool_calls") for m in agent[0]["messages"])
    assert any(m["role"] == "tool" for m in agent[0]["messages"])


def test_failure_mix_and_malformed_share(day):
    assert day.records + day.duplicates == 3000 == len(day.lines)
    n_bad = sum(day.malformed.values())
    assert 10 <= n_bad <= 55  # ~1% of 3000
    assert set(day.malformed) == {"truncated_json", "wrong_type", "missing_field", "invalid_utf8"}
    assert len(day.lines) - len(_records(day)) == n_bad  # exactly the malformed lines fail validation
    total = sum(day.failure_modes.values())
    assert 0.4 < day.failure_modes["success"] / total < 0.7
    assert set(day.failure_modes) == {"success", *FAILURE_MODES}
    for mode in FAILURE_MODES:
        assert day.failure_modes[mode] / total > 0.02, mode
    by_domain = defaultdict(Counter)
    for r in _records(day):
        by_domain[r["domain"]][r["sim"]["failure_mode"]] += 1
    assert by_domain["math"]["runtime_error"] == by_domain["math"]["invalid_tool_call"] == 0
    assert by_domain["agent"]["invalid_tool_call"] > 0 and by_domain["code"]["runtime_error"] > 0


def test_tasks_repeat_and_difficulty_spreads_pass_rates(day):
    per_task = defaultdict(list)
    for r in _records(day):
        per_task[r["task_id"]].append(r["outcome"]["passed"])
    repeated = {t: v for t, v in per_task.items() if len(v) >= 4}
    assert sum(len(v) for v in per_task.values()) / len(per_task) > 3
    always = sum(all(v) for v in repeated.values())
    never = sum(not any(v) for v in repeated.values())
    between = len(repeated) - always - never
    assert always > 20 and never > 20 and between > 50
    sim = SimulatedResponder()
    easy = [t for t in train_suite("math", 200) if t.meta["level"] == 1]
    hard = [t for t in train_suite("math", 200) if t.meta["level"] == 3]
    mean = lambda ts: sum(map(sim.p_success, ts)) / len(ts)  # noqa: E731
    assert mean(easy) > mean(hard) + 0.15


def _verify(r) -> bool:
    """An independent check of a logged response against its reference."""
    text, ref = text_from_messages(r["messages"]), r["reference"]
    if r["domain"] == "math":
        m = re.search(r"Answer:\s*(-?\d+)", text)
        return bool(m) and m.group(1) == ref["answer"]
    if r["domain"] == "code":
        m = re.search(r"```python\n(.*?)```", text, re.S)
        if not m or "while True" in m.group(1):
            return False
        ns: dict = {}
        try:
            exec(m.group(1), ns)  # noqa: S102 - the generator's own code
            exec(ref["test"], ns)  # noqa: S102
            ns["check"](ns[ref["entry_point"]])
            return True
        except Exception:
            return False
    env = InventoryEnv.from_initial(ref["initial_state"])
    try:
        for call in parse_calls(text):
            if call.error:
                return False
            env.call(call.name, call.arguments)
    except IllegalCall:
        return False
    return env.done and env.goal_reached(ref["goal"])


def test_logged_outcomes_agree_with_the_references(day):
    recs = _records(day)
    rng = random.Random(0)
    sample = rng.sample(recs, 600)
    for r in sample:
        assert _verify(r) == r["outcome"]["passed"], (r["domain"], r["sim"], text_from_messages(r["messages"])[:300])
    runtime = [r for r in recs if r["sim"]["failure_mode"] == "runtime_error"]
    errors = Counter(r["outcome"]["error"].rstrip().rsplit("\n", 1)[-1].split(":")[0] for r in runtime)
    assert len(errors) >= 5  # several exception types
    assert all(r["outcome"]["error"].startswith("Traceback (most recent call last):") for r in runtime)


class GoldResponder:
    """A stand-in for a real served model: answers with the gold solution."""

    def __call__(self, task: Task, rng: random.Random) -> Response:
        return response_from_text(task, task.solution, "champion:v7", passed=True)


class BatchGold(GoldResponder):
    calls = 0

    def respond_batch(self, tasks, rng):
        BatchGold.calls += 1
        return [self(t, rng) for t in tasks]


def test_responder_seam_plugs_in_another_model():
    d = generate_day(DAY, 300, seed=3, responder=GoldResponder())
    recs = _records(d)
    assert {r["model"] for r in recs} == {"champion:v7"} and all(r["outcome"]["passed"] for r in recs)
    assert all(_verify(r) for r in recs[:100])
    assert all(r["simulated"] for r in recs)  # the users are still simulated
    generate_day(DAY, 50, seed=3, responder=BatchGold())
    assert BatchGold.calls == 1


def test_ingest_quarantines_exactly_the_malformed_lines(flywheel_home):
    from flywheel.logs.ingest import ingest

    traffic = generate_day(DAY, 1500, seed=11)
    folder = write_day(flywheel_home.raw_logs, traffic)
    rep = ingest(folder, flywheel_home.warehouse)
    assert rep.lines_read == 1500
    assert rep.quarantined == sum(traffic.malformed.values()) > 0
    assert rep.duplicates == traffic.duplicates
    assert rep.ingested == traffic.records - sum(traffic.malformed.values())
