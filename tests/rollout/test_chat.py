"""Chat templates: every prompt is the checkpoint's own `apply_chat_template`; the tiny models' template is
the project format byte for byte; a checkpoint without a template is refused (tiny builds fall back)."""

from __future__ import annotations

import shutil

import pytest

from flywheel.tasks.suites import heldout_suite

DOMAINS = ("math", "code", "agent")


def _tasks():
    return [t for d in DOMAINS for t in heldout_suite(d, 5)]


def test_render_prompt_is_the_project_format():
    from flywheel.rollout.chat import EOS, render_example, render_prompt

    p = render_prompt("math", "What is 2 + 2?")
    assert p.startswith("<|user|>") and p.endswith("<|assistant|>") and "[math] What is 2 + 2?" in p
    assert render_example("math", "What is 2 + 2?", "Answer: 4") == p + "Answer: 4" + EOS


def test_the_tiny_tokenizer_ships_the_template_and_renders_the_project_format_byte_for_byte(tiny_model_dir):
    from flywheel.rollout import task_prompt
    from flywheel.rollout.chat import (
        CHAT_TEMPLATE,
        chat_example_ids,
        checkpoint_chat_template,
        render_example,
        render_prompt,
    )
    from flywheel.rollout.checkpoint import load_tokenizer

    assert checkpoint_chat_template(tiny_model_dir) == CHAT_TEMPLATE  # saved with the tokenizer at build time
    tok = load_tokenizer(tiny_model_dir)
    for t in _tasks():
        want = render_prompt(t.domain, t.prompt)
        user = [{"role": "user", "content": t.prompt}]
        assert tok.apply_chat_template(user, tokenize=False, add_generation_prompt=True, domain=t.domain) == want
        assert task_prompt(tok, t) == want  # with the agent's tools passed: the tiny template leaves them out
        ids, plen = chat_example_ids(tok, t.domain, t.prompt, t.solution)
        assert tok.decode(ids, skip_special_tokens=False) == render_example(t.domain, t.prompt, t.solution)
        assert ids[:plen] == tok(want, add_special_tokens=False)["input_ids"]


def test_a_real_architecture_checkpoint_is_prompted_in_its_own_template(qwen_checkpoint):
    from flywheel.environments.registry import default_environments
    from flywheel.rollout import task_prompt
    from flywheel.rollout.chat import chat_example_ids
    from flywheel.rollout.checkpoint import load_tokenizer

    tok = load_tokenizer(qwen_checkpoint)
    assert tok.eos_token == "<|im_end|>"
    for t in _tasks():
        tools = default_environments().for_domain(t.domain).tools(t) or None
        user = [{"role": "user", "content": t.prompt}]
        want = tok.apply_chat_template(user, tools=tools, tokenize=False, add_generation_prompt=True)
        got = task_prompt(tok, t)
        assert got == want and got.endswith("<|im_start|>assistant\n") and "<|user|>" not in got
        assert ("<tools>" in got) == (t.domain == "agent")  # the agent's tool schemas, in Qwen's system turn
        ids, plen = chat_example_ids(tok, t.domain, t.prompt, t.solution)
        assert ids[-1] == tok.eos_token_id and tok.decode(ids[:plen], skip_special_tokens=False).endswith(
            "<|im_start|>user\n" + t.prompt + "<|im_end|>\n<|im_start|>assistant\n")


def test_write_chat_template_keeps_the_checkpoints_own(qwen_checkpoint, tmp_path):
    from flywheel.models.random_checkpoint import QWEN_STYLE_TEMPLATE
    from flywheel.rollout.chat import CHAT_TEMPLATE_FILE, write_chat_template

    folder = shutil.copytree(qwen_checkpoint, tmp_path / "qwen")
    (folder / CHAT_TEMPLATE_FILE).unlink()  # the template only in tokenizer_config.json, as older exports have it
    import json

    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    cfg["chat_template"] = QWEN_STYLE_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    assert write_chat_template(folder).read_text() == QWEN_STYLE_TEMPLATE


def test_a_tiny_build_without_a_template_falls_back_and_any_other_checkpoint_is_refused(
        tiny_model_dir, qwen_checkpoint, tmp_path):
    from flywheel.rollout.chat import (
        CHAT_TEMPLATE,
        CHAT_TEMPLATE_FILE,
        MissingChatTemplate,
        chat_prompt,
        render_prompt,
        write_chat_template,
    )
    from flywheel.rollout.checkpoint import load_tokenizer

    old = shutil.copytree(tiny_model_dir, tmp_path / "tiny-v1")  # as built before tokenizers carried it
    (old / CHAT_TEMPLATE_FILE).unlink()
    assert chat_prompt(load_tokenizer(old), "math", "What is 1 + 2?") == render_prompt("math", "What is 1 + 2?")
    assert write_chat_template(old).read_text() == CHAT_TEMPLATE
    bare = shutil.copytree(qwen_checkpoint, tmp_path / "no-template")
    (bare / CHAT_TEMPLATE_FILE).unlink()
    tok = load_tokenizer(bare)
    assert tok.chat_template is None
    with pytest.raises(MissingChatTemplate, match="no chat template.*chat_template.jinja"):
        chat_prompt(tok, "math", "What is 1 + 2?")
    with pytest.raises(MissingChatTemplate):
        write_chat_template(bare)
