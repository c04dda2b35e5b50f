"""Partitions shared by the stages: one per day of logs, one per base-model release."""

from __future__ import annotations

import dagster as dg

LOG_START_DATE = "2026-11-01"

daily_logs = dg.DailyPartitionsDefinition(start_date=LOG_START_DATE, end_offset=1)
"""`raw_task_logs` partitions: one per calendar day (UTC) of production traffic."""

base_models = dg.DynamicPartitionsDefinition(name="base_model")
"""One partition per base-model release (`tiny-v1`, or a checkpoint folder name)."""

