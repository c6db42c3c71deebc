"""The claim registry: reads ``spec/<family>/<topic>.md`` files and validates every claim.

A claim lives in a fenced block whose info string is ``yaml claim``; the Markdown that
follows it, up to the next level-2 heading, is the claim's prose. The block is checked
against ``spec/claim.schema.json``; a malformed entry raises :class:`ClaimError` naming
the file and the claim.

This module does not run anything: which properties check a claim is recorded by
:mod:`specformer.property`, and :func:`check_consistency` compares the two.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

import jsonschema
import yaml

#: The source documents, by file name, with the title each one gives itself: the text of
#: its first heading, word for word (the only place the site takes titles from). 001, a
#: saved web page, has no Markdown heading: its title is the page's first line after the
#: "Skip to content" link; 004, a slide deck, opens with YAML settings whose ``#`` lines
#: are comments: its title is the first slide's heading.
DOCUMENTS: dict[str, str] = {
    "000_4860f8a30b907c6c.txt": "C-4: Transformer Architecture",
    "001_8e2f81fb347e455a.txt": "Natural Language Processing",
    "002_7a3e4e0c20e9295d.txt": "Day 4: Embeddings & Representation Learning",
    "003_4f541e8daf7f7192.txt": "Input Processing",
    "004_47c0b0031f022460.txt": "Attention & Transformers",
}

#: Verdicts for which the claim as written must be refuted by a counterexample.
NEEDS_REFUTATION = frozenset({"false as stated", "imprecise"})
#: Kinds that cannot be checked by a property here.
UNCHECKABLE_KINDS = frozenset({"needs data", "not checkable"})

_BLOCK = re.compile(r"^```yaml claim[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


class ClaimError(ValueError):
    """A spec file holds a malformed, duplicated or dangling claim."""


def cut_by_comment(block: str) -> str | None:
    """The first unquoted value of a YAML block that YAML ends at `` #`` (the rest of its
    line read as a comment and lost: ``title: marks pieces with ## and ▁`` parses as
    ``marks pieces with``); ``None`` when there is none. Quoting the value keeps it whole."""
    if "#" not in block:
        return None
    lines = block.splitlines()
    for token in yaml.scan(block, Loader=yaml.SafeLoader):
        if isinstance(token, yaml.ScalarToken) and token.plain:
            end = token.end_mark
            rest = lines[end.line][end.column:] if end.line < len(lines) else ""
            if re.match(r"\s+#", rest):
                return token.value
    return None


@dataclass(frozen=True)
class Source:
    """Where a document makes a claim."""

    document: str
    section: str
    says: str = ""

    @property
    def title(self) -> str:
        """The document's own title."""
        return DOCUMENTS.get(self.document, self.document)


@dataclass(frozen=True)
class Claim:
    """One checkable (or explicitly uncheckable) claim of the documents."""

    id: str
    title: str
    sources: tuple[Source, ...]
    kind: str
    verdict: str
    statement: str
    topic: str
    file: str
    prose: str = ""
    family: str = ""
    as_written: str = ""
    corrected: str = ""
    reason: str = ""
    false_alarm: str = ""
    contradiction: str = ""
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def checkable(self) -> bool:
        """Whether a property is expected to check this claim."""
        return self.verdict != "not checkable" and self.kind not in UNCHECKABLE_KINDS

    @property
    def needs_refutation(self) -> bool:
        """Whether the claim as written must be refuted by a counterexample."""
        return self.verdict in NEEDS_REFUTATION

    def to_json(self) -> dict[str, Any]:
        """The claim as a JSON-ready dict (without the prose)."""
        return {
            "id": self.id,
            "title": self.title,
            "family": self.family,
            "topic": self.topic,
            "sources": [
                {"document": s.document, "section": s.section, **({"says": s.says} if s.says else {})}
                for s in self.sources
            ],
            "kind": self.kind,
            "verdict": self.verdict,
            "statement": self.statement,
            **{k: getattr(self, k) for k in ("as_written", "corrected", "reason", "false_alarm",
                                              "contradiction", "note") if getattr(self, k)},
        }


#: libyaml's safe loader where PyYAML was built with it (ten times faster), else the pure-Python one.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def spec_dir() -> Path:
    """The folder holding the installed spec files."""
    return Path(str(resources.files("specformer.spec")))


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The JSON schema every claim block is validated against."""
    return json.loads((spec_dir() / "claim.schema.json").read_text(encoding="utf-8"))


def parse_spec_file(path: Path, family: str = "") -> list[Claim]:
    """Read the claims of one spec file; raise :class:`ClaimError` on a malformed entry.

    ``family`` is the folder the file lies in (``spec/<family>/<topic>.md``); the claim's
    ``file`` is then ``<family>/<topic>.md``.
    """
    text = path.read_text(encoding="utf-8")
    topic = path.stem
    file = f"{family}/{path.name}" if family else path.name
    matches = list(_BLOCK.finditer(text))
    opened = len(re.findall(r"^```yaml claim[ \t]*$", text, re.MULTILINE))
    if opened != len(matches):
        raise ClaimError(f"{file}: {opened - len(matches)} `yaml claim` block(s) never closed with ```")
    claims: list[Claim] = []
    validator = jsonschema.Draft202012Validator(schema())
    for n, match in enumerate(matches, start=1):
        where = f"{file}: claim block #{n}"
        try:
            data = yaml.load(match.group(1), Loader=_YAML_LOADER)  # noqa: S506 - a safe loader
        except yaml.YAMLError as exc:
            raise ClaimError(f"{where}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ClaimError(f"{where}: expected a mapping of fields, got {type(data).__name__}")
        if isinstance(data.get("id"), str):
            where = f"{file}: claim {data['id']!r}"
        cut = cut_by_comment(match.group(1))
        if cut is not None:
            raise ClaimError(f"{where}: the value {cut!r} is cut short at ' #', which YAML reads as the start of "
                             "a comment; quote the whole value")
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            details = "; ".join(
                f"{'/'.join(map(str, e.absolute_path)) or '(claim)'}: {e.message}" for e in errors
            )
            raise ClaimError(f"{where}: {details}")
        if not data["id"].startswith(topic + "."):
            raise ClaimError(f"{where}: id must start with the file's topic {topic + '.'!r}")
        for source in data["sources"]:
            if source["document"] not in DOCUMENTS:
                raise ClaimError(f"{where}: unknown source document {source['document']!r}")
        end = matches[n].start() if n < len(matches) else len(text)
        prose = text[match.end():end]
        heading = re.search(r"^## ", prose, re.MULTILINE)
        if heading:
            prose = prose[: heading.start()]
        claims.append(
            Claim(
                sources=tuple(Source(**s) for s in data.pop("sources")),
                topic=topic,
                family=family,
                file=file,
                prose=prose.strip(),
                **data,
            )
        )
    return claims


def spec_files(directory: Path | None = None) -> list[Path]:
    """The topic files of the specification, one folder per family: ``<family>/<topic>.md``."""
    return sorted((directory or spec_dir()).glob("*/*.md"))


def load_claims(directory: Path | None = None) -> dict[str, Claim]:
    """All claims of all spec files (``<family>/<topic>.md``), by id.

    A duplicate id, or a topic name used by two families, raises :class:`ClaimError`.
    """
    directory = directory or spec_dir()
    claims: dict[str, Claim] = {}
    families: dict[str, str] = {}  # topic -> the family folder that holds it
    for path in spec_files(directory):
        # A topic names claim ids, property modules and ``--topic`` selections across all
        # families, so two families may not both have one of that name.
        other = families.setdefault(path.stem, path.parent.name)
        if other != path.parent.name:
            raise ClaimError(
                f"{path.parent.name}/{path.name}: topic {path.stem!r} is already a topic of the family "
                f"{other!r}; topics are shared by all families, give this one another name"
            )
        for claim in parse_spec_file(path, path.parent.name):
            if claim.id in claims:
                raise ClaimError(
                    f"{claim.file}: claim {claim.id!r} is already defined in {claims[claim.id].file}"
                )
            claims[claim.id] = claim
    return claims


def check_consistency(claims: dict[str, Claim], properties: Iterable[Any]) -> list[str]:
    """Problems between claims and properties: dangling ids, unchecked or unrefuted claims.

    ``properties`` are :class:`specformer.property.Property` objects. Returns a list of
    messages, empty when the catalogue and the properties agree.
    """
    problems: list[str] = []
    by_claim: dict[str, list[Any]] = {}
    for prop in properties:
        if prop.claim not in claims:
            problems.append(f"property {prop.qualname} names unknown claim {prop.claim!r}")
            continue
        by_claim.setdefault(prop.claim, []).append(prop)
    for claim in claims.values():
        props = by_claim.get(claim.id, [])
        if not claim.checkable:
            if props:
                problems.append(f"claim {claim.id!r} is marked not checkable but has properties")
            continue
        if not props:
            problems.append(f"claim {claim.id!r} is checkable but no property checks it")
        if claim.needs_refutation and not any(p.expect == "counterexample" for p in props):
            problems.append(f"claim {claim.id!r} is {claim.verdict} but has no refutation property")
        if claim.needs_refutation and not any(p.expect == "hold" for p in props):
            problems.append(f"claim {claim.id!r} is {claim.verdict} but its correction is not checked")
    return problems
