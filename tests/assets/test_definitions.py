"""The whole Definitions load: a broken import anywhere in assets/ or resources/ fails here."""

from __future__ import annotations


def test_definitions_load():
    from assets.definitions import STAGE_MODULES, build_definitions

    defs = build_definitions()
    assert "gpu" in defs.resources
    assert STAGE_MODULES  # every stage module that exists was imported without error
