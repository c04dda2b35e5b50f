"""Closing the loop: the registered champion serves a simulated day through the torch engine."""

from __future__ import annotations

import json

import pytest

from flywheel.registry.mlflow_registry import Registry
from flywheel.serving.champion import ChampionResponder, ServeConfig, make_champion_responder, serve_day
from flywheel.world.responder import BatchResponder, text_from_messages


def test_champion_serves_next_day_with_verified_outcomes(flywheel_home, seed_mlflow_db, random_tiny, tmp_path,
                                                         monkeypatch):
    import torch

    torch.set_num_threads(1)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    seed_mlflow_db(flywheel_home)
    with pytest.raises(LookupError):
        make_champion_responder(paths=flywheel_home)
    path = random_tiny(tmp_path / "tiny")
    Registry(flywheel_home.mlflow_uri).ensure_champion(path, "tiny-test")
    responder = make_champion_responder(paths=flywheel_home, config=ServeConfig(max_new_tokens=24, max_steps=2))
    assert isinstance(responder, ChampionResponder) and isinstance(responder, BatchResponder)
    assert responder.model_id == "flywheel-policy:1"

    day = serve_day("2026-12-03", 20, seed=5, responder=responder, paths=flywheel_home)
    assert day == flywheel_home.raw_logs / "2026-12-03"
    recs = []
    for f in sorted(day.glob("*.jsonl")):
        for line in f.read_bytes().splitlines():
            try:
                recs.append(json.loads(line))
            except (json.JSONDecodeError, UnicodeDecodeError):
                pass  # the generator malforms ~1% of lines on purpose (ingest's quarantine)
    assert len(recs) >= 15
    assert {r["model"] for r in recs} == {"flywheel-policy:1"}
    for r in recs:
        o = r["outcome"]
        assert isinstance(o["passed"], bool) and o["completion_tokens"] >= 1 and o["latency_ms"] > 0
        assert o["prompt_tokens"] > 0 and o["cost_usd"] > 0 and "verifier_reason" in o
        if not o["passed"]:
            assert o["error"]  # the verifier's reason is the error text mining reads
        assert r["messages"][-1]["role"] in ("assistant", "tool")
        assert isinstance(text_from_messages(r["messages"]), str)
    assert {r["domain"] for r in recs} >= {"math", "code"}
