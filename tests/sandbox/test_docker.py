"""The docker backend against a real engine (the private one `scripts/dockerd.sh` starts).

The image is built here from the host's Python (`docker import`); nothing is pulled. These tests skip
only when no engine can start on this machine, and the skip says why (the `docker_sandbox` fixture
in conftest.py).
"""

from __future__ import annotations

from flywheel.sandbox import Limits


def test_runs_with_files_stdin_argv_env_and_collect(docker_sandbox):
    r = docker_sandbox.run(
        "import sys, os, helper\nprint(helper.X, sys.stdin.read(), sys.argv[1:], os.environ['MODE'], os.getuid())\n"
        "open('out.txt', 'w').write('result')\nsys.exit(5)\n",
        files={"helper.py": "X = 41 + 1\n"}, stdin="in", collect=("out.txt",), argv=("a",), env={"MODE": "m"},
    )
    assert (r.exit_code, r.stdout) == (5, "42 in ['a'] m 1000000\n"), r.stderr
    assert r.files == {"out.txt": b"result"} and not r.killed_reason


def test_container_settings(docker_sandbox):
    r = docker_sandbox.run(
        "import os, socket\n"
        "print(sorted(n for n in socket.if_nameindex() and [i[1] for i in socket.if_nameindex()]))\n"
        "try:\n    open('/usr/x', 'w')\nexcept OSError as e:\n    print('ro', e.errno)\n"
        "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    )
    lines = r.stdout.splitlines()
    assert lines[0] == "['lo']" and lines[1] == "ro 30" and lines[2] == "0000000000000000", r.stdout + r.stderr


def test_limits_name_the_reason(docker_sandbox):
    assert docker_sandbox.run("x = bytearray(700 << 20)", limits=Limits(memory_mb=200)).killed_reason == "memory"
    r = docker_sandbox.run("import time\ntime.sleep(30)", limits=Limits(wall_timeout_s=1))
    assert r.timed_out and r.killed_reason == "wall_timeout"


def test_forged_trailer_is_not_trusted(docker_sandbox):
    r = docker_sandbox.run("import sys\nsys.stdout.write('\\x00FLYWHEEL-' + '0' * 32 + '\\x00junk')\nsys.exit(3)\n")
    assert r.exit_code == 3 and "junk" in r.stdout


def test_no_container_left_behind(docker_sandbox):
    docker_sandbox.run("print(1)")
    left = docker_sandbox.client.containers.list(all=True, filters={"label": "flywheel.sandbox=1"})
    assert left == []
