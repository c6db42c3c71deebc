"""Which rows a run selects, and what to say when a selection matches nothing.

* :func:`topic_selects`: ``--topic`` takes a spec topic, either its plain name
  (``masking``, the part of a claim id before the dot) or ``family/topic``
  (``attention/masking``, the spec file ``spec/attention/masking.md``);
* :func:`selection_problems`: one message per ``--claims``, ``--property``, ``--topic``
  or ``--dtype`` value that matches nothing, listing what exists (the closest ids for a
  glob, the topics, the dtypes of the requested devices);
* :func:`failed_rows`: the rows of a report that did not end as expected, as the
  selectors ``specformer run --failed`` hands to the plugin (``--rows FILE``), and
  :func:`row_selected` to match them.

Nothing here imports torch or runs a property; the plugin and the command line use it.
"""

from __future__ import annotations

import difflib
import fnmatch
import json
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

REPORT_SCHEMA_NAME = "specformer-report"
READABLE_VERSIONS = (1, 2)
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
    """A specformer report from ``path`` (:class:`SelectionError` when it is none)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SelectionError(f"--failed {str(path)!r}: cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise SelectionError(f"--failed {str(path)!r}: not a specformer report (not JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("schema") != REPORT_SCHEMA_NAME \
            or data.get("schema_version") not in READABLE_VERSIONS or not isinstance(data.get("rows"), list):
        raise SelectionError(f"--failed {str(path)!r}: not a specformer report (needs \"schema\": "
                             f"\"{REPORT_SCHEMA_NAME}\", a schema_version of {READABLE_VERSIONS} and rows)")
    return data


def failed_rows(report: Mapping[str, Any], source: str = "the report") -> list[dict[str, Any]]:
    """Selectors ``{property, spec, device, dtype, seed}`` of the rows that did not end as expected."""
    specs = {str(i.get("name")): str(i.get("spec") or i.get("name")) for i in report.get("implementations") or []
             if isinstance(i, dict)}
    selectors = []
    for row in report["rows"]:
        if not isinstance(row, dict) or not isinstance(row.get("property"), str):
            raise SelectionError(f"{source}: a row without a property: {str(row)[:80]}")
        expected = row.get("as_expected", row.get("outcome") in _EXPECTED)
        if expected is True:
            continue
        name = str(row.get("implementation"))
        selectors.append({"property": row["property"], "spec": specs.get(name, name), "device": row.get("device"),
                          "dtype": row.get("dtype"), "seed": row.get("seed")})
    return selectors


def row_selected(selectors: Sequence[Mapping[str, Any]] | None, qualname: str, spec: str, device: str,
                 dtype: str) -> Mapping[str, Any] | None:
    """The selector that names this row; with no selectors, an empty one (every row is selected)."""
    if selectors is None:
        return {}
    return next((s for s in selectors if (s["property"], s["spec"], s["device"], s["dtype"])
                 == (qualname, spec, device, dtype)), None)
