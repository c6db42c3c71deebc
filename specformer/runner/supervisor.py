"""The checker's side of the workers: start, call, time out, kill, restart.

Each implementation runs in its own worker process (:mod:`specformer.runner.worker`), forked
from a fork server that has imported torch once. The supervisor sends a request and
waits for the answer with a deadline it enforces itself, from outside the worker: a
worker that does not answer in time is killed (with everything it started). A worker
that dies (a signal, an exit at any status), answers something malformed or too large,
or runs past its deadline raises :class:`WorkerLost`, a ``BaseException`` so that
Hypothesis does not try to shrink it (which would restart the worker again and again);
the next request starts a fresh worker.

The worker's standard output and error are drained by a thread that keeps only the
last :data:`OUTPUT_TAIL` bytes, shown when the worker crashes.

The row's limit is enforced here, from outside the worker (:class:`specformer.runner.budget.Limit`):
while the supervisor waits for an answer it reads the CPU time the worker and its children have
used, and kills a worker whose row has run out of CPU time, or past its wall-clock backstop.

The memory limit is enforced here too, on what the worker really makes the machine hold: while
the supervisor waits for an answer it reads, every :data:`WATCH_S` seconds (and after answers, every
:data:`memory.ANSWERED_WATCH_S`), the resident anonymous and shared memory of the worker and of every
process it started, counted proportionally, with the shared-memory files they wrote
(:mod:`specformer.runner.memory`), and kills a worker above the limit with all it started, then
removes the files in ``/dev/shm`` charged to it. Address space that is only reserved (the CUDA build
of torch maps gigabytes at start, OpenBLAS reserves a buffer per thread) does not count, so no
``RLIMIT_AS`` fails a library that maps large ranges without using them; nor do pages of files
(torch's libraries). Where ``/proc`` is missing (not Linux) the limit is not enforced.

This module does not interpret answers beyond their envelope; :mod:`specformer.context`
checks results and decides what an answer means for a property.
"""

from __future__ import annotations

import os
import pickle
import select
import shutil
import signal
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from multiprocessing.connection import Connection

from specformer.runner import forkserver, interrupt, memory, wire
from specformer.runner.budget import Limit, as_limit, process_cpu_s, tree_cpu_s
from specformer.runner.forkserver import ForkServer, ForkServerError

#: Bytes of a worker's own output kept to explain a crash.
OUTPUT_TAIL = 2048
#: Largest answer accepted from a worker, in bytes.
MAX_ANSWER = 256 * 1024 * 1024
#: Default memory limit of a worker, in MiB.
DEFAULT_MEMORY_MIB = 4096
#: How often a waiting supervisor reads its worker's memory, in seconds: memory touched at a few
#: GB/s overshoots the limit by at most a few hundred MiB before the worker is killed.
WATCH_S = 0.02
#: How often a waiting supervisor reads the CPU time of its worker and the worker's children, in seconds.
CPU_WATCH_S = 0.05

class WorkerLost(BaseException):
    """The worker crashed, exited, hung past its deadline or answered nonsense."""


@dataclass(frozen=True)
class WorkerSettings:
    """How workers are started: torch threads and memory limit (resident MiB; ``None``: none)."""

    threads: int = 1
    memory_mib: int | None = DEFAULT_MEMORY_MIB
    spin_s: float = 0.0  # how long each side polls before it sleeps (the plugin sets it when cores allow)


def fork_server(spec: str | None = None, process: int = 0) -> ForkServer:
    """This process's root fork server (one per checker process, started on first use), or,
    with ``spec``, the fork server of that implementation (forked from the root). ``process``
    1 is the root of the other string hash seed (:data:`forkserver.HASH_SEEDS`)."""
    root = forkserver.shared(hash_seed=forkserver.HASH_SEEDS[process])
    return root if spec is None else root.for_implementation(spec)


def death(exitcode: int | None) -> str:
    """How a process ended, in words: ``killed by signal SIGSEGV``, ``exited with status 0``."""
    if exitcode is None:
        return "stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by {name}"
    return f"exited with status {exitcode}"


@dataclass
class _Output:
    """The drained tail of a worker's standard output and error."""

    tail: bytes = b""
    total: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def text(self) -> str:
        with self.lock:
            tail, total = self.tail, self.total
        if not tail.strip():
            return ""
        text = tail.decode("utf-8", "replace").strip()
        cut = f"(last {len(tail)} of {total} bytes) " if total > len(tail) else ""
        return f"; its output {cut}ends with: {text[-600:]}"


def _drain(fd: int, out: _Output) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        with out.lock:
            out.tail = (out.tail + chunk)[-OUTPUT_TAIL:]
            out.total += len(chunk)
    os.close(fd)


class Worker:
    """One live worker process holding one loaded implementation."""

    def __init__(self, spec: str, settings: WorkerSettings, deadline: "Limit | float", process: int = 0) -> None:
        self.spec = spec
        self._server = fork_server(spec, process)
        mine, theirs = socket.socketpair()
        out_r, out_w = os.pipe()
        self._output = _Output()
        self._exitcode: int | None = None
        self._server_lost = False
        self._dead = False
        self._spin_s = settings.spin_s
        self._memory_mib = settings.memory_mib
        self._memory: memory.Watch | None = None  # begun at the worker's first wait (_memory_watch)
        self.holds_device = False  # asked to run on an accelerator: it holds a device context (WorkerPool.worker)
        # its own temporary directory (and, for the second process of a determinism check, its own working
        # directory): what one worker wrote there, another cannot find; removed when the worker ends
        self._scratch = tempfile.mkdtemp(prefix="specformer-worker-")
        try:
            self.pid = self._server.start_worker(theirs.fileno(), out_w, {
                "spec": spec, "threads": settings.threads, "spin_s": settings.spin_s, "scratch": self._scratch,
                "own_cwd": process != 0})
        except ForkServerError as exc:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise WorkerLost(str(exc)) from None
        finally:
            theirs.close()
            os.close(out_w)
        self._conn = Connection(mine.detach())
        # a second handle on the channel, to look for data nobody asked for without reading it
        self._peek = socket.fromfd(self._conn.fileno(), socket.AF_UNIX, socket.SOCK_STREAM)
        self._next_id = 0
        self._poller = select.poll()  # reused: building a selector per call costs more than the call
        self._poller.register(self._conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        threading.Thread(target=_drain, args=(out_r, self._output), daemon=True).start()
        limit = as_limit(deadline)
        self._call_start_cpu = 0.0  # a new process: its loading counts from nothing
        try:
            self.load_answer: dict[str, Any] = self._receive("loading the implementation", limit)
        finally:
            self._charge(limit)

    @property
    def alive(self) -> bool:
        """Whether the worker is believed to run (it has not died or been killed)."""
        return not self._dead

    def _reap(self) -> None:
        if not self._dead:
            self._dead = True
            # SIGKILL first: a dead worker (a zombie until reaped) keeps its exit status, and one that
            # closed its channel but lives on would otherwise hold its server in waitpid
            self._signal_group(signal.SIGKILL)
            restarts = self._server.restarts
            self._exitcode = self._server.reap(self.pid)
            self._server_lost = self._exitcode is None and self._server.restarts != restarts
            self._conn.close()
            self._peek.close()
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _signal_group(self, signum: int) -> None:
        for kill in (os.killpg, os.kill):
            try:
                kill(self.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass

    def kill(self) -> None:
        """Stop the worker at once (SIGKILL), with any process it started, and reap it."""
        if self._dead:
            return
        self._reap()

    def stop(self) -> None:
        """Ask the worker to exit; kill it if it does not."""
        if not self._dead:
            try:
                self._conn.send_bytes(pickle.dumps({"op": "stop"}))
            except OSError:
                pass
        self.kill()

    def _lost(self, what: str, how: str) -> WorkerLost:
        self.kill()
        return WorkerLost(f"{how} while {what}{self._output.text()}")

    def resident_mib(self) -> float | None:
        """The memory the worker holds in MiB, with every process it started and the shared-memory files
        they wrote, as the memory limit counts it (:mod:`specformer.runner.memory`; ``None`` where
        ``/proc`` cannot tell)."""
        usage = self._memory_watch().read()
        return usage.mib if usage is not None else None

    def _memory_watch(self) -> memory.Watch:
        """This worker's :class:`memory.Watch`, begun at its first wait (the load's)."""
        if self._memory is None:
            self._memory = memory.Watch(self.pid)
        return self._memory

    def _watch_memory(self, what: str, every_s: float) -> None:
        """Kill the worker, with what it started, when they hold more than the memory limit (read at most every
        ``every_s`` seconds), remove the shared-memory files charged to it, and raise :class:`WorkerLost`."""
        if self._memory_mib is None or self._dead:
            return
        usage = self._memory_watch().over(self._memory_mib, every_s)
        if usage is None:
            return
        self.kill()
        removed, mib = self._memory_watch().remove_files()
        cleaned = (f"; the {removed} shared-memory file{'s' if removed != 1 else ''} it left in /dev/shm "
                   f"({mib:.0f} MiB) {'were' if removed != 1 else 'was'} removed" if removed else "")
        raise self._lost(what, f"{usage.describe()}, more than the limit of {self._memory_mib} MiB (--memory-limit; "
                               f"address space only reserved does not count), and was killed{cleaned}")

    def cpu_s(self, tree: bool = False) -> float:
        """CPU seconds the worker has used (with the children it waited for; ``tree``: and those still
        running); 0 where ``/proc`` cannot tell."""
        spent = tree_cpu_s(self.pid) if tree else process_cpu_s(self.pid)
        return spent or 0.0

    def _running(self) -> float:
        """CPU seconds the worker (and every process under it) has spent on the call in progress."""
        return max(0.0, self.cpu_s(tree=True) - self._call_start_cpu)

    def _charge(self, limit: Limit) -> None:
        """Add the CPU the call that just ended used to the row's limit."""
        if not self._dead:
            limit.implementation_s += max(0.0, self.cpu_s() - self._call_start_cpu)

    def _wait(self, what: str, limit: Limit) -> str | None:
        """Wait for the worker's answer, watching its memory and the row's limit; ``None`` when it came, else
        the message of the limit that ran out."""
        if self._memory_mib is not None:
            self._memory_watch()  # begun before the worker's first wait ends
        if self._spin():
            self._watch_memory(what, memory.ANSWERED_WATCH_S)  # a child or a thread may fill memory between calls
            return None
        while True:
            interrupt.check()
            remaining = limit.deadline - time.monotonic()
            if remaining <= 0:
                return limit.message("wall", self._running())
            watch = self._memory_mib is not None
            tick = min(remaining, WATCH_S if watch else CPU_WATCH_S if limit.cpu_s is not None else remaining)
            if self._poller.poll(max(1, int(tick * 1000))):
                self._watch_memory(what, memory.ANSWERED_WATCH_S)
                return None
            self._watch_memory(what, 0.0)  # every tick
            if limit.cpu_s is not None:
                running = self._running()
                if limit.ended(running) == "cpu":
                    return limit.message("cpu", running)

    def _receive(self, what: str, limit: Limit, expected_id: int | None = None) -> dict[str, Any]:
        try:
            ended = self._wait(what, limit)
        except (OSError, ValueError):
            ended = None  # closed: recv below reports the death
        if ended is not None:
            raise self._lost(what, f"the worker did not answer in time ({ended}) and was killed")
        try:
            message = self._conn.recv_bytes(MAX_ANSWER)
        except (EOFError, ConnectionResetError):
            self._reap()
            how = death(self._exitcode)
            if self._server_lost:
                how = ("stopped answering: the process that forked it, its implementation's fork server, is gone "
                       "(killed, most likely by the implementation itself), and the worker with it")
            raise self._lost(what, f"the worker {how}") from None
        except OSError as exc:
            if "bad message length" in str(exc):
                raise self._lost(what, f"the worker's answer is larger than the {MAX_ANSWER // 2**20} MiB an answer "
                                       "may have; it was not read, and the worker was killed") from None
            raise self._lost(what, f"the worker's answer could not be read ({exc}); the worker was killed") from None
        try:
            answer = wire.decode(message)
        except wire.WireError as exc:
            raise self._lost(what, f"the worker's answer is malformed ({exc})") from None
        if not isinstance(answer, dict) or not isinstance(answer.get("status"), str):
            raise self._lost(what, "the worker's answer has no status")
        if expected_id is not None and answer.get("id") != expected_id:
            raise self._lost(what, f"the worker answered out of turn (an answer to request "
                                   f"{str(answer.get('id'))[:40]}, not to request {expected_id}: a message "
                                   "it was not asked for) and was killed")
        if expected_id is not None and self._unasked():
            raise self._lost(what, "the worker sent a second answer to one request (a message it was not "
                                   "asked for) and was killed")
        return answer

    def _unasked(self) -> bool:
        """Whether data waits on the channel that no request asked for (EOF is not data)."""
        try:
            return bool(self._peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            return False

    def _spin(self) -> bool:
        """Poll without sleeping for up to ``spin_s``: most answers come within a millisecond,
        and a process that sleeps and is woken costs far more than that on a virtual CPU."""
        end = time.perf_counter() + self._spin_s
        while time.perf_counter() < end:
            if self._poller.poll(0):
                return True
        return False

    def request(self, request: dict[str, Any], what: str, deadline: "Limit | float") -> dict[str, Any]:
        """Send ``request`` and return the decoded answer, or raise :class:`WorkerLost`. ``deadline`` is the
        row's :class:`Limit` (a plain number: a ``time.monotonic()`` deadline); the CPU the call used is
        added to it."""
        limit = as_limit(deadline)
        if self._unasked():
            raise self._lost(what, "the worker sent a message it was not asked for (after its previous answer, "
                                   "before this request) and was killed")
        self._next_id += 1
        self._call_start_cpu = self.cpu_s()
        try:
            packed = {**request, "id": self._next_id, "args": wire.pack(request.get("args", ())),
                      "kwargs": wire.pack(request.get("kwargs", {}))}
            self._conn.send_bytes(pickle.dumps(packed, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, ValueError):
            self._reap()
            how = f"the worker {death(self._exitcode)} before the request"
            if self._server_lost:
                how = ("the worker was gone before the request, and so was the process that forked it, its "
                       "implementation's fork server (killed by the implementation, or by the checker after the "
                       "server stopped answering)")
            raise self._lost(what, how) from None
        try:
            answer = self._receive(what, limit, self._next_id)
        finally:
            self._charge(limit)
        if answer.get("device_lost"):  # the worker exits after this answer: the next call starts another
            self.kill()
        return answer


def shutdown() -> None:
    """Stop this process's fork server (workers notice and exit); a later use starts another."""
    forkserver.shutdown_shared()


class WorkerPool:
    """Workers by implementation spec, started on first use and after each loss."""

    def __init__(self, settings: WorkerSettings | None = None) -> None:
        self.settings = settings or WorkerSettings()
        self._workers: dict[tuple[str, int], Worker] = {}
        self.starts = 0

    def worker(self, spec: str, deadline: "Limit | float", process: int = 0, device: str = "cpu") -> Worker:
        """A live worker for ``spec`` (raises :class:`WorkerLost` if none can be started). ``process`` 1
        is a second worker of the same implementation, forked from the root of the other hash seed.

        For a call on an accelerator (``device`` other than ``cpu``), every other worker of this pool
        that has used one is stopped first: each holds a device context (about 500 MiB on a CUDA
        GPU) and its allocator's cache for as long as it lives, and one pool per checker process
        times one worker per implementation fills even a large GPU. The ordering of rows by
        implementation keeps such restarts rare.
        """
        key = (spec, process)
        if device != "cpu":
            for other, held in list(self._workers.items()):
                if other != key and held.holds_device:
                    self._workers.pop(other).stop()
        current = self._workers.get(key)
        if current is None or not current.alive:
            if current is not None:
                current.kill()
            self.starts += 1
            current = Worker(spec, self.settings, deadline, process)
            self._workers[key] = current
        if device != "cpu":
            current.holds_device = True
        return current

    def load(self, spec: str, timeout_s: float, backstop_s: float | None = None) -> dict[str, Any]:
        """Start a worker for ``spec`` and return its load answer (``loaded`` or ``load-error``).

        ``timeout_s`` is CPU seconds of the worker's loading, counted from when the fork server is
        ready (its own start, torch's import, is not the implementation's time), with the
        wall-clock backstop of :class:`~specformer.runner.budget.Limit` (``backstop_s``, default a multiple of it). A worker that crashes, exits or hangs
        while importing the implementation gives a ``load-error`` answer naming what
        happened.
        """
        try:
            fork_server().ensure_started()
        except ForkServerError as exc:
            return {"status": "load-error", "message": str(exc)}
        try:
            worker = self.worker(spec, Limit(timeout_s, backstop_s))
        except WorkerLost as exc:
            return {"status": "load-error", "message": str(exc)}
        return worker.load_answer

    def discard(self, spec: str) -> None:
        """Kill the workers of ``spec``, if any."""
        for key in [key for key in self._workers if key[0] == spec]:
            self._workers.pop(key).kill()

    def close(self) -> None:
        """Stop every worker."""
        for key in list(self._workers):
            worker = self._workers.pop(key)
            worker.stop()
