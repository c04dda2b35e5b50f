"""Scoring reasoning-gym answers never runs them: safe parsers, a one-shot child per verdict, a deadline."""

from __future__ import annotations

import os
import time

import pytest

from flywheel.environments import rg_scoring
from flywheel.environments.reasoning_gym import ReasoningGymEnvironment, extract_answer, probe_forms
from flywheel.verifiers.batch import score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.registry import VerifierRegistry

ENV = ReasoningGymEnvironment()
EVALUATING = ("countdown", "spiral_matrix", "string_insertion", "binary_matrix")


def _task(name: str, seed: int = 3):
    return ENV.tasks(f"rg.{name}", "train", 1, seed=seed)[0]


@pytest.mark.parametrize("name", EVALUATING)
def test_an_answer_that_is_code_is_never_run(name: str, tmp_path) -> None:
    """Upstream `eval`s these answers (or hands them to sympy's parse_expr): here the file is never made."""
    marker = tmp_path / "ran"
    t = _task(name)
    for code in (f"__import__('pathlib').Path({str(marker)!r}).write_text('x') or [1]",
                 f"[open({str(marker)!r}, 'w').write('x')]"):
        v = ENV.verify(t, f"Answer: {code}")
        assert v.reward == 0.0 and not v.passed, v
    assert not marker.exists()
    assert ENV.verify(t, t.solution).reward == 1.0


def test_a_patching_answer_cannot_make_later_wrong_answers_pass(tmp_path) -> None:
    """The attack: patch the verifier from inside an answer, then a wrong answer passes and is cached."""
    mod = "__import__('flywheel.environments.reasoning_gym', fromlist=['x'])"
    patch = f"{mod}.__dict__.update(failed={mod}.passed) or [1]"  # every later failure would pass
    cache = VerdictCache(str(tmp_path / "c.duckdb"))
    reg = VerifierRegistry()
    items = []
    for name in EVALUATING:
        t = _task(name)
        task = {"task_id": t.task_id, "prompt": t.prompt, **t.reference}
        items += [(t.domain, task, f"Answer: {patch}"), (t.domain, task, ENV.wrong_response(t))]
    got = score_batch(items, registry=reg, cache=cache)
    assert [v.reward for v in got] == [0.0] * len(items)
    again = score_batch(items, registry=reg, cache=cache)
    assert [v.reward for v in again] == [0.0] * len(items) and cache.hits == len(items)
    cache.close()


def test_countdown_arithmetic_is_bounded_and_uses_each_number_once() -> None:
    t = _task("countdown")
    meta = t.reference["entry"]["metadata"]
    nums, target = meta["numbers"], meta["target"]
    assert ENV.verify(t, t.solution).passed
    t0 = time.monotonic()
    for bad in ("9**9**9", "9" + "*9" * 60, "(" * 150 + "1" + ")" * 150, "E", "pi*0 + 1", "x",
                " + ".join(map(str, nums)) + f" - {sum(nums)} + {target}",  # extra numbers
                " + ".join(map(str, nums[:-1])),  # a number left out
                f"{target}"):
        assert ENV.verify(t, f"Answer: {bad}").reward == 0.0, bad
    assert time.monotonic() - t0 < 10
    assert rg_scoring.arithmetic("-1 + 72*(89 - 77)/1") == (863, [1, 72, 89, 77, 1])
    with pytest.raises(rg_scoring.Refused):
        rg_scoring.arithmetic("2**3")
    with pytest.raises(rg_scoring.Refused):
        rg_scoring.arithmetic("1/0")


def _sleeps(answer, entry):
    time.sleep(60)


def _mutates(answer, entry):
    rg_scoring.SAFE_SCORERS.clear()
    print("chatter on stdout")
    os.write(2, b"chatter on stderr\n")
    return 1.0


def _raises(answer, entry):
    raise ZeroDivisionError("nope")


def test_every_scorer_runs_in_a_child_under_a_deadline(capfd) -> None:
    t0 = time.monotonic()
    assert rg_scoring.score_isolated(_sleeps, "a", {}, deadline_s=0.5)["error"] == "deadline"
    assert time.monotonic() - t0 < 5
    assert rg_scoring.score_isolated(_mutates, "a", {}) == {"score": 1.0}
    assert set(rg_scoring.SAFE_SCORERS) == set(EVALUATING)  # the child's change stayed in the child
    assert capfd.readouterr() == ("", "")  # nor did its output reach ours
    assert rg_scoring.score_isolated(_raises, "a", {})["error"] == "ZeroDivisionError"


def test_a_scorer_past_its_deadline_is_a_failed_uncached_verdict() -> None:
    env = ReasoningGymEnvironment(names=("gcd",), scorer_deadline_s=0.5)
    t = env.tasks("rg.gcd", "train", 1, seed=1)[0]
    env._scorers["gcd"] = _sleeps
    v = env.verify(t, t.solution)
    assert not v.passed and "deadline" in v.reason and v.details["cacheable"] is False


def test_version_is_keyed_by_the_verifier_code() -> None:
    import hashlib

    from flywheel.environments import reasoning_gym

    h = hashlib.sha256()
    for f in (reasoning_gym.__file__, rg_scoring.__file__):
        h.update(open(f, "rb").read())
    assert ENV.version.endswith("+" + h.hexdigest()[:12])


@pytest.mark.parametrize("name", ["cryptarithm", "polynomial_equations", "advanced_geometry", "isomorphic_strings",
                                  "countdown", "basic_arithmetic"])
def test_lenient_forms_are_refused(name: str) -> None:
    """Two mappings or points, a hedge after </answer>, trailing or leading words: each 0.0; gold 1.0."""
    for t in ENV.tasks(f"rg.{name}", "train", 3, seed=7):
        gold = t.reference["answer"]
        assert ENV.verify(t, f"<answer>{gold}</answer>").reward == 1.0
        for probe, text in probe_forms(gold, "0"):
            v = ENV.verify(t, text)
            assert v.reward == 0.0, (probe, text, v)


def test_text_after_the_answer_tag_is_a_hedge() -> None:
    assert extract_answer("<answer>4</answer> or 5")[0] is None
    assert extract_answer("reasoning <answer>4</answer>\n  ")[0] == "4"
