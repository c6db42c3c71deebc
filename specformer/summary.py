"""Readable failures: counterexamples without Hypothesis's internals, and one block per bad row.

:func:`readable_counterexample` rewrites the falsifying example Hypothesis reports for
a row: the advice meant for test authors (``@reproduce_failure(...)``, ``@seed(...)``)
is dropped, the implementation's context (shown beside the row anyway) is left out,
tensors built from drawn arrays read ``tensor([...])`` on one line, and tensors the
strategies build from a drawn seed (``_seeded(shape, bound, 7)``) read
``<random tensor from seed 7>``. The drawn values themselves are kept as Hypothesis
wrote them.

:func:`failure_block` is the block the summary of ``specformer run`` (and of pytest)
prints for each row that did not end as expected: claim, property, implementation,
device, dtype, outcome, message, counterexample, seed and the command that reproduces
it. :func:`summary_lines` is the whole summary: a line per claim, the implementations
that could not be loaded or lack a family, the blocks, the ``fixed`` rows (entries to
prune) and the verdict. This module formats text; it runs nothing and judges nothing.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

#: Lines of Hypothesis's report that address the author of the test, not its reader.
_ADVICE = re.compile(r"^\s*(You can reproduce this (?:example|test case) by temporarily adding"
                     r"|You can add @seed|@reproduce_failure\(|@seed\(|Unreliable test timings)")
_HEADER = re.compile(r"^(Falsifying example|Failing test case|Falsifying explicit example):\s*", re.MULTILINE)
_CONTEXT_LINE = re.compile(r"^\s*ctx=Context\([^\n]*\),\s*\n", re.MULTILINE)
_SEEDED = re.compile(r"\b_seeded\(([^()]*)\)")


def _matching_paren(text: str, open_at: int) -> int:
    """The index of the ``)`` closing the ``(`` at ``open_at`` (or -1)."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _tensors_on_one_line(text: str) -> str:
    """``from_numpy(\\n array([[0.], [1.]]),\\n )`` -> ``tensor([[0.], [1.]])``."""
    out, pos = [], 0
    while True:
        start = text.find("from_numpy(", pos)
        if start < 0:
            out.append(text[pos:])
            return "".join(out)
        end = _matching_paren(text, start + len("from_numpy"))
        if end < 0:
            out.append(text[pos:])
            return "".join(out)
        inner = " ".join(text[start + len("from_numpy("):end].split()).rstrip(",").strip()
        if inner.startswith("array(") and inner.endswith(")"):
            inner = inner[len("array("):-1].strip().rstrip(",")
        out += [text[pos:start], f"tensor({inner})"]
        pos = end + 1


def _seeded(match: re.Match[str]) -> str:
    numbers = re.findall(r"(?<![\w.])-?\d+(?![\w.])", match.group(1))
    return f"<random tensor from seed {numbers[-1]}>" if numbers else "<random tensor>"


def readable_counterexample(text: str | None) -> str | None:
    """``text`` (a falsifying example as Hypothesis reports it) without its internals (module doc)."""
    if not text:
        return text
    lines = [line for line in text.splitlines() if not _ADVICE.match(line)]
    cleaned = _HEADER.sub("", "\n".join(lines))
    cleaned = _CONTEXT_LINE.sub("", cleaned)
    cleaned = _SEEDED.sub(_seeded, _tensors_on_one_line(cleaned))
    cleaned = re.sub(r"\n{3,}", "\n\n", cleaned).strip()
    return cleaned or None


def row_label(row: Mapping[str, Any]) -> str:
    """``implementation/device/dtype`` of a report row."""
    return f"{row.get('implementation')}/{row.get('device')}/{row.get('dtype')}"


def failure_block(row: Mapping[str, Any]) -> list[str]:
    """The lines that show one row that did not end as expected (see the module doc)."""
    lines = [f"{str(row.get('outcome', '?')).upper()}  {row.get('claim')}",
             f"  property: {row.get('property')}",
             f"  implementation: {row_label(row)}"]
    if row.get("original_outcome"):
        lines.append(f"  listed as a known deviation ({row.get('deviation_reason')}); it now ends "
                     f"{row.get('original_outcome')}")
    message = str(row.get("message") or "").strip()
    if message:
        lines += ["  message:", *(f"    {line}" for line in message.splitlines())]
    example = readable_counterexample(row.get("counterexample"))
    if example:
        lines += ["  counterexample:", *(f"    {line}" for line in example.splitlines())]
    if row.get("seed") is not None:
        lines.append(f"  seed: {row['seed']}")
    if row.get("reproduce"):
        lines.append(f"  reproduce: {row['reproduce']}")
    return lines


def fixed_lines(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per ``fixed`` row: a deviation entry that no longer deviates (prune it)."""
    return [f"  fixed: {r.get('claim')} {r.get('property')} [{row_label(r)}] (listed: {r.get('deviation_reason')})"
            for r in rows if r.get("outcome") == "fixed"]


def _counts(rows: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{n} {o}" for o, n in sorted(Counter(str(r["outcome"]) for r in rows).items()))


def summary_lines(rows: Sequence[Mapping[str, Any]], impls: Sequence[Mapping[str, Any]], done: bool,
                  expected_rows: int | None) -> list[tuple[str, dict[str, bool]]]:
    """The summary of a run as ``(line, markup)`` pairs (markup: pytest's ``red``, ``green``, ``bold``...)."""
    out: list[tuple[str, dict[str, bool]]] = []
    by_claim: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_claim.setdefault(str(row["claim"]), []).append(row)
    for claim, claim_rows in sorted(by_claim.items()):
        bad = any(not r["as_expected"] for r in claim_rows)
        out.append((f"{'FAIL' if bad else ' ok '}  {claim:48s} {_counts(claim_rows)}", {"red": bad}))
    for impl in impls:
        if impl["status"] != "loaded":
            out.append((f"FAIL  implementation {impl['spec']!r} could not be loaded: {impl['message']}", {"red": True}))
        for family in impl["omitted_families"]:
            out.append((f"  –   {impl['name']} provides no operation of the {family} family: no rows for it", {}))
    bad_rows = [r for r in rows if not r["as_expected"]]
    if bad_rows:
        out += [("", {}), (f"{len(bad_rows)} rows did not end as expected:", {"red": True, "bold": True})]
        for row in bad_rows:
            out += [("", {}), *((line, {}) for line in failure_block(row))]
    fixed = fixed_lines(rows)
    if fixed:
        out += [("", {}), (f"{len(fixed)} listed deviations no longer deviate; remove their entries from the "
                           "deviations file:", {"yellow": True}), *((line, {}) for line in fixed)]
    ok = done and not bad_rows and all(i["status"] == "loaded" for i in impls)
    verdict = ("every claim ended as expected" if ok else
               "SOME CLAIMS DID NOT END AS EXPECTED" if done else
               f"THE RUN DID NOT COMPLETE ({len(rows)} of {expected_rows or '?'} rows ran)")
    out += [("", {}), (f"{len(by_claim)} claims, {len(rows)} rows: {_counts(rows) or 'none'} — {verdict}",
                       {"green": ok, "red": not ok, "bold": True})]
    return out
