"""The pytest plugin: collects properties as test items, runs them, and writes the report.

Registered through the ``pytest11`` entry point, so ``pytest --pyargs
specformer.properties --impl torch-sdpa`` works as ``specformer run --impl torch-sdpa``
does. Files of ``specformer.properties/<family>/`` become one item per property ×
implementation × device × dtype; each item runs through
:func:`specformer.runner.row.run_property`, so a misbehaving implementation produces a row,
never a crashed session. Outside the properties folder the plugin does nothing but add
its options.

The controlling process (the only process without ``pytest-xdist``, or xdist's
controller with ``-n N``):

1. loads every implementation once in a worker, to learn its name and operations (an
   implementation that fails to load is reported, with no rows);
2. writes the report at once, marked ``running``, so that no earlier report survives a
   run that dies;
3. receives every finished row (from its own items or from xdist's workers) and
   rewrites the report as rows arrive; at the end marks it ``complete`` or
   ``interrupted``.

An implementation that provides none of a family's operations gets no rows for that
family: the report lists the family under the implementation's ``omitted_families``
and the summary prints one line for it.

Each row is relabelled by the known deviations (:mod:`specformer.report.deviations`): the
files given with ``--deviations``, and the shipped adapters' own file for built-in
implementations. The summary ends with one block per row not as expected
(:func:`specformer.report.summary.failure_block`) and lists ``fixed`` rows, so that their
entries can be pruned.
"""

from __future__ import annotations

import fnmatch
import json
from contextlib import contextmanager
import os
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

import specformer.properties
from specformer.report import deviations
from specformer.report.schedule import efficiency_line
from specformer.runner import confine, devices, environment, forkserver, interrupt, sharding
from specformer.adapters import DEFAULT_IMPLEMENTATIONS
from specformer.context import WorkerBackend
from specformer.runner.budget import BACKSTOP_FACTOR
from specformer.runner.options import number_problem
from specformer.runner.profiles import PROFILES
from specformer.property import REGISTRY, Property, load_properties, property_modules
from specformer.protocol import CONVENTIONS, FAMILIES, OPERATIONS, Capabilities, CapabilityError
from specformer.report.model import ReportWriter, implementation_entry, naming_problem
from specformer.runner.row import MATH, RowResult, run_property
from specformer.runner.selection import claim_globs, row_selected, topic_selects
from specformer.runner.shrinking import ShrinkBudget, budget_for
from specformer.report.summary import failure_block, render_call, render_implementation_call, summary_lines
from specformer.runner.supervisor import DEFAULT_MEMORY_MIB, WorkerPool, WorkerSettings, shutdown

PROPERTIES_DIR = Path(specformer.properties.__file__).parent.resolve()
_STATE = pytest.StashKey["SuiteState"]()
_ROW_KEY = "specformer_row"
_IMPLS_KEY = "specformer_implementations"
_DEVIATIONS_KEY = "specformer_deviation_texts"


class SuiteState:
    """What one pytest process knows about the run."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rows: list[dict[str, Any]] = []
        self.expected_rows: int | None = None
        self.start = time.perf_counter()
        self.writer: ReportWriter | None = None
        self._pool: WorkerPool | None = None
        self._impls: list[dict[str, Any]] | None = None
        self._threads: int | None = None
        self._deviations: tuple[list[deviations.Deviation], list[deviations.Deviation]] | None = None
        #: the ``--deviations`` files as read, once, before any implementation loaded: (path, text)
        self.deviation_texts: list[tuple[str, str]] = []
        self._selectors: list[dict[str, Any]] | None | bool = False
        #: the thread variables as they were before the run pinned them (restored at the end)
        self.environment: dict[str, str | None] | None = None

    @property
    def row_selectors(self) -> list[dict[str, Any]] | None:
        """The exact rows ``--rows FILE`` names (``specformer run --failed``), or ``None``."""
        if self._selectors is False:
            path = self.option("specformer_rows")
            if not path:
                self._selectors = None
            else:
                try:
                    self._selectors = json.loads(Path(path).read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    raise pytest.UsageError(f"--rows {path!r}: cannot read the row list: {exc}") from None
        return self._selectors  # type: ignore[return-value]

    def deviations_for(self, spec: str) -> list[deviations.Deviation]:
        """The deviation entries that apply to the implementation named by ``spec``."""
        if self._deviations is None:
            try:
                if self.is_xdist_worker:  # the controller's reading: an implementation may have changed the files
                    texts = json.loads(self.config.workerinput.get(_DEVIATIONS_KEY, "[]"))  # type: ignore[attr-defined]
                    self.deviation_texts = [(str(path), str(text)) for path, text in texts]
                else:
                    self.deviation_texts = [(str(path), deviations.read_file(path))
                                            for path in self.option("specformer_deviations") or []]
                user = [entry for path, text in self.deviation_texts for entry in deviations.parse(text, path)]
                self._deviations = (user, deviations.builtin())
            except deviations.DeviationError as exc:
                raise pytest.UsageError(str(exc)) from None
        return deviations.entries_for(spec, *self._deviations)

    @property
    def active(self) -> bool:
        """Whether this session runs properties (else the plugin only adds its options)."""
        if any(self.option(name) for name in ("specformer_report", "specformer_impl", "specformer_claims",
                                               "specformer_property", "specformer_topic", "specformer_rows")):
            return True
        for arg in self.config.args:
            if arg.split("::")[0].rstrip("/").endswith(("specformer.properties", "properties")):
                return True
            try:
                path = Path(arg.split("::")[0]).resolve()
            except (OSError, ValueError):
                continue
            if path == PROPERTIES_DIR or PROPERTIES_DIR in path.parents:
                return True
        return False

    @property
    def is_xdist_worker(self) -> bool:
        """Whether this process is one of xdist's workers (it runs items, it reports nothing)."""
        return hasattr(self.config, "workerinput")

    @property
    def is_xdist_controller(self) -> bool:
        """Whether this process hands items to xdist workers."""
        return not self.is_xdist_worker and bool(getattr(self.config.option, "numprocesses", None)) \
            and self.config.pluginmanager.hasplugin("dsession")

    def option(self, name: str) -> Any:
        """A command-line option of the plugin."""
        return self.config.getoption(name)

    def limit_threads(self) -> None:
        """Set torch's intra-op threads for the run, once (restored at the end of the session)."""
        if self._threads is None:
            self._threads = torch.get_num_threads()
            torch.set_num_threads(self.option("specformer_threads"))

    def restore_threads(self) -> None:
        """Give torch back the thread count it had before the run."""
        if self._threads is not None:
            torch.set_num_threads(self._threads)

    @property
    def pool(self) -> WorkerPool:
        """This process's workers, one per implementation."""
        if self._pool is None:
            memory = self.option("specformer_memory_limit")
            # A checker and its worker take turns: polling instead of sleeping saves the cost of
            # waking a sleeping process, but only while every pair has two cores to itself.
            checkers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
            spin_s = 0.0005 if 2 * checkers <= (os.cpu_count() or 1) else 0.0
            spin_s = float(os.environ.get("SPECFORMER_SPIN_S", spin_s))  # for benchmarks/isolation_time.py
            self._pool = WorkerPool(WorkerSettings(threads=self.option("specformer_threads"), memory_mib=memory or None,
                                                   spin_s=spin_s))
        return self._pool

    def close(self) -> None:
        """Stop this process's workers."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def implementations(self) -> list[dict[str, Any]]:
        """The implementations named by ``--impl`` (default: the shipped three), as report entries.

        The controlling process loads each one in a worker; xdist's workers receive the
        entries from it, so that every process collects the same items.
        """
        if self._impls is None:
            if self.is_xdist_worker:
                self._impls = json.loads(self.config.workerinput.get(_IMPLS_KEY, "[]"))  # type: ignore[attr-defined]
            else:
                specs = dict.fromkeys(self.option("specformer_impl") or DEFAULT_IMPLEMENTATIONS)  # each once
                self._impls = [self._load(spec) for spec in specs]
                self._check_names()
        return self._impls

    def _check_names(self) -> None:
        """Unique, unreserved names, and deviations that name one implementation each (usage errors)."""
        problem = naming_problem(self._impls or [])
        if problem is None:
            self.deviations_for("")  # read before any implementation loaded (pytest_configure), never again
            problem = deviations.implementation_problem(self._deviations[0] if self._deviations else [],
                                                        self._impls or [])
        if problem:
            self.close()
            raise pytest.UsageError(problem)

    def _load(self, spec: str) -> dict[str, Any]:
        answer = self.pool.load(spec, self.option("specformer_row_timeout"), self.option("specformer_row_backstop"))
        if answer.get("status") != "loaded":
            return implementation_entry(spec, spec, status="load-error", message=str(answer.get("message", "")))
        operations = [str(op) for op in answer.get("operations", [])]
        try:  # the worker's word: checked again here
            capabilities = answer.get("capabilities")
            if capabilities is not None:
                capabilities = Capabilities.from_plain(capabilities)
                capabilities.validate(OPERATIONS, CONVENTIONS)
                capabilities = capabilities.to_plain()
        except CapabilityError as exc:
            return implementation_entry(spec, spec, status="load-error",
                                        message=f"its capability declaration is malformed: {exc}")
        omitted = [name for name, family in FAMILIES.items()
                   if not {op.method for op in family.operations} & set(operations)]
        entry = implementation_entry(str(answer.get("name") or spec), spec, operations, omitted_families=omitted,
                                     capabilities=capabilities)
        notes = answer.get("protocol_notes")
        if isinstance(notes, list) and notes:  # operations written before a protocol change (protocol/versions.py)
            entry["protocol_notes"] = [str(note)[:500] for note in notes[:20]]
        # a default is not asked for by name (specformer run passes its default set with --default-impls)
        entry["asked"] = spec in (self.option("specformer_impl") or []) and not self.option("specformer_default_impls")
        return entry

    def selected(self, prop: Property) -> bool:
        """Whether ``--claims``, ``--property``, ``--topic`` and ``--rows`` select ``prop``."""
        globs = claim_globs(self.option("specformer_claims"))
        names = self.option("specformer_property") or []
        rows = self.row_selectors
        return ((not globs or any(fnmatch.fnmatchcase(prop.claim, g) for g in globs))
                and (not names or prop.qualname in names or prop.name in names)
                and topic_selects(prop.claim, prop.family, self.option("specformer_topic"))
                and (rows is None or any(r["property"] == prop.qualname for r in rows)))

    @property
    def math_rows(self) -> bool:
        """Whether rows that call no implementation run: in the suite's own run (no ``--impl``) or with ``--with-math``.

        A user's ``--impl mine.py`` runs only the rows that call ``mine.py``.
        """
        return bool(self.option("specformer_with_math") or not self.option("specformer_impl"))

    def rows_for(self, prop: Property) -> Iterator[tuple[dict[str, Any] | None, str, str]]:
        """The ``(implementation or None for math, device, dtype)`` rows of a selected property."""
        wanted_dtypes = self.option("specformer_dtype")
        if not prop.needs and not self.math_rows:
            return
        if prop.needs:
            family_ops = {op.method for op in FAMILIES[prop.family].operations} if prop.family in FAMILIES else set()
            impls: list[dict[str, Any] | None] = [
                i for i in self.implementations
                if i["status"] == "loaded" and (not family_ops or family_ops & set(i["operations"]))]
        else:
            impls = [None]
        for impl in impls:
            for device in devices.requested_devices(self.option("specformer_device")):
                dtypes = devices.DEVICE_DTYPES[device]
                if not prop.needs:  # mathematics: once, in its own dtype
                    dtypes = (prop.dtypes or ("float64",))[:1] if device == "cpu" else ()
                elif prop.dtypes:
                    dtypes = tuple(d for d in dtypes if d in prop.dtypes)
                for dtype in dtypes:
                    spec = impl["spec"] if impl else MATH
                    if (not wanted_dtypes or dtype in wanted_dtypes) \
                            and row_selected(self.row_selectors, prop.qualname, spec, device, dtype) is not None:
                        yield impl, device, dtype


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specformer", "specformer conformance suite")
    group.addoption("--impl", dest="specformer_impl", action="append", metavar="SPEC",
                    help="implementation to check: reference, torch-sdpa, torch-mha, module:attr or file.py[:attr] "
                         "(repeatable; default: the three shipped ones)")
    group.addoption("--default-impls", dest="specformer_default_impls", action="store_true",
                    help="the --impl list is the default set, not implementations the user named (set by `specformer "
                         "run`; a named implementation with no row checked fails the run)")
    group.addoption("--claims", dest="specformer_claims", action="append", metavar="GLOB",
                    help="only claims whose id matches GLOB (repeatable or comma-separated)")
    group.addoption("--property", dest="specformer_property", action="append", metavar="NAME",
                    help="only the property NAME (topic.function or function)")
    group.addoption("--device", dest="specformer_device", default="cpu", choices=["cpu", "cuda", "all"],
                    help="devices to run on; absent devices give skipped rows (default: cpu)")
    group.addoption("--dtype", dest="specformer_dtype", action="append", metavar="DTYPE",
                    help="only these dtypes (repeatable)")
    group.addoption("--topic", dest="specformer_topic", action="append", metavar="TOPIC",
                    help="only claims of this spec topic: 'masking' or 'attention/masking' (repeatable)")
    group.addoption("--seed", dest="specformer_seed", type=int, default=None, metavar="N",
                    help="seed of every row under a profile that is not derandomized (thorough); "
                         "default: a fresh seed per row, printed in its reproduction command")
    group.addoption("--deviations", dest="specformer_deviations", action="append", metavar="FILE",
                    help="TOML file of known deviations (repeatable); the shipped adapters' own file "
                         "applies to built-in implementations")
    group.addoption("--strict-deviations", dest="specformer_strict_deviations", action="store_true",
                    help="a listed deviation that no longer deviates (fixed) fails the run")
    group.addoption("--rows", dest="specformer_rows", default=None, metavar="FILE",
                    help="JSON list of the exact rows to run (written by `specformer run --failed`)")
    group.addoption("--shard", dest="specformer_shard", default=None, metavar="K/N",
                    help="run the K-th of N disjoint, balanced parts of the selected rows (merge the reports "
                         "with `specformer merge`)")
    group.addoption("--with-math", dest="specformer_with_math", action="store_true",
                    help="also run the properties that call no implementation (arithmetic on published numbers, "
                         "the documents' own code, library facts); they run anyway when no --impl is given")
    group.addoption("--profile", dest="specformer_profile", default="ci", choices=sorted(PROFILES),
                    help="Hypothesis profile (default: ci)")
    group.addoption("--report", dest="specformer_report", default=None, metavar="PATH",
                    help="write the JSON report to PATH")
    group.addoption("--threads", dest="specformer_threads", type=int, default=1, metavar="N",
                    help="threads of every pool (torch's, OpenMP, MKL, OpenBLAS, rayon), here and in each worker; "
                         "the suite's tensors are tiny, and thread start-up costs more than it saves (default: 1)")
    group.addoption("--row-timeout", dest="specformer_row_timeout", type=float, default=120.0, metavar="SECONDS",
                    help="CPU-time limit of one row (the checker's and the implementation's worker's, children "
                         "included), and of loading an implementation; a worker past it is killed and the row is an "
                         "error; a busy machine does not change it (default: 120)")
    group.addoption("--row-backstop", dest="specformer_row_backstop", type=float, default=None, metavar="SECONDS",
                    help="wall-clock limit of one row, for an implementation that sleeps, waits or is starved "
                         f"(default: {BACKSTOP_FACTOR:g} times --row-timeout)")
    group.addoption("--memory-limit", dest="specformer_memory_limit", type=int, default=DEFAULT_MEMORY_MIB,
                    metavar="MIB", help="memory limit of each implementation's worker in MiB: the memory it "
                                        "really uses (resident), not address space it only reserves; 0 for none "
                                        f"(default: {DEFAULT_MEMORY_MIB})")


def pytest_configure(config: pytest.Config) -> None:
    state = SuiteState(config)
    config.stash[_STATE] = state
    config.addinivalue_line("markers", "specformer: a property of the specformer suite")
    if not state.active:
        return
    problem = number_problem(config.getoption("specformer_row_timeout"), config.getoption("specformer_memory_limit"),
                             config.getoption("specformer_threads"), seed=config.getoption("specformer_seed"),
                             backstop=config.getoption("specformer_row_backstop"))
    if problem:
        raise pytest.UsageError(problem)
    # every thread pool of the fork server and its workers pinned before the server starts (the
    # command has set these already; a plain ``pytest --pyargs specformer.properties`` has not)
    state.environment = environment.apply(environment.thread_variables(config.getoption("specformer_threads")))
    if not state.is_xdist_worker:  # the processes every worker may not signal: under this one (runner.confine)
        os.environ.setdefault(confine.CONTROLLER_VARIABLE, str(os.getpid()))
    if state.is_xdist_worker:
        forkserver.shared().launch()  # its imports overlap this process's collection
    # read once, here, before any implementation loads (one could rewrite the files at import): a
    # malformed file is a usage error before anything runs
    state.deviations_for("")
    path = config.getoption("specformer_report")
    if path and not state.is_xdist_worker:
        impls = list(state.implementations)
        load_properties()
        if state.math_rows and any(not p.needs and state.selected(p) for p in REGISTRY.values()):
            impls.append(implementation_entry(MATH, MATH))
        extra: dict[str, Any] = {"seed": config.getoption("specformer_seed")}
        if config.getoption("specformer_shard"):
            try:
                k, n = sharding.parse_shard(config.getoption("specformer_shard"))
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
            extra["shard"] = {"index": k, "count": n, "rows_in_run": None}  # rows: known after collection
        state.writer = ReportWriter(Path(path), impls, config.getoption("specformer_profile"),
                                    environment_extra=extra)
        state.writer.start()
        FINAL_REPORTS[str(state.writer.path.resolve())] = None  # started; the final report replaces it
    if state.is_xdist_controller:
        _ = state.implementations  # loaded here once, then handed to the workers
        state.close()
        shutdown()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: hand the implementations the controller loaded to each worker."""
    state: SuiteState = node.config.stash[_STATE]
    node.workerinput[_IMPLS_KEY] = json.dumps(state.implementations if state.active else [])
    node.workerinput[_DEVIATIONS_KEY] = json.dumps(state.deviation_texts if state.active else [])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist: send all the rows of one group (:func:`scope_of`) to one job, which then loads its
    implementation once.

    Loading is most of a small implementation's cost (importing ``transformers``, training
    a tokenizer), and with xdist's ``load`` every job loads every implementation; on a GPU
    every job would also hold a device context per implementation, or restart its workers
    as rows of different implementations alternate. Groups go out largest first, a job taking
    the next when it runs low. With fewer groups than twice the jobs (a run of one or two
    implementations) rows are spread one by one, as before.
    """
    from specformer.runner import devices

    state: SuiteState = config.stash[_STATE]
    jobs = int(getattr(config.option, "numprocesses", 0) or 0)
    if not state.active:
        return None
    try:
        requested = devices.requested_devices(str(config.getoption("specformer_device")))
    except ValueError:
        requested = ["cpu"]
    groups = (len(state.implementations) + 1) * sum(
        1 if device == "cpu" else len(devices.DEVICE_DTYPES[device]) for device in requested)
    if groups < 2 * jobs:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByImplementation(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByImplementation(config, log)


def implementation_of(nodeid: str) -> str:
    """The implementation of a row's node id ``...::name[IMPL-DEVICE-DTYPE]`` (names may hold ``-``)."""
    return nodeid.rsplit("[", 1)[-1].rstrip("]").rsplit("-", 2)[0]


def scope_of(nodeid: str) -> str:
    """The group a row runs in: ``IMPL-cpu`` on the CPU, ``IMPL-DEVICE-DTYPE`` on an accelerator.

    A job runs a group's rows with one worker. CPU rows of both dtypes share it; an
    accelerator's rows are grouped per dtype too, so that a large implementation (the
    reference runs most properties) spreads over several jobs, each worker holding one
    device context.
    """
    impl, device, dtype = nodeid.rsplit("[", 1)[-1].rstrip("]").rsplit("-", 2)
    return f"{impl}-{device}" if device == "cpu" else f"{impl}-{device}-{dtype}"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist: the number of rows the run must produce (every worker collects the same items)."""
    state: SuiteState = node.config.stash[_STATE]
    state.expected_rows = len(ids)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".py" and file_path.parent.parent.resolve() == PROPERTIES_DIR \
            and f"{file_path.parent.name}.{file_path.stem}" in property_modules():
        return PropertyFile.from_parent(parent, path=file_path)
    return None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--shard K/N``: keep the K-th of N parts of the rows (:func:`specformer.runner.sharding.deal`)."""
    state: SuiteState = config.stash[_STATE]
    text = state.option("specformer_shard") if state.active else None
    if not text:
        return
    try:
        k, n = sharding.parse_shard(text)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    rows = [item for item in items if isinstance(item, PropertyItem)]
    keys = [sharding.row_key(item.prop.qualname, item.impl["name"] if item.impl else MATH, item.device, item.dtype)
            for item in rows]
    kept = {id(rows[i]) for i in sharding.deal(keys, k, n)}
    deselected = [item for item in rows if id(item) not in kept]
    items[:] = [item for item in items if not isinstance(item, PropertyItem) or id(item) in kept]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
    if state.writer is not None:  # this process collected every row (without xdist)
        state.writer.environment_extra["shard"] = {"index": k, "count": n, "rows_in_run": len(rows)}


def pytest_collection_finish(session: pytest.Session) -> None:
    state: SuiteState = session.config.stash[_STATE]
    if not state.is_xdist_controller:
        state.expected_rows = sum(isinstance(item, PropertyItem) for item in session.items)


class PropertyFile(pytest.File):
    """A topic module of ``specformer.properties``: one item per row it will produce."""

    def collect(self) -> Iterator[pytest.Item]:
        family, topic = self.path.parent.name, self.path.stem
        __import__(f"specformer.properties.{family}.{topic}")
        state: SuiteState = self.config.stash[_STATE]
        for prop in [p for p in REGISTRY.values() if p.module == topic and p.family == family]:
            if not state.selected(prop):
                continue
            for impl, device, dtype in state.rows_for(prop):
                name = impl["name"] if impl else MATH
                yield PropertyItem.from_parent(self, name=f"{prop.name}[{name}-{device}-{dtype}]",
                                               prop=prop, impl=impl, device=device, dtype=dtype)


@contextmanager
def bounded_shrinking(prop: Property, profile: str) -> Iterator[ShrinkBudget]:
    """Run a row with its shrinking bounded (:mod:`specformer.runner.shrinking`); the test is restored after."""
    test = prop.function
    inner = test.hypothesis.inner_test
    budget = ShrinkBudget(budget_for(profile, prop.max_examples))
    test.hypothesis.inner_test = budget.wrap(inner)
    try:
        yield budget
    finally:
        test.hypothesis.inner_test = inner


def describe_failure(row: RowResult, prop: Property, budget: ShrinkBudget) -> None:
    """Say so when the budget cut the shrinking; show the smallest failing example's arguments as Python."""
    if budget.cut and "(not shrunk:" in row.message:
        found = budget.failing_message or row.message.split(" (not shrunk:", 1)[0]
        if row.outcome == "error" and not found.startswith(row.implementation):
            found = row.message.split(" (not shrunk:", 1)[0]  # the runner's wording of the error
        row.message = f"{found} (shrinking stopped at the profile's budget of {budget.limit} examples)"
    if budget.failing is not None and not row.as_expected and row.outcome in ("fail", "error"):
        rendered = render_call(prop.name, budget.failing[1])
        if rendered is not None:
            row.counterexample = rendered
        if budget.failing_call is not None:
            op, args, kwargs = budget.failing_call
            row.call = render_implementation_call(op, args, kwargs)


class _OutputMark:
    """What an implementation's worker printed (stdout and stderr) during one row, shown for failing rows.

    The worker's output is drained into a tail by the supervisor; this notes how much had
    arrived when the row started, and takes what came after.
    """

    #: Lines of a row's output shown at most (its end).
    SHOWN = 20

    def __init__(self, pool: WorkerPool, spec: str) -> None:
        self.pool, self.spec = pool, spec
        self.output = getattr(getattr(pool, "_workers", {}).get(spec), "_output", None)
        self.start = getattr(self.output, "total", 0)

    def position(self) -> int:
        """How many bytes the worker has printed so far."""
        return int(getattr(self.output, "total", 0))

    def text(self, span: tuple[int, int] | None = None) -> str:
        """The output between the byte positions ``span`` (default: since the row's start), as text."""
        output = self.output
        if output is None or not hasattr(output, "lock"):
            return ""
        time.sleep(0.02)  # the drain thread may lag the answer by a moment
        with output.lock:
            total, tail = output.total, output.tail
        start, end = span if span is not None else (self.start, total)
        first = len(tail) - (total - start)  # offsets into the kept tail
        last = len(tail) - (total - end)
        data = tail[max(first, 0):max(last, 0)]
        return data.decode("utf-8", "replace").rstrip()

    def append_to(self, message: str, span: tuple[int, int] | None = None) -> str:
        """``message`` and what the implementation printed during the failing example (``span``), or the row."""
        text = self.text(span)
        if not text:
            return message
        lines = text.splitlines()
        cut = [f"| ... ({len(lines) - self.SHOWN} lines before)"] if len(lines) > self.SHOWN else []
        what = "the failing example" if span is not None else "this row"
        return message + f"\nthe implementation printed (stdout and stderr) during {what}:\n" + \
            "\n".join(cut + [f"| {line}" for line in lines[-self.SHOWN:]])


class PropertyFailure(Exception):
    """A row that did not end as expected."""

    def __init__(self, row: RowResult) -> None:
        super().__init__(row.message)
        self.row = row


class PropertyItem(pytest.Item):
    """One property against one implementation, device and dtype."""

    def __init__(self, *, prop: Property, impl: dict[str, Any] | None, device: str, dtype: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prop, self.impl, self.device, self.dtype = prop, impl, device, dtype
        self.add_marker("specformer")

    def runtest(self) -> None:
        interrupt.check()
        state: SuiteState = self.config.stash[_STATE]
        state.limit_threads()
        impl = self.impl
        if impl:  # start (or restart) the worker before the row's clock starts
            state.pool.load(impl["spec"], state.option("specformer_row_timeout"),
                            state.option("specformer_row_backstop"))
        spec = impl["spec"] if impl else MATH
        chosen = row_selected(state.row_selectors, self.prop.qualname, spec, self.device, self.dtype) or {}
        seed = state.option("specformer_seed")
        seed = seed if seed is not None else chosen.get("seed")
        entries = state.deviations_for(spec)
        listed = any(entry.matches({"claim": self.prop.claim, "property": self.prop.qualname,
                                    "implementation": impl["name"] if impl else MATH, "device": self.device,
                                    "dtype": self.dtype}, spec) for entry in entries)
        printed = _OutputMark(state.pool, spec) if impl else None
        try:
            with bounded_shrinking(self.prop, state.option("specformer_profile")) as budget:
                if printed is not None:
                    budget.mark = printed.position
                row = run_property(
                    self.prop, WorkerBackend(state.pool, impl["spec"]) if impl else None,
                    impl["name"] if impl else MATH, spec, self.device, self.dtype,
                    state.option("specformer_profile"), state.option("specformer_row_timeout"),
                    frozenset(impl["operations"]) if impl else None, seed=seed, shrink=not listed,
                    capabilities=Capabilities.from_plain(impl.get("capabilities")) if impl else None,
                    backstop_s=state.option("specformer_row_backstop"))
            describe_failure(row, self.prop, budget)
            if printed is not None and not row.as_expected:
                row.message = printed.append_to(row.message, budget.failing_mark)
            row = deviations.apply(row, entries, spec,
                                   strict=state.option("specformer_strict_deviations"))
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - never lose a row
            row = RowResult(self.prop.claim, self.prop.qualname, impl["name"] if impl else MATH, self.device,
                            self.dtype, self.prop.expect, "error", family=self.prop.family,
                            message=f"the harness failed on this row: {type(exc).__name__}: {exc}")
        self.user_properties.append((_ROW_KEY, json.dumps(row.to_json())))
        if row.outcome in ("skipped", "not-applicable"):
            pytest.skip(f"{row.outcome}: {row.message}")
        if not row.as_expected:
            raise PropertyFailure(row)
        if row.outcome == "known-deviation":
            pytest.xfail(f"known deviation: {row.deviation_reason}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, PropertyFailure):
            return "\n".join(failure_block(excinfo.value.row.to_json()))
        if isinstance(excinfo.value, pytest.xfail.Exception):  # a known deviation: its reason, not a traceback
            return str(excinfo.value)  # (pytest formats one from the sources: 0.16 s a row, 13 s a suite)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.prop.claim} :: {self.name}"


def _row_of(report: pytest.TestReport) -> dict[str, Any] | None:
    if report.when != "call":
        return None
    for key, value in report.user_properties:
        if key == _ROW_KEY:
            return json.loads(value)
    return None


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    row = _row_of(report)
    if row is not None and row["outcome"] == "refuted":
        return "refuted", "r", "REFUTED"
    if row is not None and row["outcome"] == "inconclusive":
        return "inconclusive", "?", "INCONCLUSIVE"
    if row is not None and row["outcome"] == "known-deviation":
        return "known-deviation", "x", "KNOWN-DEVIATION"
    if row is not None and row["outcome"] == "fixed" and report.passed:
        return "fixed", "X", "FIXED"
    if row is not None and row["outcome"] == "error" and report.failed:
        return "failed", "E", "ERROR"  # counted as a failure, lettered as the legend says
    return None


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Every finished row reaches the controlling process here (from xdist workers too)."""
    row = _row_of(report)
    if row is None:
        return
    state: SuiteState = _CONFIG_STATE[0]
    if state.is_xdist_worker:
        return
    state.rows.append(row)
    if state.writer is not None:
        state.writer.add(row)


_CONFIG_STATE: list[SuiteState] = []
#: The final report of each report path this process wrote, as written: ``specformer run``
#: writes it again, last, after every process the run started is gone.
FINAL_REPORTS: dict[str, dict[str, Any] | None] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG_STATE[:] = [session.config.stash[_STATE]]


def complete(state: SuiteState, exitstatus: int) -> bool:
    """Whether the run ran every collected row and was not interrupted."""
    interrupted = (exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
                   or interrupt.requested() is not None)
    return not interrupted and state.expected_rows is not None and len(state.rows) == state.expected_rows


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state: SuiteState = session.config.stash[_STATE]
    state.restore_threads()
    state.close()
    if state.writer is not None:
        FINAL_REPORTS[str(state.writer.path.resolve())] = state.writer.finish(complete(state, exitstatus))


def pytest_unconfigure(config: pytest.Config) -> None:
    state: SuiteState = config.stash[_STATE]
    state.close()
    shutdown()
    if state.environment is not None:
        environment.apply(state.environment)
        state.environment = None


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state: SuiteState = config.stash[_STATE]
    if state.is_xdist_worker or (not state.rows and state._impls is None):
        return
    tr = terminalreporter
    tr.section("specformer summary")
    impls = state.implementations if state._impls is not None else []
    # computed here from the registry, not at collection: xdist's controller collects nothing
    selected = [p for p in load_properties().values() if state.selected(p)]
    families = {str(r.get("family")) for r in state.rows if r.get("family")} | {p.family for p in selected}
    left_out = 0 if state.math_rows else sum(not p.needs for p in selected)
    for line, markup in summary_lines(state.rows, impls, complete(state, exitstatus), state.expected_rows,
                                      families=families or None, math_left_out=left_out,
                                      family_operations={name: [op.method for op in family.operations]
                                                         for name, family in FAMILIES.items()},
                                      report=state.option("specformer_report"),
                                      failures_first=bool(state.option("specformer_impl")),
                                      sharded=bool(state.option("specformer_shard"))):
        tr.write_line(line, **markup)
    if state.option("specformer_strict_deviations"):  # the failures the entries hid, shown
        for line in deviations.hidden_lines(state.rows):
            tr.write_line(line, yellow=True)
    wall = time.perf_counter() - state.start
    tr.write_line(f"time: {wall:.1f} s")
    jobs = int(getattr(config.option, "numprocesses", None) or 1) if state.is_xdist_controller else 1
    line = efficiency_line(state.rows, jobs, wall)
    if line:
        tr.write_line(line)
    path = state.option("specformer_report")
    if path:
        tr.write_line(f"report: {path}")
