"""Multi-step tool rollouts: sample until a complete `<tool_call>`, run it, splice in the result, go on.

Every active sample advances one segment per round (batched): the engine samples until
EOS, `</tool_call>`, a stop string or the token budget; a complete call is parsed and
executed in that sample's own environment; the `<tool_result>…</tool_result>` text is
tokenized and appended with loss_mask 0 and logprob 0 (the policy did not choose it).
An illegal or unparsable call becomes an `error: …` result the model sees, never a
crash. A sample ends on EOS, a successful `finish` call, a turn that runs out of its token
budget (`sampling.max_new_tokens` sampled tokens per turn, i.e. between two tool calls),
or after `max_steps` calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from flywheel.environments.toolcalls import CALL_CLOSE, first_call_end, format_result, parse_call
from flywheel.rollout.base import ToolEnv, ToolFactory
from flywheel.rollout.types import Rollout, SamplingParams, ToolStep

FINISH_TOOL = "finish"


@dataclass
class _State:
    prompt_idx: int
    prompt_ids: list[int]
    env: ToolEnv | None
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    steps: list[ToolStep] = field(default_factory=list)
    done: bool = False
    finish_reason: str = "max_steps"


def execute_call(env: ToolEnv, call_text: str) -> ToolStep:
    """Run the call in `call_text` (`<tool_call>{json}</tool_call>`) against `env`; errors become results."""
    start = call_text.rfind("<tool_call>")
    raw = call_text[start + len("<tool_call>"): call_text.rfind(CALL_CLOSE)] if start >= 0 else ""
    call = parse_call(raw)
    if call.error:
        return ToolStep(call_text=call_text, result_text=f"error: {call.error}", error=call.error)
    try:
        return ToolStep(call_text=call_text, result_text=str(env.call(call.name, call.arguments)))
    except Exception as e:  # illegal call: the model sees the reason and may recover
        return ToolStep(call_text=call_text, result_text=f"error: {e}", error=f"{type(e).__name__}: {e}")


def multistep_generate(engine: Any, prompts: Sequence[str], n_samples: int, sampling: SamplingParams,
                       tools: Sequence[ToolFactory | None], max_steps: int) -> list[Rollout]:
    """Prompt-major rollouts with tool calls executed (see module docstring). `engine` is a TorchEngine."""
    import torch  # heavy: `flywheel.rollout` itself stays importable without loading torch

    if len(tools) != len(prompts):
        raise ValueError(f"tools has {len(tools)} entries for {len(prompts)} prompts")
    close_id = engine.tokenizer.convert_tokens_to_ids(CALL_CLOSE)
    close_ids = {close_id} if isinstance(close_id, int) and close_id != engine.tokenizer.unk_token_id else set()
    prompt_ids = [engine.encode(p) for p in prompts]
    states = [_State(i, prompt_ids[i], tools[i]() if tools[i] is not None else None)
              for i in range(len(prompts)) for _ in range(n_samples)]
    gen = torch.Generator(device=engine.device).manual_seed(sampling.seed)
    for _round in range(max(1, max_steps) + 1):
        active = [s for s in states if not s.done]
        if not active:
            break
        samples = engine.sample_ids(
            [s.prompt_ids + s.token_ids for s in active], sampling,
            max_new_tokens=sampling.max_new_tokens,
            stop_token_ids=[close_ids if s.env is not None else set() for s in active],
            stop_strings=tuple(sampling.stop) + ((CALL_CLOSE,) if not close_ids else ()),
            generator=gen,
        )
        for s, smp in zip(active, samples, strict=False):
            s.token_ids += smp.token_ids
            s.logprobs += smp.logprobs
            s.loss_mask += [1] * len(smp.token_ids)
            _advance(engine, s, smp, sampling, max_steps)
    return [_to_rollout(engine, prompts, s, n_samples, k) for k, s in enumerate(states)]


def _advance(engine: Any, s: _State, smp: Any, sampling: SamplingParams, max_steps: int) -> None:
    """After one segment: stop, or run the call it ended with and splice the result in."""
    if smp.token_ids and smp.token_ids[-1] == engine.eos_id:
        s.done, s.finish_reason = True, "stop"
        return
    seg = engine.tokenizer.decode(smp.token_ids, skip_special_tokens=False)
    end = first_call_end(seg)
    if s.env is None or end is None:
        s.done = True
        s.finish_reason = "length" if smp.finish_reason == "length" else "stop"
        return
    step = execute_call(s.env, seg[:end])
    s.steps.append(step)
    result_ids = engine.encode(format_result(step.result_text))
    s.token_ids += result_ids
    s.logprobs += [0.0] * len(result_ids)
    s.loss_mask += [0] * len(result_ids)
    called_finish = step.error is None and bool(getattr(s.env, "done", False))
    if called_finish:
        s.done, s.finish_reason = True, "stop"
    elif len(s.steps) >= max_steps:
        s.done, s.finish_reason = True, "max_steps"


def _to_rollout(engine: Any, prompts: Sequence[str], s: _State, n_samples: int, k: int) -> Rollout:
    return Rollout(
        prompt=prompts[s.prompt_idx], prompt_ids=list(s.prompt_ids), token_ids=s.token_ids, logprobs=s.logprobs,
        loss_mask=s.loss_mask, text=engine.decode_response(s.token_ids), policy_version=engine.policy_version,
        group_id=s.prompt_idx, steps=s.steps, finish_reason=s.finish_reason, meta={"sample": k % n_samples},
    )
