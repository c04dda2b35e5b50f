"""Per-run cgroups for the local sandbox: a memory and a process limit on the run as a whole (stdlib only).

Why: rlimits are per process. `RLIMIT_AS` does not count a memfd's or a SysV segment's pages that are
not mapped, and each forked child gets its own allowance, so 32 processes reach 32 x `memory_mb`.
A cgroup counts every page the run's processes own or fault in (anonymous, shmem/memfd, tmpfs files
they write) and every process, whatever the uid.

`Cgroups.find()` runs in the zygote *before* it detaches the host's filesystem and keeps directory
fds to a parent cgroup it may write: cgroup v2 (`<mount>/flywheel-sandbox` with `+memory +pids` in
its `subtree_control`) or v1 (`flywheel-sandbox` below this process's own memory and pids cgroups).
Each run's monitor makes `run-<uid>` there while it is still a spare, moves itself in and takes a
fresh cgroup namespace; when the request comes it sets the limits (`memory.max` or
`memory.limit_in_bytes`, swap 0, `pids.max`) and forks the payload, born inside. The zygote removes
the emptied cgroups of finished runs (`reap`). Where no writable parent exists
(no root, a container without delegation) `find` says why and the sandbox uses its fallback.
"""

from __future__ import annotations

import os

PARENT = "flywheel-sandbox"


def _write(dir_fd: int, name: str, text: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    try:
        return os.read(fd, 65536).decode()
    finally:
        os.close(fd)


def _mounts() -> list[tuple[str, str, str, str]]:
    """(mount point, root in its fs, fs type, super options) of every cgroup mount."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rf = left.split(), right.split()
            if rf and rf[0] in ("cgroup", "cgroup2"):
                out.append((fields[4], fields[3], rf[0], rf[2] if len(rf) > 2 else ""))
    return out


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and '' for v2."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            for c in (ctrls.split(",") if ctrls else [""]):
                paths[c] = path
    return paths


def _open_parent(path: str) -> int:
    os.makedirs(path, mode=0o755, exist_ok=True)
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def _sweep(dir_fd: int) -> None:
    """Remove empty `run-*` cgroups a crashed monitor left (busy ones belong to live runs: kept)."""
    for name in os.listdir(dir_fd):
        if name.startswith("run-"):
            try:
                os.rmdir(name, dir_fd=dir_fd)
            except OSError:
                pass


class Cgroups:
    """Directory fds to the parent cgroup(s) under which each run gets its own."""

    def __init__(self, version: int, fds: dict[str, int]):
        self.version = version
        self.fds = fds

    @classmethod
    def find(cls) -> tuple[Cgroups | None, str]:
        """A writable parent with the memory and pids controllers, or None and the reason."""
        if os.geteuid() != 0:
            return None, "not root: no cgroup to delegate"
        mounts = _mounts()
        why = []
        for mnt, _root, fstype, _ in mounts:
            if fstype != "cgroup2":
                continue
            try:
                have = _read_path(f"{mnt}/cgroup.controllers").split()
                if not {"memory", "pids"} <= set(have):
                    why.append(f"cgroup2 at {mnt} lacks memory/pids ({' '.join(have) or 'none'})")
                    continue
                sub = _read_path(f"{mnt}/cgroup.subtree_control").split()
                if not {"memory", "pids"} <= set(sub):
                    with open(f"{mnt}/cgroup.subtree_control", "w") as f:
                        f.write("+memory +pids")
                fd = _open_parent(f"{mnt}/{PARENT}")
                _write(fd, "cgroup.subtree_control", "+memory +pids")
                _sweep(fd)
                return cls(2, {"unified": fd}), ""
            except OSError as e:
                why.append(f"cgroup2 at {mnt}: {e}")
        own = _own_paths()
        fds: dict[str, int] = {}
        for ctrl in ("memory", "pids", "cpuacct"):
            for mnt, root, fstype, opts in mounts:
                if fstype == "cgroup" and ctrl in opts.split(",") and ctrl in own:
                    rel = own[ctrl]
                    if root != "/" and rel.startswith(root):
                        rel = rel[len(root):]
                    try:
                        fds[ctrl] = _open_parent(f"{mnt}/{rel.strip('/')}/{PARENT}".replace("//", "/"))
                        _sweep(fds[ctrl])
                    except OSError as e:
                        why.append(f"cgroup v1 {ctrl} at {mnt}: {e}")
                    break
        if "memory" in fds:
            return cls(1, fds), ""
        for fd in fds.values():
            os.close(fd)
        return None, "; ".join(why) or "no cgroup mount with the memory controller"

    def create(self, name: str) -> Run:
        return Run(self, name)

    def reap(self, names: list[str]) -> list[str]:
        """rmdir the named run cgroups whose processes are gone; return the names still busy."""
        busy = []
        for name in names:
            for fd in self.fds.values():
                try:
                    os.rmdir(name, dir_fd=fd)
                except FileNotFoundError:
                    pass
                except OSError:
                    busy.append(name)
                    break
        return busy


def _read_path(path: str) -> str:
    with open(path) as f:
        return f.read()


class Run:
    """One run's cgroup(s): made and joined by its monitor, inherited by the payload, reaped by the zygote."""

    def __init__(self, cg: Cgroups, name: str):
        self.cg, self.name = cg, name
        self.dirs: dict[str, int] = {}
        try:
            for ctrl, parent in cg.fds.items():
                os.mkdir(name, 0o755, dir_fd=parent)
                self.dirs[ctrl] = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
        except BaseException:
            self.remove()
            raise

    def limit(self, memory_bytes: int, pids: int) -> None:
        """Memory (swap included, so nothing pages out) and process count for the whole run."""
        if self.cg.version == 2:
            d = self.dirs["unified"]
            _write(d, "memory.max", str(memory_bytes))
            for name, val in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                try:
                    _write(d, name, val)
                except OSError:
                    pass  # no swap accounting / older kernel: memory.max still holds
            _write(d, "pids.max", str(pids))
            return
        d = self.dirs["memory"]
        _write(d, "memory.limit_in_bytes", str(memory_bytes))
        try:
            _write(d, "memory.memsw.limit_in_bytes", str(memory_bytes))
        except OSError:
            pass  # swap accounting off: the limit still holds for RAM
        if "pids" in self.dirs:
            _write(self.dirs["pids"], "pids.max", str(pids))

    def join(self) -> None:
        """Move the calling process (the monitor, before its request arrives) into this run's cgroups.

        Migration is slow (an RCU grace period, ~10 ms), so it happens while the monitor is a spare,
        not while a request waits; the payload is then born inside by fork.
        """
        for d in self.dirs.values():
            _write(d, "cgroup.procs", "0")

    def cpu_s(self) -> float | None:
        """CPU seconds every process of the run used so far (None where the cgroup cannot say)."""
        try:
            if self.cg.version == 2:
                for line in _read(self.dirs["unified"], "cpu.stat").splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
            elif "cpuacct" in self.dirs:
                return int(_read(self.dirs["cpuacct"], "cpuacct.usage")) / 1e9
        except (OSError, ValueError):
            pass
        return None

    def oom_killed(self) -> bool:
        """The kernel's OOM killer ended a process of this run (its memory limit was hit)."""
        d = self.dirs.get("unified", self.dirs.get("memory"))
        if d is None:
            return False
        try:
            text = _read(d, "memory.events" if self.cg.version == 2 else "memory.oom_control")
        except OSError:
            return False
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill" and v.strip() not in ("", "0"):
                return True
        return False

    def close(self) -> None:
        for fd in self.dirs.values():
            os.close(fd)
        self.dirs.clear()

    def remove(self) -> None:
        """Close and rmdir (used when creating failed half-way; emptied runs are `reap`ed)."""
        self.close()
        self.cg.reap([self.name])
