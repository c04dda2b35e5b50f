"""RayResource: where the RL loop's data plane runs. Off by default (everything in process, as without Ray);
`local` starts an embedded Ray on this machine (dagster-ray's `LocalRay`), `cluster` joins a running Ray
cluster or KubeRay head at `address`. The fleet sizes (`FleetConfig`) are its other fields.

    flywheel turn --set ray.mode=local --set ray.rollout_actors=2
"""

from __future__ import annotations

import contextlib
import dataclasses
from functools import cache
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from flywheel.fleet.config import FleetConfig

MODES = ("off", "local", "cluster")


def _fleet_field(name: str) -> Any:
    """A resource field whose default and description are `FleetConfig`'s (declared once, there)."""
    f = FleetConfig.__dataclass_fields__[name]
    return Field(default=f.default, description=f.metadata["help"])


@cache
def _cluster_ray_class() -> type:
    """dagster-ray's `LocalRay` pointed at an existing cluster (`ray.init(address=...)`); built on first use
    so that loading the Definitions never imports Ray."""
    from dagster_ray import LocalRay

    class ClusterRay(LocalRay):
        cluster_address: str

        @property
        def ray_address(self) -> str:  # type: ignore[override]
            return self.cluster_address

        @property
        def name(self) -> str:
            return "RayCluster"

    return ClusterRay


class RayResource(dg.ConfigurableResource):
    """The Ray connection and the fleets built on it; fields are what a user edits."""

    mode: str = Field(default="off", description="off (no Ray: in process) | local (embedded Ray on this machine) "
                                                 "| cluster (a running Ray cluster / KubeRay head at `address`)")
    address: str = Field(default="", description="cluster: ray://<head>:10001 (Ray Client), or auto / <head>:6379 "
                                                 "when this step runs on a node of the cluster")
    num_cpus: int = Field(default=0, description="local: CPUs Ray may schedule on (0: all of this machine's)")
    dashboard: bool = Field(default=True, description="local: start Ray's dashboard on 127.0.0.1 (linked from the "
                                                      "training asset's metadata)")
    dashboard_url: str = Field(default="", description="cluster: the dashboard address to link, e.g. "
                                                       "http://<head>:8265 (empty: what Ray reports)")
    verifier_actors: int = _fleet_field("verifier_actors")
    sandbox_workers: int = _fleet_field("sandbox_workers")
    sandbox_backend: str = _fleet_field("sandbox_backend")
    rollout_actors: int = _fleet_field("rollout_actors")
    rollout_threads: int = _fleet_field("rollout_threads")
    rollout_gpus: float = _fleet_field("rollout_gpus")
    batch_size: int = _fleet_field("batch_size")
    max_in_flight: int = _fleet_field("max_in_flight")
    actor_cpus: float = _fleet_field("actor_cpus")
    max_attempts: int = _fleet_field("max_attempts")

    _conn: Any = PrivateAttr(default=None)  # the dagster-ray resource this one connected through (owned session)
    _context: Any = PrivateAttr(default=None)
    _fleets: list = PrivateAttr(default_factory=list)

    @property
    def enabled(self) -> bool:
        if self.mode not in MODES:
            raise dg.Failure(f"resource ray, field mode: unknown mode {self.mode!r}; valid: {', '.join(MODES)}")
        return self.mode != "off"

    def fleet_config(self) -> FleetConfig:
        """The library's `FleetConfig` from these fields (checked there: a bad size names its field)."""
        names = {f.name for f in dataclasses.fields(FleetConfig)} & set(type(self).model_fields)
        try:
            return FleetConfig(**{k: getattr(self, k) for k in names})
        except ValueError as e:
            raise dg.Failure(f"resource ray: {e}") from e

    # -- lifecycle ------------------------------------------------------------------------------
    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        if self.enabled:
            self.connect(context)

    def connect(self, context: Any = None) -> None:
        """Connect (or start the embedded Ray) through dagster-ray; a session already open in this process is
        reused and left open."""
        import ray

        if ray.is_initialized():
            return
        from dagster_ray import LocalRay

        if self.mode == "local":
            opts: dict[str, Any] = {"include_dashboard": self.dashboard, "_node_ip_address": "127.0.0.1",
                                    "dashboard_host": "127.0.0.1", "log_to_driver": False}
            if self.num_cpus:
                opts["num_cpus"] = self.num_cpus
            conn = LocalRay(ray_init_options=opts)
        else:
            if not self.address:
                raise dg.Failure("resource ray, field address: mode=cluster needs the cluster's address "
                                 "(ray://<head>:10001, or auto on a node of the cluster)")
            conn = _cluster_ray_class()(cluster_address=self.address)
        ctx = context if context is not None and getattr(context, "log", None) else dg.build_init_resource_context()
        from flywheel.fleet.local import loopback_only

        with loopback_only() if self.mode == "local" else contextlib.nullcontext():  # Ray binds all interfaces else
            self._context = conn.connect(ctx)
        self._conn = conn

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        self.close()

    def close(self) -> None:
        """Stop the fleets built here, then end the Ray session this resource opened (if it opened one)."""
        for f in self._fleets:
            f.close()
        self._fleets.clear()
        if self._conn is not None and self._context is not None:
            self._context.disconnect()
        self._conn = self._context = None

    # -- what the training asset asks for -------------------------------------------------------
    def training_kwargs(self, engine_factory: Any = None, sample_engine: Any = None) -> dict[str, Any]:
        """`score_fn` / `generator_factory` for `train_policy`: the Ray fleets when configured (a rollout fleet
        wins over `engine_factory`, the rollout-engine resource's own generator, e.g. vLLM's); with Ray off,
        only `engine_factory` when given ({}: the trainer's in-process defaults)."""
        base = {"generator_factory": engine_factory} if engine_factory is not None else {}
        if sample_engine is not None:  # RFT's sampler: the resource's engine (rollout actors serve GRPO only)
            base["sample_engine"] = sample_engine
        if not self.enabled:
            return base
        cfg = self.fleet_config()
        out: dict[str, Any] = dict(base)
        if cfg.verifier_actors:
            from flywheel.fleet.verifier_fleet import FleetScorer

            out["score_fn"] = FleetScorer(cfg, start=False)  # actors start when the first batch comes
            self._fleets.append(out["score_fn"])
        if cfg.rollout_actors:
            from flywheel.fleet.rollout_fleet import RolloutFleet

            build = RolloutFleet.factory(cfg)

            def factory(module: Any, tokenizer: Any, device: Any = None, shared: bool = True) -> Any:
                fleet = build(module, tokenizer, device, shared)
                self._fleets.append(fleet)  # the trainer closes it; kept for its utilisation figures
                return fleet

            out["generator_factory"] = factory
        return out

    def stats(self) -> dict[str, float]:
        """Busy share per actor and idle share per fleet, of every fleet built here."""
        out: dict[str, float] = {}
        for f in self._fleets:
            out.update(f.stats())
        return out

    def telemetry(self, inner: Any) -> Any:
        """The trainer's MLflow logger with the fleets' utilisation added to every step (unchanged when off)."""
        if not self.enabled:
            return inner
        from flywheel.fleet.telemetry import FleetTelemetry

        return FleetTelemetry(inner, self.stats)

    def dashboard_link(self) -> str:
        """The Ray dashboard's URL, or "" when there is none (off, or started without one)."""
        if not self.enabled:
            return ""
        if self.dashboard_url:
            return self.dashboard_url
        url = getattr(self._context, "dashboard_url", "") or ""  # "" without a dashboard or a session of ours
        return url if not url or url.startswith("http") else f"http://{url}"

    def metadata(self) -> dict[str, Any]:
        """Asset metadata: the dashboard link and the fleets' utilisation ({} when off)."""
        if not self.enabled:
            return {}
        link = self.dashboard_link()
        return {"ray_mode": self.mode, **({"ray_dashboard": dg.MetadataValue.url(link)} if link else {}),
                **{k.replace("/", "_"): round(v, 4) for k, v in self.stats().items()}}


def default_resources() -> dict[str, Any]:
    return {"ray": RayResource()}
