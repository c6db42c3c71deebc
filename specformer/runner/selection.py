"""Which rows a run selects, and what to say when a selection matches nothing.

* :func:`topic_selects`: ``--topic`` takes a spec topic, either its plain name
  (``masking``, the part of a claim id before the dot) or ``family/topic``
  (``attention/masking``, the spec file ``spec/attention/masking.md``);
* :func:`selection_problems`: one message per ``--claims``, ``--property``, ``--topic``
  or ``--dtype`` value that matches nothing, listing what exists (the closest ids for a
  glob, the topics, the dtypes of the requested devices);
* :func:`failed_rows`: the rows of a report that did not end as expected, as the
  selectors ``specformer run --failed`` hands to the plugin (``--rows FILE``),
  :func:`confirmed_rows` to run them only on built-in implementations and those the
  user named (never on a file or module because the report names it), and
  :func:`row_selected` to match them.

Nothing here imports torch or runs a property; the plugin and the command line use it.
"""

from __future__ import annotations

import difflib
import fnmatch
import shlex
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

#: The devices a row of a report may name (the keys of :data:`specformer.runner.devices.DEVICE_DTYPES`, whose
#: module imports torch).
DEVICES = ("cpu", "cuda")
_EXPECTED = frozenset({"pass", "refuted", "not-applicable", "skipped", "known-deviation", "fixed"})


class SelectionError(ValueError):
    """A selection or a ``--failed`` report that cannot be used (a usage error)."""


def claim_globs(values: Iterable[str] | None) -> list[str]:
    """``--claims`` values, each repeatable or comma-separated."""
    return [g.strip() for arg in values or [] for g in arg.split(",") if g.strip()]


def topic_selects(claim_id: str, family: str, topics: Sequence[str] | None) -> bool:
    """Whether ``--topic`` values select the claim ``claim_id`` of ``family`` (none given: all)."""
    if not topics:
        return True
    topic = claim_id.split(".", 1)[0]
    return any(t in (topic, f"{family}/{topic}") for t in topics)


def _closest(value: str, names: Sequence[str], limit: int = 5) -> list[str]:
    stem = value.replace("*", "").replace("?", "").strip(".")
    close = difflib.get_close_matches(stem, names, n=limit, cutoff=0.5)
    return close or [n for n in names if stem and stem.split(".")[0] in n][:limit]


def _listing(names: Iterable[str]) -> str:
    return ", ".join(sorted(set(names)))


def selection_problems(claims: Mapping[str, str], properties: Mapping[str, tuple[str, str]],
                       claims_args: Iterable[str] | None, property_args: Iterable[str] | None,
                       topic_args: Iterable[str] | None, dtype_args: Iterable[str] | None,
                       device_dtypes: Mapping[str, Sequence[str]]) -> list[str]:
    """What matches nothing (module doc).

    ``claims`` maps claim id to family; ``properties`` maps qualname to ``(claim, name)``;
    ``device_dtypes`` are the requested devices and the dtypes each runs.
    """
    problems = []
    ids = sorted(claims)
    topics = sorted({i.split(".", 1)[0] for i in ids} | {f"{claims[i]}/{i.split('.', 1)[0]}" for i in ids})
    for glob in claim_globs(claims_args):
        if not any(fnmatch.fnmatchcase(i, glob) for i in ids):
            close = difflib.get_close_matches(glob, [f"{t}.*" for t in topics if "/" not in t] + ids, n=5,
                                              cutoff=0.5)
            hint = f"closest: {', '.join(close)}" if close else f"topics: {_listing(t for t in topics if '/' not in t)}"
            problems.append(f"--claims {glob!r} matches no claim ({hint}; `specformer claims` lists them all)")
    names = {n for q, (_, n) in properties.items()} | set(properties)
    for name in property_args or []:
        if name not in names:
            close = _closest(name, sorted(properties))
            problems.append(f"--property {name!r} names no property (topic.function)"
                            + (f"; closest: {', '.join(close)}" if close else "")
                            + "; `specformer claims --json` lists them")
    for topic in topic_args or []:
        if topic not in topics:
            problems.append(f"--topic {topic!r} is not a topic; topics: {_listing(topics)}")
    runnable = {d for dtypes in device_dtypes.values() for d in dtypes}
    for dtype in dtype_args or []:
        if dtype not in runnable:
            where = ", ".join(f"{dev}: {', '.join(ds)}" for dev, ds in device_dtypes.items())
            others = [dev for dev in ("cpu", "cuda") if dev not in device_dtypes]
            problems.append(f"--dtype {dtype!r} does not run on the requested devices ({where})"
                            + (f"; try --device {others[0]} or all" if others else ""))
    return problems


def read_report(path: str | Path) -> dict[str, Any]:
    """A specformer report from ``path``, bounded in size and nesting (:func:`specformer.report.reading.read_report`;
    :class:`SelectionError` when it is none)."""
    from specformer.report.reading import ReportFileError, read_report as read

    try:
        return read(path)
    except ReportFileError as exc:
        raise SelectionError(f"--failed {exc}") from None


def failed_rows(report: Mapping[str, Any], source: str = "the report") -> list[dict[str, Any]]:
    """Selectors ``{property, implementation, spec, device, dtype, seed}`` of the rows that did not end as expected.

    ``spec`` is what the report says ran the row: data, never loaded as it is
    (:func:`confirmed_rows` decides what runs it).
    """
    specs = {str(i.get("name")): str(i.get("spec") or i.get("name")) for i in report.get("implementations") or []
             if isinstance(i, dict)}
    selectors = []
    for row in report["rows"]:
        if not isinstance(row, dict) or not isinstance(row.get("property"), str):
            raise SelectionError(f"{source}: a row without a property: {str(row)[:80]}")
        expected = row.get("as_expected", row.get("outcome") in _EXPECTED)
        if expected is True:
            continue
        seed = row.get("seed")
        if row.get("device") not in DEVICES or not isinstance(row.get("dtype"), str) \
                or not (seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0)):
            raise SelectionError(f"{source}: row {row['property'][:80]!r} names no device of {', '.join(DEVICES)}, "
                                 "no dtype or an unusable seed")
        name = str(row.get("implementation"))
        selectors.append({"property": row["property"], "implementation": name, "spec": specs.get(name, name),
                          "device": row.get("device"), "dtype": row.get("dtype"), "seed": seed})
    return selectors


def _same_file(a: str, b: str) -> bool:
    """Whether two ``--impl`` values name one file (never imported here)."""
    from specformer.runner.loading import file_target

    first, second = file_target(a), file_target(b)
    if first is None or second is None:
        return False
    try:
        return first.resolve() == second.resolve() or first.samefile(second)
    except OSError:
        return False


def confirmed_rows(selectors: Sequence[Mapping[str, Any]], impls: Sequence[str] | None,
                   source: str = "the report") -> list[dict[str, Any]]:
    """The selectors of :func:`failed_rows` with each row's ``spec`` set to what reruns it.

    A report is data: it never decides what is imported. A row's implementation is the
    built-in one the report names (or ``math``, the rows that call none), or one the user
    gave with ``--impl`` (``impls``): the report's own value, the same file under another
    path, or the one implementation that is not built in, when the report's failing rows
    name one file or module and the user gave one. Rows of a file or module that no
    ``--impl`` confirms are left out when ``impls`` are given (they narrow the rerun, as they
    do for built-in rows), and are a :class:`SelectionError` naming what to pass when none
    are.
    """
    from specformer.adapters import BUILTIN

    def builtin(spec: str) -> bool:
        return spec == "math" or spec in BUILTIN

    own = list(dict.fromkeys(str(s["spec"]) for s in selectors if not builtin(str(s["spec"]))))
    given = [spec for spec in impls or [] if not builtin(spec)]
    confirmed = []
    for selector in selectors:
        spec = str(selector["spec"])
        if not builtin(spec):
            if not impls:
                shown = shlex.quote(spec[:200]) if spec.isprintable() else "PATH"
                raise SelectionError(
                    f"{source}: rows of {str(selector.get('implementation'))[:80]!r} ran on {spec[:200]!r}, a file or "
                    f"module the report names, and a report's implementation is never imported: pass "
                    f"--impl {shown} (or where that implementation is now) to rerun them on it")
            match = next((g for g in given if g == spec or _same_file(g, spec)), None)
            if match is None and len(given) == 1 and len(own) == 1:
                match = given[0]
            if match is None:
                continue
            spec = match
        confirmed.append({**selector, "spec": spec})
    return confirmed


def row_selected(selectors: Sequence[Mapping[str, Any]] | None, qualname: str, spec: str, device: str,
                 dtype: str) -> Mapping[str, Any] | None:
    """The selector that names this row; with no selectors, an empty one (every row is selected)."""
    if selectors is None:
        return {}
    return next((s for s in selectors if (s["property"], s["spec"], s["device"], s["dtype"])
                 == (qualname, spec, device, dtype)), None)
