"""The pytest plugin: collects properties as test items and writes the report.

Registered through the ``pytest11`` entry point, so ``pytest --pyargs
specformer.properties --impl torch-sdpa`` works as ``specformer run --impl torch-sdpa``
does. Files of ``specformer.properties`` become one item per property × implementation
× device × dtype; each item runs through :func:`specformer.runner.run_property`, so a
misbehaving implementation produces a row, never a crashed session. Outside the
properties folder the plugin does nothing but add its options.
"""

from __future__ import annotations

import fnmatch
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import pytest
import torch

import specformer.properties
from specformer import devices
from specformer.adapters import DEFAULT_IMPLEMENTATIONS
from specformer.loading import ImplementationLoadError, LoadedImplementation, load_implementation
from specformer.profiles import PROFILES
from specformer.property import REGISTRY, Property, property_modules
from specformer.report import build_report, write_report
from specformer.runner import MATH, RowResult, run_property

PROPERTIES_DIR = Path(specformer.properties.__file__).parent.resolve()
_STATE = pytest.StashKey["SuiteState"]()


class SuiteState:
    """What one session collects and runs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rows: list[RowResult] = []
        self.collected = 0
        self.start = time.perf_counter()
        self._impls: list[LoadedImplementation] | None = None
        self._threads: int | None = None

    def limit_threads(self) -> None:
        """Set torch's intra-op threads for the run, once (restored at the end of the session)."""
        if self._threads is None:
            self._threads = torch.get_num_threads()
            torch.set_num_threads(self.option("specformer_threads"))

    def restore_threads(self) -> None:
        """Give torch back the thread count it had before the run."""
        if self._threads is not None:
            torch.set_num_threads(self._threads)

    def option(self, name: str) -> Any:
        """A command-line option of the plugin."""
        return self.config.getoption(name)

    @property
    def implementations(self) -> list[LoadedImplementation]:
        """The implementations named by ``--impl`` (default: the shipped three)."""
        if self._impls is None:
            specs = self.option("specformer_impl") or list(DEFAULT_IMPLEMENTATIONS)
            try:
                self._impls = [load_implementation(s) for s in specs]
            except ImplementationLoadError as exc:
                raise pytest.UsageError(str(exc)) from None
        return self._impls

    def selected(self, prop: Property) -> bool:
        """Whether ``--claims`` and ``--property`` select ``prop``."""
        globs = [g for arg in self.option("specformer_claims") or [] for g in arg.split(",") if g]
        names = self.option("specformer_property") or []
        return ((not globs or any(fnmatch.fnmatchcase(prop.claim, g) for g in globs))
                and (not names or prop.qualname in names or prop.name in names))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("specformer", "specformer conformance suite")
    group.addoption("--impl", dest="specformer_impl", action="append", metavar="SPEC",
                    help="implementation to check: reference, torch-sdpa, torch-mha, module:attr or file.py[:attr] "
                         "(repeatable; default: the three shipped ones)")
    group.addoption("--claims", dest="specformer_claims", action="append", metavar="GLOB",
                    help="only claims whose id matches GLOB (repeatable or comma-separated)")
    group.addoption("--property", dest="specformer_property", action="append", metavar="NAME",
                    help="only the property NAME (topic.function or function)")
    group.addoption("--device", dest="specformer_device", default="cpu", choices=["cpu", "cuda", "all"],
                    help="devices to run on; absent devices give skipped rows (default: cpu)")
    group.addoption("--dtype", dest="specformer_dtype", action="append", metavar="DTYPE",
                    help="only these dtypes (repeatable)")
    group.addoption("--profile", dest="specformer_profile", default="ci", choices=sorted(PROFILES),
                    help="Hypothesis profile (default: ci)")
    group.addoption("--report", dest="specformer_report", default=None, metavar="PATH",
                    help="write the JSON report to PATH")
    group.addoption("--threads", dest="specformer_threads", type=int, default=1, metavar="N",
                    help="torch intra-op threads while properties run; the suite's tensors are tiny, and "
                         "thread start-up costs more than it saves (default: 1)")
    group.addoption("--row-timeout", dest="specformer_row_timeout", type=float, default=120.0, metavar="SECONDS",
                    help="time limit of one row; a hanging implementation is reported as an error (default: 120)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("specformer_report") and getattr(config.option, "numprocesses", None):
        raise pytest.UsageError("--report needs one process: the report is gathered in it; drop -n")
    config.stash[_STATE] = SuiteState(config)
    config.addinivalue_line("markers", "specformer: a property of the specformer suite")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".py" and file_path.parent.parent.resolve() == PROPERTIES_DIR \
            and f"{file_path.parent.name}.{file_path.stem}" in property_modules():
        return PropertyFile.from_parent(parent, path=file_path)
    return None


class PropertyFile(pytest.File):
    """A topic module of ``specformer.properties``: one item per row it will produce."""

    def collect(self) -> Iterator[pytest.Item]:
        family, topic = self.path.parent.name, self.path.stem
        __import__(f"specformer.properties.{family}.{topic}")
        state: SuiteState = self.config.stash[_STATE]
        wanted_dtypes = state.option("specformer_dtype")
        for prop in [p for p in REGISTRY.values() if p.module == topic and p.family == family]:
            if not state.selected(prop):
                continue
            impls: list[LoadedImplementation | None] = list(state.implementations) if prop.needs else [None]
            for impl in impls:
                for device in devices.requested_devices(state.option("specformer_device")):
                    dtypes = devices.DEVICE_DTYPES[device]
                    if not prop.needs:  # mathematics: once, in its own dtype
                        dtypes = (prop.dtypes or ("float64",))[:1] if device == "cpu" else ()
                    elif prop.dtypes:
                        dtypes = tuple(d for d in dtypes if d in prop.dtypes)
                    for dtype in dtypes:
                        if wanted_dtypes and dtype not in wanted_dtypes:
                            continue
                        name = impl.name if impl else MATH
                        state.collected += 1
                        yield PropertyItem.from_parent(self, name=f"{prop.name}[{name}-{device}-{dtype}]",
                                                       prop=prop, impl=impl, device=device, dtype=dtype)


class PropertyFailure(Exception):
    """A row that did not end as expected."""

    def __init__(self, row: RowResult) -> None:
        super().__init__(row.message)
        self.row = row


class PropertyItem(pytest.Item):
    """One property against one implementation, device and dtype."""

    def __init__(self, *, prop: Property, impl: LoadedImplementation | None, device: str, dtype: str,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prop, self.impl, self.device, self.dtype = prop, impl, device, dtype
        self.add_marker("specformer")

    def runtest(self) -> None:
        state: SuiteState = self.config.stash[_STATE]
        state.limit_threads()
        impl = self.impl
        row = run_property(self.prop, impl.obj if impl else None, impl.name if impl else MATH,
                           impl.spec if impl else MATH, self.device, self.dtype,
                           state.option("specformer_profile"), state.option("specformer_row_timeout"))
        state.rows.append(row)
        self.user_properties.append(("specformer_outcome", row.outcome))
        if row.outcome in ("skipped", "not-applicable"):
            pytest.skip(f"{row.outcome}: {row.message}")
        if not row.as_expected:
            raise PropertyFailure(row)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, PropertyFailure):
            row = excinfo.value.row
            lines = [f"{row.outcome.upper()}: claim {row.claim} — {row.property} "
                     f"[{row.implementation}, {row.device}, {row.dtype}]", f"  {row.message}"]
            if row.counterexample:
                lines += ["", "  counterexample:", *("    " + ln for ln in row.counterexample.splitlines())]
            lines += ["", f"  reproduce: {row.reproduce}"]
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.prop.claim} :: {self.name}"


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    outcome = dict(report.user_properties).get("specformer_outcome")
    if report.when == "call" and outcome == "refuted":
        return "refuted", "r", "REFUTED"
    return None


def _implementations_header(state: SuiteState) -> list[dict[str, Any]]:
    impls = [{"name": i.name, "spec": i.spec, "operations": i.operations} for i in state.implementations]
    if any(r.implementation == MATH for r in state.rows):
        impls.append({"name": MATH, "spec": MATH, "operations": []})
    return impls


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state: SuiteState = session.config.stash[_STATE]
    state.restore_threads()
    path = state.option("specformer_report")
    if path and state.collected:
        report = build_report(state.rows, _implementations_header(state), state.option("specformer_profile"),
                              time.perf_counter() - state.start, complete=len(state.rows) == state.collected)
        write_report(report, Path(path))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state: SuiteState = config.stash[_STATE]
    if not state.rows:
        return
    tr = terminalreporter
    tr.section("specformer summary")
    by_claim: dict[str, list[RowResult]] = {}
    for row in state.rows:
        by_claim.setdefault(row.claim, []).append(row)
    for claim, rows in by_claim.items():
        bad = [r for r in rows if not r.as_expected]
        counts = ", ".join(f"{n} {o}" for o, n in sorted(Counter(r.outcome for r in rows).items()))
        tr.write_line(f"{'FAIL' if bad else ' ok '}  {claim:48s} {counts}", red=bool(bad))
    totals = ", ".join(f"{n} {o}" for o, n in sorted(Counter(r.outcome for r in state.rows).items()))
    ok = all(r.as_expected for r in state.rows)
    tr.write_line("")
    tr.write_line(f"{len(by_claim)} claims, {len(state.rows)} rows: {totals} — "
                  f"{'every claim ended as expected' if ok else 'SOME CLAIMS DID NOT END AS EXPECTED'}",
                  green=ok, red=not ok, bold=True)
    path = state.option("specformer_report")
    if path:
        tr.write_line(f"report: {path}")

