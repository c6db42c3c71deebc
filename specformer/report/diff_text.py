"""``specformer diff`` as text: both environments, the counts, the rows that differ by group.

:func:`render` writes what :func:`specformer.report.diff.compare` found for a person: the
two reports' environments side by side (one line for a value both share, an ``A`` and a
``B`` line where they differ), the library versions of the implementations where they
differ, how rows were matched and counted, then the rows whose outcome differs, grouped by
implementation and claim: ``property [dtype]  A-outcome -> B-outcome``, followed by the
shortened message of each side that did not end as expected. A message repeated within an
implementation is written once and then named by its number. Rows present in only one
report are counted by implementation, device and dtype. Every value from a report goes
through :func:`specformer.report.diff.clean` (one line, no control characters).
This module reads no file and decides nothing.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from specformer.report.diff import clean

#: Environment fields in the order they are shown; fields a report adds follow.
ENV_FIELDS = ("specformer", "python", "torch", "hypothesis", "numpy", "platform", "devices", "cuda", "commit",
              "profile", "seed", "created", "command")
_DTYPES = ("float64", "float32", "float16", "bfloat16")
MESSAGE_WIDTH = 160


def _value(value: Any) -> str:
    """An environment value in words: lists joined by commas, objects as ``key value`` pairs."""
    if value is None:
        return "-"
    if isinstance(value, list):
        value = ", ".join(map(clean, value))
    elif isinstance(value, dict):
        value = ", ".join(f"{clean(k)} {clean(v)}" for k, v in value.items())
    return clean(value, 140)


def _environment_lines(diff: dict[str, Any]) -> list[str]:
    envs = [d["environment"] if isinstance(d["environment"], dict) else {} for d in (diff["a"], diff["b"])]
    fields = [*ENV_FIELDS, *(k for env in envs for k in env if k not in ENV_FIELDS)]
    lines = ["environment"]
    for name in dict.fromkeys(fields):
        values = [_value(env[name]) if name in env else "(not recorded)" for env in envs]
        if values[0] == values[1]:
            lines.append(f"  {clean(name):11s} {values[0]}")
        else:
            lines += [f"  {clean(name):11s} A {values[0]}", f"  {'':11s} B {values[1]}"]
    lines.append(f"  {'rows ran on':11s} A {', '.join(diff['a']['ran_on']) or '-'}; "
                 f"B {', '.join(diff['b']['ran_on']) or '-'}")
    for side in ("a", "b"):
        summary = diff[side]["summary"] if isinstance(diff[side]["summary"], dict) else {}
        lines.append(f"  {'run' if side == 'a' else '':11s} {side.upper()} {clean(summary.get('state', '?'))}, "
                     f"{diff[side]['rows']} rows")
    return lines


def _library_lines(diff: dict[str, Any]) -> list[str]:
    missing = [s.upper() for s in ("a", "b") if not diff[s]["libraries_recorded"]]
    if missing:
        return [f"libraries   not recorded in {' and '.join(missing)} (a report older than library versions)"]
    if not diff["libraries"]:
        return ["libraries   the same in both"]
    return ["libraries that differ"] + [f"  {clean(x['implementation']):22s} {clean(x['a'] or '(none)')} -> "
                                        f"{clean(x['b'] or '(none)')}" for x in diff["libraries"]]


def _order(row: dict[str, Any]) -> tuple[Any, ...]:
    dtype = clean(row.get("dtype"))
    return (clean(row.get("property")), _DTYPES.index(dtype) if dtype in _DTYPES else 9, dtype,
            clean(row.get("device")))


def _group_lines(pairs: list[dict[str, Any]], ignore_device: bool) -> list[str]:
    """The differing rows of one implementation, by claim, with their messages."""
    by_claim: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in pairs:
        by_claim[clean(pair["b"].get("claim"))].append(pair)
    seen: dict[str, int] = {}
    lines = []
    for claim in sorted(by_claim):
        lines.append(f"  {claim}")
        for pair in sorted(by_claim[claim], key=lambda p: _order(p["b"])):
            a, b = pair["a"], pair["b"]
            where = clean(b.get("dtype")) if ignore_device else f"{clean(b.get('device'))}/{clean(b.get('dtype'))}"
            line = f"    {clean(b.get('property'))} [{where}]  {clean(a.get('outcome'))} -> {clean(b.get('outcome'))}"
            new = []
            for side, row in (("A", a), ("B", b)):
                if row.get("as_expected") is True or not row.get("message"):
                    continue
                message = clean(row["message"], MESSAGE_WIDTH)
                if message in seen:
                    line += f"  {side} [{seen[message]}]"
                else:
                    seen[message] = len(seen) + 1
                    new.append(f"      {side} [{seen[message]}] {message}")
            lines += [line, *new]
    return lines


def _only_lines(side: str, rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[clean(row.get("implementation"))][f"{clean(row.get('device'))}/{clean(row.get('dtype'))}"] += 1
    lines = ["", f"only in {side} ({len(rows)} row{'s' if len(rows) != 1 else ''})"]
    for impl in sorted(counts):
        lines.append(f"  {impl:22s} " + ", ".join(f"{where} {n}" for where, n in sorted(counts[impl].items())))
    return lines


def render(diff: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """The difference as text for a person (see the module docstring)."""
    lines = [f"A  {clean(names[0])}", f"B  {clean(names[1])}", *_environment_lines(diff), *_library_lines(diff), ""]
    if diff["ignore_device"]:
        how = "automatically: the reports ran on different devices" if diff["device_rule"] == "automatic" \
            else "--ignore-device"
        lines.append(f"rows matched on property, implementation and dtype (device ignored, {how})")
    else:
        lines.append("rows matched on property, implementation, device and dtype")
    n = len(diff["differ"])
    lines.append(f"{diff['matched']} rows in both: "
                 + (f"{n} differ, {diff['matched'] - n} the same" if n else "no row differs")
                 + f"; only in A: {len(diff['only_a'])}, only in B: {len(diff['only_b'])}")
    skipped = [f"{side.upper()} {diff[side]['skipped']}" for side in "ab" if diff[side].get("skipped")]
    if skipped:
        lines.append("skipped rows (a device the machine lacked: no verdict) left out: " + ", ".join(skipped))
    if diff["changes"]:
        lines.append("changes: " + ", ".join(f"{clean(change)} {count}" for change, count in diff["changes"].items()))
    by_impl: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in diff["differ"]:
        by_impl[clean(pair["b"].get("implementation"))].append(pair)
    for impl in sorted(by_impl):
        lines += ["", impl, *_group_lines(by_impl[impl], diff["ignore_device"])]
    lines += _only_lines("A", diff["only_a"]) + _only_lines("B", diff["only_b"])
    return "\n".join(lines) + "\n"
