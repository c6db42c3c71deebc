"""The runner: from ``specformer run`` to one row of the report.

One row is one property × implementation × device × dtype. It travels like this::

    specformer run --impl mine.py ...            cli.py       options checked first (exit 2),
        │                                                     --help without torch
        │  pytest.main(properties/, --impl, ...)
        ▼
    pytest + this plugin (controller)            plugin.py    loads each implementation once
        │  collect: property × impl × device ×                (worker), reserves its name,
        │  dtype, filtered by                                 reads its capabilities; writes
        │  selection.py (--claims/--topic/--failed)           the report "running"
        │  sharding.py (--shard K/N)
        ▼
    one item, in this process or an xdist node  plugin.py
        │  run_property(property, impl, device,  row.py       capabilities: outside the
        │               dtype, profile)                       declaration → not-applicable
        │                                                     at once; Hypothesis draws
        │                                                     examples (profiles.py), the
        │                                                     failing one is shrunk within
        │                                                     a budget (shrinking.py)
        ▼
    the property (properties/<family>/...)       the expected value, in float64, here
        │  ctx.<operation>(...)                  specformer.checked: arguments checked,
        │                                        tensors packed
        ▼
    WorkerPool.call(id, op, args, limit)         supervisor.py  limit kept from outside (CPU
        │                                                       seconds of checker and worker
        │                                                       tree, wall backstop: budget.py);
        │  pickled request with a request id                    a late, silent, crashed or
        │  over a socket pair                                   out-of-turn worker is
        ▼                                                       killed: WorkerLost
    the implementation's worker                  worker.py    forked by the implementation's
        │  (forkserver.py: one fork server per                own fork server; confined
        │   implementation, torch imported once)              (confine.py); memory
        │                                                     limit, input copies, in-place
        │                                                     modification check, stdout
        │  impl.<operation>(...)   ← the only place           and stderr captured
        │                            user code runs
        ▼
    answer encoded by wire.py (plain data only, never unpickled)
        │
        ▼
    specformer.checked: type, shape, dtype, finiteness checked → the property's verdict
        │
        ▼
    RowResult (row.py): pass · refuted · fail · error · inconclusive · not-applicable
        │            · skipped
        ▼
    the controller: known deviations (specformer.report.deviations) relabel the row;
    the report is rewritten as rows arrive (specformer.report.model) and written
    atomically, last, as "complete"; the summary (specformer.report.summary) groups
    identical failures; --junit adds JUnit XML (specformer.report.junit)

Besides ``run``: ``replay.py`` (a failing row's inputs, loadable in a REPL),
``skeleton.py`` (``specformer new FAMILY``), ``sharding.py`` (``specformer merge``),
``loading.py`` (``--impl`` to an object), ``devices.py`` (which devices exist here),
``budget.py`` (a row's CPU limit and wall-clock backstop), ``arrays.py`` (NumPy, JAX, CuPy
and MLX arrays in and out of an implementation that declares them), ``confine.py`` (the
worker's seccomp filter: no signal to the harness's processes, no leaving its process group).

Nothing in this package computes an expected value or knows a family's mathematics;
the properties and :mod:`specformer.checked` do. Modules are imported where used, so
that ``specformer --help`` and ``specformer claims`` import neither torch nor
Hypothesis.
"""
