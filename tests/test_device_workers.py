"""Workers and accelerators, on a machine without one.

A CUDA run starts a worker per implementation in every checker process, and each worker
that touches the GPU holds a device context and its allocator's cache while it lives:
14 checker processes times a dozen implementations filled an 80 GB H100, and every later
worker then failed as it moved its inputs. These tests check the three defences without a
GPU: a pool keeps one device-holding worker at a time; a failed move of the inputs is the
call's clear answer, not a silent worker exit; and a worker that fails outside any call
leaves its traceback on the output the checker quotes.
"""

from __future__ import annotations

import os
import socket
import time

import torch

from specformer.runner.supervisor import WorkerPool, fork_server, shutdown
from specformer.runner.loading import load_implementation
from specformer.runner.worker import run_locally


def test_a_pool_keeps_one_worker_that_holds_a_device() -> None:
    pool = WorkerPool()
    try:
        deadline = time.monotonic() + 120
        first = pool.worker("reference", deadline, device="cuda")
        assert first.alive and first.holds_device
        on_cpu = pool.worker("torch-sdpa", deadline)  # a CPU call stops nothing
        assert first.alive and not on_cpu.holds_device
        second = pool.worker("torch-mha", deadline, device="cuda")
        assert not first.alive, "the other device-holding worker is stopped before a device call"
        assert second.alive and second.holds_device and on_cpu.alive
        again = pool.worker("torch-mha", deadline, device="cuda")
        assert again is second, "the same implementation keeps its worker"
        back = pool.worker("reference", deadline, device="cuda")
        assert back is not first and back.alive and not second.alive
    finally:
        pool.close()
        shutdown()


def test_inputs_that_cannot_reach_the_device_are_the_calls_clear_answer() -> None:
    q = torch.randn(1, 3, 4)
    request = {"op": "call", "method": "score", "args": ("dot", q, q), "kwargs": {}, "names": ("kind", "q", "k"),
               "device": "cuda" if not torch.cuda.is_available() else "cuda:99"}
    answer = run_locally(load_implementation("reference").obj, request)
    assert answer["status"] == "raised", answer
    assert "moving the inputs to cuda" in answer["message"] and "before any call" in answer["message"], answer


def test_a_worker_that_fails_outside_a_call_leaves_its_traceback() -> None:
    server = fork_server("reference")
    mine, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    try:
        pid = server.start_worker(theirs.fileno(), out_w, {"spec": "reference", "no_such_setting": 1})
        theirs.close()
        os.close(out_w)
        output = b""
        while chunk := os.read(out_r, 65536):
            output += chunk
        assert server.reap(pid) == 70
        text = output.decode()
        assert "Traceback" in text and "no_such_setting" in text, text
    finally:
        mine.close()
        os.close(out_r)
        shutdown()
