"""`{{item.*}}` / `{{sample.*}}` rendering: nested paths, list indexes, JSON output, tool calls; a missing item
field is the task's error, a missing sample field renders empty."""

from __future__ import annotations

import pytest

from flywheel.environments.verdict import TaskError
from flywheel.verifiers.graders.template import render, sample_of


def test_sample_of_text_json_and_tool_calls() -> None:
    s = sample_of('{"answer": 7, "why": ["x"]}')
    assert s["output_json"] == {"answer": 7, "why": ["x"]} and s["output_tools"] == []
    msgs = [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": "done", "tool_calls": [{"type": "function", "function": {"name": "f"}}]}]
    s = sample_of(msgs)
    assert s["output_text"] == "done" and s["output_json"] is None
    assert s["output_tools"][0]["function"]["name"] == "f"
    assert s["choices"][0]["message"]["content"] == "done"


def test_render_paths() -> None:
    item = {"ref": {"answers": ["4", "four"]}, "n": 3}
    sample = sample_of('{"answer": 4}')
    t = "{{ item.ref.answers[1] }}|{{item.n}}|{{sample.output_json.answer}}|{{sample.output_json.missing}}|{{item.ref}}"
    assert render(t, item, sample) == 'four|3|4||{"answers": ["4", "four"]}'
    assert render("{{sample.choices[0].message.content}}", item, sample_of("hi")) == "hi"


def test_missing_item_field_and_unknown_namespace() -> None:
    with pytest.raises(TaskError, match="the task has no field 'answer'"):
        render("{{item.answer}}", {}, sample_of("x"))
    with pytest.raises(TaskError, match="unknown namespace 'env'"):
        render("{{env.HOME}}", {}, sample_of("x"))
