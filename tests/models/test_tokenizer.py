"""The project's tokenizer: lossless round trips, chat and tool markers are single tokens, digits split."""

from __future__ import annotations


def _corpus():
    from flywheel.rollout.chat import render_example
    from flywheel.tasks.suites import heldout_suite

    return [render_example(d, t.prompt, t.solution) for d in ("math", "code", "agent") for t in heldout_suite(d, 10)]


def test_tokenizer_round_trips_and_keeps_markers_whole(tiny_model):
    _, tok = tiny_model
    for text in _corpus() + ["unseen: 𝛑 ü ≠ \t tabs", ""]:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert tok.decode(ids, skip_special_tokens=False) == text
    for marker in ("<tool_call>", "</tool_call>", "<tool_result>", "</tool_result>", "<|assistant|>", "<|end|>"):
        ids = tok(marker, add_special_tokens=False)["input_ids"]
        assert len(ids) == 1, marker
    assert tok.convert_ids_to_tokens(tok.eos_token_id) == "<|end|>"
    assert tok.pad_token_id != tok.eos_token_id and tok.padding_side == "left"
    assert tok(" 123", add_special_tokens=False)["input_ids"][-3:] == [tok.convert_tokens_to_ids(c) for c in "123"]
