"""What the fleet tests share: one local Ray session per test module (2 CPUs), shut down after it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_session(local_sandbox):
    """`ray.init(num_cpus=2)` on loopback, no dashboard (seconds to start): what CI's LocalRay gives."""
    ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray
    ray.shutdown()
