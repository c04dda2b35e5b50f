"""RFT's MLflow curves: the sampling round walked in judging order ends at the run's own totals, and the
fine-tuning curve gives the schedule's learning rate per step."""

from __future__ import annotations

import pytest

from flywheel.tasks.suites import train_suite
from flywheel.train.rft.config import RftConfig
from flywheel.train.rft.curves import finetune_curve, sampling_curve
from flywheel.train.rft.data import Candidate, RftCounts, select_examples, verify
from flywheel.train.rft.run import sft_config
from flywheel.verifiers import score


def _candidates() -> list[Candidate]:
    """Per task: a logged gold answer, then policy samples: gold twice (a duplicate), a wrong one, a cut-off gold."""
    out = []
    tasks = train_suite("math", 5) + train_suite("code", 2)
    for t in tasks:
        out.append(Candidate(t, t.solution, "logs"))
    for t in tasks:
        out += [Candidate(t, t.solution, "policy"), Candidate(t, t.solution, "policy"),
                Candidate(t, t.solution + " ", "policy"), Candidate(t, "no idea", "policy"),
                Candidate(t, t.solution + "  ", "policy", truncated=True)]
    verify(out, score)
    return out


@pytest.mark.parametrize("cap", [1, 4])
def test_the_sampling_curve_ends_at_the_run_totals(cap):
    cands = _candidates()
    counts = RftCounts()
    select_examples(cands, cap, seed=0, counts=counts)
    for c in cands:
        counts._bump(c.task.domain, "verified")
        counts._bump(c.task.domain, "log_candidates" if c.source == "logs" else "sampled")
        if c.source == "logs" and c.verdict.passed:
            counts._bump(c.task.domain, "log_passed")
    curve = sampling_curve(cands, cap, points=10)
    assert 8 <= len(curve) <= 10 and curve[-1]["step"] == len(cands)
    assert [p["step"] for p in curve] == sorted({p["step"] for p in curve})  # one point per step, in order
    last = curve[-1]
    assert {k: int(last[f"rft/{k}"]) for k in ("verified", "sampled", "passed", "truncated", "duplicates", "capped",
                                               "examples", "tasks_with_examples", "log_candidates", "log_passed")} \
        == {k: v for k, v in counts.to_dict().items() if k not in ("tasks", "by_domain")}
    policy = [c for c in cands if c.source == "policy"]
    assert last["pass_rate"] == sum(c.verdict.passed for c in policy) / len(policy)
    for d in ("math", "code"):
        mine = [c for c in policy if c.task.domain == d]
        assert last[f"pass_rate/{d}"] == sum(c.verdict.passed for c in mine) / len(mine)
    assert last["kept_rate"] == counts.examples / counts.verified
    assert last["samples/finished_share"] == 1 - sum(c.truncated for c in policy) / len(policy) == 0.8
    # a curve, not a dot: the counts grow along it and the logged answers (judged first) pass alone at first
    assert curve[0]["rft/sampled"] == 0 and "pass_rate" not in curve[0]
    assert [p["rft/verified"] for p in curve] == sorted(p["rft/verified"] for p in curve)
    assert len({p["rft/passed"] for p in curve}) > 3 and curve[-1]["rft/examples"] > curve[0]["rft/examples"]


def test_the_finetune_curve_has_the_schedule_lr_per_step():
    cfg = RftConfig(steps=10, warmup=3, lr=1e-3, batch_size=4)
    spec = sft_config(cfg).optim()
    sched = spec.schedule()
    curve = finetune_curve([2.0 - i / 10 for i in range(10)], lambda i: sched.lr(spec.lr, i), 4, 8)
    assert [p["step"] for p in curve] == list(range(1, 11)) and curve[0]["rft/loss"] == 2.0
    assert [round(p["rft/lr"], 8) for p in curve[:3]] == [round(1e-3 * k / 3, 8) for k in (1, 2, 3)]
    assert curve[3]["rft/lr"] == pytest.approx(1e-3) and curve[-1]["rft/lr"] < 2e-4  # cosine to 10% at the end
    assert curve[1]["rft/epoch"] == 1.0 and curve[-1]["rft/epoch"] == 5.0
    assert sampling_curve([], 4) == []
