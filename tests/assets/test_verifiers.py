"""The `verifiers` asset and its blocking valid-share check under dagster.materialize()."""

from __future__ import annotations

import dagster as dg
import duckdb


def test_asset_and_blocking_check(local_sandbox, fill_task_pool, tmp_path):
    from flywheel_dagster.assets.verifiers import verifiers, verifiers_valid_share
    from flywheel_dagster.resources.sandbox import SandboxPoolResource
    from flywheel_dagster.resources.storage import StorageResource

    db = str(tmp_path / "warehouse.duckdb")  # the storage home's warehouse
    con = duckdb.connect(db)
    fill_task_pool(con, n=1, broken=False)
    con.execute("INSERT INTO task_pool SELECT 'bad-ref', 'code', 'x', '{\"entry_point\": \"f\"}', NULL, 1, 0, 0, 1, "
                "'frontier', 99")
    con.close()

    @dg.asset(name="task_pool")
    def task_pool_stub() -> None:
        """Stands in for I2's upstream asset so the graph resolves; the table is the fixture above."""

    def run(floor):
        return dg.materialize(
            [task_pool_stub, verifiers, verifiers_valid_share],
            selection=dg.AssetSelection.assets("verifiers"),
            resources={"storage": StorageResource(home=str(tmp_path)), "sandbox": SandboxPoolResource()},
            run_config={"ops": {"verifiers": {"config": {"code_timeout_s": 1.5, "slow_probes": False}},
                                "verifiers_verifiers_valid_share": {"config": {"min_valid_share": floor}}}},
            raise_on_error=False,
        )

    ok = run(0.5)
    assert ok.success
    meta = ok.asset_materializations_for_node("verifiers")[0].metadata
    assert meta["valid"].value == 3 and meta["invalid"].value == 1 and meta["valid_share"].value == 0.75
    assert "| reason | verifiers |" in meta["counts"].value
    [check] = ok.get_asset_check_evaluations()
    assert check.passed
    bad = run(0.9)
    [check] = bad.get_asset_check_evaluations()
    assert not check.passed and not bad.success  # blocking: the run fails
