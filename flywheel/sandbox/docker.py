"""The `docker` backend: one throwaway container per execution, through the docker SDK.

Each run creates a container from `image` with: `--network none`, a read-only root, tmpfs `/work` and
`/tmp` (size `max_disk_mb`), a memory cgroup limit (`memory_mb`, swap off), a pids limit, rlimits for
CPU time / open files / file size, all capabilities dropped, no-new-privileges, a non-root uid, an
empty environment and no log driver (output is read from the attach stream, capped on the host).
Files go in over stdin: a small bootstrap (PID 1 in the container) reads them, writes them into the
tmpfs, runs `main.py` as a child, then kills any leftovers and reports the exit status and the
`collect`ed files in a trailer tagged with a per-run secret (the bootstrap makes itself non-dumpable,
so the program cannot read the secret from its memory). The container is removed afterwards.

What this does NOT protect against: kernel exploits (containers share the host kernel), side
channels, a compromised Docker engine, and anything the engine's own defaults leave open. Startup is
~0.3-1 s per execution; use `local` (with `SandboxPool`) where throughput matters.

Engine: `DOCKER_HOST`, else the private engine of `scripts/dockerd.sh` (`$FLYWHEEL_DOCKER_ROOT/docker.sock`),
else the default socket. Images cannot be pulled here: `ensure_image()` builds `flywheel-sandbox:latest`
from the host's Python with `docker import` (see `_rootfs.py`); any image with `python3` works.
"""

from __future__ import annotations

import marshal
import os
import secrets
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from flywheel.sandbox.base import ExecResult, Limits, SandboxInfraError
from flywheel.sandbox.local import check_names

DEFAULT_IMAGE = "flywheel-sandbox:latest"
SANDBOX_USER = "1000000:1000000"

# Runs as PID 1 in the container, as the sandbox uid. Reads: 8-byte length + marshal(request) on stdin
# (the rest of stdin is the program's stdin), writes the files, runs main.py, reports in a trailer.
BOOTSTRAP = r"""
import ctypes, marshal, os, signal, struct, subprocess, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0: the program cannot read our memory
def rd(n):
    b = b""
    while len(b) < n:
        c = os.read(0, n - len(b))
        if not c:
            break
        b += c
    return b
req = marshal.loads(rd(struct.unpack(">Q", rd(8))[0]))
for name, data in req["files"].items():
    p = os.path.join("/work", name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
env = {"PATH": "/usr/bin:/bin", "HOME": "/work", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"}
env.update(req["env"])
for s in (signal.SIGXFSZ, signal.SIGXCPU):
    signal.signal(s, signal.SIG_DFL)
p = subprocess.Popen([sys.executable, "-E", "-s", "main.py", *req["argv"]], cwd="/work", env=env, close_fds=True)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, signal.SIG_IGN)  # the program may signal us (same uid); it cannot stop the report
rc = p.wait()
if os.getpid() == 1:  # only as the container's PID 1: every other process in the container
    try:
        os.kill(-1, signal.SIGKILL)
    except OSError:
        pass
files = {}
for name in req["collect"]:
    try:
        fd = os.open(os.path.join("/work", name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        import stat
        if stat.S_ISREG(os.fstat(fd).st_mode) and os.path.realpath(os.path.join("/work", name)).startswith("/work/"):
            files[name] = os.read(fd, req["cap"])
        os.close(fd)
    except OSError:
        pass
sys.stdout.flush()
tail = marshal.dumps({"rc": rc, "files": files})
os.write(1, req["nonce"] + struct.pack(">Q", len(tail)) + tail)
os._exit(0)
"""


def default_docker_host() -> str | None:
    if os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]
    sock = Path(os.environ.get("FLYWHEEL_DOCKER_ROOT", "/tmp/flywheel-docker")) / "docker.sock"
    return f"unix://{sock}" if sock.exists() else None


class DockerSandbox:
    """Same `run()` contract as `LocalSandbox`, one container per execution."""

    name = "docker"

    def __init__(self, limits: Limits | None = None, image: str = DEFAULT_IMAGE, base_url: str | None = None,
                 python: str = "/usr/bin/python3", user: str = SANDBOX_USER):
        self.limits = limits or Limits()
        self.image = image
        self.base_url = base_url or default_docker_host()
        self.python = python
        self.user = user
        self._client = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ engine
    @property
    def client(self):
        with self._lock:
            if self._client is None:
                try:
                    import docker  # optional dependency (the `docker` extra), needed only by this backend
                except ImportError as e:
                    raise SandboxInfraError("the docker backend needs the `docker` package (pip install docker)") from e
                try:
                    self._client = (docker.DockerClient(base_url=self.base_url, timeout=60) if self.base_url
                                    else docker.from_env(timeout=60))
                    self._client.ping()
                except Exception as e:  # engine down or unreachable: infrastructure
                    self._client = None
                    raise SandboxInfraError(f"no Docker engine at {self.base_url or 'the default socket'}: {e}") from e
            return self._client

    def warmup(self) -> None:
        self.ensure_image()

    def ensure_image(self) -> str:
        """Import `flywheel-sandbox:latest` from the host's Python if it is missing; return the image id."""
        import docker.errors  # optional dependency (the `docker` extra), needed only by this backend

        try:
            return self.client.images.get(self.image).id
        except docker.errors.ImageNotFound:
            if self.image != DEFAULT_IMAGE:
                raise SandboxInfraError(f"image {self.image!r} not found and cannot be pulled here") from None
        with tempfile.TemporaryDirectory() as d:
            tar = os.path.join(d, "rootfs.tar")
            subprocess.run([self.python if os.path.exists(self.python) else sys.executable, "-I",
                            str(Path(__file__).with_name("_rootfs.py")), tar], check=True, capture_output=True)
            repo, tag = self.image.rsplit(":", 1)
            with open(tar, "rb") as f:
                self.client.api.import_image_from_data(f.read(), repository=repo, tag=tag,
                                                       changes=["WORKDIR /work", "ENV PATH=/usr/bin:/bin"])
        return self.client.images.get(self.image).id

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # ------------------------------------------------------------------ run
    def run(
        self,
        code: str,
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
        stdin: str = "",
        collect: tuple[str, ...] = (),
        *,
        argv: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        """Run `code` as `/work/main.py` in a fresh container; see `Sandbox.run`."""
        import docker.errors  # optional dependency (the `docker` extra), needed only by this backend
        from docker.types import LogConfig, Ulimit

        check_names(files or {})
        lim = limits or self.limits
        nonce = b"\x00FLYWHEEL-" + secrets.token_hex(16).encode() + b"\x00"
        req = {
            "files": {**{str(k): (v.encode() if isinstance(v, str) else bytes(v)) for k, v in (files or {}).items()},
                      "main.py": code.encode()},
            "collect": [str(c) for c in collect], "argv": [str(a) for a in argv],
            "env": {str(k): str(v) for k, v in (env or {}).items()}, "nonce": nonce, "cap": lim.max_output_bytes,
        }
        blob = marshal.dumps(req, 4)
        payload = struct.pack(">Q", len(blob)) + blob + (stdin.encode() if isinstance(stdin, str) else bytes(stdin))
        cpu = max(1, int(-(-lim.cpu_time_s // 1)))
        tmpfs_opts = f"size={lim.max_disk_mb}m,mode=1777"
        t0 = time.monotonic()
        try:
            api = self.client.api
            host_config = api.create_host_config(
                network_mode="none", read_only=True, tmpfs={"/work": tmpfs_opts, "/tmp": tmpfs_opts},
                mem_limit=f"{lim.memory_mb}m", memswap_limit=f"{lim.memory_mb}m", pids_limit=lim.max_processes + 4,
                ulimits=[Ulimit(name="cpu", soft=cpu, hard=cpu + 1),
                         Ulimit(name="nofile", soft=lim.max_open_files, hard=lim.max_open_files),
                         Ulimit(name="fsize", soft=lim.max_file_size_mb << 20, hard=lim.max_file_size_mb << 20),
                         Ulimit(name="core", soft=0, hard=0)],
                cap_drop=["ALL"], security_opt=["no-new-privileges"], log_config=LogConfig(type="none"),
                ipc_mode="private",
            )
            cid = api.create_container(
                self.image, [self.python, "-I", "-S", "-c", BOOTSTRAP], user=self.user, working_dir="/work",
                environment={}, hostname="sandbox", stdin_open=True, network_disabled=True,
                labels={"flywheel.sandbox": "1"}, host_config=host_config,
            )["Id"]
            container = self.client.containers.get(cid)
        except docker.errors.ImageNotFound as e:
            raise SandboxInfraError(f"sandbox image {self.image!r} is missing (run ensure_image())") from e
        except Exception as e:
            raise SandboxInfraError(f"cannot create the sandbox container: {e}") from e
        try:
            return self._drive(container, payload, nonce, lim, t0)
        finally:
            try:
                container.remove(force=True)
            except Exception:
                pass

    def _drive(self, container, payload: bytes, nonce: bytes, lim: Limits, t0: float) -> ExecResult:
        try:
            sock = container.attach_socket(params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            raw = getattr(sock, "_sock", sock)
            container.start()
        except Exception as e:
            raise SandboxInfraError(f"cannot start the sandbox container: {e}") from e
        writer = threading.Thread(target=_feed, args=(raw, payload), daemon=True)
        writer.start()
        deadline = t0 + lim.wall_timeout_s
        budget = 2 * lim.max_output_bytes + 65536  # program output + the trailer (collected files)
        out, err = bytearray(), bytearray()
        killed = None
        try:
            try:
                for stream, data in _frames(raw, deadline):
                    (out if stream == 1 else err).extend(data)
                    if len(out) + len(err) > budget:
                        killed = "output_limit"
                        break
            except TimeoutError:
                killed = "wall_timeout"
            if killed:
                # drain while the engine kills: a kill behind an undrained attach waits for the engine's
                # stream copy (60 s measured on a flood), and an undrained attach can wedge the engine
                drain = threading.Thread(target=_drain, args=(raw, time.monotonic() + 15), daemon=True)
                drain.start()
                try:
                    container.kill()
                except Exception:
                    pass
                drain.join()
        except OSError as e:
            raise SandboxInfraError(f"lost the sandbox container's stream: {e}") from e
        finally:
            try:
                raw.close()
            except OSError:
                pass
        try:
            state = container.wait(timeout=30)
            container.reload()
            info = container.attrs
        except Exception as e:
            raise SandboxInfraError(f"sandbox container did not finish: {e}") from e
        oom = bool(info.get("State", {}).get("OOMKilled"))
        files: dict[str, bytes] = {}
        rc = None
        i = out.rfind(nonce)
        if i >= 0 and not killed:
            n = struct.unpack(">Q", out[i + len(nonce): i + len(nonce) + 8])[0]
            trailer = marshal.loads(bytes(out[i + len(nonce) + 8: i + len(nonce) + 8 + n]))
            rc, files = int(trailer["rc"]), dict(trailer["files"])
            del out[i:]
        if rc is None:
            rc = int(state.get("StatusCode", 137))
            rc = -(rc - 128) if rc > 128 else rc
        truncated = killed == "output_limit" or len(out) + len(err) > lim.max_output_bytes
        if truncated:  # the note counts against the cap too: stdout + stderr never exceed it
            keep = lim.max_output_bytes
            note = f"\n[flywheel sandbox: output truncated at {keep} bytes]\n".encode()
            out = out[: max(0, keep - len(note))]
            err = err[: max(0, keep - len(note) - len(out))] + note
        if killed is None and rc != 0:
            tail = bytes(err[-4000:])
            if oom or b"MemoryError" in tail or rc == -9 and oom:
                killed = "memory"
            elif rc == -24:
                killed = "cpu_time"
            elif rc == -25 or b"[Errno 27] File too large" in tail:
                killed = "file_size"
            elif rc == -9:
                killed = "killed"
            if truncated:
                killed = "output_limit"
        dec = (lambda b: bytes(b).decode("utf-8", errors="replace"))  # noqa: E731
        return ExecResult(exit_code=rc, stdout=dec(out), stderr=dec(err), timed_out=killed == "wall_timeout",
                          killed_reason=killed, duration_s=time.monotonic() - t0, files=files, truncated=truncated)


def _drain(raw, deadline: float) -> None:
    """Read and drop the attach stream until it ends (or `deadline`)."""
    try:
        for _ in _frames(raw, deadline):
            pass
    except (TimeoutError, OSError):
        pass


def _feed(raw, payload: bytes) -> None:
    try:
        raw.sendall(payload)
        raw.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def _frames(raw, deadline: float):
    """Demultiplex docker's attach stream: yields (stream, bytes); raises TimeoutError at the deadline."""
    buf = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        raw.settimeout(left)
        try:
            chunk = raw.recv(65536)
        except TimeoutError:
            raise TimeoutError from None
        if not chunk:
            return
        buf += chunk
        while len(buf) >= 8:
            stream, size = buf[0], struct.unpack(">I", bytes(buf[4:8]))[0]
            if len(buf) < 8 + size:
                break
            yield stream, bytes(buf[8: 8 + size])
            del buf[: 8 + size]


def engine_available(base_url: str | None = None) -> tuple[bool, str]:
    """Whether a Docker engine answers, and why not."""
    try:
        _ = DockerSandbox(base_url=base_url).client
    except SandboxInfraError as e:
        return False, str(e)
    return True, ""


__all__ = ["DockerSandbox", "engine_available", "DEFAULT_IMAGE"]
