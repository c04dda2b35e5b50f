"""One day of production: the champion serves the day's requests, and its answers become that day's raw logs.

This is the step that closes the loop: `deployed_model` moves the registry's `champion` alias, the
champion serves a day of traffic here (through a rollout engine), and that day's logs are what
`raw_task_logs` ingests and mining reads next. Before any champion exists the day is served by the
clearly labelled simulated model (`simulated-prod:v1`, every line `"simulated": true`).

Real logs win: a day whose logs already exist (earlier traffic, logs a user put there) is never
rewritten, and logs kept in the user's own storage (the storage resource's `raw_logs_uri`) are only
ever read. A day is written to a hidden folder first and moved into place whole, so a crash never
leaves half a day that would later count as "already there".
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from flywheel.config_fields import option
from flywheel.logs.sources import list_sources
from flywheel.paths import FlywheelPaths
from flywheel.rollout import EngineSpec
from flywheel.serving.champion import ChampionResponder, ServeConfig, make_champion_responder
from flywheel.world.simulated_model import SIMULATED_MODEL
from flywheel.world.traffic import TrafficConfig, generate_day, world_day, write_day

SIMULATED_SERVER = SIMULATED_MODEL.split(":")[0]
"""What `served_by` says before any champion exists: the simulated production model."""


@dataclass(frozen=True)
class ProductionConfig:
    """How much traffic a production day serves."""

    records: int = option(3000, "requests served in the day (log lines written, before malformed/duplicate ones)")
    seed: int = option(0, "seed of the day's requests and sampling: the same day and seed give the same logs")

    def __post_init__(self) -> None:
        if self.records < 1:
            raise ValueError(f"ProductionConfig.records must be >= 1, got {self.records}")


@dataclass(frozen=True)
class ProductionDay:
    """What one production day did: where its logs are, who served them, or why nothing was written."""

    day: str
    location: str
    written: bool
    served_by: str  # the champion's `name:version`, SIMULATED_SERVER, or "" when nothing was written
    records: int  # well-formed records served (0 when nothing was written)
    lines: int  # lines written: records, plus the deliberately malformed and duplicated ones
    reason: str


def logs_exist(location: str) -> bool:
    """Whether `location` (folder, file or URI) holds at least one log file ingest would read."""
    try:
        return bool(list_sources(location))
    except FileNotFoundError:
        return False


def serve_production_day(day: str, paths: FlywheelPaths, config: ProductionConfig | None = None, *,
                         engine: EngineSpec = "torch", serve: ServeConfig | None = None, device: str = "cpu",
                         user_logs: str = "") -> ProductionDay:
    """Serve `day`'s requests with the registry's champion (else the simulated model) and write its raw logs
    under `paths.raw_logs/<day>/`, unless that day already has logs.

    `engine`: the rollout engine (a name or a `model_path -> engine` factory); `serve`: a
    `flywheel.serving.champion.ServeConfig`; `user_logs`: where the day's logs are when the installation reads
    them from the user's storage (never written here).
    """
    cfg = config or ProductionConfig()
    if user_logs:
        found = "found" if logs_exist(user_logs) else "not found (yet)"
        return ProductionDay(day, user_logs, False, "", 0, 0,
                             f"real logs win: the day's logs come from your storage ({user_logs}, {found}); "
                             "nothing served or written")
    folder = paths.raw_logs / day
    if logs_exist(str(folder)):
        return ProductionDay(day, str(folder), False, "", 0, 0,
                             f"real logs win: {folder} already holds logs; not overwritten")
    responder = _champion_or_none(paths, engine, serve, device)
    served_by = responder.model_id if responder is not None else SIMULATED_SERVER
    paths.raw_logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".incoming-{day}-", dir=paths.raw_logs) as tmp:
        traffic = generate_day(day, cfg.records, cfg.seed, responder, world_day=world_day(paths.raw_logs, day))
        written = write_day(tmp, traffic, TrafficConfig().shard_size)
        if folder.exists():  # a folder without log files (nothing ingest reads): the shards move in
            for shard in sorted(written.iterdir()):
                shard.rename(folder / shard.name)
        else:
            written.rename(folder)
    return ProductionDay(day, str(folder), True, served_by, traffic.records, len(traffic.lines),
                         f"served by {served_by}")


def _champion_or_none(paths: FlywheelPaths, engine: EngineSpec, serve: ServeConfig | None,
                      device: str) -> ChampionResponder | None:
    """The champion's responder, or None before any champion exists (the simulator serves then)."""
    try:
        return make_champion_responder(paths=paths, config=serve, device=device, engine=engine)
    except LookupError:
        return None
