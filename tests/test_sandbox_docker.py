"""The docker backend against a real engine (the private one `scripts/dockerd.sh` starts).

The image is built here from the host's Python (`docker import`); nothing is pulled. These tests skip
only when no engine can start on this machine, and the skip says why.
"""

from __future__ import annotations

import atexit
import os
import subprocess
from pathlib import Path

import pytest

from flywheel.sandbox import Limits
from flywheel.sandbox.docker import DockerSandbox, engine_available

REPO = Path(__file__).resolve().parents[1]
_state: dict = {}


def _engine() -> tuple[bool, str]:
    """An engine that answers: DOCKER_HOST / the private one; else try to start the private one once."""
    if "ok" in _state:
        return _state["ok"], _state["why"]
    ok, why = engine_available()
    if not ok and not os.environ.get("FLYWHEEL_NO_DOCKER"):
        root = os.environ.get("FLYWHEEL_DOCKER_ROOT", "/tmp/flywheel-docker")
        script = REPO / "scripts" / "dockerd.sh"
        r = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            atexit.register(subprocess.run, ["bash", str(script), "stop"], capture_output=True)
            ok, why = engine_available(f"unix://{root}/docker.sock")
        else:
            reason = Path(root, "why").read_text().strip() if Path(root, "why").exists() else r.stderr.strip()
            why = f"{why}; scripts/dockerd.sh start failed: {reason}"
    _state.update(ok=ok, why=why)
    return ok, why


def docker_sandbox_or_skip() -> DockerSandbox:
    ok, why = _engine()
    if not ok:
        pytest.skip(f"no Docker engine can start here: {why}")
    sb = DockerSandbox()
    sb.ensure_image()
    return sb


@pytest.fixture(scope="module")
def dsb():
    return docker_sandbox_or_skip()


def test_runs_with_files_stdin_argv_env_and_collect(dsb):
    r = dsb.run(
        "import sys, os, helper\nprint(helper.X, sys.stdin.read(), sys.argv[1:], os.environ['MODE'], os.getuid())\n"
        "open('out.txt', 'w').write('result')\nsys.exit(5)\n",
        files={"helper.py": "X = 41 + 1\n"}, stdin="in", collect=("out.txt",), argv=("a",), env={"MODE": "m"},
    )
    assert (r.exit_code, r.stdout) == (5, "42 in ['a'] m 1000000\n"), r.stderr
    assert r.files == {"out.txt": b"result"} and not r.killed_reason


def test_container_settings(dsb):
    r = dsb.run(
        "import os, socket\n"
        "print(sorted(n for n in socket.if_nameindex() and [i[1] for i in socket.if_nameindex()]))\n"
        "try:\n    open('/usr/x', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    )
    lines = r.stdout.splitlines()
    assert lines[0] == "['lo']" and lines[1] == "ro 30" and lines[2] == "0000000000000000", r.stdout + r.stderr


def test_limits_name_the_reason(dsb):
    assert dsb.run("x = bytearray(700 << 20)", limits=Limits(memory_mb=200)).killed_reason == "memory"
    r = dsb.run("import time\ntime.sleep(30)", limits=Limits(wall_timeout_s=1))
    assert r.timed_out and r.killed_reason == "wall_timeout"


def test_forged_trailer_is_not_trusted(dsb):
    r = dsb.run("import sys\nsys.stdout.write('\\x00FLYWHEEL-' + '0' * 32 + '\\x00junk')\nsys.exit(3)\n")
    assert r.exit_code == 3 and "junk" in r.stdout


def test_no_container_left_behind(dsb):
    dsb.run("print(1)")
    left = dsb.client.containers.list(all=True, filters={"label": "flywheel.sandbox=1"})
    assert left == []
