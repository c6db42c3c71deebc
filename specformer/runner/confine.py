"""Confine an implementation's worker: it may not signal, trace or leave the harness's processes.

A worker runs code the suite does not trust. Before it imports that code it installs a
seccomp filter (Linux, x86-64 and AArch64; inherited by every process it starts, across
``exec``) that refuses, with ``EPERM``:

* a signal (``kill``, ``tgkill``, ``rt_sigqueueinfo``, ``rt_tgsigqueueinfo``) or a
  ``pidfd_open`` aimed at a process of the harness: the worker's ancestors (its fork server,
  the root fork server, the checker, the controlling ``specformer run`` and the shell
  above it), every process under the controller when the worker starts (the other
  checkers, fork servers and workers), their process groups, and every process at once
  (``kill(-1, ...)``). An implementation that stops its checker or kills a fork server
  gets ``PermissionError`` in its own call, and its own row says so; no other row is touched;
* ``setsid`` and ``setpgid``: every process the worker starts stays in the worker's process
  group, which the checker kills at once (``killpg``) when it ends the worker or the run.
  A chain of short-lived forks cannot outrun that, and no process leaves the group;
* ``tkill`` (a thread of any process, by its thread id), ``pidfd_send_signal``
  (its target cannot be read from the call), ``pidfd_getfd``, ``ptrace`` and
  ``process_vm_readv``/``process_vm_writev``: no implementation needs them;
* any system call of another ABI (32-bit calls from a 64-bit process).

What it does not do: it protects the processes that exist when the worker starts, not
those started later (a worker of another implementation that starts after it); it does
not stop writes to files (the report is verified by its writer instead, see
:func:`specformer.runner.cli._final_report`) or to another process's memory through
``/proc/PID/mem`` where the kernel allows that. Where seccomp is unavailable (another
OS or architecture, a kernel without it) :func:`install` returns ``False`` and the
worker runs unconfined; the report's environment records which (``confinement``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
import sys

#: Environment variable naming the controlling process of a run (the ``specformer run`` or the
#: pytest process that owns the report); set by the runner, read by each worker when it starts.
CONTROLLER_VARIABLE = "SPECFORMER_CONTROLLER_PID"
#: At most this many processes are protected by pid (the filter holds two instructions per pid).
MAX_PROTECTED = 1500

# classic BPF, as seccomp reads it
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JA = 0x05
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | errno.EPERM
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets into struct seccomp_data (little-endian: args[0]'s low word)
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

#: Per architecture: its audit token, the calls refused outright, and those refused when their first
#: argument is a protected pid (or a protected group, or -1).
_ARCHES = {
    "x86_64": {"arch": 0xC000003E, "x32": 0x40000000,
               "refused": {"tkill": 200, "ptrace": 101, "setsid": 112, "setpgid": 109, "pidfd_send_signal": 424,
                           "pidfd_getfd": 438, "process_vm_readv": 310, "process_vm_writev": 311},
               "aimed": {"kill": 62, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
                         "pidfd_open": 434}},
    "aarch64": {"arch": 0xC00000B7, "x32": None,
                "refused": {"tkill": 130, "ptrace": 117, "setsid": 157, "setpgid": 154, "pidfd_send_signal": 424,
                            "pidfd_getfd": 438, "process_vm_readv": 270, "process_vm_writev": 271},
                "aimed": {"kill": 129, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
                          "pidfd_open": 434}},
}


def supported() -> bool:
    """Whether this machine can confine a worker (Linux on x86-64 or AArch64)."""
    return sys.platform.startswith("linux") and platform.machine() in _ARCHES


def _table() -> dict[int, tuple[int, int]]:
    """Every visible process: pid -> (parent pid, process group)."""
    from specformer.runner.forkserver import process_table

    return {pid: (parent, group) for pid, (parent, _, group) in process_table().items()}


def protected_processes(me: int | None = None) -> tuple[list[int], list[int]]:
    """The pids and process groups a worker ``me`` (default: this process) may not signal:
    its ancestors, and every process under the run's controller (:data:`CONTROLLER_VARIABLE`)
    outside its own group. Its own group and its own descendants are its to signal."""
    me = os.getpid() if me is None else me
    table = _table()
    own_group = table.get(me, (0, os.getpgid(0)))[1]
    pids: list[int] = []
    pid = table.get(me, (0, 0))[0]
    while pid > 1 and pid not in pids:  # ancestors first: they matter most
        pids.append(pid)
        pid = table.get(pid, (0, 0))[0]
    try:
        controller = int(os.environ.get(CONTROLLER_VARIABLE, "0"))
    except ValueError:
        controller = 0
    if controller > 1:
        children: dict[int, list[int]] = {}
        for child, (parent, _) in table.items():
            children.setdefault(parent, []).append(child)
        frontier = [controller]
        while frontier:
            for child in children.get(frontier.pop(), []):
                if child == me or table[child][1] == own_group:
                    continue
                if child not in pids:
                    pids.append(child)
                frontier.append(child)
    pids = [p for p in pids if p != me][:MAX_PROTECTED]
    groups = sorted({table[p][1] for p in pids if p in table and table[p][1] not in (own_group, 0, 1)})
    return pids, groups[:MAX_PROTECTED]


def _instruction(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def program(pids: list[int], groups: list[int], machine: str | None = None) -> bytes:
    """The filter, as the bytes of an array of ``struct sock_filter`` (see the module doc)."""
    arch = _ARCHES[machine or platform.machine()]
    out: list[bytes] = []

    def refuse_if(value: int) -> None:  # equal: fall through to the refusal; else skip it
        out.append(_instruction(_JEQ_K, 0, 1, value))
        out.append(_instruction(_RET_K, 0, 0, _RET_EPERM))

    out.append(_instruction(_LD_W_ABS, 0, 0, _ARCH))
    out.append(_instruction(_JEQ_K, 1, 0, arch["arch"]))
    out.append(_instruction(_RET_K, 0, 0, _RET_EPERM))  # another ABI
    out.append(_instruction(_LD_W_ABS, 0, 0, _NR))
    if arch["x32"] is not None:
        out.append(_instruction(_JGE_K, 0, 1, arch["x32"]))
        out.append(_instruction(_RET_K, 0, 0, _RET_EPERM))
    for number in arch["refused"].values():
        refuse_if(number)
    aimed = list(arch["aimed"].values())
    for i, number in enumerate(aimed):  # an aimed call jumps to the pid checks after the ALLOW below
        out.append(_instruction(_JEQ_K, 0, 1, number))
        out.append(_instruction(_JA, 0, 0, 2 * (len(aimed) - i - 1) + 1))
    out.append(_instruction(_RET_K, 0, 0, _RET_ALLOW))
    out.append(_instruction(_LD_W_ABS, 0, 0, _ARG0_LOW))
    for value in [*pids, *(-g for g in groups), -1]:
        refuse_if(value)
    out.append(_instruction(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(out)


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(pids: list[int] | None = None, groups: list[int] | None = None) -> bool:
    """Confine this process and every process it will start (see the module doc); ``pids`` and
    ``groups`` default to :func:`protected_processes`. Returns whether the filter is in place."""
    if not supported():
        return False
    if pids is None or groups is None:
        pids, groups = protected_processes()
    code = program(pids, groups)
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _Fprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) == 0
    except (OSError, AttributeError):
        return False


def confined(pid: int | None = None) -> bool:
    """Whether process ``pid`` (default: this one) runs under a seccomp filter."""
    try:
        with open(f"/proc/{pid or 'self'}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("Seccomp:"):
                    return line.split()[1] == "2"
    except (OSError, IndexError):
        return False
    return False
