"""SIMULATED production traffic: demo task logs for when no real logs exist yet.

Nothing here is real user data. Every record is marked: the serving model is
`simulated-prod:v1` by default and each line carries a top-level `"simulated": true`
(ingest keeps unknown top-level fields in `extra`) plus `"sim"`, the responder's ground
truth (`failure_mode`, `p_success`) that mining never reads but tests compare against.

A simulated day draws tasks from what production asks of the domains whose environments have a
`production` profile (the built-in ones: their share, universe and system prompt): the SFT distribution
plus production-only levels that appear on later world days (`world_day`: 0 on the first day of the logs),
so each day's logs hold failures the base model's training never showed it. It serves each
several times (so pass rates exist) through a `Responder` (`flywheel.world.responder`): by
default the made-up model of `flywheel.world.simulated_model`, in the closed loop the deployed
champion (`flywheel.serving.champion`). About 1% of lines are malformed and a few are delivered
twice, so ingest's quarantine and de-duplication get exercised.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date as Date
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from flywheel.environments.builtin import BUILTIN_ENVIRONMENTS
from flywheel.environments.production import ProductionProfile
from flywheel.environments.registry import default_environments
from flywheel.environments.task import Task, stable_task_id
from flywheel.tasks.suites import heldout_suite
from flywheel.tasks.world_suites import production_suite
from flywheel.world.responder import BatchResponder, Responder, text_from_messages
from flywheel.world.simulated_model import SIMULATED_MODEL, SimulatedResponder

_PRODUCTION = tuple((env.name, env.production) for env in BUILTIN_ENVIRONMENTS if env.production is not None)
"""The built-in domains' production profiles, in report order: the default day's mix."""


def _production(domain: str) -> ProductionProfile | None:
    envs = default_environments()
    return envs.for_domain(domain).production if envs.has_domain(domain) else None


@dataclass(frozen=True)
class TrafficConfig:
    """Shape of a simulated day. Rates are per log line."""

    domain_mix: tuple[tuple[str, float], ...] = field(
        default=tuple((d, prof.share) for d, prof in _PRODUCTION), metadata={"help": "share of records per domain"})
    universe: tuple[tuple[str, int], ...] = field(
        default=tuple((d, prof.universe) for d, prof in _PRODUCTION),
        metadata={"help": "training tasks per domain that traffic is drawn from (the same every day)"})
    repeats: float = field(default=5.0, metadata={"help": "mean attempts per served task per day"})
    malformed_rate: float = field(default=0.01, metadata={"help": "share of lines written malformed"})
    duplicate_rate: float = field(default=0.002, metadata={"help": "share of lines delivered twice"})
    variant_rate: float = field(
        default=0.02, metadata={"help": "share of requests whose prompt is a near-duplicate rewording"})
    heldout_rate: float = field(
        default=0.005, metadata={"help": "share of requests that are held-out eval prompts (decontamination)"})
    system_prompt_rate: float = field(default=0.7, metadata={"help": "share of requests with a system message"})
    shard_size: int = field(default=20_000, metadata={"help": "lines per JSONL file"})


MALFORMED_KINDS = ("truncated_json", "wrong_type", "missing_field", "invalid_utf8")


@dataclass
class DayTraffic:
    """One simulated day before it is written: the lines and what went into them."""

    date: Date
    lines: list[bytes]
    records: int = 0  # well-formed records generated (duplicates not counted)
    malformed: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    failure_modes: dict[str, int] = field(default_factory=dict)


@functools.lru_cache(maxsize=16)
def _universe(domain: str, n: int, world_day: int) -> tuple[Task, ...]:
    return tuple(production_suite(domain, n, split="train", day=world_day))


def world_day(raw_logs: str | Path, day: Date | str) -> int:
    """Day `day`'s index in the simulated world: days since the first log day under `raw_logs` (0 when it is
    the first), so a fresh home's turns walk the world's drift in order and a re-run sees the same day."""
    day = Date.fromisoformat(day) if isinstance(day, str) else day
    found = []
    folder = Path(raw_logs)
    if folder.is_dir():
        for p in folder.iterdir():
            try:
                found.append(Date.fromisoformat(p.name))
            except ValueError:
                continue
    first = min([day, *found])
    return (day - first).days


@functools.lru_cache(maxsize=4)
def _heldout(domain: str) -> tuple[Task, ...]:
    return tuple(heldout_suite(domain))


def _variant(task: Task, rng: random.Random) -> Task:
    """A near-duplicate rewording: same tokens (case/whitespace) or one extra leading word."""
    p = task.prompt
    prof = _production(task.domain)
    if prof is not None and prof.reword is not None:  # the domain's own (code: blank lines around the header)
        prompt = prof.reword(p, rng)
    else:
        prompt = rng.choice(["Question: " + p, p.lower(), "  " + p.replace(". ", ".  ")])
    return Task(stable_task_id(task.domain, prompt), task.domain, prompt, task.reference, task.solution,
                {**task.meta, "variant_of": task.task_id})


def day_tasks(day: Date, n: int, rng: random.Random, config: TrafficConfig, world_day: int = 0) -> list[Task]:
    """The `n` requests of a day: each domain serves a random subset of its universe on world day `world_day`
    (what production asks by then) ~`repeats` times."""
    domains, weights = zip(*config.domain_mix, strict=True)
    picks = rng.choices(domains, weights, k=n)
    universe = dict(config.universe)
    active: dict[str, list[Task]] = {}
    for d in domains:
        pool = list(_universe(d, universe.get(d, 200), world_day))
        k = max(1, min(len(pool), round(picks.count(d) / max(config.repeats, 1e-9))))
        active[d] = rng.sample(pool, k)
    out = []
    for d in picks:
        r = rng.random()
        if r < config.heldout_rate:
            out.append(rng.choice(_heldout(d)))
        elif r < config.heldout_rate + config.variant_rate:
            out.append(_variant(rng.choice(active[d]), rng))
        else:
            out.append(rng.choice(active[d]))
    return out


def _fill_costs(task: Task, messages: list[dict], outcome: dict, rng: random.Random) -> dict:
    out = dict(outcome)
    prompt_chars = sum(len(m["content"]) for m in messages if m["role"] in ("system", "user"))
    completion_chars = len(text_from_messages(messages))
    out.setdefault("prompt_tokens", max(1, math.ceil(prompt_chars / 4)))
    out.setdefault("completion_tokens", max(1, math.ceil(completion_chars / 4)))
    if out.get("latency_ms") is None:
        out["latency_ms"] = int(150 + out["completion_tokens"] * 18 * rng.lognormvariate(0.0, 0.35))
    out.setdefault("cost_usd", round(out["prompt_tokens"] * 5e-7 + out["completion_tokens"] * 1.5e-6, 8))
    if "user_feedback" not in out:
        r = rng.random()
        up, down = (0.25, 0.02) if out.get("passed") else (0.03, 0.35)
        out["user_feedback"] = "thumbs_up" if r < up else "thumbs_down" if r < up + down else None
    return out


def _malform(rec: dict[str, Any], rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(MALFORMED_KINDS)
    if kind == "truncated_json":
        line = json.dumps(rec, ensure_ascii=False).encode()
        return kind, line[: rng.randint(10, max(11, len(line) - 10))]
    bad = dict(rec)
    if kind == "wrong_type":
        key, value = rng.choice([("messages", "see attached conversation"), ("outcome", ["passed"]),
                                 ("task_id", {"id": 7}), ("timestamp", "yesterday afternoon")])
        bad[key] = value
    elif kind == "missing_field":
        del bad[rng.choice(["timestamp", "task_id", "domain", "model", "messages", "outcome"])]
    line = json.dumps(bad, ensure_ascii=False).encode()
    if kind == "invalid_utf8":
        pos = line.find(b'"content": "') + len(b'"content": "')
        line = line[:pos] + b"\xff\xfe" + line[pos:]
    return kind, line


def generate_records(day: Date, n_records: int, seed: int, responder: Responder | None = None,
                     model: str = SIMULATED_MODEL, config: TrafficConfig | None = None,
                     rng: random.Random | None = None, world_day: int = 0) -> Iterator[dict[str, Any]]:
    """`n_records` well-formed log records of one day (dicts in the JSONL format), time-ordered."""
    cfg = config or TrafficConfig()
    rng = rng or random.Random(f"traffic:{seed}:{day.isoformat()}")
    responder = responder or SimulatedResponder(model=model)
    tasks = day_tasks(day, n_records, rng, cfg, world_day)
    if isinstance(responder, BatchResponder):
        responses = responder.respond_batch(tasks, rng)
    else:
        responses = [responder(t, rng) for t in tasks]
    start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
    seconds = sorted(rng.random() * 86_400 for _ in tasks)
    for i, (task, resp, s) in enumerate(zip(tasks, responses, seconds, strict=True)):
        messages = []
        prof = _production(task.domain)
        if rng.random() < cfg.system_prompt_rate and prof is not None:
            messages.append({"role": "system", "content": prof.system_prompt})
        messages.append({"role": "user", "content": task.prompt})
        messages.extend(resp.messages)
        yield {
            "id": f"sim-{day:%Y%m%d}-{i:07d}-{rng.getrandbits(32):08x}",
            "timestamp": (start + timedelta(seconds=s)).isoformat().replace("+00:00", "Z"),
            "task_id": task.task_id,
            "domain": task.domain,
            "model": resp.model,
            "messages": messages,
            "outcome": _fill_costs(task, messages, resp.outcome, rng),
            "reference": task.reference,
            "simulated": True,
            "sim": resp.meta,
        }


def generate_day(day: Date | str, n_records: int, seed: int, responder: Responder | None = None,
                 model: str = SIMULATED_MODEL, config: TrafficConfig | None = None, world_day: int = 0) -> DayTraffic:
    """One day as JSONL lines (bytes, since some are deliberately not valid UTF-8)."""
    day = Date.fromisoformat(day) if isinstance(day, str) else day
    cfg = config or TrafficConfig()
    rng = random.Random(f"traffic:{seed}:{day.isoformat()}")
    n_dup = sum(rng.random() < cfg.duplicate_rate for _ in range(n_records))
    out = DayTraffic(day, [])
    good: list[bytes] = []
    for rec in generate_records(day, n_records - n_dup, seed, responder, model, cfg, rng, world_day):
        out.records += 1
        mode = (rec.get("sim") or {}).get("failure_mode") or "success"
        out.failure_modes[mode] = out.failure_modes.get(mode, 0) + 1
        if rng.random() < cfg.malformed_rate:
            kind, line = _malform(rec, rng)
            out.malformed[kind] = out.malformed.get(kind, 0) + 1
        else:
            line = json.dumps(rec, ensure_ascii=False).encode()
            good.append(line)
        out.lines.append(line)
    for _ in range(n_dup):  # at-least-once delivery: a few records arrive twice, later
        if good:
            out.lines.insert(rng.randint(0, len(out.lines)), rng.choice(good))
            out.duplicates += 1
    return out


def write_day(out_dir: str | Path, traffic: DayTraffic, shard_size: int = 20_000) -> Path:
    """Write `out_dir/YYYY-MM-DD/traffic-NNNNN.jsonl` shards; returns the day folder."""
    folder = Path(out_dir) / traffic.date.isoformat()
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("traffic-*.jsonl"):
        old.unlink()
    for k in range(0, max(len(traffic.lines), 1), shard_size):
        with open(folder / f"traffic-{k // shard_size:05d}.jsonl", "wb") as f:
            for line in traffic.lines[k:k + shard_size]:
                f.write(line + b"\n")
    return folder


def simulate_day(out_dir: str | Path, date: Date | str, n_records: int, seed: int,
                 responder: Responder | None = None, model: str = SIMULATED_MODEL,
                 config: TrafficConfig | None = None, world_day_index: int | None = None) -> Path:
    """Write one day of SIMULATED traffic (`n_records` lines) as JSONL; deterministic in `seed`.

    `world_day_index`: the day's place in the world's drift (None: `world_day(out_dir, date)`).
    Returns `out_dir/YYYY-MM-DD/`. Re-running with the same arguments rewrites identical files.
    """
    cfg = config or TrafficConfig()
    wd = world_day(out_dir, date) if world_day_index is None else world_day_index
    return write_day(out_dir, generate_day(date, n_records, seed, responder, model, cfg, wd), cfg.shard_size)


def simulate_days(out_dir: str | Path, start: Date | str, days: int, n_records: int, seed: int,
                  responder: Responder | None = None, model: str = SIMULATED_MODEL,
                  config: TrafficConfig | None = None) -> list[Path]:
    """`days` consecutive simulated days starting at `start`."""
    start = Date.fromisoformat(start) if isinstance(start, str) else start
    first = world_day(out_dir, start)
    return [simulate_day(out_dir, start + timedelta(days=i), n_records, seed, responder, model, config, first + i)
            for i in range(days)]
