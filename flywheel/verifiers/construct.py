"""Verifier construction: one verifier per `task_pool` task, validated before anything trains on it.

From what the logs carry each task gets its design task dict (`Environment.task_from_log`: math
`answer`; code `entry_point` + `test`; agent `tools` + `initial_state` + `goal`), judged by its
domain's verifier. A verifier is valid only when it
1. accepts the reference solution (the pool's solution, else `Environment.gold_response`),
2. rejects the logged failing response (when the log has one), and
3. rejects every hack probe of its environment (`Environment.probes`). Probes that only wait out the time limit
   (`slow`) run once per domain per construction: their outcome is a property of the verifier,
   not of the task, and a verifier that fails one is invalid for the whole domain.
Invalid verifiers are excluded and counted; the `verifiers` table keeps both with the reason.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from flywheel.environments.base import Environment
from flywheel.environments.verdict import TaskError
from flywheel.mining import load_task_pool
from flywheel.progress import progress_bar
from flywheel.verifiers.batch import ScoreItem, score_batch
from flywheel.verifiers.cache import VerdictCache
from flywheel.verifiers.registry import VerifierRegistry, default_registry

VERIFIERS_DDL = """
CREATE OR REPLACE TABLE verifiers (
    task_id          VARCHAR,
    domain           VARCHAR,
    verifier_version VARCHAR,
    valid            BOOLEAN,
    reason           VARCHAR,
    task             JSON,
    validated_at     TIMESTAMP
)
"""


@dataclass(frozen=True)
class ConstructConfig:
    """What verifier construction validates; frozen, built from the asset's Dagster Config."""

    min_valid_share: float = field(default=0.8, metadata={"help": "asset check floor: valid / all verifiers"})
    domains: tuple[str, ...] | None = field(default=None, metadata={"help": "domains to build (None: all)"})
    max_tasks: int | None = field(default=None, metadata={
        "help": "verifiers to build (None: every pool task): the first N by rank, or with domain_weights "
                "each domain's first ceil(N * its weight share)"})
    domain_weights: Mapping[str, float] | None = field(default=None, metadata={
        "help": "the training run's domain weights: max_tasks is split across domains in proportion to them, "
                "so every pool task the run can sample has a verifier (None: the pool's interleaved rank)"})
    concurrency: int = field(default=4, metadata={"help": "verifications in flight"})
    slow_probes: bool = field(default=True, metadata={"help": "run the timeout probe once per domain"})
    probe_names: tuple[str, ...] | None = field(default=None, metadata={"help": "only these probes (None: all)"})


def domain_quotas(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Verifiers per domain: `ceil(total * w / sum(w))` for each domain of positive weight (none for the rest).

    The run samples domains by these weights; a selection by the pool's interleaved rank instead
    gives every domain the same count (math 0.9 got a third of 200), and the run then repeats
    the few math tasks it has hundreds of times."""
    pos = {d: float(w) for d, w in weights.items() if w > 0}
    norm = sum(pos.values())
    return {d: max(1, math.ceil(total * w / norm - 1e-9)) for d, w in pos.items()} if norm > 0 else {}


@dataclass
class ConstructReport:
    total: int = 0
    valid: int = 0
    invalid: int = 0
    by_domain: dict[str, dict[str, int]] = field(default_factory=dict)
    by_reason: dict[str, int] = field(default_factory=dict)
    slow_probe_failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    cache_hits: int = 0

    @property
    def valid_share(self) -> float:
        return self.valid / self.total if self.total else 1.0

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), valid_share=self.valid_share)

    def markdown(self) -> str:
        """Counts by domain and by reason, as the asset's metadata table."""
        lines = ["| domain | valid | invalid |", "| --- | --- | --- |"]
        for d, c in sorted(self.by_domain.items()):
            lines.append(f"| {d} | {c.get('valid', 0)} | {c.get('invalid', 0)} |")
        lines += ["", "| reason | verifiers |", "| --- | --- |"]
        for r, n in sorted(self.by_reason.items(), key=lambda x: (-x[1], x[0])):
            lines.append(f"| {r} | {n} |")
        return "\n".join(lines)


def _environment(reg: VerifierRegistry, domain: str) -> Environment | None:
    """The environment serving `domain` when it builds verifiers from logged references, else None."""
    envs = reg.environments()
    env = envs.for_domain(domain) if envs.has_domain(domain) else None
    return env if env is not None and getattr(env, "make_verifier", None) and env.make_verifier(reg) else None


def task_dict(env: Environment | None, task_id: str, domain: str, prompt: str, ref: dict[str, Any]) -> dict[str, Any]:
    """The design's task dict for a pool row; TaskError when the reference cannot drive a verifier."""
    task = env.task_from_log(task_id, prompt, ref) if env is not None else None
    if task is None:
        raise TaskError(f"no verifier for domain {domain!r}")
    return task


def reference_response(env: Environment, prompt: str, ref: dict[str, Any], solution: str = "") -> str | None:
    """The gold response the verifier must accept, or None when the logs carry none."""
    return solution or env.gold_response(prompt, ref)


@dataclass
class _Plan:
    task_id: str
    domain: str
    task: dict[str, Any] | None
    reason: str | None = None
    items: list[tuple[str, int]] = field(default_factory=list)  # (role, index into the batch)


def _category(reason: str) -> str:
    return reason.split(":", 1)[0]


PROGRESS_CHUNK = 256
"""Judgements scored between two progress updates while verifiers are validated."""


def build_verifiers(
    con: duckdb.DuckDBPyConnection, config: ConstructConfig | None = None, registry: VerifierRegistry | None = None
) -> ConstructReport:
    """Validate a verifier for every pool task and write the `verifiers` table (see module doc)."""

    cfg = config or ConstructConfig()
    reg = registry or default_registry()
    t0 = time.perf_counter()
    quotas = domain_quotas(cfg.max_tasks, cfg.domain_weights) if cfg.max_tasks and cfg.domain_weights else None
    pool = load_task_pool(con, domains=list(cfg.domains) if cfg.domains else None,
                          limit=None if quotas else cfg.max_tasks, require_reference=False, per_domain=quotas)
    plans: list[_Plan] = []
    batch: list[ScoreItem] = []
    slow: dict[str, int] = {}
    envs: dict[str, Environment | None] = {}
    for t in pool:
        plan = _Plan(t.task_id, t.domain, None)
        plans.append(plan)
        if t.domain not in envs:
            envs[t.domain] = _environment(reg, t.domain)
        env = envs[t.domain]
        try:
            plan.task = task_dict(env, t.task_id, t.domain, t.prompt, t.reference)
        except TaskError as e:
            plan.reason = f"unusable reference: {e}"
            continue
        assert env is not None  # task_dict raised otherwise
        gold = reference_response(env, t.prompt, t.reference, t.solution)
        if gold is None:
            plan.reason = "no reference solution to validate against"
            continue
        plan.items.append(("reference", len(batch)))
        batch.append(ScoreItem(t.domain, plan.task, gold))
        failed_response = (t.meta or {}).get("failed_response")
        if failed_response:
            plan.items.append(("failed_response", len(batch)))
            batch.append(ScoreItem(t.domain, plan.task, failed_response))
        probe_task = dict(plan.task, canonical_solution=t.reference.get("canonical_solution"))
        for p in env.probes(probe_task):
            if cfg.probe_names is not None and p.name not in cfg.probe_names:
                continue
            if p.slow:
                if not cfg.slow_probes or t.domain in slow:
                    continue
                slow[t.domain] = len(batch)
            plan.items.append((f"probe {p.name}", len(batch)))
            batch.append(ScoreItem(t.domain, plan.task, p.response))
    # The verdict cache makes re-validation on the next turn a lookup: same task, response and verifier version.
    cache = VerdictCache(con)
    verdicts: list = []
    bar = progress_bar(len(batch), "validating verifiers", unit=" judgements")
    for lo in range(0, len(batch), PROGRESS_CHUNK):  # chunks only pace the progress lines
        part = batch[lo: lo + PROGRESS_CHUNK]
        verdicts += score_batch(part, concurrency=cfg.concurrency, registry=reg, cache=cache, errors="none")
        bar.update(len(part))
    bar.close()
    report = ConstructReport(cache_hits=cache.hits)
    for d, i in slow.items():
        v = verdicts[i]
        if v is None or v.passed:
            report.slow_probe_failures[d] = "judge error" if v is None else "accepted the timeout probe"
    rows = []
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    for plan in plans:
        reason = plan.reason
        for role, i in plan.items:
            if reason:
                break
            v = verdicts[i]
            if v is None:
                reason = f"judge error on the {role}"
            elif role == "reference" and not v.passed:
                reason = f"rejects the reference solution: {v.reason}"
            elif role != "reference" and v.passed:
                reason = "accepts the logged failing response" if role == "failed_response" else f"accepts hack {role}"
        if not reason and plan.domain in report.slow_probe_failures:
            reason = f"accepts hack probe sleep_past_timeout: {report.slow_probe_failures[plan.domain]}"
        valid = reason is None
        version = reg.version(plan.domain) if envs.get(plan.domain) is not None else ""
        rows.append((plan.task_id, plan.domain, version, valid, reason or "valid",
                     json.dumps(plan.task) if plan.task is not None else None, now))
        report.total += 1
        report.valid += valid
        report.invalid += not valid
        dom = report.by_domain.setdefault(plan.domain, {"valid": 0, "invalid": 0})
        dom["valid" if valid else "invalid"] += 1
        cat = _category(reason or "valid")
        report.by_reason[cat] = report.by_reason.get(cat, 0) + 1
    con.execute(VERIFIERS_DDL)
    if rows:
        con.executemany("INSERT INTO verifiers VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def valid_tasks(con: duckdb.DuckDBPyConnection, domains: list[str] | None = None) -> list[tuple[str, dict]]:
    """(domain, task dict) of every valid verifier, in pool rank order where known: what RLVR trains on."""
    sql = "SELECT v.domain, v.task FROM verifiers v WHERE v.valid"
    params: list[Any] = []
    if domains:
        sql += " AND list_contains(?, v.domain)"
        params.append(list(domains))
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "task_pool" in tables:
        sql = sql.replace("FROM verifiers v", "FROM verifiers v LEFT JOIN task_pool p USING (task_id)")
        sql += " ORDER BY p.rank NULLS LAST, v.task_id"
    else:
        sql += " ORDER BY v.task_id"
    return [(d, json.loads(t)) for d, t in con.execute(sql, params).fetchall()]
