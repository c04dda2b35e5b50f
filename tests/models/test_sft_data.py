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

    from flywheel.models.sft_data import scratchpad
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
