"""A grader spec judges as a validated flywheel verifier: through `flywheel verify --grader` (an OpenAI RFT job
file as it is), a task's own `grader` field, and `score_batch` with the DuckDB verdict cache; a grader that
accepts a hack probe or the logged failure judges nothing on that task."""

from __future__ import annotations

import json

import pytest

from flywheel.cli import main
from flywheel.environments.verdict import TaskError
from flywheel.verifiers.batch import ScoreItem, score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.graders import GraderConfig, GraderRegistry, GraderVerifier, Runtime, load_spec

EXACT = {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
         "reference": "{{item.reference_answer}}", "operation": "eq"}
TASK = {"task_id": "t1", "prompt": "What is 2 + 2?", "reference_answer": "4", "solution": "4"}


def _multi(judge_url: str | None = None, model: str = "judge") -> dict:
    graders = {
        "exact": EXACT,
        "close": {"type": "text_similarity", "name": "close", "input": "{{sample.output_text}}",
                  "reference": "{{item.reference_answer}}", "evaluation_metric": "fuzzy_match"},
        "py": {"type": "python", "name": "py",
               "source": "def grade(sample, item):\n    return float(sample['output_text'].strip() == "
                         "item['reference_answer'])\n"},
    }
    if judge_url:
        graders["judge"] = {"type": "score_model", "name": "judge", "model": model, "range": [0, 10], "input": [
            {"role": "user", "content": "REFERENCE: {{item.reference_answer}}\nANSWER: {{sample.output_text}}"}]}
    formula = "0.25 * exact + 0.25 * close + 0.25 * py + 0.025 * judge" if judge_url else "(exact + close + py) / 3"
    return {"type": "multi", "name": "mix", "graders": graders, "calculate_output": formula, "pass_threshold": 0.99}


def test_multi_grader_verdicts_and_partial_credit(judge_server) -> None:
    rt = Runtime(GraderConfig(judge_base_url=judge_server.url))
    v = GraderVerifier(_multi(judge_server.url), rt)
    good, bad = v.verify(TASK, "4"), v.verify(TASK, "5")
    assert (good.reward, good.passed) == (1.0, True) and good.details["scores"]["judge"] == 10.0
    assert (bad.reward, bad.passed) == (0.0, False) and bad.details["scores"]["judge"] == 2.0
    partial = GraderVerifier(_multi(judge_server.url), Runtime(GraderConfig(judge_base_url=judge_server.url,
                                                                            partial_credit=True)))
    assert 0 < partial.verify(TASK, "4 ").reward < 1 and not partial.verify(TASK, "4 ").passed


def test_validation_refuses_a_grader_that_accepts_a_probe_or_the_logged_failure(judge_server) -> None:
    contains_nothing = dict(EXACT, operation="like", reference="")  # every answer contains ""
    with pytest.raises(TaskError, match="failed validation on this task: accepts the hack empty"):
        GraderVerifier(contains_nothing).verify(TASK, "4")
    gullible = {"type": "score_model", "name": "judge", "model": "gullible", "range": [0, 10], "pass_threshold": 7,
                "input": [{"role": "user", "content": "REFERENCE: {{item.reference_answer}}\n"
                                                      "ANSWER: {{sample.output_text}}"}]}
    rt = Runtime(GraderConfig(judge_base_url=judge_server.url))
    with pytest.raises(TaskError, match="accepts the hack judge_injection"):
        GraderVerifier(gullible, rt).verify(TASK, "4")
    assert GraderVerifier(dict(gullible, model="judge"), rt).verify(TASK, "4").passed
    lax = dict(EXACT, operation="ne", reference="no such answer")
    with pytest.raises(TaskError, match="accepts the wrong failed_response"):
        GraderVerifier(dict(lax)).verify(dict(TASK, failed_response="5", solution="4"), "4")
    with pytest.raises(TaskError, match="rejects the gold solution"):
        GraderVerifier(EXACT).verify(dict(TASK, solution="four"), "4")


def test_score_batch_with_the_verdict_cache(tmp_path) -> None:
    reg = GraderRegistry(_multi())
    items = [ScoreItem("faq", TASK, r) for r in ("4", "5", "4")]
    cache = VerdictCache(str(tmp_path / "cache.duckdb"))
    first = score_batch(items, registry=reg, cache=cache)
    again = score_batch(items, registry=reg, cache=cache)
    assert [v.passed for v in first] == [True, False, True] and again == first and cache.hits == 2  # two distinct responses
    other = GraderRegistry(dict(_multi(), pass_threshold=0.5))
    assert other.version("faq") != reg.version("faq")  # a changed spec never reuses a cached verdict
    cache.close()


def test_flywheel_verify_grader_file_and_task_field(tmp_path, capsys) -> None:
    job = {"training_file": "file-abc", "model": "o4-mini",
           "method": {"type": "reinforcement", "reinforcement": {"grader": EXACT}}}
    spec_file = tmp_path / "job.json"
    spec_file.write_text(json.dumps(job))
    assert load_spec(spec_file) == EXACT
    lines = [{"domain": "faq", "task": TASK, "response": r} for r in ("4", "5")]
    lines.append({"domain": "faq", "task": {"prompt": "q"}, "response": "4"})  # no reference_answer field
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["verify", str(src), "--grader", str(spec_file), "--json"]) == 1
    out = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [d["passed"] for d in out] == [True, False, False]
    assert "the task has no field 'reference_answer'" in out[2]["reason"]
    inline = [{"domain": "faq", "task": dict(TASK, grader=dict(EXACT, operation="ilike")), "response": "It is 4"}]
    src.write_text(json.dumps(inline[0]) + "\n")
    assert main(["verify", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True
    spec_file.write_text(json.dumps(dict(EXACT, operation="regex")))
    assert main(["verify", str(src), "--grader", str(spec_file), "--json"]) == 2
    assert "operation must be one of" in json.loads(capsys.readouterr().out)["error"]
