"""`score_model` / `label_model` graders through the `openai` client against a judge served on 127.0.0.1: the
rendered prompt reaches the judge, its reply is parsed (never run), an unreachable or failing judge is an
infrastructure error, a refused request the spec's error."""

from __future__ import annotations

import pytest

from flywheel.environments.verdict import TaskError, VerifierInfraError
from flywheel.verifiers.graders import GraderConfig, Runtime, build_grader
from flywheel.verifiers.graders.template import sample_of

PROMPT = [{"role": "system", "content": "You grade answers."},
          {"role": "user", "content": [{"type": "input_text", "text": "REFERENCE: {{item.answer}}\n"},
                                       {"type": "input_text", "text": "ANSWER: {{sample.output_text}}"}]}]


def _score(model: str = "judge", **kw) -> dict:
    return {"type": "score_model", "name": "s", "model": model, "input": PROMPT, "range": [0, 10],
            "sampling_params": {"temperature": 0.0, "max_completions_tokens": 64}, **kw}


@pytest.fixture()
def runtime(judge_server):
    return Runtime(GraderConfig(judge_base_url=judge_server.url, judge_timeout_s=5, judge_seed=11))


def test_score_model_renders_asks_and_parses(judge_server, runtime) -> None:
    g = build_grader(_score(pass_threshold=7), runtime)
    right, wrong = g.grade({"answer": "4"}, sample_of("4")), g.grade({"answer": "4"}, sample_of("5"))
    assert (right.score, wrong.score) == (10.0, 2.0) and g.low == 0 and g.high == 10
    body = judge_server.requests[-2]
    assert body["messages"][1]["content"] == "REFERENCE: 4\nANSWER: 4"
    assert body["seed"] == 11 and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert '"result"' in body["messages"][-1]["content"]


def test_label_model(runtime) -> None:
    g = build_grader({"type": "label_model", "name": "l", "model": "judge", "input": PROMPT,
                      "labels": ["correct", "incorrect"], "passing_labels": ["correct"]}, runtime)
    assert g.grade({"answer": "4"}, sample_of("4")).score == 1.0
    wrong = g.grade({"answer": "4"}, sample_of("5"))
    assert wrong.score == 0.0 and wrong.details["label"] == "incorrect"


def test_garbled_reply_is_the_samples_zero_not_cached(runtime) -> None:
    g = build_grader(_score(), runtime).grade({"answer": "4"}, sample_of("garbled"))
    assert g.score == 0.0 and not g.cacheable and "no score" in g.reason


def test_judge_faults(judge_server, runtime) -> None:
    with pytest.raises(TaskError, match="refused the request \\(404\\)"):
        build_grader(_score("missing"), runtime).grade({"answer": "4"}, sample_of("4"))
    with pytest.raises(VerifierInfraError, match="judge unavailable"):
        build_grader(_score("flaky"), runtime).grade({"answer": "4"}, sample_of("4"))
    down = Runtime(GraderConfig(judge_base_url="http://127.0.0.1:9/v1", judge_timeout_s=2))
    with pytest.raises(VerifierInfraError, match="judge unavailable"):
        build_grader(_score(), down).grade({"answer": "4"}, sample_of("4"))


def test_malformed_model_specs() -> None:
    with pytest.raises(TaskError, match="range must be"):
        build_grader(_score(range=[5, 1]))
    with pytest.raises(TaskError, match="passing_labels"):
        build_grader({"type": "label_model", "name": "l", "model": "m", "input": PROMPT, "labels": ["a"],
                      "passing_labels": ["b"]})
    with pytest.raises(TaskError, match=r"input\[0\] must be a message"):
        build_grader(_score(input=["hi"]))
