"""A local Ray session started through `loopback_only` listens on loopback only, and still runs tasks."""

from __future__ import annotations

import os

import pytest

from flywheel.fleet.local import SINGLE_MACHINE_ENV, is_loopback, listeners, loopback_only, session_pids


def test_is_loopback_reads_every_form():
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1", "[::1]"))
    assert not any(is_loopback(a) for a in ("0.0.0.0", "::", "192.0.2.2", "::ffff:10.0.0.1"))


def test_local_ray_listens_on_loopback_only():
    """Without the block, Ray's GCS, raylet, workers and agents listened on * and on the machine's address."""
    ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")
    if ray.is_initialized():
        pytest.skip("a Ray session of another test is still open in this process")
    before = os.environ.get(SINGLE_MACHINE_ENV)
    with loopback_only():
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        assert os.environ.get(SINGLE_MACHINE_ENV) == before  # restored for later sessions of this process

        @ray.remote
        def one() -> int:
            return 1

        assert ray.get(one.remote()) == 1  # a worker started and answered
        socks = listeners(session_pids())
        assert len(socks) >= 3, socks  # GCS, raylet, the worker at least
        assert all(is_loopback(addr) for addr, _, _ in socks), [s for s in socks if not is_loopback(s[0])]
    finally:
        ray.shutdown()
