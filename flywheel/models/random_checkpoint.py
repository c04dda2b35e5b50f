"""A real-architecture checkpoint built offline: random Qwen2 weights and a tokenizer with a Qwen-style template.

What a brought checkpoint looks like, without downloading one: `Qwen2ForCausalLM` (grouped-query attention,
q/k/v biases, tied embeddings) at a tiny shape for tests or the Qwen2.5-0.5B shape for the GPU check, and a
byte-level BPE tokenizer trained on the task corpus whose control tokens are Qwen's (`<|im_start|>`,
`<|im_end|>` as EOS, `<|endoftext|>` as pad) and whose chat template is Qwen2.5's Jinja (system turn, tools
in `<tools>`, `<tool_call>` replies, tool results as `<tool_response>` user turns). The answers are noise;
what it tests is that everything that renders a prompt uses this template, not the project's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

QWEN_STYLE_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n"
    "You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": "
    "<args-json-object>}\\n</tool_call><|im_end|>\\n' }}"
    "{%- else %}{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    "<|im_end|>\\n' }}{%- endif %}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or "
    "(message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' }}{{- tool_call.name }}{{- '\", \"arguments\": ' }}"
    "{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != 'tool') %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""Qwen2.5-Instruct's chat template (tools included), as its tokenizer_config.json ships it."""

QWEN_SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_ADDED = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")

SHAPES: dict[str, dict[str, Any]] = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                 num_key_value_heads=1, max_position_embeddings=512, vocab_size=0),
    "small": dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=2, max_position_embeddings=2048, vocab_size=32000),
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, max_position_embeddings=32768, vocab_size=151936),
}
"""Model shapes: `tiny` (head_dim 32, what vLLM's CPU attention accepts; vocab = the tokenizer's), `small`
(~40M parameters: what a CPU benchmark of training costs can afford) and Qwen2.5-0.5B's (494M parameters with
its 151,936-row embedding)."""


def qwen_style_tokenizer(vocab_size: int = 400) -> Any:
    """A BPE tokenizer trained on the task corpus with Qwen's control tokens and chat template."""
    from transformers import PreTrainedTokenizerFast

    from flywheel.models.tokenizer import train_bpe
    from flywheel.tasks.suites import DOMAINS, train_suite

    corpus = [f"{t.prompt}\n{t.solution}" for d in DOMAINS for t in train_suite(d, 60)]
    corpus += ["You are Qwen, created by Alibaba Cloud. You are a helpful assistant. user assistant system"]
    tok = PreTrainedTokenizerFast(tokenizer_object=train_bpe(corpus, vocab_size, QWEN_SPECIAL, QWEN_ADDED),
                                  eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  additional_special_tokens=["<|im_start|>"])
    tok.padding_side = "left"
    tok.chat_template = QWEN_STYLE_TEMPLATE
    return tok


def build_random_checkpoint(path: str | Path, shape: str = "tiny", seed: int = 0, dtype: str = "float32",
                            max_position: int | None = None) -> Path:
    """A randomly initialised `Qwen2ForCausalLM` of `shape` and `qwen_style_tokenizer()`, saved as an HF
    checkpoint folder at `path` (seconds for `tiny`; the `0.5b` shape writes ~2 GB in float32)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = qwen_style_tokenizer()
    dims = dict(SHAPES[shape])
    dims["vocab_size"] = max(dims["vocab_size"], len(tok))
    if max_position:
        dims["max_position_embeddings"] = max_position
    cfg = Qwen2Config(**dims, tie_word_embeddings=True, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                      bos_token_id=None, rope_theta=1_000_000.0, rms_norm_eps=1e-6)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(cfg).to(getattr(torch, dtype))
    Path(path).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return Path(path)
