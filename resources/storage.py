"""StorageResource: where one flywheel installation keeps its data, the one place assets learn a location.

The warehouse (DuckDB), models and checkpoints, the MLflow tracking/registry store and the raw
logs all derive from it; assets hand `storage.paths()` (a `flywheel.paths.FlywheelPaths`) to
library calls. `default_storage()` is the embedded default, built from the same environment variables the
CLI reads (`flywheel.paths.paths_from_environ`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource
from pydantic import Field

from flywheel.paths import TRACKING_URI_ENV, FlywheelPaths, paths_from_environ
from flywheel.tracking import DEFAULT_DAGSTER_UI_URL, DEFAULT_UI_URL, ui_base
from flywheel.train.common.telemetry import DEFAULT_EXPERIMENT, Telemetry
from flywheel.warehouse import prepare

WAREHOUSE_POOL = "duckdb_warehouse"
"""Dagster concurrency pool for assets that open the warehouse: DuckDB allows one writing process
per file, so steps that hold a connection for long (ingest, mining) take turns (dagster.yaml:
`pools.default_limit: 1`) instead of failing on the file lock."""


class StorageResource(dg.ConfigurableResource):
    """The installation's home folder, plus where MLflow, new base models and raw logs live when elsewhere.

    `tracking_uri`: an MLflow server, e.g. `dg.EnvVar("MLFLOW_TRACKING_URI")` (credentials stay in
    the environment, never in params). `raw_logs_uri`: your own logs, e.g.
    `s3://my-bucket/llm-logs/{date}/` (credentials as pyarrow's filesystems read them) or
    `/data/logs/{date}.jsonl`.
    """

    home: str = Field(description="folder of warehouse.duckdb, models/, checkpoints/, eval/, raw_logs/, mlflow.db")
    tracking_uri: str = Field(default="", description="MLflow tracking/registry server; empty = SQLite under home")
    mlflow_experiment: str = Field(default=DEFAULT_EXPERIMENT, description="MLflow experiment of the training runs")
    mlflow_ui_url: str = Field(default="", description="MLflow UI base URL that asset metadata links to; empty = "
                                                       f"the tracking server when one is set, else {DEFAULT_UI_URL} "
                                                       "(`make mlflow`)")
    dagster_ui_url: str = Field(default=DEFAULT_DAGSTER_UI_URL, description="Dagster UI base URL the MLflow runs "
                                                                         "of training and evaluation link back to")
    releases_dir: str = Field(default="", description="folder watched for new base-model checkpoints; "
                                                      "empty = home/models/base")
    raw_logs_uri: str = Field(default="", description="one day of raw logs: file/folder/URI with {date} "
                                                      "(YYYY-MM-DD); empty = home/raw_logs/{date}")

    def paths(self) -> FlywheelPaths:
        """The library's view of this installation (folders created)."""
        return FlywheelPaths(home=Path(self.home).resolve(), tracking_uri=self.tracking_uri,
                             releases_dir=Path(self.releases_dir).resolve() if self.releases_dir else None).ensure()

    def raw_logs_for(self, date: str) -> str:
        """Where the raw logs of day `date` are."""
        return self.raw_logs_uri.format(date=date) if self.raw_logs_uri else str(self.paths().raw_logs / date)

    @contextmanager
    def warehouse(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write warehouse connection with the flywheel's session settings and tables
        (dagster-duckdb's, which retries while another process holds the file lock)."""
        with DuckDBResource(database=str(self.paths().warehouse)).get_connection() as con:
            yield prepare(con)

    def mlflow_ui(self) -> str:
        """The MLflow UI base URL links in asset metadata start with."""
        return ui_base(self.paths().mlflow_uri, self.mlflow_ui_url)

    def link_dagster_run(self, mlflow_run_id: str | None, dagster_run_id: str) -> None:
        """Link MLflow run `mlflow_run_id` (if any) back to the Dagster run that logged it."""
        if mlflow_run_id:
            from flywheel.tracking import link_dagster_run

            link_dagster_run(self.paths().mlflow_uri, mlflow_run_id, dagster_run_id, self.dagster_ui_url)

    def telemetry(self) -> Telemetry:
        """An MLflow training-run logger bound to this store."""
        paths = self.paths()
        return Telemetry(paths.mlflow_uri, experiment=self.mlflow_experiment, artifact_root=paths.mlflow_artifacts,
                         ui_url=self.mlflow_ui())


def default_storage() -> StorageResource:
    """The embedded default: the environment the CLI reads; a server URI stays an `EnvVar` (never a config value)."""
    env = paths_from_environ(os.environ)
    return StorageResource(home=str(env.home), tracking_uri=dg.EnvVar(TRACKING_URI_ENV) if env.tracking_uri else "",
                           releases_dir=str(env.releases_dir or ""))


def default_resources() -> dict[str, Any]:
    return {"storage": default_storage()}
