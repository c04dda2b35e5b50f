"""The canary in production: the candidate answers a share of the day's requests in shadow beside the champion.

`ShadowResponder` is a `BatchResponder` for the day's log writer: the champion answers every request and
only its answers are served and logged; for a seeded `share` of the requests the candidate answers too,
both verified by their own responders, and the paired outcomes are kept (`pairs`) and can be written as
JSONL for the gate's caller (`flywheel.monitoring.canary.canary_verdict`). The candidate never reaches a
user and its answers never become training data.

`serve_canary` is the turn's canary: after training, the registry's `challenger` shadows the `champion` on a
window of the day's further requests (`share` of the day's served requests, at least `min_pairs`), drawn from
the same production traffic as the day's logs but not the requests already logged (those were mined for the
challenger's training). Both models run through the rollout engine and are verified; the pairs are written
under `<home>/canary/<day>/`, never into the day's raw logs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import date as Date
from pathlib import Path

from flywheel.environments.task import Task
from flywheel.monitoring.canary import CanaryConfig, Pair, canary_verdict
from flywheel.paths import FlywheelPaths
from flywheel.registry.canary import CanaryOutcome, settle_challenger
from flywheel.registry.mlflow_registry import DEFAULT_MODEL_NAME, ModelRef, Registry
from flywheel.rollout import EngineSpec
from flywheel.serving.champion import ChampionResponder, ServeConfig
from flywheel.world.responder import BatchResponder, Response
from flywheel.world.traffic import TrafficConfig, day_tasks


def _answer(responder: BatchResponder, tasks: Sequence[Task], rng: random.Random) -> list[Response]:
    if hasattr(responder, "respond_batch"):
        return responder.respond_batch(tasks, rng)
    return [responder(t, rng) for t in tasks]


class ShadowResponder:
    """Serves the champion's answers; the candidate shadows `config.share` of the requests."""

    def __init__(self, champion: BatchResponder, candidate: BatchResponder, config: CanaryConfig | None = None):
        self.champion, self.candidate = champion, candidate
        self.config = config or CanaryConfig()
        self.pairs: list[Pair] = []

    def respond_batch(self, tasks: Sequence[Task], rng: random.Random) -> list[Response]:
        served = _answer(self.champion, tasks, rng)
        pick = random.Random(f"canary:{self.config.seed}:{len(self.pairs)}:{len(tasks)}")
        shadow = [i for i in range(len(tasks)) if pick.random() < self.config.share]
        shadow_rng = random.Random(f"canary-sampling:{self.config.seed}:{len(self.pairs)}")  # not the day's rng
        answers = _answer(self.candidate, [tasks[i] for i in shadow], shadow_rng)
        for i, ans in zip(shadow, answers, strict=True):
            self.pairs.append(Pair(tasks[i].task_id, tasks[i].domain, bool(served[i].outcome.get("passed")),
                                   bool(ans.outcome.get("passed"))))
        return served

    def __call__(self, task: Task, rng: random.Random) -> Response:
        return self.respond_batch([task], rng)[0]

    def write_pairs(self, path: str | Path) -> Path:
        """The paired outcomes as JSONL (one line per shadowed request)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(asdict(x)) + "\n" for x in self.pairs))
        return p


def read_pairs(path: str | Path) -> list[Pair]:
    """Pairs written by `ShadowResponder.write_pairs`."""
    return [Pair(**json.loads(line)) for line in Path(path).read_text().splitlines() if line.strip()]


def canary_window(day_records: int, config: CanaryConfig | None = None) -> int:
    """Requests the challenger shadows: `share` of the day's served requests, at least `min_pairs`."""
    cfg = config or CanaryConfig()
    return max(cfg.min_pairs, round(cfg.share * max(day_records, 0)))


def canary_requests(day: str, n: int, seed: int = 0) -> list[Task]:
    """`n` further requests of `day`'s production traffic (same mix, their own seed: not the logged ones)."""
    return day_tasks(Date.fromisoformat(day), n, random.Random(f"canary-requests:{seed}:{day}"), TrafficConfig())


@dataclass(frozen=True)
class CanaryRun:
    """What one canary served: who shadowed whom, how many requests, the pairs and where they are."""

    day: str
    champion: str
    challenger: str
    requests: int
    pairs: list[Pair]
    path: str


Responders = Callable[[ModelRef], BatchResponder]
"""How a registered version answers requests (default: `ChampionResponder` through the rollout engine)."""


def serve_canary(day: str, paths: FlywheelPaths, day_records: int, config: CanaryConfig | None = None, *,
                 engine: EngineSpec = "torch", serve: ServeConfig | None = None, device: str = "cpu",
                 model_name: str = DEFAULT_MODEL_NAME, responders: Responders | None = None) -> CanaryRun | None:
    """The registry's `challenger` shadows its `champion` on `canary_window(day_records)` requests of `day`;
    None when there is no challenger (or no champion)."""
    cfg = config or CanaryConfig()
    reg = Registry(paths.mlflow_uri, model_name)
    champ, chal = reg.champion(), reg.challenger()
    if champ is None or chal is None:
        return None
    make = responders or (lambda ref: ChampionResponder(ref.model_path, ref.uri, serve, device=device, engine=engine))
    tasks = canary_requests(day, canary_window(day_records, cfg), cfg.seed)
    shadow = ShadowResponder(make(champ), make(chal),
                             replace(cfg, share=1.0))  # the window is the share: every request in it is shadowed
    shadow.respond_batch(tasks, random.Random(f"canary-serving:{cfg.seed}:{day}"))
    path = shadow.write_pairs(paths.home / "canary" / day / f"{chal.name}-{chal.version}.jsonl")
    return CanaryRun(day, champ.uri, chal.uri, len(tasks), list(shadow.pairs), str(path))


def canary_turn(day: str, paths: FlywheelPaths, served_records: int, config: CanaryConfig | None = None, *,
                engine: EngineSpec = "torch", serve: ServeConfig | None = None, device: str = "cpu",
                model_name: str = DEFAULT_MODEL_NAME,
                responders: Responders | None = None) -> tuple[CanaryOutcome | None, CanaryRun | None]:
    """Phase 2 of a promotion for `day`: the challenger shadows the champion (when the flywheel served the day:
    `served_records` > 0) and `settle_challenger` promotes it or not. (None, None) without a challenger."""
    if Registry(paths.mlflow_uri, model_name).challenger() is None:
        return None, None
    if served_records <= 0:
        return settle_challenger(paths.mlflow_uri, None, "the day's logs are yours, the flywheel serves no live "
                                 "traffic to shadow", model_name), None
    run = serve_canary(day, paths, served_records, config, engine=engine, serve=serve, device=device,
                       model_name=model_name, responders=responders)
    verdict = canary_verdict(run.pairs, config) if run else None
    return settle_challenger(paths.mlflow_uri, verdict, "no champion to shadow", model_name), run
