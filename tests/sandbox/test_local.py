"""The local sandbox's contract: what goes in (code, files, stdin, argv, env) and what comes back."""

from __future__ import annotations

import json
import os

import pytest

from flywheel.sandbox import Limits, SandboxInfraError, get_sandbox
from flywheel.sandbox.local import LocalSandbox, available

pytestmark = pytest.mark.skipif(not available()[0], reason=available()[1] or "local sandbox unavailable")


@pytest.fixture(scope="module", params=["once", "warm"])
def sb(request):
    s = LocalSandbox(warm=request.param == "warm")
    yield s
    s.close()


def test_stdout_stderr_exit_code(sb):
    r = sb.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n")
    assert (r.exit_code, r.stdout, r.stderr) == (3, "out\n", "err\n")
    assert not r.timed_out and r.killed_reason is None and r.duration_s > 0


def test_uncaught_exception_is_exit_1_with_traceback(sb):
    r = sb.run("def f():\n    raise ValueError('boom')\nf()\n")
    assert r.exit_code == 1
    assert 'File "/work/main.py", line 2, in f' in r.stderr and "ValueError: boom" in r.stderr
    assert "_isolate" not in r.stderr  # the runner's own frame is not shown


def test_main_semantics_files_stdin_argv_env(sb):
    code = (
        "import sys, os, helper\n"
        "assert __name__ == '__main__'\n"
        "data = open('data/in.txt').read()\n"
        "print(helper.twice(sys.stdin.read()), data, sys.argv[1:], os.environ['MODE'], os.getcwd())\n"
        "open('result.json', 'w').write('{\"ok\": true}')\n"
    )
    r = sb.run(code, files={"helper.py": "def twice(s):\n    return s * 2\n", "data/in.txt": b"bytes"},
               stdin="ab", collect=("result.json", "missing.txt"), argv=("x", "y"), env={"MODE": "test"})
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "abab bytes ['x', 'y'] test /work\n"
    assert json.loads(r.files["result.json"]) == {"ok": True} and "missing.txt" not in r.files


def test_collect_does_not_follow_symlinks(sb):
    r = sb.run("import os\nos.symlink('/etc/ld.so.cache', 'out')\nos.symlink('/proc/1/environ', 'env')\n",
               collect=("out", "env"))
    assert r.exit_code == 0, r.stderr
    assert r.files == {}


def test_each_run_is_fresh(sb):
    sb.run("open('/work/left.txt', 'w').write('x'); open('/tmp/left.txt', 'w').write('x')")
    r = sb.run("import os\nprint(os.path.exists('/work/left.txt'), os.path.exists('/tmp/left.txt'))")
    assert r.stdout == "False False\n"


def test_large_stdin_and_output_within_cap(sb):
    data = "x" * 300_000
    r = sb.run("import sys\nd = sys.stdin.read()\nprint(len(d))\nsys.stdout.write(d)\n", stdin=data)
    assert r.exit_code == 0 and r.stdout.startswith("300000\n") and len(r.stdout) == 300_007
    assert not r.truncated


def test_per_call_limits_override(sb):
    r = sb.run("import time\ntime.sleep(5)\n", limits=Limits(wall_timeout_s=0.5))
    assert r.timed_out and r.killed_reason == "wall_timeout" and r.duration_s < 3


def test_subprocess_and_threads_work_inside(sb):
    r = sb.run(
        "import subprocess, sys, threading\n"
        "out = subprocess.run([sys.executable, '-c', 'print(6*7)'], capture_output=True, text=True).stdout\n"
        "t = threading.Thread(target=lambda: print('thread'))\nt.start(); t.join()\n"
        "print(out.strip())\n"
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout == "thread\n42\n"


def test_bad_file_name_is_rejected_before_running(sb):
    with pytest.raises(ValueError):
        sb.run("print(1)", files={"../escape.py": "x"})


def test_infra_failure_raises_infra_error():
    with pytest.raises(SandboxInfraError):
        LocalSandbox(python="/nonexistent/python3").run("print(1)")


def test_get_sandbox_factory_and_limits_defaults():
    s = get_sandbox("local")
    assert isinstance(s, LocalSandbox) and s.limits == Limits()
    with pytest.raises(ValueError):
        get_sandbox("nope")
    assert os.path.isabs(s.python)
