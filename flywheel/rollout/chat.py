"""Chat templates: how a task prompt is laid out as text for the checkpoint that answers it.

Every prompt a model sees (SFT, both rollout engines, the trainer, evaluation, production traffic,
`flywheel serve`) is rendered by the checkpoint's own chat template
(`tokenizer.apply_chat_template`, with the task's tools where the environment declares them and
`domain=` as a template variable), so a brought Qwen or Llama is sampled in the format it was
trained on. A response ends with the tokenizer's EOS; the engines stop there.

The project's tiny models ship `CHAT_TEMPLATE` in their tokenizer files: user turns
`<|user|>[domain] text\\n`, assistant turns `<|assistant|>text<|end|>` (`render_prompt` and
`render_example` write the same text without a tokenizer). A tiny model built before its tokenizer
carried the template (no `chat_template` in its files, the project's control tokens at ids 0-3) gets
`CHAT_TEMPLATE` when loaded: the one documented fallback. Any other checkpoint without a template is
refused with `MissingChatTemplate` (add one: a `chat_template.jinja` in the folder).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

USER, ASSISTANT, EOS, PAD = "<|user|>", "<|assistant|>", "<|end|>", "<|pad|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, EOS, USER, ASSISTANT)
"""Control tokens of the tiny tokenizer, in id order (PAD=0, EOS=1, USER=2, ASSISTANT=3)."""


def render_prompt(domain: str, prompt: str) -> str:
    """The project format's prompt text (what `CHAT_TEMPLATE` renders; its reply follows `<|assistant|>`)."""
    return f"{USER}[{domain}] {prompt}\n{ASSISTANT}"


def render_example(domain: str, prompt: str, response: str) -> str:
    """A whole training example in the project format: prompt, response, EOS."""
    return render_prompt(domain, prompt) + response + EOS


CHAT_TEMPLATE_FILE = "chat_template.jinja"
"""The template's file in a checkpoint folder (what transformers and vLLM load)."""

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
"""The tiny models' Jinja template (`render_prompt`/`render_example` byte for byte): user turns
`<|user|>[domain] text\\n`, assistant turns `<|assistant|>text<|end|>`; system messages and tools are
not part of the trained format and are left out."""


class MissingChatTemplate(ValueError):
    """A checkpoint whose tokenizer has no chat template (and is not one of the project's tiny models)."""


def is_project_tokenizer(tokenizer: Any) -> bool:
    """True for the project's BPE tokenizer (its control tokens at ids 0-3, in `SPECIAL_TOKENS` order)."""
    try:
        return list(tokenizer.convert_ids_to_tokens([0, 1, 2, 3])) == list(SPECIAL_TOKENS)
    except (IndexError, KeyError, TypeError, ValueError):
        return False


def with_fallback_template(tokenizer: Any) -> Any:
    """`tokenizer`, given `CHAT_TEMPLATE` when it is a project tokenizer built before tokenizers carried it
    (what `load_tokenizer` does to every tokenizer it loads); any other tokenizer is left as it is."""
    if not getattr(tokenizer, "chat_template", None) and is_project_tokenizer(tokenizer):
        tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def ensure_chat_template(tokenizer: Any, source: str | Path = "") -> Any:
    """`tokenizer` with a chat template (`with_fallback_template` applied); none raises `MissingChatTemplate`."""
    if getattr(with_fallback_template(tokenizer), "chat_template", None):
        return tokenizer
    raise MissingChatTemplate(
        f"checkpoint {str(source) or type(tokenizer).__name__} has no chat template: flywheel prompts every "
        f"model in its own template (a base model sampled in a foreign format answers badly). Add one: put the "
        f"model family's Jinja template in {CHAT_TEMPLATE_FILE} in the checkpoint folder (or `chat_template` "
        f"in tokenizer_config.json); to prompt it in flywheel's own format, write "
        f"flywheel.rollout.chat.CHAT_TEMPLATE there")


def chat_prompt(tokenizer: Any, domain: str, prompt: str, tools: Sequence[dict] | None = None) -> str:
    """The text `tokenizer`'s checkpoint continues to answer `prompt` (one user turn, generation prompt on;
    `tools`: the task's function schemas, for templates that render them; `domain` a template variable)."""
    ensure_chat_template(tokenizer)
    return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tools=list(tools) if tools else None,
                                         tokenize=False, add_generation_prompt=True, domain=domain)


def chat_example_ids(tokenizer: Any, domain: str, prompt: str, response: str) -> tuple[list[int], int]:
    """(ids, prompt length) of a training example: the chat prompt, the response, EOS."""
    p = tokenizer(chat_prompt(tokenizer, domain, prompt), add_special_tokens=False)["input_ids"]
    r = tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return list(p) + list(r), len(p)


def checkpoint_chat_template(model_dir: str | Path) -> str | None:
    """The template a checkpoint folder ships (`chat_template.jinja`, else tokenizer_config.json's default
    `chat_template`), read from the files alone; None when it has none."""
    p = Path(model_dir)
    if (p / CHAT_TEMPLATE_FILE).is_file():
        return (p / CHAT_TEMPLATE_FILE).read_text()
    try:
        tpl = json.loads((p / "tokenizer_config.json").read_text()).get("chat_template")
    except (OSError, json.JSONDecodeError):
        return None
    if isinstance(tpl, list):  # named templates: [{"name": "default", "template": ...}, ...]
        named = {t.get("name"): t.get("template") for t in tpl if isinstance(t, dict)}
        tpl = named.get("default")
    return tpl or None


def write_chat_template(model_dir: str | Path) -> Path:
    """`chat_template.jinja` in the checkpoint folder (what `vllm serve --chat-template` loads): the
    checkpoint's own template, `CHAT_TEMPLATE` for a project tokenizer without one, else `MissingChatTemplate`."""
    path = Path(model_dir) / CHAT_TEMPLATE_FILE
    own = checkpoint_chat_template(model_dir)
    if own is None:
        from flywheel.rollout.checkpoint import load_tokenizer  # heavy: transformers

        own = ensure_chat_template(load_tokenizer(model_dir), model_dir).chat_template  # the fallback, or refused
    if not path.is_file() or path.read_text() != own:
        path.write_text(own)
    return path
