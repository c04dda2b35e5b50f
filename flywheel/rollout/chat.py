"""The one chat template: how a task prompt and its response are laid out as text.

SFT, both rollout engines, the trainer and evaluation all call `render_prompt`, so a
model is always sampled in exactly the format it was trained on. A response ends with
`EOS` ("<|end|>"); the engine stops there.
"""

from __future__ import annotations

from pathlib import Path

USER, ASSISTANT, EOS, PAD = "<|user|>", "<|assistant|>", "<|end|>", "<|pad|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, EOS, USER, ASSISTANT)
"""Control tokens of the tiny tokenizer, in id order (PAD=0, EOS=1, USER=2, ASSISTANT=3)."""


def render_prompt(domain: str, prompt: str) -> str:
    """The text a model continues to answer `prompt` of `domain` (its reply follows `<|assistant|>`)."""
    return f"{USER}[{domain}] {prompt}\n{ASSISTANT}"


def render_example(domain: str, prompt: str, response: str) -> str:
    """A whole training example: prompt, response, EOS (what SFT learns to produce)."""
    return render_prompt(domain, prompt) + response + EOS


CHAT_TEMPLATE_FILE = "chat_template.jinja"
"""Where `write_chat_template` puts the template in a model folder (what the tokenizer and vLLM load)."""

CHAT_TEMPLATE = (
    "{%- set d = domain if domain is defined and domain else '' -%}"
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'user' -%}"
    "{{- '" + USER + "' + ('[' + d + '] ' if d else '') + m['content'] + '\\n' -}}"
    "{%- elif m['role'] == 'assistant' -%}"
    "{{- '" + ASSISTANT + "' + m['content'] + '" + EOS + "' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '" + ASSISTANT + "' -}}{%- endif -%}"
)
"""Jinja for `render_prompt`/`render_example`: user turns `<|user|>[domain] text\\n`, assistant turns
`<|assistant|>text<|end|>`; system messages are not part of the trained format and are left out."""


def write_chat_template(model_dir: str | Path) -> Path:
    """Write the project's chat template into the checkpoint folder (what the tokenizer and vLLM load)."""
    path = Path(model_dir) / CHAT_TEMPLATE_FILE
    path.write_text(CHAT_TEMPLATE)
    return path
