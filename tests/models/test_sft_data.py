"""The SFT data mix: a share of math answers perturbed on purpose, and scratchpads that are arithmetically true."""

from __future__ import annotations


def test_sft_mix_perturbs_a_share_of_math_answers():
    from dataclasses import replace

    from flywheel.models.recipe import QUICK
    from flywheel.models.sft_data import sft_mix
    from flywheel.tasks.suites import train_suite

    gold = {t.prompt: t.reference["answer"] for t in train_suite("math", QUICK.n_math)}
    mix = sft_mix(replace(QUICK, math_noise=0.5))
    wrong = [r for d, p, r in mix if d == "math" and not r.endswith(f"Answer: {gold[p]}")]
    assert 0.35 < len(wrong) / len(gold) < 0.65
    assert all(r.split("Answer: ")[-1].isdigit() for r in wrong)
    assert {d for d, _, _ in mix} == {"math", "code", "agent"}
    clean = sft_mix(replace(QUICK, math_noise=0.0))
    assert all(r.endswith(f"Answer: {gold[p]}") for d, p, r in clean if d == "math")


def test_math_scratchpad_is_arithmetically_true():
    import re

    from flywheel.environments.targets import scratchpad
    from flywheel.tasks.suites import train_suite

    tasks = train_suite("math", 300)
    for t in tasks:
        s = scratchpad(t.solution)
        assert s.endswith(f"Answer: {t.reference['answer']}")
        for expr, val in re.findall(r"(\d+(?:[+\-*]\d+)+)=(\d+)", s):  # every digit step and direct op
            assert eval(expr) == int(val), (t.solution, s)
        for a, op, b, res in re.findall(r"(\d+)([+\-*])(\d+): .*? so (\d+)", s):
            assert eval(f"{a}{op}{b}") == int(res)
    assert scratchpad("36 + 45 = 81. Answer: 81") == "36+45: 6+5=11, 3+4+1=8 so 81. Answer: 81"
    assert scratchpad("31 - 16 = 15. Answer: 15") == "31-16: 11-6=5, 2-1=1 so 15. Answer: 15"
    assert scratchpad("4 * 16 = 64. Answer: 64") == "4*16: 4*6=24, 4*1+2=6 so 64. Answer: 64"


def test_agent_targets_direct_or_with_a_worked_plan():
    from dataclasses import replace

    from flywheel.environments.agent import AgentEnvironment
    from flywheel.environments.agent.plan import parse_plan
    from flywheel.models.recipe import QUICK
    from flywheel.models.sft_data import sft_mix
    from flywheel.tasks.suites import train_suite

    tasks = {t.prompt: t for t in train_suite("agent", QUICK.n_agent)}
    direct = [(p, r) for d, p, r in sft_mix(QUICK) if d == "agent"]
    assert [r for _, r in direct] == [tasks[p].solution for p, _ in direct]  # as every earlier build saw it
    plan = [(p, r) for d, p, r in sft_mix(replace(QUICK, agent_format="plan")) if d == "agent"]
    assert [p for p, _ in plan] == [p for p, _ in direct]
    env = AgentEnvironment()
    for p, r in plan:
        assert parse_plan(r) and env.verify(tasks[p], r).passed


def test_code_levels_draw_code_sft_data_per_level():
    from dataclasses import replace

    import pytest

    from flywheel.environments.code import CodeEnvironment
    from flywheel.models.recipe import QUICK
    from flywheel.models.sft_data import code_tasks
    from flywheel.tasks.suites import train_suite

    if not CodeEnvironment.levels_:  # one suite: the default asks for it, as before levels existed
        assert code_tasks(QUICK) == train_suite("code", QUICK.n_code)
        with pytest.raises(ValueError, match="no levels"):
            code_tasks(replace(QUICK, code_levels=(1, 2)))
        return
    env = CodeEnvironment()
    one = code_tasks(QUICK)
    assert {t.task_id for t in one} == {t.task_id for t in env.tasks("code", "train", QUICK.n_code, 1_000, level=1)}
    every = code_tasks(replace(QUICK, code_levels=CodeEnvironment.levels_))
    assert {t.task_id for t in one} <= {t.task_id for t in every}
