"""The process environment a run owns: thread pools and pytest's plugins.

A verdict must not depend on the machine or on what else is installed, so
``specformer run`` sets, before any library that starts a thread pool is loaded and
before pytest starts:

* **thread pools** (:func:`thread_variables`): every pool a worker or a checker can start
  is pinned to ``--threads``: OpenMP (torch's intra-op pool, MKL's), MKL, OpenBLAS (the
  copies numpy, scipy and gensim load), BLIS, Apple's vecLib, numexpr, rayon (Hugging
  Face ``tokenizers``), and ``tokenizers``' own parallelism. A 16-core machine would
  otherwise start 16 threads per pool in each of 14 jobs' workers, which oversubscribes
  the cores and, under a memory limit, fails thread starts and OpenBLAS' buffers. The
  variables reach the fork servers and xdist's jobs through the environment they inherit;
  torch's own pools are also set by call (``torch.set_num_threads``) where they are used.
* **pytest's plugins** (:func:`pytest_variables`): autoloading is switched off
  (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``) and the run's plugins are named explicitly
  (``PYTEST_PLUGINS``, read by every pytest process including xdist's jobs): specformer's
  own, Hypothesis' and, with ``--jobs``, xdist's. Other plugins in the environment
  (pytest-randomly, pytest-timeout, pytest-benchmark, ...) are not loaded, and a user's
  ``PYTEST_ADDOPTS`` does not reach the run (pytest's own options go after ``--``).

This module changes only ``os.environ`` (and gives back what it changed); it imports
nothing heavy and does not decide what a run selects.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator, Mapping

#: Environment variables that size a thread pool, each set to the run's ``--threads``.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS")
#: The pytest plugins of a run, by module: specformer's and Hypothesis' (its options, such as
#: ``--hypothesis-seed``); xdist's is added for ``--jobs`` above 1.
PLUGINS = ("specformer.runner.plugin", "_hypothesis_pytestplugin")
XDIST_PLUGIN = "xdist.plugin"


def thread_variables(threads: int) -> dict[str, str]:
    """The variables that pin every thread pool to ``threads`` (``tokenizers`` parallelism off at 1)."""
    n = str(max(1, int(threads)))
    variables = dict.fromkeys(THREAD_VARIABLES, n)
    variables["TOKENIZERS_PARALLELISM"] = "true" if int(threads) > 1 else "false"
    return variables


def pytest_variables(jobs: int) -> dict[str, str | None]:
    """The variables that make pytest load exactly the run's plugins (``None``: removed)."""
    plugins = list(PLUGINS) + ([XDIST_PLUGIN] if jobs > 1 else [])
    return {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_PLUGINS": ",".join(plugins), "PYTEST_ADDOPTS": None}


def apply(variables: Mapping[str, str | None]) -> dict[str, str | None]:
    """Set (or, for ``None``, remove) ``variables`` in ``os.environ``; the previous values."""
    previous = {name: os.environ.get(name) for name in variables}
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return previous


@contextmanager
def owned(threads: int, jobs: int) -> Iterator[None]:
    """The run's environment (threads and plugins) inside the block, the caller's after it."""
    previous = apply({**thread_variables(threads), **pytest_variables(jobs)})
    try:
        yield
    finally:
        apply(previous)
