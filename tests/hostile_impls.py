"""Implementations that misbehave the way real code does, loaded by the tests through real workers.

Each class breaks one of the runner's defences: crashing or exiting the process,
hanging (in C, or after blocking the signals a time limit could use), raising a
``BaseException`` subclass, modifying its inputs, patching torch, returning a lying
tensor subclass, leaving nearly every example outside its domain, flooding its output,
or exhausting memory. ``tests/test_isolation.py`` runs them all in one ``specformer run``.
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import time

import torch

from specformer.protocol import Capabilities, NotApplicable


def correct_attention(q, k, v, mask=None, causal=False):
    """Plain scaled dot-product attention (True = may attend)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        keep = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
        mask = keep if mask is None else mask & keep
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    return weights @ v, weights


class Segfaults:
    name = "segfaults"

    def attention(self, q, k, v, mask=None, *, causal=False):
        ctypes.string_at(0)  # reads address 0: SIGSEGV


class ExitsZero:
    name = "exits-zero"

    def attention(self, q, k, v, mask=None, *, causal=False):
        os._exit(0)


class ModifiesInputs:
    """Correct result, then overwrites its inputs: in-process, expected values computed
    afterwards from the same tensors would agree with anything."""

    name = "modifies-inputs"

    def attention(self, q, k, v, mask=None, *, causal=False):
        out = correct_attention(q, k, v, mask, causal)
        q.add_(1.0)
        k.fill_(float("nan"))
        return out


class PatchesTorch:
    """Patches softmax and torch's defaults in its process, then computes attention with it."""

    name = "patches-torch"

    def __init__(self):
        uniform = lambda x, dim=-1, *a, **kw: torch.ones_like(x) / x.shape[dim]  # noqa: E731
        torch.softmax = uniform
        torch.nn.functional.softmax = uniform
        torch.Tensor.softmax = uniform
        torch.set_default_dtype(torch.float16)
        torch.set_default_device("meta")

    def attention(self, q, k, v, mask=None, *, causal=False):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights


class _Liar(torch.Tensor):
    """A tensor that claims to equal anything it is compared with."""

    def __sub__(self, other):
        return torch.zeros_like(torch.Tensor(self))

    def __eq__(self, other):
        return torch.ones(self.shape, dtype=torch.bool)

    def allclose(self, *args, **kwargs):
        return True


class ReturnsALyingTensor:
    name = "lying-tensor"

    def attention(self, q, k, v, mask=None, *, causal=False):
        out = torch.full((*q.shape[:-1], v.shape[-1]), 7.0, dtype=q.dtype)
        return out.as_subclass(_Liar), None


class BlocksTheAlarm:
    """Blocks and ignores SIGALRM, then sleeps: a SIGALRM time limit cannot cut it."""

    name = "blocks-alarm"

    def attention(self, q, k, v, mask=None, *, causal=False):
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(3600)


class Spins:
    name = "spins"

    def attention(self, q, k, v, mask=None, *, causal=False):
        while True:
            pass


class Escape(BaseException):
    """Not an Exception: slips past ``except Exception``."""


class RaisesABaseException:
    name = "raises-base-exception"

    def attention(self, q, k, v, mask=None, *, causal=False):
        raise Escape("slipped past except Exception")


class InDomainThreeTimes:
    """Correct on the first three examples (distinct queries), then refuses everything as outside its domain."""

    name = "in-domain-three-times"

    def __init__(self):
        self.seen = set()

    def attention(self, q, k, v, mask=None, *, causal=False):
        key = (tuple(q.shape), q.detach().cpu().numpy().tobytes())  # a property may call twice per example
        if key not in self.seen and len(self.seen) >= 3:
            raise NotApplicable("takes only three examples")
        self.seen.add(key)
        return correct_attention(q, k, v, mask, causal)


class WeightsThreeTimes:
    """Correct outputs always; its weights on its first three calls only, then hidden, whatever the inputs.

    Counting calls, not distinct inputs, makes the number of examples that see the weights independent of
    what Hypothesis draws (a generator that repeats a query would otherwise see them again and again): a
    property that asks once per example, such as ``ctx.weights``, checks exactly three examples.
    """

    name = "weights-three-times"
    shown = 3

    def __init__(self):
        self.calls = 0

    def attention(self, q, k, v, mask=None, *, causal=False):
        output, weights = correct_attention(q, k, v, mask, causal)
        self.calls += 1
        if self.calls > self.shown:
            return output, None  # the protocol allows hiding the weights
        return output, weights


class Noisy:
    """Correct, and prints a megabyte on every call."""

    name = "noisy"

    def attention(self, q, k, v, mask=None, *, causal=False):
        print("noise " * 200_000, flush=True)
        return correct_attention(q, k, v, mask, causal)


class EatsMemory:
    """Allocates 64 GiB."""

    name = "eats-memory"

    def attention(self, q, k, v, mask=None, *, causal=False):
        hog = torch.ones(8 * 1024**3, dtype=torch.float64)
        return hog, None


class ReservesAddressSpace:
    """Reserves 16 GiB of address space without touching it (as the CUDA build of torch and OpenBLAS
    do, far more than the run's memory limit), then answers correctly: it must pass."""

    name = "reserves-address-space"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import mmap

        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0)
        self.reserved = mmap.mmap(-1, 16 * 1024**3, flags=flags)
        return correct_attention(q, k, v, mask, causal)


class TouchesTooMuch:
    """Fills 3 GiB, more than the 2,048 MiB the isolation test allows, and holds it."""

    name = "touches-too-much"

    def attention(self, q, k, v, mask=None, *, causal=False):
        hog = torch.ones(3 * 1024**3 // 8, dtype=torch.float64)
        time.sleep(5)
        return correct_attention(q, k, v, mask, causal) if hog[-1] == 1 else None


class LosesItsDevice:
    """Raises what a CUDA device-side assert raises, once per process: after such an error the process's
    CUDA context is lost, so the worker must not be asked again (a second call in the same process
    returns a wrong answer, which a reused worker would be blamed for)."""

    name = "loses-its-device"
    lost = False

    def attention(self, q, k, v, mask=None, *, causal=False):
        if type(self).lost:
            return torch.zeros_like(q), None
        type(self).lost = True
        raise RuntimeError("CUDA error: device-side assert triggered\nCUDA kernel errors might be "
                           "asynchronously reported at some other API call")


class CountsItsThreads:
    """Starts every thread pool it can reach (torch's OpenMP pool, numpy's OpenBLAS, tokenizers' rayon),
    then answers correctly, after writing how many threads its process has to the file named by
    ``SPECFORMER_TEST_THREADS_FILE`` (one line per call)."""

    name = "counts-its-threads"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import numpy as np

        big = torch.ones(512, 512, dtype=torch.float64)
        (big @ big).sum()
        (big.exp() + big.sin()).sum()  # elementwise work parallel over OpenMP
        np.ones((512, 512)) @ np.ones((512, 512))
        try:
            from tokenizers import Tokenizer, models, pre_tokenizers

            tokenizer = Tokenizer(models.WordLevel({"a": 0, "[UNK]": 1}, unk_token="[UNK]"))
            tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
            tokenizer.encode_batch(["a b a"] * 2000)
        except ImportError:
            pass
        with open(os.environ["SPECFORMER_TEST_THREADS_FILE"], "a", encoding="utf-8") as out:
            out.write(f"{len(os.listdir('/proc/self/task'))}\n")
        return correct_attention(q, k, v, mask, causal)


# -- against the runner itself: its fork servers, its channel, its report ------------------


class KillsItsForkServer:
    """Kills the process that forked it (its fork server), and its process group, then answers."""

    name = "kills-its-fork-server"

    def attention(self, q, k, v, mask=None, *, causal=False):
        parent = os.getppid()
        try:
            os.killpg(os.getpgid(parent), signal.SIGKILL)
        except OSError:
            pass
        os.kill(parent, signal.SIGKILL)
        return correct_attention(q, k, v, mask, causal)


class StopsItsForkServer:
    """Stops the process that forked it (SIGSTOP), then answers correctly."""

    name = "stops-its-fork-server"

    def attention(self, q, k, v, mask=None, *, causal=False):
        os.kill(os.getppid(), signal.SIGSTOP)
        return correct_attention(q, k, v, mask, causal)


def _sockets() -> list[int]:
    """This process's open socket file descriptors."""
    import stat

    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                found.append(int(name))
        except OSError:
            continue
    return found


class AnswersOutOfTurn:
    """Writes a well-formed answer of its own on the worker's channel, then answers correctly."""

    name = "answers-out-of-turn"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import struct

        from specformer.runner import wire

        out, weights = correct_attention(q, k, v, mask, causal)
        frame = wire.encode({"status": "ok", "value": (out, weights), "flops": None, "mutated": [], "applied": []})
        for fd in _sockets():
            os.write(fd, struct.pack("!i", len(frame)) + frame)  # multiprocessing.Connection's framing
        return out, weights


def _report_path() -> str | None:
    """The ``--report`` of the ``specformer run`` this process descends from (read from /proc)."""
    pid = os.getpid()
    while pid > 1:
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            if b"--report" in argv:
                path = argv[argv.index(b"--report") + 1].decode()
                return os.path.join(os.readlink(f"/proc/{pid}/cwd"), path)
            pid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return None
    return None


class LeavesAForger:
    """Answers correctly, but first leaves a detached grandchild (double fork, new session)
    that waits, then rewrites the run's report again and again as a complete, ok run."""

    name = "leaves-a-forger"
    started = False

    def attention(self, q, k, v, mask=None, *, causal=False):
        path = _report_path()
        if path and not LeavesAForger.started:
            LeavesAForger.started = True
            if os.fork() == 0:
                try:
                    os.setsid()
                except OSError:  # refused to a confined worker (runner.confine): it forges from the group
                    pass
                if os.fork() == 0:
                    with open(os.path.join(os.path.dirname(path), "forger.pid"), "w") as f:
                        f.write(str(os.getpid()))
                    forged = ('{"schema": "specformer-report", "summary": {"rows": 0, "ok": true, '
                              '"complete": true, "state": "complete"}, "rows": [], "forged": true}')
                    time.sleep(2.0)
                    for _ in range(600):
                        try:
                            with open(path, "w") as f:
                                f.write(forged)
                        except OSError:
                            pass
                        time.sleep(0.1)
                os._exit(0)
        return correct_attention(q, k, v, mask, causal)


# -- what used to end in a vague message ----------------------------------------------------


class AnswersTooMuch:
    """Returns 300 MiB for the output: more than the checker accepts from a worker."""

    name = "answers-too-much"

    def attention(self, q, k, v, mask=None, *, causal=False):
        return torch.zeros(40 * 1024 * 1024, dtype=torch.float64), None


class RefusesAtRandom:
    """Refuses about half the calls as outside its domain, at random, and answers right otherwise."""

    name = "refuses-at-random"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import random

        if random.random() < 0.5:
            raise NotApplicable("not today")
        return correct_attention(q, k, v, mask, causal)


class Slow:
    """Right, but takes 0.4 s per call."""

    name = "slow"

    def attention(self, q, k, v, mask=None, *, causal=False):
        time.sleep(0.4)
        return correct_attention(q, k, v, mask, causal)


class WrongAndRefusesAtRandom:
    """Adds one to the output, and refuses every third call as outside its domain, whatever the
    example (as random as a refusal can be, and the same in every run)."""

    name = "wrong-and-refuses-at-random"

    def __init__(self):
        self.calls = 0

    def attention(self, q, k, v, mask=None, *, causal=False):
        self.calls += 1
        if self.calls % 3 == 0:
            raise NotApplicable("not today")
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class WrongAndTooLargeAtRandom:
    """Adds one to the output, and now and then answers 300 MiB instead."""

    name = "wrong-and-too-large-at-random"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import random

        if random.random() < 0.3:
            return torch.zeros(40 * 1024 * 1024, dtype=torch.float64), None
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class WrongAndSlow:
    """Adds one to the output and takes 0.2 s per call."""

    name = "wrong-and-slow"

    def attention(self, q, k, v, mask=None, *, causal=False):
        time.sleep(0.2)
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class ClosesItsChannel:
    """Closes every socket it can find (the worker's channel), then sleeps."""

    name = "closes-its-channel"

    def attention(self, q, k, v, mask=None, *, causal=False):
        for fd in _sockets():
            os.close(fd)
        time.sleep(3600)


class TiesByHashOrder:
    """BPE training as 001 describes it (recount every pair, merge the most frequent), which breaks a
    tie by a set's iteration order: the same counts give the same merges in one process, other merges
    in a process whose string hashes differ."""

    name = "ties-by-hash-order"

    def bpe_train(self, words, num_merges, *, end_of_word="</w>"):
        segments = {word: list(word[:-1]) + [word[-1] + end_of_word] for word in words if word}
        merges = []
        for _ in range(num_merges):
            counts = {}
            for word, symbols in segments.items():
                for pair in zip(symbols, symbols[1:]):
                    counts[pair] = counts.get(pair, 0) + words[word]
            if not counts:
                break
            best = max(counts.values())
            pair = next(iter({p for p, c in counts.items() if c == best}))  # set order: the string hashes'
            merges.append(pair)
            for word, symbols in segments.items():
                merged, i = [], 0
                while i < len(symbols):
                    if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
                        merged.append(symbols[i] + symbols[i + 1])
                        i += 2
                    else:
                        merged.append(symbols[i])
                        i += 1
                segments[word] = merged
        return merges


class SpinsInAChild:
    """Starts a child process that spins and waits for it: the CPU is the child's, not the worker's."""

    name = "spins-in-a-child"

    def attention(self, q, k, v, mask=None, *, causal=False):
        import subprocess
        import sys

        subprocess.run([sys.executable, "-c", "while True: pass  # spinning child of spins-in-a-child"])


class BusyButCorrect:
    """Correct attention after about 0.1 s of arithmetic per call: a row of it needs CPU, not only time."""

    name = "busy-but-correct"

    def attention(self, q, k, v, mask=None, *, causal=False):
        end = time.process_time() + 0.1
        while time.process_time() < end:
            pass
        return correct_attention(q, k, v, mask, causal)


# -- against the harness beyond its own worker: the root server, the checker, the cleanup, the checks ----


def _ancestor(levels: int) -> int:
    """The process ``levels`` generations above this one (1: the parent), read from ``/proc``."""
    pid = os.getpid()
    for _ in range(levels):
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    return pid


class KillsTheRootForkServer:
    """Kills the root fork server (its fork server's parent, which belongs to no implementation), then
    answers correctly."""

    name = "kills-the-root-fork-server"

    def attention(self, q, k, v, mask=None, *, causal=False):
        os.kill(_ancestor(2), signal.SIGKILL)
        return correct_attention(q, k, v, mask, causal)


class StopsItsChecker:
    """Stops (SIGSTOP) the process that checks it (worker -> its fork server -> the root -> the checker),
    then answers correctly."""

    name = "stops-its-checker"

    def attention(self, q, k, v, mask=None, *, causal=False):
        os.kill(_ancestor(3), signal.SIGSTOP)
        return correct_attention(q, k, v, mask, causal)


_CHAIN = """
import os, sys, time
path, pid_file = sys.argv[1], sys.argv[2]
forged = ('{"schema": "specformer-report", "summary": {"rows": 0, "ok": true, '
          '"complete": true, "state": "complete"}, "rows": [], "forged": true}')
start, link = time.monotonic(), 0
while time.monotonic() - start < 120:
    if os.fork() != 0:
        os._exit(0)  # the parent goes at once; the child carries on under a new pid
    try:
        os.setsid()  # out of the worker's group, where that is allowed
    except OSError:
        pass
    link += 1
    if link % 200 == 1:
        with open(pid_file, "w") as f:
            f.write(str(os.getpid()))
        if time.monotonic() - start > 2.0:
            try:
                with open(path, "w") as f:
                    f.write(forged)
            except OSError:
                pass
"""


class LeavesAForkChain:
    """Answers correctly, but first leaves a chain of short-lived processes (a small interpreter, so each fork
    takes microseconds): each forks the next and exits at once, so the chain's pid changes faster than a scan
    of ``/proc`` can follow; each link tries to leave the worker's process group (setsid, refused to a confined
    worker's processes), and after 2 s the links rewrite the run's report as a complete, ok run."""

    name = "leaves-a-fork-chain"
    started = False

    def attention(self, q, k, v, mask=None, *, causal=False):
        import sys

        path = _report_path()
        if path and not LeavesAForkChain.started:
            LeavesAForkChain.started = True
            if os.fork() == 0:
                pid_file = os.path.join(os.path.dirname(path), "chain.pid")
                os.execv(sys.executable, [sys.executable, "-S", "-c", _CHAIN, path, pid_file])
        return correct_attention(q, k, v, mask, causal)


class WrongOnCudaOnly:
    """Wrong attention (every output off by one) that declares it runs on CUDA only."""

    name = "wrong-on-cuda-only"
    capabilities = Capabilities(devices=frozenset({"cuda"}))

    def attention(self, q, k, v, mask=None, *, causal=False):
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class WrongInBfloat16Only:
    """Wrong attention that declares bfloat16 as its only dtype (no property of the selection runs in it)."""

    name = "wrong-in-bfloat16-only"
    capabilities = Capabilities(dtypes=frozenset({"bfloat16"}))

    def attention(self, q, k, v, mask=None, *, causal=False):
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class ChangesItsDeclaration:
    """Wrong attention whose declaration answers differently on each read: the CPU on the first, CUDA only
    after. Read once, at load, the first answer holds: its rows run on the CPU and fail."""

    name = "changes-its-declaration"
    reads = 0

    @property
    def capabilities(self):
        ChangesItsDeclaration.reads += 1
        return Capabilities(devices=frozenset({"cpu" if ChangesItsDeclaration.reads == 1 else "cuda"}))

    def attention(self, q, k, v, mask=None, *, causal=False):
        out, weights = correct_attention(q, k, v, mask, causal)
        return out + 1.0, weights


class ReplaysFromAFile(TiesByHashOrder):
    """:class:`TiesByHashOrder`, which writes each answer to a file (in its working directory and in its
    temporary directory) and answers from those files when they hold one: a second process that could read
    what the first wrote would repeat its merges, whatever its own hash order."""

    name = "replays-from-a-file"

    def bpe_train(self, words, num_merges, *, end_of_word="</w>"):
        import json
        import tempfile

        key = json.dumps([sorted(words.items()), num_merges, end_of_word])
        places = [os.path.abspath("replayed-merges.json"), os.path.join(tempfile.gettempdir(), "replayed-merges.json")]
        for place in places:
            try:
                with open(place) as f:
                    stored = json.load(f)
                if key in stored:
                    return [tuple(pair) for pair in stored[key]]
            except (OSError, ValueError):
                continue
        merges = super().bpe_train(words, num_merges, end_of_word=end_of_word)
        for place in places:
            try:
                try:
                    with open(place) as f:
                        stored = json.load(f)
                except (OSError, ValueError):
                    stored = {}
                stored[key] = merges
                with open(place, "w") as f:
                    json.dump(stored, f)
            except OSError:
                pass
        return merges
