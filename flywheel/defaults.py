"""Defaults that several parts must agree on, declared once (a light module: the CLI reads it at start-up).

A default that belongs to one config lives on that config's dataclass field; the ones here are shared by
configs that must not drift apart: what the gate measures must be what production serves.
"""

from __future__ import annotations

DEFAULT_BASE_MODEL = "tiny-v3"
"""The base model a turn, `flywheel train` and `flywheel model` use unless told otherwise: the clean base (no
injected label noise; tiny-v1 keeps it as an experiment knob) with a learnable agent domain (a worked plan
before each call: ~30% agent pass@1 where tiny-v2 has ~2%), docs/models.md."""

SERVING_TEMPERATURE = 0.7
"""The temperature production traffic is served at, so evaluation's pass@k samples measure what users get."""
