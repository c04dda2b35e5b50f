"""`verifiers`: a validated verifier for every task of the pool (library: flywheel.verifiers.construct)."""


import dagster as dg
from pydantic import Field

from flywheel.train.config import GRPOConfig
from flywheel.verifiers.construct import ConstructConfig, build_verifiers
from flywheel.verifiers.registry import CODE_TIMEOUT_S, MATH_TIMEOUT_S, VerifierRegistry
from flywheel_dagster.resources.sandbox import SandboxPoolResource
from flywheel_dagster.resources.storage import StorageResource

OWNERS = ["team:flywheel-verifiers"]


class VerifiersConfig(dg.Config):
    """What verifier construction validates (`.to_lib()` -> ConstructConfig)."""

    max_tasks: int = Field(default=0, ge=0, description="Verifiers to build, split across domains in proportion to "
                                                  "domain_weights (0: every pool task).")
    domain_weights: dict[str, float] = Field(
        default_factory=lambda: dict(GRPOConfig().domain_weights),
        description="The training run's domain weights (default: rlvr_policy's), so the pool tasks the run "
                    "samples are the ones with verifiers.")
    concurrency: int = Field(default=4, ge=1, description="verifications in flight")
    slow_probes: bool = Field(default=True, description="run the timeout probe once per domain")
    code_timeout_s: float = Field(default=CODE_TIMEOUT_S, gt=0, allow_inf_nan=False,
                                  description="wall-clock limit of one code verification")
    math_timeout_s: float = Field(default=MATH_TIMEOUT_S, gt=0, allow_inf_nan=False,
                                  description="deadline of one math answer check")

    def to_lib(self) -> ConstructConfig:
        return ConstructConfig(max_tasks=self.max_tasks or None, domain_weights=dict(self.domain_weights),
                               concurrency=self.concurrency, slow_probes=self.slow_probes)


class ValidShareConfig(dg.Config):
    min_valid_share: float = Field(default=0.8, ge=0, le=1, description="the check fails below this share of "
                                                                       "valid verifiers")


@dg.asset(deps=["task_pool"], group_name="verifiers", owners=OWNERS, kinds={"duckdb", "python"},
          description="One verifier per task_pool task, validated on its reference solution, the logged "
                      "failure and the generic hack probes; table `verifiers` (invalid ones kept, flagged).")
def verifiers(context: dg.AssetExecutionContext, config: VerifiersConfig, storage: StorageResource,
              sandbox: SandboxPoolResource) -> dg.MaterializeResult:
    registry = VerifierRegistry(sandbox=sandbox.get_pool(), code_timeout_s=config.code_timeout_s,
                        math_timeout_s=config.math_timeout_s)
    with storage.warehouse() as con:
        report = build_verifiers(con, config.to_lib(), registry)
    context.log.info(f"verifiers: {report.valid}/{report.total} valid in {report.seconds}s")
    return dg.MaterializeResult(metadata={
        "total": report.total, "valid": report.valid, "invalid": report.invalid,
        "valid_share": dg.FloatMetadataValue(round(report.valid_share, 4)),
        "counts": dg.MarkdownMetadataValue(report.markdown()),
        "versions": {d: registry.version(d) for d in sorted(report.by_domain) if d in ("math", "code", "agent")},
        "seconds": report.seconds,
    })


@dg.asset_check(asset=verifiers, blocking=True,
                description="The share of valid verifiers is at least the configured floor.")
def verifiers_valid_share(config: ValidShareConfig, storage: StorageResource) -> dg.AssetCheckResult:
    with storage.warehouse() as con:
        total, valid = con.execute("SELECT count(*), count(*) FILTER (WHERE valid) FROM verifiers").fetchone()
    share = valid / total if total else 1.0
    return dg.AssetCheckResult(passed=share >= config.min_valid_share, metadata={
        "valid": valid, "total": total, "valid_share": round(share, 4), "floor": config.min_valid_share})


ASSETS = [verifiers]
CHECKS = [verifiers_valid_share]
