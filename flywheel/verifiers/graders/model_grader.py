"""`score_model` and `label_model` graders: a judge model behind any OpenAI-compatible chat-completions endpoint
(`GraderConfig.judge_base_url`: OpenAI, a vLLM server, `flywheel serve`), called with the `openai` client.

The spec's `input` messages are rendered (`{{item.*}}`, `{{sample.*}}`) and one system message is appended
saying how to answer (`{"result": number}` in the spec's `range`, or one of its `labels`). The reply is data: it
is parsed (a JSON object, else the last number / the one label named), never run. The sample is inside the
judge's prompt, so what it makes the judge say is the sample's doing: a reply that does not parse or is out of
range scores 0 (not cached). A judge that cannot be reached or fails server-side is an infrastructure error
(retried); one that refuses the request (bad model name, bad key) is the spec's error (`TaskError`).
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from typing import Any

from flywheel.environments.verdict import TaskError, VerifierInfraError
from flywheel.verifiers.graders.base import Graded, Runtime, need, threshold
from flywheel.verifiers.graders.template import render

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_SAMPLING = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "max_completions_tokens": "max_tokens",
             "max_tokens": "max_tokens", "reasoning_effort": "reasoning_effort"}
_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client(runtime: Runtime) -> Any:
    """One `openai.OpenAI` per endpoint/key/timeout, shared by the grading threads (retries are flywheel's)."""
    import openai  # loaded with the first model grade

    cfg = runtime.config
    key = os.environ.get(cfg.judge_api_key_env) or "unset"
    ident = (cfg.judge_base_url, key, cfg.judge_timeout_s)
    with _CLIENTS_LOCK:
        if ident not in _CLIENTS:
            _CLIENTS[ident] = openai.OpenAI(base_url=cfg.judge_base_url, api_key=key, timeout=cfg.judge_timeout_s,
                                            max_retries=0)
        return _CLIENTS[ident]


def _content(content: Any, item: dict[str, Any], sample: dict[str, Any], where: str) -> str:
    """A message content rendered to text (a string, or a list of `input_text`/`text` parts)."""
    if isinstance(content, str):
        return render(content, item, sample)
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("input_text", "text")]
        return "".join(render(t, item, sample) for t in texts if isinstance(t, str))
    raise TaskError(f"{where}: a message content must be text or text parts, got {type(content).__name__}")


class _ModelGrader:
    kind = ""

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        self.where = f"{spec.get('type')} grader {spec.get('name', '')!r}"
        self.name = str(spec.get("name") or spec.get("type"))
        self.model = need(spec, "model", str, self.where)
        self.input = need(spec, "input", list, self.where)
        for i, m in enumerate(self.input):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str) or "content" not in m:
                raise TaskError(f"{self.where}: input[{i}] must be a message with role and content")
        params = spec.get("sampling_params") or {}
        if not isinstance(params, dict):
            raise TaskError(f"{self.where}: sampling_params must be an object")
        self.params = {_SAMPLING[k]: v for k, v in params.items() if k in _SAMPLING and v is not None}
        self.runtime = runtime

    def ask(self, item: dict[str, Any], sample: dict[str, Any], instruction: str) -> str:
        import openai

        messages = [{"role": m["role"], "content": _content(m["content"], item, sample, self.where)}
                    for m in self.input] + [{"role": "system", "content": instruction}]
        cfg = self.runtime.config
        kw = {"seed": cfg.judge_seed, **self.params}
        try:
            resp = client(self.runtime).chat.completions.create(model=cfg.judge_model or self.model,
                                                                messages=messages, **kw)
        except (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                openai.InternalServerError) as e:
            raise VerifierInfraError(f"{self.where}: judge unavailable: {type(e).__name__}: {e}") from e
        except openai.APIStatusError as e:
            raise TaskError(f"{self.where}: the judge refused the request ({e.status_code}): {e.message}") from e
        try:
            return str(resp.choices[0].message.content or "")
        except (AttributeError, IndexError, TypeError) as e:
            raise VerifierInfraError(f"{self.where}: judge reply has no message: {e}") from e


def _json_field(reply: str, *keys: str) -> Any:
    m = re.search(r"\{.*\}", reply, re.S)
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except (ValueError, RecursionError):
        return None
    return next((obj[k] for k in keys if isinstance(obj, dict) and k in obj), None)


class ScoreModelGrader(_ModelGrader):
    """`{"type": "score_model", "name", "model", "input", "range"?: [lo, hi], "sampling_params"?, "pass_threshold"?}`."""

    kind, binary = "score_model", False

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        super().__init__(spec, runtime)
        rng = spec.get("range", [0, 1])
        if (not isinstance(rng, list) or len(rng) != 2 or not all(isinstance(x, (int, float)) for x in rng)
                or not rng[0] < rng[1]):
            raise TaskError(f"{self.where}: range must be [low, high] with low < high, got {rng!r}")
        self.low, self.high = float(rng[0]), float(rng[1])
        self.pass_threshold = threshold(spec, self.where)

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        reply = self.ask(item, sample, f'Reply with only a JSON object {{"result": <a number from {self.low:g} to '
                                       f'{self.high:g}>}} grading the answer above.')
        value = _json_field(reply, "result", "score")
        if value is None:
            nums = _NUMBER.findall(reply)
            value = nums[-1] if nums else None
        try:
            score = float(value)
        except (TypeError, ValueError):
            return Graded(self.low, f"{self.where}: judge reply has no score", {"judge_reply": reply[:500]}, False)
        if not math.isfinite(score) or not self.low <= score <= self.high:
            return Graded(self.low, f"{self.where}: judge score {score:g} outside [{self.low:g}, {self.high:g}]",
                          {"judge_reply": reply[:500]}, False)
        return Graded(score, f"{self.where}: judge scored {score:g}", {"judge_reply": reply[:500]})


class LabelModelGrader(_ModelGrader):
    """`{"type": "label_model", "name", "model", "input", "labels", "passing_labels"}`: 1 when the judge's label
    is a passing one."""

    kind, low, high, binary, pass_threshold = "label_model", 0.0, 1.0, True, None

    def __init__(self, spec: dict[str, Any], runtime: Runtime) -> None:
        super().__init__(spec, runtime)
        self.labels = [str(x) for x in need(spec, "labels", list, self.where)]
        self.passing = {str(x) for x in need(spec, "passing_labels", list, self.where)}
        if not self.labels or not self.passing <= set(self.labels):
            raise TaskError(f"{self.where}: passing_labels {sorted(self.passing)} must be among labels {self.labels}")

    def grade(self, item: dict[str, Any], sample: dict[str, Any]) -> Graded:
        reply = self.ask(item, sample, "Reply with only one of these labels: " + ", ".join(self.labels))
        label = _json_field(reply, "label", "result")
        by_lower = {lab.lower(): lab for lab in self.labels}
        if not isinstance(label, str) or label.lower() not in by_lower:
            named = [lab for lab in self.labels if re.search(rf"(?<!\w){re.escape(lab)}(?!\w)", reply, re.I)]
            label = named[0] if len(named) == 1 else reply.strip().strip(".\"'")
        label = by_lower.get(str(label).lower())
        if label is None:
            return Graded(0.0, f"{self.where}: judge reply names no single label", {"judge_reply": reply[:500]}, False)
        ok = label in self.passing
        return Graded(float(ok), f"{self.where}: judge labelled {label!r}", {"label": label})
