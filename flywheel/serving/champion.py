"""The production responder: the deployed champion serves tomorrow's traffic.

`ChampionResponder` plugs into the responder seam (`flywheel.world.responder`), so the day's log
writer (`flywheel.world.traffic.simulate_day(..., responder=...)`, or `serve_day` here) logs what
it answered: it samples the champion through a rollout engine (torch by default) on the day's
tasks (agent tasks run their tool loop), scores every response with the verifiers to fill
`outcome.passed` and the error text, and measures tokens, latency and cost. Each log line's
`model` is the champion's registered `name:version`, so the next turn mines exactly the failures
of the model that is deployed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date as Date
from pathlib import Path
from typing import Any

from flywheel.defaults import SERVING_TEMPERATURE
from flywheel.environments.registry import default_environments
from flywheel.evaluation.runner import ScoreFn, score_all
from flywheel.paths import FlywheelPaths
from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, Registry
from flywheel.rollout import EngineSpec, generate_for_tasks, open_engine
from flywheel.rollout.types import Rollout, SamplingParams
from flywheel.tasks.base import Task
from flywheel.verifiers.verdict import Verdict
from flywheel.world.responder import Responder, Response, response_from_text
from flywheel.world.traffic import simulate_day


@dataclass(frozen=True)
class ServeConfig:
    """How the champion serves traffic (production settings, not evaluation ones)."""

    temperature: float = field(default=SERVING_TEMPERATURE, metadata={"help": "sampling temperature in production"})
    max_new_tokens: int = field(default=160, metadata={"help": "token budget per response (agents: all steps)"})
    max_steps: int = field(default=6, metadata={"help": "tool calls per agent task"})
    seed: int = field(default=0, metadata={"help": "mixed with the day's RNG: each day samples differently"})
    price_per_1k_prompt_tokens: float = field(default=0.0005, metadata={"help": "USD per 1000 prompt tokens"})
    price_per_1k_completion_tokens: float = field(default=0.0015, metadata={"help": "USD per 1000 completion tokens"})


def _outcome_from(task: Task, rollout: Rollout, verdict: Verdict, latency_ms: float,
                  cfg: ServeConfig) -> dict[str, Any]:
    pt = len(rollout.prompt_ids)
    ct = int(sum(rollout.loss_mask)) if rollout.loss_mask else len(rollout.token_ids)
    out: dict[str, Any] = {
        "status": "success" if verdict.passed else ("timeout" if rollout.finish_reason == "length" else "failure"),
        "latency_ms": round(latency_ms, 2),
        "prompt_tokens": pt,
        "completion_tokens": ct,
        "cost_usd": round((pt * cfg.price_per_1k_prompt_tokens + ct * cfg.price_per_1k_completion_tokens) / 1000, 8),
        "finish_reason": rollout.finish_reason,
        "verifier_reason": verdict.reason,
    }
    if not verdict.passed:
        out["error"] = verdict.reason
    envs = default_environments()
    if envs.has_domain(task.domain):  # what production logs beyond the verdict (tests run, tool calls)
        out.update(envs.for_domain(task.domain).logged_outcome(verdict.details or {}, len(rollout.steps)))
    return out


class ChampionResponder:
    """A `BatchResponder` (and `Responder`) serving one registered model through a rollout engine."""

    def __init__(self, model_path: str | Path, model_id: str, config: ServeConfig | None = None,
                 score: ScoreFn | None = None, device: str = "cpu", engine: EngineSpec = "torch") -> None:
        self.model_path, self.model_id = str(model_path), model_id
        self.config = config or ServeConfig()
        self.engine = open_engine(engine, self.model_path, device=device)
        self.score = score  # None: the verifiers' batch API

    def respond_batch(self, tasks: Sequence[Task], rng: random.Random) -> list[Response]:
        """One sampled response per request, in order, each with its verified outcome."""
        if not tasks:
            return []
        cfg = self.config
        sp = SamplingParams(temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens,
                            seed=(cfg.seed * 1_000_003 + rng.getrandbits(31)) % (2**31))
        t0 = time.perf_counter()
        rollouts = generate_for_tasks(self.engine, list(tasks), 1, sp, max_steps=cfg.max_steps)
        per_ms = (time.perf_counter() - t0) * 1000 / len(tasks)
        verdicts = score_all([(t.domain, t.verifier_task(), r.text) for t, r in zip(tasks, rollouts, strict=True)],
                             self.score)
        out = []
        for task, r, verdict in zip(tasks, rollouts, verdicts, strict=True):
            outcome = _outcome_from(task, r, verdict, per_ms, cfg)
            resp = response_from_text(task, r.text, self.model_id, verdict.passed, **outcome)
            out.append(resp)
        return out

    def __call__(self, task: Task, rng: random.Random) -> Response:
        return self.respond_batch([task], rng)[0]


def make_champion_responder(
    paths: FlywheelPaths, tracking_uri: str | None = None, model_name: str | None = None,
    config: ServeConfig | None = None, score: ScoreFn | None = None, device: str = "cpu", engine: EngineSpec = "torch",
) -> ChampionResponder:
    """The responder for whatever the registry (at `tracking_uri`, else `paths`' MLflow) calls `champion` now."""
    reg = Registry(tracking_uri or paths.mlflow_uri, model_name or DEFAULT_MODEL_NAME)
    champ = reg.champion()
    if champ is None:
        raise LookupError(f"no `champion` alias on {reg.name}: run a turn (or register a base model) first")
    return ChampionResponder(champ.model_path, champ.uri, config, score=score, device=device, engine=engine)


def serve_day(day: Date | str, n_records: int, seed: int, responder: Responder, paths: FlywheelPaths) -> Path:
    """Write the day's raw logs as served by `responder` under `paths.raw_logs` (the next `raw_task_logs` partition)."""
    return simulate_day(paths.raw_logs, day, n_records, seed, responder=responder)
