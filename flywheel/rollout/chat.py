"""The one chat template: how a task prompt and its response are laid out as text.

SFT, both rollout engines, the trainer and evaluation all call `render_prompt`, so a
model is always sampled in exactly the format it was trained on. A response ends with
`EOS` ("<|end|>"); the engine stops there.
"""

from __future__ import annotations

USER, ASSISTANT, EOS, PAD = "<|user|>", "<|assistant|>", "<|end|>", "<|pad|>"
SPECIAL_TOKENS: tuple[str, ...] = (PAD, EOS, USER, ASSISTANT)
"""Control tokens of the tiny tokenizer, in id order (PAD=0, EOS=1, USER=2, ASSISTANT=3)."""


def render_prompt(domain: str, prompt: str) -> str:
    """The text a model continues to answer `prompt` of `domain` (its reply follows `<|assistant|>`)."""
    return f"{USER}[{domain}] {prompt}\n{ASSISTANT}"


def render_example(domain: str, prompt: str, response: str) -> str:
    """A whole training example: prompt, response, EOS (what SFT learns to produce)."""
    return render_prompt(domain, prompt) + response + EOS
