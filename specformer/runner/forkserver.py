"""A fork server: one process that imports torch once and forks a fresh worker on request.

Importing torch takes seconds; forking a process that has already imported it takes
milliseconds. The checker starts one fork server (:class:`ForkServer`) and asks it for a
worker whenever an implementation needs one, including after every crash. Each worker
is a fresh fork: nothing a previous implementation changed survives into it.

Protocol, over a Unix socket pair (the checker and the server both run specformer's own
code; the implementation only ever runs in a forked child, which closes the socket
before anything else):

* ``start``: the checker sends the worker's settings with two file descriptors (its end
  of the request channel and the write end of its output pipe); the server forks and
  answers the child's process id;
* ``reap``: the checker, after the child died or was killed, asks for its exit status
  (negative: the signal that ended it, as ``subprocess`` reports it);
* ``server``: the checker sends one end of a new socket pair; the server forks a copy of
  itself that serves ``start`` and ``reap`` on it (an *implementation's* fork server,
  :meth:`ForkServer.for_implementation`) and answers its process id.

One fork server per implementation: the checker's root server (started with ``python
-c``) forks nothing but implementation servers, and each implementation's workers are
forked by its own server. A worker's parent is then its own implementation's server: an
implementation that kills or stops its parent (``os.kill(os.getppid(), ...)``) loses its
own workers only; the checker notices (a closed socket, a server found stopped, or no
answer within :data:`SERVER_ANSWER_CPU_S` of its CPU time, at the latest
:data:`SERVER_ANSWER_BACKSTOP_S` of wall time), kills that server and asks the root for another.
A busy machine slows a server's answer, it does not make it count as lost: what is waited
for is measured in the server's own CPU time, as a row's limit is (:mod:`specformer.runner.budget`). Every process
here dies with its parent (``PR_SET_PDEATHSIG``).

This module does not know what a worker does; :mod:`specformer.runner.worker` does.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

_LENGTH = struct.Struct("<I")


class ForkServerError(RuntimeError):
    """The fork server could not be started or stopped answering."""


def _send(sock: socket.socket, message: Any, fds: list[int] | None = None) -> None:
    data = pickle.dumps(message)
    payload = _LENGTH.pack(len(data)) + data
    if fds:
        socket.send_fds(sock, [payload], fds)
    else:
        sock.sendall(payload)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("the other side closed the socket")
        data += chunk
    return data


def _recv(sock: socket.socket, with_fds: int = 0) -> tuple[Any, list[int]]:
    fds: list[int] = []
    if with_fds:
        head, fds, _, _ = socket.recv_fds(sock, _LENGTH.size, with_fds)
        if not head:
            raise EOFError("the other side closed the socket")
        head += _recv_exact(sock, _LENGTH.size - len(head))
    else:
        head = _recv_exact(sock, _LENGTH.size)
    (length,) = _LENGTH.unpack(head)
    return pickle.loads(_recv_exact(sock, length)), fds


# -- the server process --------------------------------------------------------------------


def die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (Linux ``PR_SET_PDEATHSIG``).

    The checker's death kills its fork server, whose death kills every worker: a worker
    stuck in a loop is not left behind by a checker that was killed. Elsewhere a no-op.
    """
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def warm_up(flops: bool = True) -> None:
    """Pay once, here, what every worker would otherwise pay: importing torch and the
    worker, and (``flops``) the first use of ``FlopCounterMode`` (it imports sympy and
    hundreds of modules: seconds). Then freeze the garbage collector's view of all those
    objects, so that a worker's collections neither walk them nor copy their pages.

    Runs on one thread: no thread pool exists when the server forks.
    """
    import gc

    import torch

    import specformer.runner.worker  # noqa: F401

    # the inter-op pool can be sized only before its first use: here, once, for every worker (the
    # run's --threads, which the runner put into OMP_NUM_THREADS with every other pool's size)
    try:
        torch.set_num_interop_threads(max(1, int(os.environ.get("OMP_NUM_THREADS", "1"))))
    except (RuntimeError, ValueError):
        pass
    if flops:
        from specformer.flops import count_flops

        torch.set_num_threads(1)
        x = torch.ones(1, 2, 2)
        with count_flops():
            torch.softmax(torch.einsum("bij,bkj->bik", x, x), dim=-1) @ x
    gc.collect()
    gc.freeze()


def serve(fd: int, warm: bool = True) -> None:
    """The root fork server's loop (run as ``python -c``); exits when the checker goes away."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # implementation servers are reaped by the kernel
    sock = socket.socket(fileno=fd)
    warm_up(flops=warm)
    _send(sock, "ready")
    _loop(sock, root=True)


def _loop(sock: socket.socket, root: bool) -> None:
    """Answer ``start``, ``reap`` and (the root only) ``server`` requests until the socket closes."""
    while True:
        try:
            request, fds = _recv(sock, with_fds=2)
        except (EOFError, OSError):
            os._exit(0)
        if request["op"] == "server" and root:
            pid = os.fork()
            if pid == 0:  # an implementation's fork server
                sock.close()
                os.setsid()  # a group of its own: a worker's killpg of its parent's group reaches no other server
                die_with_parent()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # its workers are reaped by `reap`
                child = socket.socket(fileno=fds[0])
                _send(child, "ready")
                _loop(child, root=False)
                os._exit(0)
            for f in fds:
                os.close(f)
            _send(sock, pid)
        elif request["op"] == "start" and not root:
            pid = os.fork()
            if pid == 0:  # the worker
                sock.close()
                die_with_parent()
                code = 0
                os.dup2(fds[1], 2)  # the output the checker drains, from the start: a failure below lands there
                try:
                    from specformer.runner.worker import main

                    main(fds[0], fds[1], **request["settings"])
                except BaseException:  # noqa: BLE001 - the worker's own failure, reported by its status
                    code = 70
                    try:  # on the worker's output, which the checker quotes with the status
                        import traceback

                        traceback.print_exc()
                        sys.stderr.flush()
                    except BaseException:  # noqa: BLE001 - no output left to write to
                        pass
                os._exit(code)
            for f in fds:
                os.close(f)
            _send(sock, pid)
        elif request["op"] == "reap" and not root:
            for f in fds:
                os.close(f)
            try:
                _, status = os.waitpid(request["pid"], 0)
                _send(sock, os.waitstatus_to_exitcode(status))
            except ChildProcessError:
                _send(sock, None)
        else:
            for f in fds:
                os.close(f)
            _send(sock, None)


# -- the checker's descendants ---------------------------------------------------------------


def become_subreaper(on: bool = True) -> bool:
    """Make this process the reaper of its orphaned descendants (Linux ``PR_SET_CHILD_SUBREAPER``).

    A process a worker started and left behind (a double fork, ``setsid``) is then
    re-parented here instead of to ``init``, so :func:`end_descendants` finds it. Returns
    whether it took effect (elsewhere: ``False``, and leftovers are found only while their
    parents live).
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, int(on), 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def process_table() -> dict[int, tuple[int, str, int]]:
    """Every visible process: pid -> (parent pid, state letter, process group), from ``/proc``
    (:func:`specformer.runner.memory.processes` reads it)."""
    from specformer.runner.memory import processes

    return {pid: (parent, state, group) for pid, (parent, group, state) in processes().items()}


def descendants(root: int | None = None, exclude: frozenset[int] = frozenset()) -> list[int]:
    """The live (not zombie) processes descended from ``root`` (default: this process),
    leaving out the processes ``exclude`` names and everything below them."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [os.getpid() if root is None else root]
    while frontier:
        for child in children.get(frontier.pop(), []):
            if child in exclude:
                continue
            found.append(child)
            frontier.append(child)
    return [pid for pid in found if table.get(pid, (0, "Z", 0))[1] not in ("Z", "X")]


def _group(pid: int) -> int | None:
    """The process group of ``pid``; ``None`` once it is gone."""
    try:
        return os.getpgid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def end_descendants(timeout_s: float = 60.0, exclude: frozenset[int] = frozenset()) -> list[int]:
    """SIGKILL every process descended from this one and reap those that come back here.

    Run by the checker at the end of a run, after its workers were stopped and before the
    final report is written: nothing an implementation started outlives the run.
    ``exclude``: processes that were there before the run (a caller's own children) and
    their subtrees, left alone. Returns the processes it had to kill.
    """
    import time

    killed: list[int] = []
    deadline = time.monotonic() + timeout_s
    own_group = os.getpgid(0)
    spared = {own_group, *(_group(pid) for pid in exclude)}
    while time.monotonic() < deadline:
        alive = descendants(exclude=exclude)
        # a whole process group first, in one call: a confined worker's processes cannot leave its group
        # (runner.confine), so a chain of short-lived forks, each gone before its pid is read, dies with it
        for group in {_group(pid) for pid in alive} - spared:
            if group is not None and group > 1:
                try:
                    os.killpg(group, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in killed:  # reap what died here (children, and orphans re-parented to this subreaper)
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not alive:
            break
        time.sleep(0.05)
    _reap_orphans(exclude)
    return sorted(set(killed))


def _reap_orphans(exclude: frozenset[int]) -> None:
    """Reap this process's exited children that it never started (orphans re-parented to this subreaper:
    the links of a chain of forks that exited on their own), so that none is left a zombie."""
    for pid, (parent, state, _) in process_table().items():
        if parent == os.getpid() and state in ("Z", "X") and pid not in exclude:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


# -- the checker's handle ------------------------------------------------------------------


#: The string hash seeds (``PYTHONHASHSEED``) of the root fork servers: every worker is forked from the
#: first; a property that asks whether the same input gives the same result asks a worker forked from
#: the second too, whose sets and dicts of strings iterate in another order (a tie broken by a set's
#: order then shows, which two calls in one process never reveal).
HASH_SEEDS = ("0", "1")

#: CPU seconds an implementation's fork server may spend on one request (a fork, a reap: milliseconds when
#: it runs) before it counts as lost, is killed and replaced.
SERVER_ANSWER_CPU_S = 15.0
#: Wall seconds after which a server that has not answered counts as lost whatever its CPU time: the
#: backstop for one that waits (a server found stopped, by its own worker say, counts as lost at once).
SERVER_ANSWER_BACKSTOP_S = 300.0
#: The root server's start (torch's import, the warm-up): CPU seconds, and a wall-clock backstop.
ROOT_START_CPU_S = 120.0
ROOT_START_BACKSTOP_S = 1200.0
#: How often a wait for an answer looks at the server's state and CPU time.
_POLL_S = 0.5


def _state(pid: int) -> str | None:
    """The state letter of process ``pid`` (``R``, ``S``, ``T`` for stopped...), ``None`` if unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def await_answer(sock: socket.socket, pid: int | None, cpu_s: float, backstop_s: float) -> None:
    """Return once ``sock`` has something to read (or was closed); raise :class:`TimeoutError` when the
    process ``pid`` answering it is stopped, has spent ``cpu_s`` CPU seconds since the call, or
    ``backstop_s`` wall seconds passed. Without ``/proc`` (or a pid) only the backstop counts."""
    from specformer.runner import interrupt
    from specformer.runner.budget import process_cpu_s

    started = time.monotonic()
    spent_before = process_cpu_s(pid) if pid is not None else None
    while True:
        readable, _, _ = select.select([sock], [], [], _POLL_S)
        if readable:
            return
        interrupt.check()
        waited = time.monotonic() - started
        if waited > backstop_s:
            raise TimeoutError(f"no answer within the backstop of {backstop_s:g} s of wall time")
        if pid is None:
            continue
        if _state(pid) in ("T", "t"):
            raise TimeoutError(f"the server (process {pid}) is stopped")
        spent = process_cpu_s(pid)
        if spent is not None and spent_before is not None and spent - spent_before > cpu_s:
            raise TimeoutError(f"no answer after {spent - spent_before:.3g} s of the server's CPU time "
                               f"(in {waited:.3g} s of wall time)")


class ForkServer:
    """The checker's connection to a fork server, started on first use (or :meth:`launch`).

    The root server (``parent=None``) is a ``python -c`` process that imports torch;
    ``warm=False`` skips its ``FlopCounterMode`` warm-up, for a checker that only loads
    implementations to learn their operations. An implementation's server (``parent``
    given, see :meth:`for_implementation`) is forked by the root on request.
    ``startup_timeout``: the CPU seconds the root's start may take (its wall-clock backstop is
    :data:`ROOT_START_BACKSTOP_S`, or five times that if more).
    """

    def __init__(self, startup_timeout: float = ROOT_START_CPU_S, warm: bool = True, parent: "ForkServer | None" = None,
                 hash_seed: str = HASH_SEEDS[0]) -> None:
        self._hash_seed = hash_seed
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._launched: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._startup_timeout = startup_timeout
        self._warm = warm
        self._parent = parent
        self._pid: int | None = None  # an implementation server's process id
        self._children: dict[str, ForkServer] = {}
        self.restarts = 0

    def for_implementation(self, spec: str) -> "ForkServer":
        """The fork server of the implementation named ``spec`` (forked from this root on first use)."""
        with self._lock:
            child = self._children.get(spec)
            if child is None:
                child = self._children[spec] = ForkServer(self._startup_timeout, self._warm, parent=self)
            return child

    def launch(self) -> None:
        """Start the server's process now without waiting for it: its seconds of imports then
        overlap the checker's own start-up. Idempotent."""
        with self._lock:
            if self._sock is None and self._launched is None:
                self._launched = self._spawn()

    def _spawn(self) -> socket.socket:
        mine, theirs = socket.socketpair()
        if self._parent is not None:
            try:
                self._pid = int(self._parent._ask({"op": "server"}, [theirs.fileno()]))
            finally:
                theirs.close()
            return mine
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
        env["PYTHONHASHSEED"] = self._hash_seed  # read once, at the interpreter's start: its workers share it
        self._process = subprocess.Popen(
            [sys.executable, "-c",
             f"from specformer.runner.forkserver import serve; serve({theirs.fileno()}, warm={self._warm!r})"],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, start_new_session=True, env=env,
        )
        theirs.close()
        return mine

    def _start(self) -> socket.socket:
        mine, self._launched = self._launched or self._spawn(), None
        try:
            self._await(mine, starting=True)
            ready, _ = _recv(mine)
        except (EOFError, OSError) as exc:
            mine.close()
            self._kill_child()
            raise ForkServerError(f"the fork server did not start ({exc})") from None
        if ready != "ready":
            raise ForkServerError(f"the fork server said {ready!r}")
        return mine

    def _await(self, sock: socket.socket, starting: bool = False) -> None:
        """Wait for the server's next message (see :func:`await_answer`); once it has begun to arrive,
        the rest of it must follow within the backstop."""
        if self._parent is None and starting:
            cpu_s, backstop_s = self._startup_timeout, max(ROOT_START_BACKSTOP_S, 5 * self._startup_timeout)
        else:
            cpu_s, backstop_s = SERVER_ANSWER_CPU_S, SERVER_ANSWER_BACKSTOP_S
        sock.settimeout(None)
        await_answer(sock, self.pid, cpu_s, backstop_s)
        sock.settimeout(backstop_s)

    def ensure_started(self) -> None:
        """Start the server now if it is not running (it takes a few seconds: torch's import)."""
        with self._lock:
            if self._sock is None:
                self._sock = self._start()

    def _ask(self, message: dict[str, Any], fds: list[int] | None = None) -> Any:
        with self._lock:
            for attempt in (1, 2):
                if self._sock is None:
                    self._sock = self._start()
                try:
                    _send(self._sock, message, fds or [])
                    self._await(self._sock)
                    answer, _ = _recv(self._sock)
                    return answer
                except (EOFError, OSError) as exc:  # the server died or stopped: start another once
                    self._close()
                    self.restarts += 1
                    if attempt == 2 or message["op"] == "reap":
                        raise ForkServerError(f"the fork server stopped answering ({exc})") from None
            raise AssertionError("unreachable")

    def start_worker(self, channel: int, output: int, settings: dict[str, Any]) -> int:
        """Fork a worker that talks over ``channel`` and writes to ``output``; its pid.

        On the root server this goes to the fork server of ``settings["spec"]``.
        """
        if self._parent is None:
            return self.for_implementation(str(settings.get("spec", ""))).start_worker(channel, output, settings)
        return int(self._ask({"op": "start", "settings": settings}, [channel, output]))

    def reap(self, pid: int) -> int | None:
        """The exit status of a dead (or killed) worker; ``None`` if unknown."""
        try:
            return self._ask({"op": "reap", "pid": pid}, [])
        except ForkServerError:
            return None

    @property
    def pid(self) -> int | None:
        """The server's process id, once started."""
        if self._process is not None:
            return self._process.pid
        return self._pid

    def _kill_child(self) -> None:
        if self._pid is not None:
            try:
                os.kill(self._pid, signal.SIGKILL)  # the root reaps it (SIGCHLD ignored there)
            except (ProcessLookupError, PermissionError):
                pass
            self._pid = None

    def _close(self) -> None:
        for sock in (self._sock, self._launched):
            if sock is not None:
                sock.close()
        self._sock = self._launched = None
        self._kill_child()
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def close(self) -> None:
        """Stop the server and, for the root, every implementation's server (their workers
        notice their closed channels, or die with their server)."""
        for child in list(self._children.values()):
            child.close()
        self._children.clear()
        self._close()


_SHARED: dict[str, ForkServer] = {}
_SHARED_LOCK = threading.Lock()


def shared(warm: bool = True, hash_seed: str = HASH_SEEDS[0]) -> ForkServer:
    """This process's root fork server of ``hash_seed`` (``warm`` applies when this call creates it);
    the second seed's is started only when a property asks for another process."""
    with _SHARED_LOCK:
        if hash_seed not in _SHARED:
            _SHARED[hash_seed] = ForkServer(warm=warm and hash_seed == HASH_SEEDS[0], hash_seed=hash_seed)
        return _SHARED[hash_seed]


def shutdown_shared() -> None:
    """Stop this process's fork servers, if any; a later :func:`shared` starts another."""
    with _SHARED_LOCK:
        for server in _SHARED.values():
            server.close()
        _SHARED.clear()
