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

from specformer.protocol import NotApplicable


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
