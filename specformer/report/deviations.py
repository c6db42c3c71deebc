"""Known deviations: rows an implementation is known not to pass, listed with a reason.

A deviations file is TOML with one ``[[deviation]]`` table per entry::

    [[deviation]]
    claim = "multihead.cost-equal"        # a claim id glob, or:
    # property = "multihead.cost_*"       # a property qualname glob (topic.function)
    implementation = "torch-mha"          # name or --impl spec (mandatory; a list for several)
    device = "cuda"                       # glob (default: any)
    dtype = ["float16", "bfloat16"]       # a glob or a list of globs (default: any)
    reason = "why it deviates"            # mandatory
    intermittent = true                   # optional: shows on some examples only

A row matched by an entry whose outcome is not as expected becomes ``known-deviation``
(it counts as expected and keeps its message and counterexample; the row records the
reason and its ``original_outcome``). A matched row that passes or is refuted as it
must becomes ``fixed``: the entry can go; unless the entry is ``intermittent`` (the
deviation shows on some examples only, e.g. a library's float32 arithmetic against float64
tolerances), then a conforming row keeps its outcome. Rows that did not run (``skipped``,
``not-applicable``) are left as they are.

An entry names what it covers explicitly, so that it cannot hide failures nobody
listed: ``implementation`` is mandatory, and a glob there that matches more than one
implementation of the run, or matches ``math`` (the rows that call no implementation),
is refused (:func:`implementation_problem`); a claim or property glob names its topic
without wildcards (``"attention.*"`` is accepted, ``"*"`` and ``"*.causal"`` are not).
Rows of ``math`` are never relabelled. With ``--strict-deviations`` the summary lists
the failures the entries hid (:func:`hidden_lines`).

The shipped adapters' own file, :data:`BUILTIN_FILE`, applies to the built-in
implementations only (:data:`specformer.adapters.BUILTIN`). This module reads files
and relabels rows; it runs nothing.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import re

from specformer.runner.row import CONFORMING_OUTCOMES, MATH, RowResult

_WILDCARD = re.compile(r"[*?\[\]]")

#: The deviations of the shipped adapters, applied to built-in implementations only.
BUILTIN_FILE = Path(__file__).resolve().parents[1] / "adapters" / "deviations.toml"
_MATCH_KEYS = ("claim", "property", "implementation", "device", "dtype")
_KEYS = frozenset({*_MATCH_KEYS, "reason", "intermittent"})


class DeviationError(ValueError):
    """A deviations file that cannot be used: the message names the file, the entry and the problem."""


@dataclass(frozen=True)
class Deviation:
    """One entry: globs per field (empty: any) and the reason."""

    reason: str
    claim: tuple[str, ...] = ()
    property: tuple[str, ...] = ()
    implementation: tuple[str, ...] = ()
    device: tuple[str, ...] = ()
    dtype: tuple[str, ...] = ()
    source: str = ""
    intermittent: bool = False

    def matches(self, row: RowResult | dict[str, Any], impl_spec: str | None = None) -> bool:
        """Whether the row (and the ``--impl`` spec that named its implementation) is listed."""
        get = row.get if isinstance(row, dict) else lambda key: getattr(row, key)
        impl_names = [str(get("implementation"))] + ([impl_spec] if impl_spec else [])
        return (_any(self.claim, [str(get("claim"))]) and _any(self.property, [str(get("property"))])
                and _any(self.implementation, impl_names) and _any(self.device, [str(get("device"))])
                and _any(self.dtype, [str(get("dtype"))]))


def _any(globs: tuple[str, ...], values: list[str]) -> bool:
    return not globs or any(fnmatch.fnmatchcase(v, g) for g in globs for v in values)


def _globs(value: Any, where: str, key: str) -> tuple[str, ...]:
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(v, str) and v.strip() for v in values):
        raise DeviationError(f"{where}: '{key}' must be a non-empty string or a list of them, not {value!r}")
    return tuple(v.strip() for v in values)


def parse(text: str, source: str) -> list[Deviation]:
    """The entries of a deviations file's ``text``; ``source`` names it in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeviationError(f"{source}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"deviation"})
    if unknown:
        raise DeviationError(f"{source}: unknown top-level key(s) {unknown}; entries are [[deviation]] tables")
    entries = data.get("deviation", [])
    if not isinstance(entries, list):
        raise DeviationError(f"{source}: 'deviation' must be an array of tables ([[deviation]])")
    out = []
    for number, entry in enumerate(entries, 1):
        where = f"{source}: entry {number}"
        if not isinstance(entry, dict):
            raise DeviationError(f"{where}: must be a table ([[deviation]]), not {entry!r}")
        extra = sorted(set(entry) - _KEYS)
        if extra:
            raise DeviationError(f"{where}: unknown key(s) {extra}; known: {sorted(_KEYS)}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise DeviationError(f"{where}: 'reason' is mandatory and must be a non-empty string")
        if "claim" not in entry and "property" not in entry:
            raise DeviationError(f"{where}: needs a 'claim' or a 'property' glob")
        intermittent = entry.get("intermittent", False)
        if not isinstance(intermittent, bool):
            raise DeviationError(f"{where}: 'intermittent' must be true or false, got {intermittent!r}")
        globs = {key: _globs(entry[key], where, key) for key in _MATCH_KEYS if key in entry}
        if "implementation" not in entry:
            raise DeviationError(f"{where}: needs 'implementation': the name of the implementation it lists "
                                 "(a list for several), so that it hides no one else's failures")
        for key in ("claim", "property"):
            for glob in globs.get(key, ()):
                topic, dot, _ = glob.partition(".")
                if not dot or not topic or _WILDCARD.search(topic):
                    raise DeviationError(f"{where}: {key} {glob!r} must name its topic without wildcards "
                                         f"(e.g. 'attention.*' or 'attention.scaled-dot-product')")
        for glob in globs.get("implementation", ()):
            if fnmatch.fnmatchcase(MATH, glob):
                raise DeviationError(f"{where}: implementation {glob!r} matches {MATH!r}, the rows that call no "
                                     "implementation; a deviation lists an implementation's rows only")
        out.append(Deviation(reason=" ".join(reason.split()), source=f"{source}#{number}", intermittent=intermittent,
                             **globs))
    return out


def read_file(path: str | Path) -> str:
    """The text of the deviations file at ``path`` (:class:`DeviationError` if it cannot be read)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DeviationError(f"deviations file {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise DeviationError(f"deviations file {str(path)!r} is not UTF-8 text") from None


def load_file(path: str | Path) -> list[Deviation]:
    """The entries of the deviations file at ``path`` (:class:`DeviationError` if unusable)."""
    return parse(read_file(path), str(path))


def load_files(paths: Iterable[str | Path]) -> list[Deviation]:
    """The entries of several files, in order."""
    return [entry for path in paths for entry in load_file(path)]


def builtin() -> list[Deviation]:
    """The shipped adapters' deviations."""
    return load_file(BUILTIN_FILE)


def entries_for(spec: str, user: list[Deviation], shipped: list[Deviation] | None = None) -> list[Deviation]:
    """The entries for the implementation named by ``spec``: the user's, and the shipped ones if it is built in."""
    from specformer.adapters import BUILTIN

    return user + (builtin() if shipped is None else shipped) if spec in BUILTIN else list(user)


def apply(row: RowResult, entries: Iterable[Deviation], impl_spec: str | None = None,
          strict: bool = False) -> RowResult:
    """Relabel ``row`` by the first entry that lists it (module doc); ``strict`` makes ``fixed`` fail."""
    if row.outcome in ("skipped", "not-applicable") or row.implementation == MATH:
        return row
    if row.worker_lost:  # a crash, a kill, a timeout: whatever an entry lists, it did not list this
        return row
    entry = next((e for e in entries if e.matches(row, impl_spec)), None)
    if entry is None or (entry.intermittent and row.outcome in CONFORMING_OUTCOMES):
        return row
    row.deviation_reason, row.original_outcome = entry.reason, row.outcome
    row.outcome = "fixed" if row.outcome in CONFORMING_OUTCOMES else "known-deviation"
    row.strict_deviations = strict
    return row


def unmatched_warnings(entries: Iterable[Deviation], claims: Iterable[str], properties: Iterable[str],
                       dtypes: Iterable[str] = ("float64", "float32", "float16", "bfloat16"),
                       devices: Iterable[str] = ("cpu", "cuda")) -> list[str]:
    """One line per entry field that matches nothing known (a likely typo)."""
    known = {"claim": list(claims), "property": list(properties), "dtype": list(dtypes), "device": list(devices)}
    return [f"{entry.source}: {key} {list(globs)} matches no known {key}"
            for entry in entries for key, names in known.items()
            if (globs := getattr(entry, key)) and not _any(globs, names)]


def implementation_problem(entries: Iterable[Deviation], implementations: list[dict[str, Any]]) -> str | None:
    """An entry whose implementation glob matches more than one implementation of the run (a usage error)."""
    for entry in entries:
        for glob in entry.implementation:
            if not _WILDCARD.search(glob):
                continue
            matched = sorted({str(i["name"]) for i in implementations
                              if fnmatch.fnmatchcase(str(i["name"]), glob) or fnmatch.fnmatchcase(str(i["spec"]), glob)})
            if len(matched) > 1:
                return (f"{entry.source}: implementation {glob!r} matches {len(matched)} implementations of this run "
                        f"({', '.join(matched)}); name each one (implementation = [...]) so that the entry hides "
                        "only the failures it was written for")
    return None


def hidden_lines(rows: Iterable[dict[str, Any]]) -> list[str]:
    """For ``--strict-deviations``: one line per failure a deviation entry hid (a ``known-deviation`` row)."""
    hidden = [r for r in rows if r.get("outcome") == "known-deviation"]
    if not hidden:
        return []
    lines = [f"{len(hidden)} failure(s) hidden by known deviations (--strict-deviations shows them):"]
    for r in hidden:
        message = " ".join(str(r.get("message") or "").split())
        lines.append(f"  {str(r.get('original_outcome') or 'fail').upper()}  {r.get('claim')}  "
                     f"[{r.get('implementation')}-{r.get('device')}-{r.get('dtype')}]  {r.get('property')}: "
                     f"{message[:300]}")
        lines.append(f"      listed because: {r.get('deviation_reason')}")
    return lines
