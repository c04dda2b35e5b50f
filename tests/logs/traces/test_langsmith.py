"""A LangSmith root run with its child runs -> one record: LangChain-serialised messages, the tool run in
order, tokens and cost summed, feedback_stats in `outcome`; a child run on its own is quarantined."""

from __future__ import annotations

import copy

import pytest

from flywheel.logs.formats import canonical, detect
from flywheel.logs.messages import RecordError


def test_run_tree_becomes_one_record(langsmith_run) -> None:
    assert detect(langsmith_run) == "langsmith"
    rec = canonical(langsmith_run)
    assert [m["role"] for m in rec["messages"]] == ["system", "user", "assistant", "tool", "assistant"]
    call = rec["messages"][2]["tool_calls"][0]
    assert call["id"] == "call_s1" and call["function"]["name"] == "search"
    assert rec["messages"][3]["tool_call_id"] == "call_s1" and rec["messages"][-1]["content"] == "Paris"
    assert (rec["task_id"], rec["model"], rec["id"]) == ("geo-1", "gpt-4o", "langsmith-8f0b-root")
    assert rec["outcome"] == {"latency_ms": 2500.0, "prompt_tokens": 65, "completion_tokens": 10,
                              "cost_usd": pytest.approx(0.001), "scores": {"user_score": 1.0, "correctness": 0.5},
                              "user_feedback": "thumbs_up", "passed": True}


def test_openai_wrapped_runs_and_errors(langsmith_run) -> None:
    llm = langsmith_run["child_runs"][2]
    llm["inputs"] = {"messages": [{"role": "user", "content": "capital of France?"}], "model": "gpt-4o"}
    llm["outputs"] = {"choices": [{"message": {"role": "assistant", "content": "Paris"}}]}
    langsmith_run["child_runs"][1]["error"] = "RateLimitError: slow down"
    rec = canonical(langsmith_run)
    assert rec["messages"][-1] == {"role": "assistant", "content": "Paris"}
    assert rec["outcome"]["status"] == "error" and "RateLimitError" in rec["outcome"]["error"]


@pytest.mark.parametrize("break_it, field", [
    (lambda r: r.__setitem__("parent_run_id", "x"), "parent_run_id"),
    (lambda r: r["child_runs"][0]["inputs"].pop("messages"), "run.child_runs[0].inputs.messages"),
    (lambda r: r["child_runs"][0]["inputs"]["messages"][0].append({"id": ["x", "PoemMessage"], "kwargs": {}}),
     "run.child_runs[0].inputs.messages[2]"),
    (lambda r: r["child_runs"][1].__setitem__("start_time", 17.5e20), "run.child_runs[1].start_time"),
    (lambda r: r["child_runs"].append("r4"), "run.child_runs[3]"),
    (lambda r: r["child_runs"][1]["inputs"].__setitem__("input", '{"q": '), "run.child_runs[1].inputs.input"),
])
def test_broken_runs_name_the_field(langsmith_run, break_it, field) -> None:
    bad = copy.deepcopy(langsmith_run)
    break_it(bad)
    with pytest.raises(RecordError) as e:
        canonical(bad)
    assert e.value.field == field, (e.value.field, e.value.why)


def test_the_fixture_is_what_the_langsmith_sdk_writes(langsmith_run) -> None:
    """Round-trip through the SDK's own model (`langsmith.schemas.Run`, what `Client.read_run(...,
    load_child_runs=True)` returns): validated with real UUID ids, dumped as JSON (ids and times as text, every
    optional field present, most of them null), it converts to the same conversation and outcome."""
    pytest.importorskip("langsmith")
    import json
    import uuid

    from langsmith.schemas import Run

    ids: dict[str, str] = {}

    def real(x):
        return ids.setdefault(x, str(uuid.uuid5(uuid.NAMESPACE_URL, x))) if x else x

    def with_uuids(run):
        run = dict(run, id=real(run["id"]), parent_run_id=real(run.get("parent_run_id")),
                   trace_id=real(run.get("trace_id") or langsmith_run["id"]))
        run["child_runs"] = [with_uuids(c) for c in run.get("child_runs") or []]
        return run

    sdk = Run(**with_uuids(copy.deepcopy(langsmith_run)))
    exported = json.loads(json.dumps(sdk.model_dump(mode="json")))
    assert exported["child_runs"][0]["parent_run_id"] == exported["id"] and "dotted_order" in exported
    ours, theirs = canonical(langsmith_run), canonical(exported)
    assert theirs["messages"] == ours["messages"] and theirs["outcome"] == ours["outcome"]
    assert theirs["model"] == "gpt-4o" and theirs["task_id"] == "geo-1" and theirs["id"] == f"langsmith-{exported['id']}"
