"""A byte-level BPE tokenizer trained offline on the demo task corpus.

Digits are split one per token (arithmetic generalises better), the chat control
tokens are special, and the tool-call markers are added tokens so a call's boundaries
are single tokens (the multi-step engine stops on `</tool_call>` by id). The result is
a `PreTrainedTokenizerFast` carrying the project's chat template (`flywheel.rollout.chat.CHAT_TEMPLATE`),
saved next to the model and loaded by the same HF loader.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from flywheel.environments.toolcalls import CALL_CLOSE, CALL_OPEN, RESULT_CLOSE, RESULT_OPEN
from flywheel.rollout.chat import ASSISTANT, CHAT_TEMPLATE, EOS, PAD, SPECIAL_TOKENS, USER

TOOL_TOKENS: tuple[str, ...] = (CALL_OPEN, CALL_CLOSE, RESULT_OPEN, RESULT_CLOSE)


def train_tokenizer(corpus: Iterable[str], vocab_size: int = 1024) -> PreTrainedTokenizerFast:
    """Train BPE on `corpus` (deterministic for the same corpus) and wrap it for `transformers`."""
    return wrap(train_bpe(corpus, vocab_size, SPECIAL_TOKENS, TOOL_TOKENS))


def train_bpe(corpus: Iterable[str], vocab_size: int, special: Sequence[str], added: Sequence[str] = ()) -> Tokenizer:
    """Byte-level BPE over `corpus`, digits one per token, `special` tokens first (ids 0..), `added` after."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(corpus), trainer=trainer)
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in added])
    return tok


def wrap(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """The HF wrapper with the chat control tokens named (pad, eos, bos) and the project's chat template
    (saved with it: the tiny model is prompted through `apply_chat_template` like any checkpoint)."""
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD, eos_token=EOS, bos_token=USER, unk_token=None,
        additional_special_tokens=[ASSISTANT],
    )
    fast.padding_side = "left"
    fast.chat_template = CHAT_TEMPLATE
    return fast
