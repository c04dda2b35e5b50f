"""Dagster resources: where things run. Each builds library objects from a few typed fields."""
