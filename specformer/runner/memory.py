"""What an implementation's worker holds in memory: its own, its processes', its shared memory's.

The memory limit (``--memory-limit``, enforced by :mod:`specformer.runner.supervisor`) counts
what a worker makes the machine hold, wherever it put it:

* **the worker and every process it started**: its live descendants (``/proc/PID/task/*/children``)
  and the members of its process group that were re-parented away from it (a double fork: the
  worker is a process group of its own, and :mod:`specformer.runner.confine` refuses ``setsid``
  and ``setpgid``, so whatever it starts stays in the group; the group is found by a scan of
  ``/proc`` every :data:`GROUP_SCAN_S` seconds);
* of each process, its **anonymous and shared memory, proportionally**: ``Pss_Anon +
  Pss_Shmem`` of ``/proc/PID/smaps_rollup``. Proportional, because a child forked from a worker
  shares the worker's pages until it writes them (the torch a fork server imported: about 210 MiB
  of ``RssAnon`` in each worker, 75 MiB of ``Pss_Anon``), and two processes mapping one shared
  segment hold it once, not twice. File-backed pages (``Pss_File``: torch's libraries, a model
  read with ``mmap``) do not count: the kernel can drop and re-read them, and every worker maps
  the same libraries. Address space only reserved does not count either (it is in no page
  table). Where ``smaps_rollup`` is missing, has no ``Pss_Anon`` (a kernel before 5.0) or cannot
  be read (a process that made itself undumpable), the process counts with ``RssAnon + RssShmem``
  of its ``status``, its resident memory, in which a page it shares counts whole;
* **shared-memory files** the worker's processes wrote and no longer map, which are in no
  process's memory: files in ``/dev/shm`` (:data:`TMPFS_ROOTS`), and files on any tmpfs or
  ``memfd`` a process of the worker holds open (deleted ones too). A file in ``/dev/shm`` is the
  worker's when one of its processes was seen holding it open, or when its processes wrote at
  least as many bytes (``wchar`` of ``/proc/PID/io``) as the file holds since the file was first
  seen. A file written by another checker's worker at the same time (``--jobs``) is not charged
  to a worker that wrote nothing, nor to one that wrote less than the file holds. Files are
  counted by the pages they hold (``st_blocks``). A file that a process of the worker maps also has
  its mapped pages in that process's ``Pss_Shmem``: so that no page counts twice, the shared
  memory counts as the larger of the processes' ``Pss_Shmem`` and the files they map, plus the
  files they do not map.

Reading is cheap where nothing is near the limit. Every read takes each process's ``RssAnon +
RssShmem`` from ``/proc/PID/status``, an upper bound of its proportional share (what the supervisor
read before, for the worker alone: 10 microseconds when the caches are warm, 80 to 130 after the
20 ms the supervisor sleeps between reads). The processes and files are found again every
:data:`TREE_WATCH_S` (children, ``wchar``, open files, ``/dev/shm``: about 300 microseconds cold),
the whole of ``/proc`` every :data:`GROUP_SCAN_S` (about 1 ms). Only when the bound is above the
limit are the ``smaps_rollup`` read (1.2 ms for an idle worker with torch loaded, 4 ms cold: they
walk the page tables), again after :data:`PRECISE_COST_FACTOR` times their own cost, or at once
when the bound grew by :data:`PRECISE_GROWTH_MIB`. The decision to kill is made on the
proportional figures.

Limitations: a process that leaves the worker's process group (where seccomp is unavailable) is
seen only while it is the worker's descendant; a file in ``/dev/shm`` that a process of the worker
filled without ``write`` (``fallocate``, or through a mapping it dropped) and closed between two
reads is not charged; a file that another process wrote while the worker's processes wrote as
much elsewhere (their own output, the answers to the checker) can be charged to the worker;
tmpfs mounts other than ``/dev/shm`` are not scanned (their files count while a process holds
them open); System V shared memory counts while it is attached; files in ``/dev/shm`` that were
there before the worker started are never charged to it; a file the worker maps only in part
beside other shared memory can count less than it holds (the larger of the two, above, not their
sum). Where the kernel does not list children (``CONFIG_PROC_CHILDREN``), the whole of ``/proc``
is scanned every :data:`TREE_WATCH_S` instead. This module reads; it kills nothing:
the supervisor does, and then calls :meth:`Watch.remove_files`.
"""

from __future__ import annotations

import math
import os
import stat
import time
from dataclasses import dataclass
from typing import Callable

#: Folders whose files stay in memory until removed (tmpfs), scanned for files a worker left there.
TMPFS_ROOTS = ("/dev/shm",)
#: At most this many entries of :data:`TMPFS_ROOTS` are looked at per read (a folder with more is cut).
MAX_ENTRIES = 4096
#: How often the whole of ``/proc`` is scanned for processes of the worker's group re-parented away
#: from it, in seconds (a scan costs about 11 microseconds per process on the machine).
GROUP_SCAN_S = 1.0
#: The proportional reads (``smaps_rollup``) take at most this fraction's inverse of the wall time: after
#: a read that took ``c`` seconds, the next comes at least ``c`` times this many seconds later.
PRECISE_COST_FACTOR = 50.0
#: The proportional figures are read again at once, whatever :data:`PRECISE_COST_FACTOR` says, when the
#: resident ones grew by more than this many MiB since their last reading.
PRECISE_GROWTH_MIB = 32.0
#: How often the worker's processes and the shared-memory files charged to it are found again (the
#: processes' ``status`` are read at every read), in seconds.
TREE_WATCH_S = 0.1
#: How often the memory is read when answers come quickly (checked after each answer), in seconds;
#: the supervisor reads it every ``WATCH_S`` while it waits for an answer.
ANSWERED_WATCH_S = 0.25
#: At most this many processes are counted in one worker's tree.
MAX_PROCESSES = 4096

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """What a worker holds: ``mib`` in all, of it ``files_mib`` in ``files`` shared-memory files;
    ``others`` processes besides the worker; ``proportional``: every process was read from
    ``smaps_rollup`` (else some from ``status``, their resident memory); ``upper_bound``: only the
    resident figures were read, which the proportional ones do not exceed."""

    mib: float
    others: int = 0
    files: int = 0
    files_mib: float = 0.0
    proportional: bool = True
    upper_bound: bool = False

    def describe(self) -> str:
        """``the worker and the 1 process it started used 1532 MiB of memory (...)``, for a message."""
        who = "the worker"
        if self.others:
            who += f" and the {self.others} process{'es' if self.others != 1 else ''} it started"
        how = ("resident anonymous and shared memory, a page shared by several processes divided among them"
               if self.proportional and not self.upper_bound else "resident anonymous and shared memory")
        if self.files:
            how += (f"; {self.files_mib:.0f} MiB of it in {self.files} shared-memory "
                    f"file{'s' if self.files != 1 else ''} its processes wrote")
        return f"{who} used {self.mib:.0f} MiB of memory ({how})"


# -- reading /proc -------------------------------------------------------------------------------


def _fields_kib(path: str, names: tuple[bytes, ...]) -> dict[bytes, int] | None:
    """The ``Name:   123 kB`` lines ``names`` of a ``/proc`` file, in KiB (``None``: unreadable)."""
    found: dict[bytes, int] = {}
    try:
        with open(path, "rb") as lines:
            for line in lines:
                name, _, rest = line.partition(b":")
                if name in names:
                    found[name] = int(rest.split()[0])
                    if len(found) == len(names):
                        break
    except (OSError, ValueError, IndexError):
        return None
    return found


def resident_mib(pid: int) -> tuple[float, float] | None:
    """``RssAnon`` and ``RssShmem`` of ``pid`` in MiB, from ``/proc/PID/status`` (``None``: gone or
    unreadable; a zombie holds nothing)."""
    found = _fields_kib(f"/proc/{pid}/status", (b"RssAnon", b"RssShmem"))
    if found is None:
        return None
    return found.get(b"RssAnon", 0) / 1024, found.get(b"RssShmem", 0) / 1024


def proportional_mib(pid: int) -> tuple[float, float] | None:
    """``Pss_Anon`` and ``Pss_Shmem`` of ``pid`` in MiB, from ``/proc/PID/smaps_rollup`` (``None``:
    missing or unreadable)."""
    found = _fields_kib(f"/proc/{pid}/smaps_rollup", (b"Pss_Anon", b"Pss_Shmem"))
    if not found or b"Pss_Anon" not in found:  # a zombie's file is empty; a kernel before 5.0 has no Pss_Anon
        return None
    return found[b"Pss_Anon"] / 1024, found.get(b"Pss_Shmem", 0) / 1024


def written_bytes(pid: int) -> int | None:
    """Bytes ``pid`` wrote with ``write`` and its kin (``wchar``: to files, pipes and sockets alike), with
    those of its children it waited for (``None``: unreadable)."""
    try:
        with open(f"/proc/{pid}/io", "rb") as io:
            for line in io:
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def children(pid: int) -> list[int] | None:
    """The children of ``pid`` (zombies too) from ``/proc/PID/task/*/children``; ``None`` where the
    kernel does not list them (``CONFIG_PROC_CHILDREN``) or ``pid`` is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    listed = False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                found.extend(int(child) for child in listing.read().split())
            listed = True
        except (OSError, ValueError):
            continue
    return found if listed else None


def processes() -> dict[int, tuple[int, int, str]]:
    """Every visible process: pid -> (parent pid, process group, state letter), from ``/proc``."""
    table: dict[int, tuple[int, int, str]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat_file:
                    fields = stat_file.read().rsplit(b")", 1)[1].split()
                table[int(entry)] = (int(fields[1]), int(fields[2]), fields[0].decode("ascii", "replace"))
            except (OSError, IndexError, ValueError):
                continue
    return table


def started_at(pid: int) -> float | None:
    """When ``pid`` started, in ``time.time()`` seconds, up to a second early (``/proc/stat``'s boot time
    is whole seconds); ``None`` where ``/proc`` cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat_file:
            ticks = int(stat_file.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as machine:
            boot = next(int(line.split()[1]) for line in machine if line.startswith(b"btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK") - 1.0


def _tmpfs_devices() -> frozenset[int]:
    """The device numbers of the tmpfs mounts this process sees (``/proc/self/mountinfo``)."""
    devices: set[int] = set()
    try:
        with open("/proc/self/mountinfo", "rb") as mounts:
            for line in mounts:
                fields = line.split()
                dash = fields.index(b"-")
                if fields[dash + 1] == b"tmpfs":
                    major, minor = fields[2].split(b":")
                    devices.add(os.makedev(int(major), int(minor)))
    except (OSError, ValueError, IndexError):
        pass
    return frozenset(devices)


@dataclass
class _File:
    """One shared-memory file as a worker's watch knows it."""

    path: str
    mine: bool | None  # None: not yet decided (empty when first seen)
    written_at: int  # the tree's bytes written before the file was first seen
    attributed_at: int  # the bytes of files already charged to it by writing, then
    bytes: int = 0  # the memory it holds (allocated pages)
    in_root: bool = True  # a file of TMPFS_ROOTS (else one only held open: deleted, memfd, another tmpfs)
    before: bool = False  # there when the watch began: never the worker's


def _scan_roots() -> dict[tuple[int, int], tuple[str, int, int]]:
    """The regular files of :data:`TMPFS_ROOTS` this user owns: (device, inode) -> (path, bytes held,
    size), at most :data:`MAX_ENTRIES` entries looked at."""
    found: dict[tuple[int, int], tuple[str, int, int]] = {}
    uid, seen = os.geteuid(), 0
    todo = [root for root in TMPFS_ROOTS]
    while todo and seen < MAX_ENTRIES:
        try:
            entries = os.scandir(todo.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > MAX_ENTRIES:
                    break
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    todo.append(entry.path)
                elif stat.S_ISREG(info.st_mode) and info.st_uid == uid:
                    found[(info.st_dev, info.st_ino)] = (entry.path, info.st_blocks * 512, info.st_size)
    return found


def _held(pid: int, tmpfs: frozenset[int]) -> dict[tuple[int, int], tuple[str, int]]:
    """The tmpfs and ``memfd`` files ``pid`` holds open: (device, inode) -> (path, bytes held)."""
    found: dict[tuple[int, int], tuple[str, int]] = {}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return found
    for fd in fds:
        link = f"/proc/{pid}/fd/{fd}"
        try:
            target = os.readlink(link)
            if not target.startswith("/"):  # a socket, a pipe, an anonymous inode
                continue
            info = os.stat(link)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode) and (info.st_dev in tmpfs or target.startswith("/memfd:")):
            found[(info.st_dev, info.st_ino)] = (target, info.st_blocks * 512)
    return found


def _mapped(pid: int, files: set[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which of ``files`` (device, inode) ``pid`` maps (``/proc/PID/maps``)."""
    found: set[tuple[int, int]] = set()
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) < 6 or fields[4] == b"0":
                    continue
                major, minor = fields[3].split(b":")
                key = (os.makedev(int(major, 16), int(minor, 16)), int(fields[4]))
                if key in files:
                    found.add(key)
    except (OSError, ValueError, IndexError):
        pass
    return found


# -- one worker's watch --------------------------------------------------------------------------


class Watch:
    """The memory of one worker (``pid``, a process group of its own) with the processes it started and
    the shared-memory files they wrote; :meth:`over` says when it holds more than a limit. Create it
    when the worker starts: files already in :data:`TMPFS_ROOTS` then are never charged to it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._last = -math.inf  # the last read over() made
        self._refreshed = -math.inf  # when the processes and files were last found
        self._tree: list[int] = [pid]
        self._mine: set[tuple[int, int]] = set()
        self._next_precise = 0.0  # the earliest next reading of smaps_rollup
        self._precise_bound = 0.0  # the resident figure (an upper bound) at the last reading of smaps_rollup
        self._next_scan = 0.0  # the next scan of /proc for the worker's process group
        self._strays: set[int] = set()  # processes of the group re-parented away from the worker
        self._listed = True  # the kernel lists children (else the tree comes from a scan of /proc every read)
        self._written = 0  # bytes the worker's processes wrote (those there when the watch began: since they started)
        self._wchar: dict[int, int] = {}
        self._attributed = 0  # bytes of files charged to the worker because its processes wrote them
        self._files: dict[tuple[int, int], _File] = {}
        self._tmpfs = _tmpfs_devices()
        self._update_written(self._members(time.monotonic()))
        started = started_at(pid)
        for key, (path, _, _) in _scan_roots().items():
            try:
                new = started is not None and os.lstat(path).st_ctime >= started
            except OSError:
                continue
            # a file made since the worker started may be its own; one from before never is
            self._files[key] = _File(path, None, 0, 0) if new else _File(path, False, 0, 0, before=True)

    # the processes

    def _members(self, now: float) -> list[int]:
        """The worker (first), its descendants, and the processes of its group re-parented away (with theirs)."""
        if not self._listed or now >= self._next_scan:
            self._next_scan = now + GROUP_SCAN_S
            table = processes()
            self._strays = {pid for pid, (_, group, _) in table.items() if group == self.pid and pid != self.pid}
            if not self._listed:
                below: dict[int, list[int]] = {}
                for pid, (parent, _, _) in table.items():
                    below.setdefault(parent, []).append(pid)
                return self._walk(lambda pid: below.get(pid, []))
        return self._walk(children)

    def _walk(self, under: Callable[[int], list[int] | None]) -> list[int]:
        members: list[int] = []
        seen: set[int] = set()
        todo = [*self._strays, self.pid]
        while todo and len(seen) < MAX_PROCESSES:
            pid = todo.pop()
            if pid in seen:
                continue
            seen.add(pid)
            found = under(pid)
            if found is None and pid != self.pid:
                continue  # a stray that is gone
            if found is None and self._listed and os.path.exists(f"/proc/{pid}/stat"):
                self._listed = False  # alive, and its children are not listed: scan /proc from the next read
            members.append(pid)
            todo.extend(found or ())
        return members

    def _update_written(self, members: list[int]) -> None:
        now: dict[int, int] = {}
        for pid in members:
            written = written_bytes(pid)
            if written is not None:
                now[pid] = written
                self._written += max(0, written - self._wchar.get(pid, 0))
        self._wchar = now

    # the files

    def _update_files(self, members: list[int]) -> None:
        """Find the shared-memory files the worker's processes hold or wrote, and what each holds."""
        written_before = self._written
        self._update_written(members)
        held: dict[tuple[int, int], tuple[str, int]] = {}
        for pid in members:
            held.update(_held(pid, self._tmpfs))
        present = _scan_roots()
        for key in [key for key in self._files if key not in present and key not in held]:
            del self._files[key]  # removed, or no longer held: it holds nothing any more
        for key, (path, size, length) in present.items():
            known = self._files.get(key)
            if known is None:
                known = self._files[key] = _File(path, None, written_before, self._attributed)
            known.bytes = size
            if known.before:
                continue
            if key in held:
                known.mine = True
            elif known.mine is None and min(size, length) > 0:
                needed = min(size, length)  # a sparse file holds less than its length, a short one a page
                written = (self._written - known.written_at) - (self._attributed - known.attributed_at)
                known.mine = needed <= written
                if known.mine:
                    self._attributed += needed
        for key, (path, size) in held.items():
            if key not in present:
                self._files[key] = _File(path, True, 0, 0, size, in_root=False)

    def _mapped_bytes(self, members: list[int], mine: set[tuple[int, int]]) -> int:
        """The bytes held by those of ``mine`` that the worker's processes map (their pages are in Pss_Shmem)."""
        mapped: set[tuple[int, int]] = set()
        for pid in members:
            mapped |= _mapped(pid, mine - mapped)
        return sum(self._files[key].bytes for key in mapped)

    # the reading

    def _refresh(self, now: float) -> None:
        """Find the worker's processes and the files charged to it again."""
        self._refreshed = now
        self._tree = self._members(now)
        self._update_files(self._tree)
        self._mine = {key for key, known in self._files.items() if known.mine}

    def read(self, limit_mib: float | None = None, now: float | None = None) -> Usage | None:
        """What the worker holds now (``None`` when the worker cannot be read).

        With ``limit_mib`` the figure may be an upper bound (:attr:`Usage.upper_bound`): the processes
        and files found by the last read within :data:`TREE_WATCH_S` are read again, and the
        proportional figures are read only when the resident ones are above the limit (after finding
        the processes and files again), at most as often as :data:`PRECISE_COST_FACTOR` allows."""
        now = time.monotonic() if now is None else now
        fresh = limit_mib is None or now - self._refreshed >= TREE_WATCH_S
        if fresh:
            self._refresh(now)
        members, mine = self._tree, self._mine
        resident = [resident_mib(pid) for pid in members]
        if not members or members[0] != self.pid or resident[0] is None:
            return None
        files = sum(self._files[key].bytes for key in mine if key in self._files)
        others = sum(1 for share in resident[1:] if share is not None and share[0] + share[1] > 0)
        anon = sum(share[0] for share in resident if share is not None)
        shmem = sum(share[1] for share in resident if share is not None)

        def usage(anon: float, shmem: float, mapped: int, upper_bound: bool, proportional: bool) -> Usage:
            total = anon + max(shmem, mapped / _MIB) + (files - mapped) / _MIB
            return Usage(total, others, len(mine), files / _MIB, proportional, upper_bound)

        bound = usage(anon, shmem, 0, True, False)  # every file apart from the shared memory mapped
        if limit_mib is not None and bound.mib <= limit_mib:
            return bound
        if not fresh:  # above the limit on what was found earlier: decide on what is there now
            self._refreshed = -math.inf
            return self.read(limit_mib, now)
        mapped = self._mapped_bytes(members, mine) if mine else 0
        bound = usage(anon, shmem, mapped, True, False)
        grown = bound.mib > self._precise_bound + PRECISE_GROWTH_MIB  # changed since: read again at once
        if limit_mib is not None and (bound.mib <= limit_mib or (now < self._next_precise and not grown)):
            return bound
        self._precise_bound = bound.mib
        start = time.perf_counter()
        proportional = True
        anon = shmem = 0.0
        for pid, fallback in zip(members, resident):
            share = proportional_mib(pid)
            if share is None:
                share = fallback or (0.0, 0.0)
                proportional = proportional and share == (0.0, 0.0)  # a zombie holds nothing
            anon, shmem = anon + share[0], shmem + share[1]
        self._next_precise = now + (time.perf_counter() - start) * PRECISE_COST_FACTOR
        return usage(anon, shmem, mapped, False, proportional)

    def over(self, limit_mib: float, every_s: float = 0.0) -> Usage | None:
        """The worker's :class:`Usage` when it holds more than ``limit_mib`` (read proportionally), else
        ``None``; reads when ``every_s`` seconds have passed since the last read (else returns ``None`` at
        once; 0: every call)."""
        now = time.monotonic()
        if now - self._last < every_s:
            return None
        self._last = now
        usage = self.read(limit_mib, now)
        if usage is None or usage.upper_bound or usage.mib <= limit_mib:
            return None
        return usage

    def remove_files(self) -> tuple[int, float]:
        """Remove the files of :data:`TMPFS_ROOTS` charged to the worker (call it once the worker's processes
        are killed): how many were removed and the MiB they held. A file is removed only while its path
        still names the file that was charged."""
        removed, held = 0, 0
        for (device, inode), known in list(self._files.items()):
            if not (known.mine and known.in_root):
                continue
            try:
                info = os.lstat(known.path)
                if (info.st_dev, info.st_ino) == (device, inode) and stat.S_ISREG(info.st_mode):
                    os.unlink(known.path)
                    removed, held = removed + 1, held + info.st_blocks * 512
            except OSError:
                continue
            del self._files[(device, inode)]
        return removed, held / _MIB
