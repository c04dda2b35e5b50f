"""`rollout_engine.engine=vllm-server`: a Dagster step samples through vLLM's OpenAI server, which the
resource starts for the model folder and stops when the step ends (no process left)."""

from __future__ import annotations

import dagster as dg
import pytest

from flywheel.rollout.chat import render_prompt
from flywheel.serving.vllm_server import group_pids, pid_alive
from flywheel_dagster.resources.rollout import RolloutEngineResource

PROMPTS = [render_prompt("math", f"What is {i} + 4?") for i in range(3)]


@pytest.mark.vllm
def test_a_step_samples_through_the_server_it_starts_and_stops_it(policy_dir, require_vllm):
    from flywheel.rollout import build_engine
    from flywheel.rollout.types import SamplingParams

    sp = SamplingParams(temperature=0.0, max_new_tokens=8)

    @dg.asset
    def served_sample(rollout_engine: RolloutEngineResource) -> dg.MaterializeResult:
        engine = rollout_engine.factory("cpu")(str(policy_dir))
        out = engine.generate(PROMPTS, 1, sp)
        servers = list(rollout_engine._servers.servers.values())
        return dg.MaterializeResult(metadata={
            "tokens": [r.token_ids for r in out], "engine": engine.name,
            "pgids": [s.pgid for s in servers], "pids": group_pids(servers[0].pgid)})

    res = dg.materialize([served_sample], resources={"rollout_engine": RolloutEngineResource(engine="vllm-server")})
    assert res.success
    meta = {k: v.value for k, v in res.asset_materializations_for_node("served_sample")[0].metadata.items()}
    assert meta["engine"] == "vllm-server" and len(meta["pgids"]) == 1 and meta["pids"]
    local = build_engine("torch", str(policy_dir)).generate(PROMPTS, 1, sp)
    assert meta["tokens"] == [r.token_ids for r in local]  # greedy: the served tokens are the torch engine's
    assert group_pids(meta["pgids"][0]) == [] and not any(pid_alive(p) for p in meta["pids"])


def test_an_unknown_engine_name_fails_before_anything_samples(policy_dir):
    with pytest.raises(dg.Failure, match="must be one of torch, vllm, vllm-server"):
        RolloutEngineResource(engine="vllm_server").factory("cpu")(str(policy_dir))
