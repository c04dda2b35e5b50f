"""Write a minimal root filesystem tar for the docker sandbox image (no registry needed).

Usage: `python3 -I _rootfs.py OUT.tar` then `docker import OUT.tar flywheel-sandbox:latest`
(`scripts/dockerd.sh start` and `DockerSandbox.ensure_image()` do both). The tar holds this
interpreter (`sys.executable`), its standard library (minus tests, tkinter, idle, site/dist-packages and
the `config-*` build folder), the shared libraries it and its extension modules link (found with
`ldd`), `/bin/sh`, an `/etc/passwd` with the sandbox user, and empty `/work` and `/tmp`. Stdlib only:
it runs under the host's system Python, whichever version (>= 3.10) that is.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import sysconfig
import tarfile

SANDBOX_UID = 1_000_000
# `config-<version>-<platform>` (the static library and Makefile for building extensions) is named after
# the interpreter that runs this script, so its name comes from sysconfig, not a literal.
LIBPL = os.path.basename(sysconfig.get_config_var("LIBPL") or "")
SKIP_DIRS = {"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
             "dist-packages", "__phello__"} | ({LIBPL} if LIBPL else set())


def _ldd(paths: list[str]) -> set[str]:
    libs: set[str] = set()
    for i in range(0, len(paths), 50):
        out = subprocess.run(["ldd", *paths[i:i + 50]], capture_output=True, text=True).stdout
        for m in re.finditer(r"(/\S+\.so[^\s:]*)", out):
            libs.add(m.group(1))
    return libs


def _add_path(tar: tarfile.TarFile, path: str, seen: set[str]) -> None:
    """Add `path` (and, for a symlink, what it points to), with parent directories."""
    if path in seen or not os.path.lexists(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != "/":
        _add_path(tar, parent, seen)
    seen.add(path)
    tar.add(path, arcname=path.lstrip("/"), recursive=False)
    if os.path.islink(path):
        target = os.path.join(os.path.dirname(path), os.readlink(path))
        _add_path(tar, os.path.normpath(target), seen)


def build(out: str) -> None:
    exe = os.path.realpath(sys.executable)
    stdlib = sysconfig.get_paths()["stdlib"]
    dynload = os.path.join(stdlib, "lib-dynload")
    files: list[str] = []
    for root, dirs, names in os.walk(stdlib):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        files += [os.path.join(root, n) for n in names]
    sos = [f for f in files if f.startswith(dynload) and f.endswith(".so")]
    sh = os.path.realpath("/bin/sh")
    libs = _ldd([exe, sh, *sos])
    seen: set[str] = set()
    with tarfile.open(out, "w") as tar:
        for name in ("bin", "sbin", "lib", "lib64"):
            if os.path.islink(f"/{name}"):
                _add_path(tar, f"/{name}", seen)
        for p in [exe, sh, "/bin/sh", *sorted(libs), *files]:
            _add_path(tar, p, seen)
        for alias in ("/usr/bin/python3", "/usr/bin/python"):
            if alias not in seen:
                info = tarfile.TarInfo(alias.lstrip("/"))
                info.type, info.linkname = tarfile.SYMTYPE, exe
                tar.addfile(info)
                seen.add(alias)
        if os.path.isfile("/etc/ld.so.cache"):
            _add_path(tar, "/etc/ld.so.cache", seen)
        etc = {
            "etc/passwd": f"root:x:0:0:root:/root:/bin/sh\nsandbox:x:{SANDBOX_UID}:{SANDBOX_UID}::/work:/bin/sh\n"
                          "nobody:x:65534:65534::/nonexistent:/bin/sh\n",
            "etc/group": f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n",
        }
        for name, text in etc.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for d, mode in (("work", 0o1777), ("tmp", 0o1777), ("proc", 0o755), ("dev", 0o755), ("sys", 0o755)):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)


if __name__ == "__main__":
    build(sys.argv[1] if len(sys.argv) > 1 else "rootfs.tar")
