"""A hand-written seccomp deny-list for the local sandbox's payload (stdlib only, like `_isolate.py`).

Why: namespaces and a fresh uid contain what the program can *reach*; the kernel's own attack
surface (creating user namespaces, mounting, keyrings, eBPF, io_uring, ptrace, module loading, ...)
is what a kernel exploit needs first. The filter refuses those syscalls with `EPERM` for the payload
and every process it starts (the filter is inherited and cannot be removed), in the spirit of
Docker's default profile: everything not named here stays allowed, so honest Python still runs.

- a syscall from another ABI (i386 via `int 0x80`, x32) kills the process / is refused;
- `clone` with any namespace flag is refused (plain `fork` and threads are not); `clone3` answers
  `ENOSYS`, so the C library falls back to `clone`, whose flags the filter can read;
- `memfd_create` is refused too when the run has no cgroup memory limit (`deny_memfd`): its pages
  would be counted by nothing else;
- `prlimit64` on another process is refused (pid 0, this process, stays allowed: `setrlimit` is
  `prlimit64(0, ...)`), so a candidate cannot shrink the limits of the judge that shares its uid.
"""

from __future__ import annotations

import ctypes
import errno
import os

# audit arch, then syscall numbers per arch (from asm/unistd_64.h and asm-generic/unistd.h)
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X86 = dict(
    mount=165, umount2=166, pivot_root=155, chroot=161, swapon=167, swapoff=168, reboot=169,
    sethostname=170, setdomainname=171, iopl=172, ioperm=173, create_module=174, init_module=175,
    delete_module=176, get_kernel_syms=177, query_module=178, quotactl=179, nfsservctl=180, acct=163,
    settimeofday=164, clock_settime=227, clock_adjtime=305, adjtimex=159, syslog=103, ptrace=101,
    vhangup=153, uselib=134, ustat=136, _sysctl=156, lookup_dcookie=212, kexec_load=246,
    kexec_file_load=320, add_key=248, request_key=249, keyctl=250, unshare=272, setns=308,
    move_pages=279, migrate_pages=256, mbind=237, set_mempolicy=238, perf_event_open=298,
    fanotify_init=300, name_to_handle_at=303, open_by_handle_at=304, process_vm_readv=310,
    process_vm_writev=311, kcmp=312, finit_module=313, bpf=321, userfaultfd=323, io_uring_setup=425,
    io_uring_enter=426, io_uring_register=427, open_tree=428, move_mount=429, fsopen=430, fsconfig=431,
    fsmount=432, fspick=433, pidfd_getfd=438, mount_setattr=442, quotactl_fd=443, memfd_secret=447,
)
_ARM = dict(
    mount=40, umount2=39, pivot_root=41, chroot=51, swapon=224, swapoff=225, reboot=142, sethostname=161,
    setdomainname=162, init_module=105, delete_module=106, quotactl=60, nfsservctl=42, acct=89,
    settimeofday=170, clock_settime=112, clock_adjtime=266, adjtimex=171, syslog=116, ptrace=117,
    vhangup=58, lookup_dcookie=18, kexec_load=104, kexec_file_load=294, add_key=217, request_key=218,
    keyctl=219, unshare=97, setns=268, move_pages=239, migrate_pages=238, mbind=235, set_mempolicy=237,
    perf_event_open=241, fanotify_init=262, name_to_handle_at=264, open_by_handle_at=265,
    process_vm_readv=270, process_vm_writev=271, kcmp=272, finit_module=273, bpf=280, userfaultfd=282,
    io_uring_setup=425, io_uring_enter=426, io_uring_register=427, open_tree=428, move_mount=429,
    fsopen=430, fsconfig=431, fsmount=432, fspick=433, pidfd_getfd=438, mount_setattr=442,
    quotactl_fd=443, memfd_secret=447,
)
TABLES = {"x86_64": (_X86, {"clone": 56, "clone3": 435, "memfd_create": 319, "prlimit64": 302}),
          "aarch64": (_ARM, {"clone": 220, "clone3": 435, "memfd_create": 279, "prlimit64": 261})}
DENIED = tuple(sorted(_X86))
"""Every syscall the filter refuses (names; the arch's table gives the numbers)."""
NS_CLONE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: refused in `clone`'s flags."""

_LD_ABS_W, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


def program(arch: str, deny_memfd: bool) -> list[tuple[int, int, int, int]]:
    """The BPF program as (code, jt, jf, k) tuples; jump targets are resolved from labels."""
    table, special = TABLES[arch]
    ins: list[tuple[int, object, object, int]] = [
        (_LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (_JEQ, 1, 0, ARCHES[arch]),
        (_RET, 0, 0, RET_KILL_PROCESS),
        (_LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
    ]
    if arch == "x86_64":
        ins.append((_JGE, "eperm", 0, 0x40000000))  # the x32 ABI
    nrs = sorted(set(table.values()) | ({special["memfd_create"]} if deny_memfd else set()))
    ins += [(_JEQ, "eperm", 0, nr) for nr in nrs]
    ins += [(_JEQ, "enosys", 0, special["clone3"]), (_JEQ, "clone", 0, special["clone"]),
            (_JEQ, "prlimit", 0, special["prlimit64"]), (_RET, 0, 0, RET_ALLOW)]
    labels = {"clone": len(ins)}
    ins += [(_LD_ABS_W, 0, 0, 16),  # low 32 bits of args[0] (little-endian): clone's flags
            (_JSET, "eperm", "allow", NS_CLONE_FLAGS)]
    labels["prlimit"] = len(ins)
    ins += [(_LD_ABS_W, 0, 0, 16),  # prlimit64's pid (a pid_t: the low 32 bits are all of it)
            (_JEQ, "allow", "eperm", 0)]
    labels["eperm"] = len(ins)
    ins.append((_RET, 0, 0, RET_ERRNO | errno.EPERM))
    labels["enosys"] = len(ins)
    ins.append((_RET, 0, 0, RET_ERRNO | errno.ENOSYS))
    labels["allow"] = len(ins)
    ins.append((_RET, 0, 0, RET_ALLOW))

    def off(i: int, target: object) -> int:
        if isinstance(target, str):
            d = labels[target] - (i + 1)
            assert 0 <= d < 256, "seccomp jump out of range"
            return d
        return int(target)  # type: ignore[call-overload]

    return [(c, off(i, jt), off(i, jf), k) for i, (c, jt, jf, k) in enumerate(ins)]


def install(libc: ctypes.CDLL, deny_memfd: bool) -> None:
    """Load the filter into this process (needs no_new_privs set first). Raises OSError on failure."""
    arch = os.uname().machine
    if arch not in TABLES:
        raise OSError(errno.ENOSYS, f"no seccomp table for {arch}")
    prog = program(arch, deny_memfd)
    arr = (_Insn * len(prog))(*[_Insn(*p) for p in prog])
    fprog = _Prog(len(prog), ctypes.cast(arr, ctypes.POINTER(_Insn)))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp: {os.strerror(e)}")
