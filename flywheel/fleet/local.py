"""An embedded (local) Ray session that listens on loopback only.

Why: nothing of flywheel listens beyond loopback by default, yet Ray (2.x) binds its gRPC servers
(GCS, raylet, workers, the dashboard agent) on every interface, and turns a loopback
`_node_ip_address` back into the machine's address, unless its single-machine mode (the one it uses on
macOS and Windows, `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`) is on: then the node address stays
127.0.0.1 and every server binds it. `loopback_only()` turns that mode on while a local session
starts (for this process and the processes Ray starts, which inherit it) and restores it after, so a
later cluster connection in the same process is unaffected. No flag of `ray.init` does this.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
from collections.abc import Iterable, Iterator

SINGLE_MACHINE_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Start a local Ray inside this block: its node address is 127.0.0.1 and its servers bind only that."""
    from ray._private import ray_constants

    old_env, old_flag = os.environ.get(SINGLE_MACHINE_ENV), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[SINGLE_MACHINE_ENV] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False  # read when ray.init resolves the node address
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_flag
        if old_env is None:
            os.environ.pop(SINGLE_MACHINE_ENV, None)
        else:
            os.environ[SINGLE_MACHINE_ENV] = old_env


def is_loopback(address: str) -> bool:
    """127.0.0.0/8, ::1, and IPv4-mapped loopback (`::ffff:127.0.0.1`, as a dual-stack socket shows it)."""
    ip = ipaddress.ip_address(address.strip("[]"))
    mapped = getattr(ip, "ipv4_mapped", None)
    return bool(ip.is_loopback or (mapped is not None and mapped.is_loopback))


def listeners(pids: Iterable[int]) -> list[tuple[str, int, int]]:
    """(address, port, pid) of every TCP socket listening in the processes `pids`."""
    import psutil

    want = set(pids)
    return sorted((c.laddr.ip, c.laddr.port, c.pid) for c in psutil.net_connections(kind="tcp")
                  if c.status == psutil.CONN_LISTEN and c.pid in want)


def session_pids() -> set[int]:
    """This process and every process it started (a local Ray session's GCS, raylet, agents, workers)."""
    import psutil

    me = psutil.Process()
    return {me.pid, *(p.pid for p in me.children(recursive=True))}
