"""The rootless local sandbox, run as an unprivileged user (`nobody`), attacked like the root mode.

The test copies `flywheel/sandbox` into a fresh world-readable temp folder (the checkout may sit under a
mode-700 home) and runs a probe there as uid/gid 65534 with `setpriv`, under the system Python. The
probe runs attacks and honest programs through a warm rootless `LocalSandbox` and prints one JSON
object; the assertions are here. Needs root (to become nobody) and unprivileged user namespaces.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest

from flywheel.sandbox.local import available, default_python

SANDBOX_PKG = Path(__file__).resolve().parents[2] / "flywheel" / "sandbox"

PROBE = r'''
import json, os, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from flywheel.sandbox.base import Limits, SandboxInfraError
from flywheel.sandbox.local import LocalSandbox

L = Limits(wall_timeout_s=8, cpu_time_s=5, memory_mb=128, max_processes=16)
SYS = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
X86 = os.uname().machine == "x86_64"
def sc(x86, arm, *a):
    r = libc.syscall(x86 if X86 else arm, *a)
    return r if r >= 0 else -ctypes.get_errno()
"""
PROGS = {
    "identity": "import os\nst = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
                "print(os.getuid(), os.getgid(), *[st[k].strip() for k in ('CapEff', 'CapPrm', 'CapBnd', 'NoNewPrivs', 'Seccomp')])",
    "syscalls": SYS + "print(sorted({sc(272, 97, 0x10000000), sc(165, 40, b'none', b'/tmp', b'tmpfs', 0, None),"
                      " sc(250, 219, 0, -3, 1), sc(248, 217, b'user', b'k', b'v', 1, -3), sc(101, 117, 16, 1, 0, 0)}))",
    "host_files": "import os\nleak = []\nfor p in [" + repr(HERE) + ", " + repr(HERE + '/canary.txt') + ", '/etc/shadow', '/root', '/home']:\n"
                  "    try:\n        leak.append((p, os.listdir(p) if os.path.isdir(p) else open(p).read()))\n"
                  "    except OSError:\n        pass\nprint('LEAK', leak)",
    "network": "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 22), timeout=1)\n    print('CONNECTED')\n"
               "except OSError as e:\n    print('blocked')",
    "writes": "ok = []\nfor p in ['/usr/evil', '/evil', '/etc/evil', '/proc/sys/kernel/hostname']:\n    try:\n"
              "        open(p, 'w').write('x')\n        ok.append(p)\n    except OSError:\n        pass\nprint('WROTE', ok)",
    "signal_monitor": "import os, signal\nfor s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGKILL):\n"
                      "    try:\n        os.kill(1, s)\n    except OSError:\n        pass\nprint('still here')",
    "fork_count": "import os, time\nn = 0\nfor _ in range(64):\n    try:\n        if os.fork() == 0:\n"
                  "            time.sleep(2)\n            os._exit(0)\n        n += 1\n    except OSError:\n        break\nprint('FORKED', n)",
    "fork_hoard": "import os, time\nkids = []\nfor i in range(4):\n    p = os.fork()\n    if p == 0:\n"
                  "        b = bytearray(60 << 20)\n        for j in range(0, len(b), 4096):\n            b[j] = 1\n"
                  "        time.sleep(3)\n        os._exit(0)\n    kids.append(p)\nprint('KIDS', [os.waitpid(k, 0)[1] for k in kids])",
    "memfd": "import os\ntry:\n    os.memfd_create('x')\n    print('MEMFD')\nexcept OSError as e:\n    print('refused', e.errno)",
    "forged": "import os\nos.write(2, b'\\x00FLYWHEEL_SETUP_ERROR boom')\nfor fd in range(3, 64):\n    try:\n"
              "        os.write(fd, b'Eforged')\n    except OSError:\n        pass\nos._exit(125)",
    "cmdline": "import sys\nprint(open('/proc/1/cmdline', 'rb').read().split(b'\\0')[0].decode(), sys.orig_argv)",
    "leftover": "import os, subprocess\nsubprocess.Popen(['/bin/sh', '-c', 'sleep 30'], start_new_session=True)\n"
                "if os.fork() == 0:\n    os.setsid()\n    import time; time.sleep(30)\nprint('spawned')",
    "honest": "def add(a, b):\n    return a + b\nimport threading, subprocess, sys\nassert add(2, 3) == 5\n"
              "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
              "print(subprocess.run([sys.executable, '-c', 'print(6*7)'], capture_output=True, text=True).stdout.strip())",
}
out = {}
with LocalSandbox(warm=True) as sb:
    out["mode"] = {"rootless": sb.rootless, "euid": os.geteuid()}
    for name, code in PROGS.items():
        try:
            r = sb.run(code, limits=L)
            out[name] = {"exit": r.exit_code, "out": r.stdout, "err": r.stderr[-400:], "killed": r.killed_reason}
        except SandboxInfraError as e:
            out[name] = {"infra": str(e)}
    out["cgroup_why"] = sb._server.cgroup_why
time.sleep(0.5)
mine = [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()
        and os.stat(f"/proc/{p}").st_uid == os.geteuid()]
out["left_processes"] = mine
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def probe():
    ok, why = available(rootless=True)
    if not ok:
        pytest.skip(why)
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("becoming an unprivileged user needs root and setpriv")
    d = Path(tempfile.mkdtemp(prefix="flywheel-rootless-"))
    try:
        pkg = d / "flywheel" / "sandbox"
        pkg.mkdir(parents=True)
        (d / "flywheel" / "__init__.py").write_text("")
        for f in SANDBOX_PKG.glob("*.py"):
            shutil.copy(f, pkg / f.name)
        (d / "probe.py").write_text(textwrap.dedent(PROBE))
        (d / "canary.txt").write_text("rootless-canary")
        for p in [d, *d.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
               default_python(), "-I", str(d / "probe.py")]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={"PATH": "/usr/bin:/bin"})
        lines = res.stdout.strip().splitlines()
        if res.returncode != 0 or not lines:
            pytest.fail(f"probe failed ({res.returncode}): {res.stderr[-2000:]}")
        out = json.loads(lines[-1])
        if all("infra" in v for k, v in out.items() if isinstance(v, dict) and k != "mode"):
            first = next(v["infra"] for k, v in out.items() if isinstance(v, dict) and "infra" in v)
            pytest.skip(f"rootless sandbox cannot start here: {first}")
        yield out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_runs_unprivileged_without_capabilities(probe):
    assert probe["mode"] == {"rootless": True, "euid": 65534}
    uid, gid, eff, prm, bnd, nnp, seccomp = probe["identity"]["out"].split()
    assert (uid, gid) == ("1000", "1000")
    assert int(eff, 16) == int(prm, 16) == int(bnd, 16) == 0 and nnp == "1" and seccomp == "2"


def test_kernel_surface_and_host_are_out_of_reach(probe):
    assert probe["syscalls"]["out"].strip() == "[-1]", probe["syscalls"]
    assert probe["host_files"]["out"].strip() == "LEAK []", probe["host_files"]
    assert probe["network"]["out"].strip() == "blocked"
    assert probe["writes"]["out"].strip() == "WROTE []"
    assert probe["cmdline"]["out"].startswith("init ") and "flywheel-rootless" not in probe["cmdline"]["out"]


def test_limits_hold_without_root(probe):
    assert int(probe["fork_count"]["out"].split()[-1]) <= 16, probe["fork_count"]
    hoard = probe["fork_hoard"]
    assert "KIDS [0, 0, 0, 0]" not in hoard.get("out", ""), hoard
    assert probe["memfd"]["out"].strip() == "refused 1"


def test_program_cannot_reach_the_supervisor(probe):
    assert probe["signal_monitor"]["out"].strip() == "still here"
    assert probe["forged"]["exit"] == 125 and "infra" not in probe["forged"]
    assert probe["leftover"]["out"].strip() == "spawned"
    assert probe["left_processes"] == [], probe["left_processes"]


def test_honest_program_passes(probe):
    assert probe["honest"]["exit"] == 0 and probe["honest"]["out"] == "thread\n42\n", probe["honest"]
