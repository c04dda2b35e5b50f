"""Attacks on what outlives a run, the run-wide memory limit, the kernel's surface, forged infra verdicts
and host paths in /proc; each class with several variants and honest programs that must still pass.

Every attack runs on the one-shot sandbox and through the warm pool; the memory attacks also on the
no-cgroup fallback (`cgroup=False`).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from flywheel.sandbox.base import Limits
from flywheel.sandbox.local import LocalSandbox, available
from flywheel.sandbox.pool import SandboxPool

pytestmark = pytest.mark.skipif(not available()[0] or os.geteuid() != 0,
                                reason=available()[1] or "root mode: these tests run as root")
REPO = Path(__file__).resolve().parents[2]
FAST = Limits(wall_timeout_s=8, cpu_time_s=5, memory_mb=128, max_processes=16, max_output_bytes=200_000,
              max_file_size_mb=16, max_disk_mb=16)


@pytest.fixture(scope="module", params=["once", "pool"])
def sbx(request):
    if request.param == "once":
        yield LocalSandbox()
    else:
        with SandboxPool(workers=2) as pool:
            yield pool


@pytest.fixture(scope="module", params=["cgroup", "fallback"])
def msbx(request):
    """A warm sandbox with per-run cgroups (skipped where none can be made) and one without."""
    s = LocalSandbox(warm=True, cgroup=request.param == "cgroup")
    s.warmup()
    if request.param == "cgroup" and s._server.cgroup_why:
        s.close()
        pytest.skip(f"no per-run cgroup here: {s._server.cgroup_why}")
    yield s
    s.close()


def run(sbx, code: str, limits: Limits = FAST, prefix: str = "", **kw):
    return sbx.run(prefix + textwrap.dedent(code), limits=limits, **kw)


SYSCALL = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
X86 = os.uname().machine == "x86_64"
def sc(x86, arm, *args):
    r = libc.syscall(x86 if X86 else arm, *args)
    return r if r >= 0 else -ctypes.get_errno()
"""


# ------------------------------------------------------------------ 1. state that outlives a run
def test_keyring_syscalls_are_refused(sbx):
    r = run(sbx, prefix=SYSCALL, code="""
        ring = {"session": -3, "user": -4, "user_session": -5, "process": -2, "thread": -1}
        out = {}
        for name, spec in ring.items():
            out["add_" + name] = sc(248, 217, b"user", b"k_" + name.encode(), b"secret", 6, spec)
        out["request"] = sc(249, 218, b"user", b"k_session", None, 0)
        out["keyctl_get"] = sc(250, 219, 0, -3, 1)                  # KEYCTL_GET_KEYRING_ID, create
        out["keyctl_join"] = sc(250, 219, 1, b"_ses.flywheel")       # JOIN_SESSION_KEYRING by name
        out["keyctl_search"] = sc(250, 219, 10, -4, b"user", b"k_user", 0)
        print(sorted(set(out.values())), out)
    """)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("[-1]"), r.stdout  # every one EPERM


def test_sysv_and_posix_ipc_do_not_outlive_a_run(sbx):
    make = """
        KEY = 0x5EC12E7
        shm = sc(29, 194, KEY, 4096, 0o1666)     # shmget IPC_CREAT|0666
        msg = sc(68, 186, KEY, 0o1666)           # msgget
        sem = sc(64, 190, KEY, 1, 0o1666)        # semget
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        rt.mq_open.restype = ctypes.c_int
        mq = rt.mq_open(b"/flywheel_q", os.O_CREAT | os.O_RDWR, 0o666, None)
        print("MADE", shm >= 0, msg >= 0, sem >= 0, mq >= 0)
    """
    find = """
        KEY = 0x5EC12E7
        found = [sc(29, 194, KEY, 0, 0), sc(68, 186, KEY, 0), sc(64, 190, KEY, 0, 0)]
        rt = ctypes.CDLL("librt.so.1", use_errno=True)
        found.append(rt.mq_open(b"/flywheel_q", os.O_RDWR, 0, None))
        print("FOUND", [f >= 0 for f in found])
    """
    a = run(sbx, make, prefix=SYSCALL)
    assert "MADE True True True True" in a.stdout, (a.stdout, a.stderr[-500:])  # positive control: IPC works
    b = run(sbx, find, prefix=SYSCALL)
    assert "FOUND [False, False, False, False]" in b.stdout, (b.stdout, b.stderr[-500:])


def test_uids_are_fresh_per_run_and_per_pool():
    code = "import os; print(os.getuid(), os.getgid())"
    with SandboxPool(workers=2) as p1, SandboxPool(workers=2) as p2:
        uids = [p1.run(code).stdout.split()[0] for _ in range(40)] + [p2.run(code).stdout.split()[0] for _ in range(40)]
    assert len(set(uids)) == 80, uids
    assert all(int(u) >= 1_000_000 and u != "0" for u in uids)


def test_orphan_holding_a_memfd_dies_with_the_run(sbx):
    r = run(sbx, """
        import os, time
        if os.fork() == 0:
            os.setsid()
            fd = os.open("/tmp/held", os.O_CREAT | os.O_RDWR)
            os.write(fd, b"x" * (1 << 20))
            time.sleep(60)
            os._exit(0)
        print("parent done")
    """)
    assert r.exit_code == 0 and "parent done" in r.stdout
    # nothing of it is left: a later run sees a fresh /tmp and no other process
    again = run(sbx, "import os; print(os.listdir('/tmp'), sorted(p for p in os.listdir('/proc') if p.isdigit()))")
    assert again.stdout.startswith("[] ['1', '2']"), again.stdout


# ------------------------------------------------------------------ 2. memory on the run as a whole
MEMFD_HOARD = """
import os, mmap
held, fds = 0, []
try:
    for i in range(24):                       # 24 x 10 MB memfds, each under RLIMIT_FSIZE
        fd = os.memfd_create(f"m{i}")
        os.ftruncate(fd, 10 << 20)
        m = mmap.mmap(fd, 10 << 20)
        m.write(b"x" * (10 << 20))
        m.close()
        fds.append(fd)
        held += 10
except OSError as e:
    print("refused", e.errno)
print("HELD", held)
"""

FORK_HOARD = """
import os, time
kids = []
for i in range(4):
    p = os.fork()
    if p == 0:
        b = bytearray(60 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(3)
        os._exit(0)
    kids.append(p)
codes = [os.waitpid(k, 0)[1] for k in kids]
print("KIDS", codes)
"""

SHM_HOARD = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
made = 0
for i in range(8):
    if libc.shmget(0x1000 + i, 64 << 20, 0o1600) >= 0:
        made += 64
print("SHM", made)
"""


def test_memfds_cannot_hold_more_than_the_limit(msbx):
    r = run(msbx, MEMFD_HOARD)
    held = int(r.stdout.split("HELD")[1]) if "HELD" in r.stdout else 0
    assert held < 128, (r.stdout, r.stderr[-300:], r.killed_reason)


def test_forked_children_share_one_limit(msbx):
    r = run(msbx, FORK_HOARD)
    all_held = "KIDS [0, 0, 0, 0]" in r.stdout
    assert not all_held, (r.stdout, r.killed_reason)  # 4 x 60 MB > 128 MB: someone was killed
    if "KIDS" not in r.stdout:
        assert r.killed_reason == "memory", (r.killed_reason, r.stderr[-300:])


def test_sysv_shm_is_bounded(msbx):
    r = run(msbx, SHM_HOARD)
    assert r.exit_code == 0, r.stderr
    assert int(r.stdout.split()[-1]) <= 128, r.stdout


def test_honest_memory_use_still_passes(msbx):
    r = run(msbx, """
        import os
        b = bytearray(60 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        p = os.fork()
        if p == 0:
            c = bytearray(20 << 20)
            os._exit(0)
        print("OK", os.waitpid(p, 0)[1], sum(range(10**5)))
    """)
    assert r.exit_code == 0 and r.stdout.startswith("OK 0"), (r.stdout, r.stderr[-300:], r.killed_reason)


# ------------------------------------------------------------------ 3. the kernel's attack surface
def test_namespaces_mounts_and_dangerous_syscalls_are_refused(sbx):
    r = run(sbx, prefix=SYSCALL, code="""
        CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x20000, 0x40000000
        out = {
            "unshare_user": sc(272, 97, CLONE_NEWUSER),
            "unshare_user_ns": sc(272, 97, CLONE_NEWUSER | CLONE_NEWNS),
            "unshare_net": sc(272, 97, CLONE_NEWNET),
            "clone_user": sc(56, 220, CLONE_NEWUSER | 17, 0, 0, 0, 0),
            "setns": sc(308, 268, os.open("/proc/self/ns/mnt", os.O_RDONLY), 0),
            "mount": sc(165, 40, b"none", b"/tmp", b"tmpfs", 0, None),
            "ptrace": sc(101, 117, 16, 1, 0, 0),            # PTRACE_ATTACH pid 1
            "traceme": sc(101, 117, 0, 0, 0, 0),
            "bpf": sc(321, 280, 0, None, 0),
            "perf": sc(298, 241, None, 0, -1, -1, 0),
            "userfaultfd": sc(323, 282, 0),
            "io_uring": sc(425, 425, 8, None),
            "kexec": sc(246, 104, 0, 0, None, 0),
            "init_module": sc(175, 105, None, 0, b""),
            "fsopen": sc(430, 430, b"tmpfs", 0),
            "open_tree": sc(428, 428, -100, b"/", 1),
            "process_vm_readv": sc(310, 270, 1, None, 0, None, 0, 0),
        }
        if X86:
            out["x32_getpid"] = sc(0x40000000 + 39, 0)
        print(sorted(set(out.values())), out)
    """)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("[-1]"), r.stdout  # all EPERM


def test_unshare_binary_and_clone3_fail(sbx):
    r = run(sbx, prefix=SYSCALL, code="""
        import subprocess, shutil
        res = {}
        if shutil.which("unshare"):
            res["unshare -U"] = subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode
            res["unshare -m"] = subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode
        res["clone3"] = sc(435, 435, None, 0)
        status = dict(l.split(":\\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\\t" in l)
        print(res, status["Seccomp"].strip(), status["NoNewPrivs"].strip(), status["CapEff"].strip())
    """)
    assert r.exit_code == 0, r.stderr
    assert "'clone3': -38" in r.stdout  # ENOSYS: the C library falls back to clone, which is filtered
    assert "'unshare -U': 0" not in r.stdout and "'unshare -m': 0" not in r.stdout
    assert r.stdout.rstrip().endswith("2 1 0000000000000000"), r.stdout


def test_limits_of_other_processes_cannot_be_changed(sbx):
    """A candidate shares its judge's uid: prlimit64 on any pid but its own is refused; its own still works."""
    r = run(sbx, """
        import os, resource, sys, subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
        res = {}
        for name, pid in (("parent", os.getppid()), ("child", child.pid), ("init", 1)):
            try:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (8, 8))
                res[name] = "changed"
            except OSError as e:
                res[name] = e.errno
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        res["self"] = resource.getrlimit(resource.RLIMIT_NOFILE)
        res["self_read"] = resource.prlimit(0, resource.RLIMIT_NOFILE)
        child.kill()
        print(res)
    """)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip() == "{'parent': 1, 'child': 1, 'init': 1, 'self': (64, 64), 'self_read': (64, 64)}"


def test_honest_threads_forks_subprocesses_still_work(sbx):
    r = run(sbx, """
        import os, subprocess, threading, concurrent.futures, sys
        out = []
        t = threading.Thread(target=lambda: out.append("thread"))
        t.start(); t.join()
        with concurrent.futures.ThreadPoolExecutor(4) as ex:
            out.append(sum(ex.map(lambda x: x * x, range(100))))
        p = os.fork()
        if p == 0:
            os._exit(7)
        out.append(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]))
        out.append(subprocess.run([sys.executable, "-c", "print(6*7)"], capture_output=True, text=True).stdout.strip())
        print(out)
    """)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip() == "['thread', 328350, 7, '42']"


# ------------------------------------------------------------------ 4. forged infrastructure verdicts
FORGERIES = [
    "import os, sys\nos.write(2, b'\\x00FLYWHEEL_SETUP_ERROR boom')\nos._exit(125)\n",
    "import sys\nsys.stderr.write('\\x00FLYWHEEL_SETUP_ERROR boom')\nsys.exit(125)\n",
    # every descriptor it might guess for the supervisor's channel
    "import os\nfor fd in range(3, 256):\n    try:\n        os.write(fd, b'Eforged')\n    except OSError:\n        pass\nos._exit(125)\n",
    # a result frame of the monitor's protocol on stdout
    "import marshal, os, struct\nd = marshal.dumps({'infra_error': 'forged'}, 4)\n"
    "os.write(1, struct.pack('>Q', len(d)) + d)\nos._exit(125)\n",
    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "import os\nfor p in ['/proc/1/fd/0', '/proc/1/fd/3', '/proc/1/fd/4']:\n    try:\n"
    "        open(p, 'wb').write(b'Eforged')\n    except OSError:\n        pass\nraise SystemExit(125)\n",
]


@pytest.mark.parametrize("code", FORGERIES)
def test_nothing_the_program_does_is_an_infra_error(code):
    with SandboxPool(workers=1, retries=2) as pool:
        r = pool.run(code, limits=FAST)
        assert pool.stats["infra_retries"] == 0 and pool.stats["infra_failures"] == 0
    assert r.exit_code in (125, -9), (r.exit_code, r.stderr[-300:])


def test_forged_marker_is_a_normal_result_one_shot():
    r = LocalSandbox().run(FORGERIES[0], limits=FAST)
    assert r.exit_code == 125 and "FLYWHEEL_SETUP_ERROR" in r.stderr


# ------------------------------------------------------------------ 5. host paths in /proc and memory
def test_no_view_names_the_host_checkout(sbx):
    r = run(sbx, """
        import gc, glob, os, sys, types
        seen = []
        for pat in ["/proc/*/cmdline", "/proc/*/environ", "/proc/*/cgroup", "/proc/*/mountinfo", "/proc/*/maps",
                    "/proc/*/task/*/cmdline", "/proc/self/stat"]:
            for p in glob.glob(pat):
                try:
                    seen.append(p + "=" + open(p, "rb").read().decode(errors="replace"))
                except OSError:
                    pass
        seen += [repr(sys.argv), repr(sys.orig_argv), repr(sys.path), sys.executable, os.getcwd()]
        f = sys._getframe()
        while f:
            seen.append(f.f_code.co_filename + repr(f.f_code.co_consts) + repr(list(f.f_globals)))
            f = f.f_back
        for o in gc.get_objects():
            if isinstance(o, types.FunctionType):
                seen.append(o.__code__.co_filename)
            elif isinstance(o, types.ModuleType):
                seen.append(repr(getattr(o, "__file__", "")))
        print(open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode())
        print("\\n".join(seen))
    """, limits=Limits(max_output_bytes=5_000_000))
    assert r.exit_code == 0, r.stderr
    assert r.stdout.splitlines()[0] == "init"
    for needle in (str(REPO / "flywheel"), str(REPO / ".venv"), "flywheel/sandbox", "site-packages"):
        assert needle not in r.stdout, needle
