"""Runs split across machines: ``specformer run --shard K/N`` and ``specformer merge``.

Sharding. Every process of a run collects the same rows; the rows are ordered by a
stable hash of their key (property, implementation *name*, device, dtype: never a path
that differs between machines) and dealt round-robin, so shard ``K`` of ``N`` runs rows
``K-1, K-1+N, ...`` of that order: the shards are disjoint, together they are the whole
run, and their sizes differ by at most one. Every shard must select the same rows (the
same options, the same libraries installed); its report records its shard and how many
rows the whole run has, and :func:`merge` checks both.

Merging. :func:`merge` combines shard reports (or device legs of one run) into one report
whose rows are those of a single run: it refuses reports that are incomplete, that were
made by different versions, profiles or seeds, that disagree about an implementation,
that hold the same row twice, or a sharded set with a shard missing. Rows are ordered by
their key, so the merged report does not depend on the order of its inputs.

This module runs nothing; :mod:`specformer.runner.plugin` deals the rows and
:mod:`specformer.runner.cli` reads and writes the files.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Sequence

#: Environment fields every merged report must agree on.
SAME_ENVIRONMENT = ("specformer", "python", "torch", "hypothesis", "numpy", "profile", "seed", "commit")


class MergeError(ValueError):
    """Reports that cannot be merged (the message says which and why)."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with ``1 <= K <= N``; :class:`ValueError` with a message otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise ValueError(f"--shard {text!r}: give K/N, the K-th of N shards (e.g. 1/4)")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"--shard {text!r}: K must be between 1 and N (got K={k}, N={n})")
    return k, n


def row_key(prop: str, implementation: str, device: str, dtype: str) -> str:
    """A row's identity across machines."""
    return f"{prop}|{implementation}|{device}|{dtype}"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def deal(keys: Sequence[str], k: int, n: int) -> list[int]:
    """The indexes (into ``keys``) of the rows of shard ``k`` of ``n``, in their original order."""
    order = sorted(range(len(keys)), key=lambda i: (_digest(keys[i]), keys[i]))
    mine = {index for position, index in enumerate(order) if position % n == k - 1}
    return [i for i in range(len(keys)) if i in mine]


def _key_of(row: dict[str, Any]) -> tuple[str, str, str, str]:
    return (str(row["property"]), str(row["implementation"]), str(row["device"]), str(row["dtype"]))


def merge(reports: Sequence[tuple[str, dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                   dict[str, Any]]:
    """The rows, implementations and environment of the reports ``(source, report)`` merged (module doc)."""
    if not reports:
        raise MergeError("nothing to merge")
    for source, report in reports:
        if not isinstance(report, dict) or report.get("schema") != "specformer-report":
            raise MergeError(f"{source}: not a specformer report")
        summary = report.get("summary") or {}
        if summary.get("state") != "complete":
            raise MergeError(f"{source}: the run is {summary.get('state', 'of unknown state')}, not complete; "
                             "rerun that shard")
    first_source, first = reports[0]
    env0 = first.get("environment") or {}
    for source, report in reports[1:]:
        env = report.get("environment") or {}
        for field in SAME_ENVIRONMENT:
            if env.get(field) != env0.get(field):
                raise MergeError(f"{source}: {field} {env.get(field)!r} differs from {first_source}'s "
                                 f"{env0.get(field)!r}; only reports of one run can be merged")
        if report.get("schema_version") != first.get("schema_version"):
            raise MergeError(f"{source}: schema version {report.get('schema_version')} differs from "
                             f"{first_source}'s {first.get('schema_version')}")
    expected = _check_shards(reports)
    implementations: dict[str, dict[str, Any]] = {}
    for source, report in reports:
        for entry in report.get("implementations", []):
            seen = implementations.get(entry["name"])
            if seen is None:
                implementations[entry["name"]] = entry
            elif {k: v for k, v in seen.items() if k != "spec"} != {k: v for k, v in entry.items() if k != "spec"}:
                raise MergeError(f"{source}: implementation {entry['name']!r} differs from the one of the other "
                                 f"reports ({entry.get('status')}, {len(entry.get('operations', []))} operations "
                                 f"against {seen.get('status')}, {len(seen.get('operations', []))})")
    rows: dict[tuple[str, str, str, str], tuple[str, dict[str, Any]]] = {}
    for source, report in reports:
        for row in report.get("rows", []):
            key = _key_of(row)
            if key in rows:
                raise MergeError(f"row {' | '.join(key)} is in both {rows[key][0]} and {source}; "
                                 "shards must not overlap")
            rows[key] = (source, row)
    if expected is not None and len(rows) != expected:
        raise MergeError(f"the shards hold {len(rows)} rows, but the run they split has {expected}")
    environment = dict(env0)
    environment["devices"] = sorted({d for _, r in reports for d in (r.get("environment") or {}).get("devices", [])})
    environment["cuda"] = next(((r.get("environment") or {}).get("cuda") for _, r in reports
                                if (r.get("environment") or {}).get("cuda")), None)
    environment.pop("shard", None)
    environment["merged_from"] = [
        {"report": source, "shard": (r.get("environment") or {}).get("shard"),
         "platform": (r.get("environment") or {}).get("platform"), "rows": len(r.get("rows", []))}
        for source, r in reports]
    return [row for _, row in sorted(rows.values(), key=lambda sr: _key_of(sr[1]))], \
        list(implementations.values()), environment


def _check_shards(reports: Iterable[tuple[str, dict[str, Any]]]) -> int | None:
    """Sharded reports: one shard count, each shard once, none missing, the same whole run.

    Returns the number of rows of the whole run (``None``: the reports are not shards).
    """
    shards = [(source, (r.get("environment") or {}).get("shard")) for source, r in reports]
    sharded = [(source, s) for source, s in shards if s]
    if not sharded:
        return None
    if len(sharded) != len(shards):
        raise MergeError("some reports are shards and some are not: merge the shards of one run, or whole runs "
                         "of different devices")
    counts = {s["count"] for _, s in sharded}
    totals = {s.get("rows_in_run") for _, s in sharded}
    if len(counts) != 1:
        raise MergeError(f"the reports are shards of different splits (N = {sorted(counts)})")
    if None in totals:  # a shard run with several jobs does not know the size of the whole run
        totals = {None}
    elif len(totals) != 1:
        raise MergeError(f"the shards selected different rows (the whole run has {sorted(map(str, totals))} rows "
                         "by their reports): run every shard with the same options and libraries")
    n = counts.pop()
    seen: dict[int, str] = {}
    for source, s in sharded:
        if s["index"] in seen:
            raise MergeError(f"{source} and {seen[s['index']]} are both shard {s['index']}/{n}")
        seen[s["index"]] = source
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise MergeError(f"shard(s) {', '.join(f'{k}/{n}' for k in missing)} missing: a merged report must hold "
                         "every row of the run")
    total = totals.pop()
    return None if total is None else int(total)
