"""Namespaces and the sandbox's filesystem, for `_isolate.py` (the trusted half of the local sandbox).

Stdlib only: loaded by `_isolate.py` under the host's system interpreter, never imported into the venv.
Holds the raw syscalls (`mount`, `pivot_root`), the read-only template root a zygote builds once
(`prepare_root`), each execution's private `/work` and `/tmp` tmpfs with the request's files, the
monitor's own `/proc` and hostname (`prepare_namespaces`), and reading `collect`ed files back
without following links the payload may have planted.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import stat
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
HOSTPROC = "/.hostproc"
"""Rootless only: the host's /proc in the template, unmounted by each monitor once its own is up."""
NS_FLAGS = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP
"""The namespaces every monitor is cloned into (see `_isolate.spawn_monitor`)."""
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
STAGE = "/tmp"  # where the template root is built (in the private mount ns) before pivot_root
DEV_NODES = ("null", "zero", "full", "random", "urandom")
ETC_FILES = ("ld.so.cache", "localtime")
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, 155)
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine, 250)

libc = ctypes.CDLL(None, use_errno=True)


def check_errno(ret: int, what: str) -> None:
    """A libc call failed (non-zero return): raise its errno as an OSError naming the call."""
    if ret != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def _mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(s):
        return (s.encode() if s is not None else None)
    check_errno(libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {dst}")


def _prefixes() -> list[str]:
    """Host directories bound read-only: /usr, plus the interpreter's prefix when it lives elsewhere."""
    out = ["/usr"]
    for p in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)}:
        if not p.startswith("/usr/") and p != "/usr" and p not in out:
            out.append(p)
    return out


def _mkdirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def enter_user_namespace() -> None:
    """Rootless: a user namespace in which this process is root (uid/gid 0 = the host user)."""
    uid, gid = os.geteuid(), os.getegid()
    check_errno(libc.unshare(CLONE_NEWUSER), "unshare user (are unprivileged user namespaces allowed?)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def prepare_root(rootless: bool = False) -> None:
    """Once per zygote (or one-shot process): move this process into a private mount namespace whose
    whole filesystem is the sandbox template, and detach the host's.

    Template: a tmpfs `/` (read-only once built) with `/usr` (and the interpreter's prefix) bound
    read-only, a minimal `/dev` and `/etc`, and empty mount points `/work`, `/tmp`, `/proc` that
    every execution fills with its own tmpfs/procfs. Per-execution mount namespaces are copies of
    this small tree, so building one costs three mounts, not a walk over the host's mount table.
    """
    if rootless:
        enter_user_namespace()
    check_errno(libc.unshare(CLONE_NEWNS), "unshare mnt")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=755")
    for d in ("work", "tmp", "proc", "dev", "etc"):
        os.mkdir(f"{STAGE}/{d}", 0o755)
    if rootless:  # the kernel lets a user namespace mount a procfs only where one is fully visible
        os.mkdir(f"{STAGE}{HOSTPROC}", 0o755)
        _mount("/proc", f"{STAGE}{HOSTPROC}", None, MS_BIND | MS_REC)
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = f"/{name}"
        if os.path.islink(host):
            os.symlink(os.readlink(host), f"{STAGE}/{name}")
        elif os.path.isdir(host):
            _bind_ro(host, f"{STAGE}/{name}")
    for p in _prefixes():
        _bind_ro(p, STAGE + p)
    _mount("tmpfs", f"{STAGE}/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for node in DEV_NODES:
        if os.path.exists(f"/dev/{node}"):
            open(f"{STAGE}/dev/{node}", "w").close()
            _mount(f"/dev/{node}", f"{STAGE}/dev/{node}", None, MS_BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{STAGE}/dev/{name}")
    os.symlink("/proc/self/fd", f"{STAGE}/dev/fd")
    _mount(None, f"{STAGE}/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    for name in ETC_FILES:
        src = f"/etc/{name}"
        if os.path.isfile(src):
            with open(src, "rb") as f, open(f"{STAGE}/etc/{name}", "wb") as g:
                g.write(f.read())
    _mount(None, STAGE, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(STAGE)
    check_errno(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    check_errno(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def _bind_ro(src: str, dst: str) -> None:
    os.makedirs(dst, mode=0o755, exist_ok=True)
    _mount(src, dst, None, MS_BIND | MS_REC)
    _mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def mount_private_dirs(req: dict, uid: int) -> None:
    """Per execution, in its own mount namespace: fresh tmpfs `/work` (with the files) and `/tmp`."""
    disk = max(1, int(req["limits"]["max_disk_mb"]))
    opts = f"size={disk}m,nr_inodes=16384,uid={uid},gid={uid}"
    _mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, opts + ",mode=755")
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts + ",mode=1777")
    _write_files("/work", req, uid)


def _write_files(work: str, req: dict, uid: int) -> None:
    files = dict(req.get("files") or {})
    files["main.py"] = req["code"].encode() if isinstance(req["code"], str) else req["code"]
    for name, data in files.items():
        rel = os.path.normpath(name)
        if rel.startswith(("/", "..")) or rel in (".", ""):
            raise ValueError(f"file name outside the work dir: {name!r}")
        path = os.path.join(work, rel)
        parent = os.path.dirname(path)
        if parent != work:
            _mkdirs(parent)
            d = parent
            while d != work:
                os.chown(d, uid, uid)
                d = os.path.dirname(d)
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chown(path, uid, uid)
    os.chown(work, uid, uid)


def read_collected(work: str, names: list, cap: int) -> dict:
    """Read files the payload left in /work without following links (it could plant a symlink)."""
    out = {}
    for name in names:
        rel = os.path.normpath(name)
        if rel.startswith(("/", "..")):
            continue
        parts = rel.split("/")
        try:
            fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                for p in parts[:-1]:
                    nfd = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                    os.close(fd)
                    fd = nfd
                ffd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            finally:
                os.close(fd)
            try:
                if not stat.S_ISREG(os.fstat(ffd).st_mode):
                    continue
                out[name] = os.read(ffd, cap)
            finally:
                os.close(ffd)
        except OSError:
            continue
    return out


def prepare_namespaces(rootless: bool = False) -> None:
    """In a freshly cloned monitor: its own /proc and hostname, a fresh session keyring, signals
    from its payload ignored, an argv that names nothing of the host. Only inside fresh namespaces."""
    if os.getpid() != 1 or not fresh_namespaces():
        # sethostname and, later, SIGKILL to -1 are only safe inside fresh namespaces
        raise RuntimeError("monitor is not PID 1 of fresh namespaces; refusing to run")
    for sig in range(1, signal.NSIG):
        if sig not in (signal.SIGKILL, signal.SIGSTOP, signal.SIGCHLD):
            try:
                signal.signal(sig, signal.SIG_IGN)
            except (OSError, ValueError):
                pass
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if rootless:
        check_errno(libc.umount2(HOSTPROC.encode(), MNT_DETACH), "umount host proc")
    socket.sethostname("sandbox")
    libc.syscall(SYS_KEYCTL, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING, anonymous: not the host's session
    _neutral_cmdline()
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")  # a run's OOM kill takes its own processes, never the monitor
    except OSError:
        pass


def _neutral_cmdline() -> None:
    """Overwrite this process's argv area, so `/proc/1/cmdline` reads `init`, not the host's paths."""
    with open("/proc/self/stat", "rb") as f:
        rest = f.read().rpartition(b")")[2].split()
    start, end = int(rest[45]), int(rest[46])  # fields 48, 49: arg_start, arg_end
    if end > start:
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, b"init", min(4, end - start - 1))


def ipc_limits(memory_mb: int) -> None:
    """This run's IPC namespace: SysV shared memory within `memory_mb`, few message queues.

    Unattached segments and queued messages are counted by no rlimit; a cgroup counts shm pages,
    these caps bound them where there is none. Best effort (older kernels: not writable here).
    """
    pages = max(1, (memory_mb << 20) // os.sysconf("SC_PAGE_SIZE"))
    for name, val in (("kernel/shmmax", memory_mb << 20), ("kernel/shmall", pages), ("kernel/shmmni", 64),
                      ("kernel/msgmni", 16), ("fs/mqueue/queues_max", 8)):
        try:
            with open(f"/proc/sys/{name}", "w") as f:
                f.write(str(val))
        except OSError:
            pass


def fresh_namespaces() -> bool:
    """The flags this monitor was cloned with include new PID, UTS, network and mount namespaces."""
    need = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC
    return NS_FLAGS & need == need
