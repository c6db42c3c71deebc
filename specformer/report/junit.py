"""JUnit XML from a specformer report, for CI systems (``specformer run --junit PATH``).

One ``<testcase>`` per row: ``classname`` is the claim, ``name`` is
``property [implementation/device/dtype]``. A row not as expected is a ``<failure>``
(``error`` rows an ``<error>``) whose message is the row's message and whose text holds
the counterexample, the seed and the reproduction command. ``not-applicable`` and
``skipped`` rows are ``<skipped>``, and so are ``known-deviation`` rows, with the
deviation's reason. A report of a run that did not complete is marked: the suite's
``state`` property says so and one more test case, ``specformer :: run incomplete``, is
an error.

Written with the standard library (:mod:`xml.etree.ElementTree`); the file is replaced
atomically. This module reads a report; it runs nothing.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Mapping

from specformer.report.summary import readable_counterexample, row_label

_SKIPPED = ("not-applicable", "skipped")
# XML 1.0 forbids most control characters; messages from implementations may hold them.
_FORBIDDEN = {c: None for c in range(32) if c not in (9, 10, 13)}


def _clean(value: Any) -> str:
    return str(value if value is not None else "").translate(_FORBIDDEN)


def _details(row: Mapping[str, Any]) -> str:
    parts = [_clean(row.get("message"))]
    example = readable_counterexample(row.get("counterexample"))
    if example:
        parts += ["", "counterexample:", _clean(example)]
    if row.get("seed") is not None:
        parts.append(f"seed: {row['seed']}")
    if row.get("reproduce"):
        parts.append(f"reproduce: {_clean(row['reproduce'])}")
    return "\n".join(parts).strip()


def _testcase(row: Mapping[str, Any]) -> tuple[ET.Element, str | None]:
    case = ET.Element("testcase", classname=_clean(row.get("claim")),
                      name=_clean(f"{row.get('property')} [{row_label(row)}]"),
                      time=f"{float(row.get('duration_s') or 0):.3f}")
    outcome = str(row.get("outcome"))
    kind = None
    if outcome == "known-deviation":
        kind = "skipped"
        ET.SubElement(case, "skipped", message=_clean(f"known deviation: {row.get('deviation_reason')}")).text = \
            _clean(f"original outcome: {row.get('original_outcome')}\n{_details(row)}")
    elif outcome in _SKIPPED:
        kind = "skipped"
        ET.SubElement(case, "skipped", message=_clean(f"{outcome}: {row.get('message')}"))
    elif not row.get("as_expected", True):
        kind = "error" if outcome == "error" else "failure"
        ET.SubElement(case, kind, message=_clean(row.get("message") or outcome), type=outcome).text = _details(row)
    elif outcome == "fixed":
        ET.SubElement(case, "system-out").text = _clean(
            f"fixed: listed as a known deviation ({row.get('deviation_reason')}), it now ends "
            f"{row.get('original_outcome')}; remove the entry")
    return case, kind


def junit_tree(report: Mapping[str, Any] | None) -> ET.ElementTree:
    """The JUnit document of ``report`` (``None``: a run that left no readable report)."""
    report = report or {}
    rows = [r for r in report.get("rows") or [] if isinstance(r, dict)]
    summary = report.get("summary") or {}
    state = str(summary.get("state") or "missing")
    suites = ET.Element("testsuites", name="specformer")
    suite = ET.SubElement(suites, "testsuite", name="specformer",
                          timestamp=_clean((report.get("environment") or {}).get("created", "")),
                          time=f"{float(summary.get('duration_s') or 0):.3f}")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="state", value=state)
    ET.SubElement(props, "property", name="profile", value=_clean((report.get("environment") or {}).get("profile")))
    counts = {"failure": 0, "error": 0, "skipped": 0}
    for row in rows:
        case, kind = _testcase(row)
        suite.append(case)
        if kind:
            counts[kind] += 1
    total = len(rows)
    if state != "complete":
        case = ET.SubElement(suite, "testcase", classname="specformer", name="run incomplete", time="0")
        ET.SubElement(case, "error", message=f"the run did not complete (state: {state})", type="incomplete").text = \
            f"{len(rows)} rows ran before the run ended; the rows of this file are not the whole run"
        counts["error"] += 1
        total += 1
    for key, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attribute, str(counts[key]))
    suite.set("tests", str(total))
    for attribute in ("tests", "failures", "errors", "skipped", "time"):
        suites.set(attribute, suite.get(attribute, "0"))
    return ET.ElementTree(suites)


def write_junit(report: Mapping[str, Any] | None, path: Path) -> None:
    """Write the JUnit XML of ``report`` to ``path`` (atomically)."""
    tree = junit_tree(report)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tree.write(tmp, encoding="utf-8", xml_declaration=True)
        tmp.replace(path)
    finally:
        if tmp.exists():
            tmp.unlink()
