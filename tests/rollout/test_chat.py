"""The chat template: one prompt format for every domain, examples end with EOS."""

from __future__ import annotations


def test_render_prompt_is_the_one_template():
    from flywheel.rollout.chat import EOS, render_example, render_prompt

    p = render_prompt("math", "What is 2 + 2?")
    assert p.startswith("<|user|>") and p.endswith("<|assistant|>") and "[math] What is 2 + 2?" in p
    assert render_example("math", "What is 2 + 2?", "Answer: 4") == p + "Answer: 4" + EOS
