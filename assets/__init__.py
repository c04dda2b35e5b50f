"""Thin Dagster assets, one module per flywheel stage; `assets.definitions.defs` assembles them."""
