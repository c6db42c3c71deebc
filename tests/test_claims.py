"""The claim registry: the shipped spec, malformed spec files, and claims vs properties."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from specformer.claims import (
    DOCUMENTS,
    Claim,
    ClaimError,
    check_consistency,
    load_claims,
    parse_spec_file,
    spec_dir,
)
from specformer.property import load_properties

ROOT = Path(__file__).resolve().parent.parent
DOC = "000_4860f8a30b907c6c.txt"


# -- the shipped specification ---------------------------------------------------------


@pytest.fixture(scope="module")
def claims() -> dict[str, Claim]:
    return load_claims()


def test_the_shipped_spec_loads_from_every_topic_file(claims: dict[str, Claim]) -> None:
    files = sorted(f"{p.parent.name}/{p.name}" for p in spec_dir().glob("*/*.md"))
    assert files, "no spec/<family>/*.md file found"
    assert {c.file for c in claims.values()} == set(files), "a spec file contributes no claim"
    assert all(key == claim.id for key, claim in claims.items())


def test_the_installed_spec_is_the_repository_spec(claims: dict[str, Claim]) -> None:
    assert load_claims(ROOT / "spec") == claims


def test_no_formula_is_escaped_twice(claims: dict[str, Claim]) -> None:
    """A YAML block scalar keeps backslashes as they are: ``\\quad`` there reaches MathJax as a line break and
    the word "quad". A doubled backslash before a letter or ``, ; %`` is such an escape; before a space it is a
    matrix's row break and stays."""
    import re

    doubled = re.compile(r"\\\\[A-Za-z,;%]")
    found = [(claim.id, field) for claim in claims.values() for field in ("statement", "corrected")
             if doubled.search(getattr(claim, field) or "")]
    assert not found, found


def test_every_id_starts_with_its_files_topic(claims: dict[str, Claim]) -> None:
    wrong = [c.id for c in claims.values() if not (c.id.startswith(c.topic + ".") and c.file == f"{c.family}/{c.topic}.md")]
    assert wrong == []


def test_ids_are_unique_across_files() -> None:
    ids = [c.id for path in sorted(spec_dir().glob("*/*.md")) for c in parse_spec_file(path, path.parent.name)]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def test_every_source_is_one_of_the_five_documents(claims: dict[str, Claim]) -> None:
    assert len(DOCUMENTS) == 5
    unknown = {(c.id, s.document) for c in claims.values() for s in c.sources if s.document not in DOCUMENTS}
    assert unknown == set()
    assert all(c.sources for c in claims.values())


def test_false_and_imprecise_claims_say_what_was_written_and_the_correction(claims: dict[str, Claim]) -> None:
    refuted = [c for c in claims.values() if c.verdict in ("false as stated", "imprecise")]
    assert refuted, "the spec has no false or imprecise claim: the check would be vacuous"
    missing = [c.id for c in refuted if not (c.as_written.strip() and c.corrected.strip())]
    assert missing == []
    assert all(c.needs_refutation for c in refuted)


def test_uncheckable_claims_give_a_reason_and_statistical_ones_a_false_alarm_bound(claims: dict[str, Claim]) -> None:
    assert [c.id for c in claims.values() if c.verdict == "not checkable" and not c.reason.strip()] == []
    assert [c.id for c in claims.values() if c.kind == "statistical" and not c.false_alarm.strip()] == []
    assert all(not c.checkable for c in claims.values() if c.verdict == "not checkable")


def test_every_claim_has_prose_and_serialises(claims: dict[str, Claim]) -> None:
    assert [c.id for c in claims.values() if not c.prose] == []
    for claim in claims.values():
        data = claim.to_json()
        assert data["id"] == claim.id and data["sources"] and data["statement"] == claim.statement


# -- malformed spec files --------------------------------------------------------------


def claim_fields(**overrides: Any) -> dict[str, Any]:
    """A valid claim of topic ``topic``, with ``overrides`` applied (None removes a field)."""
    fields: dict[str, Any] = {
        "id": "topic.some-claim",
        "title": "A claim for the tests",
        "sources": [{"document": DOC, "section": "Some section", "says": "something"}],
        "kind": "exact identity",
        "verdict": "holds",
        "statement": "x = x",
    }
    fields.update(overrides)
    return {k: v for k, v in fields.items() if v is not None}


def block(fields: dict[str, Any] | str, prose: str = "Some prose.") -> str:
    body = fields if isinstance(fields, str) else yaml.safe_dump(fields, sort_keys=False)
    return f"```yaml claim\n{body}```\n\n{prose}\n"


def write_spec(directory: Path, **files: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for topic, blocks in files.items():
        text = f"# {topic}\n\nIntro.\n\n" + "".join(f"## Heading {n}\n\n{b}\n" for n, b in enumerate(blocks))
        (directory / "family").mkdir(parents=True, exist_ok=True)
        (directory / "family" / f"{topic}.md").write_text(text, encoding="utf-8")
    return directory


def test_a_valid_temporary_spec_loads_with_its_prose(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, topic=[block(claim_fields(), "The prose of one."),
                                       block(claim_fields(id="topic.other"), "The prose of two.")],
                      second=[block(claim_fields(id="second.one"))])
    claims = load_claims(spec)
    assert sorted(claims) == ["second.one", "topic.other", "topic.some-claim"]
    one = claims["topic.some-claim"]
    assert one.topic == "topic" and one.file == "family/topic.md" and one.family == "family"
    assert one.prose == "The prose of one."  # stops at the next heading
    assert one.sources[0].title == DOCUMENTS[DOC]
    assert claims["topic.other"].prose == "The prose of two."


def assert_claim_error(directory: Path, *fragments: str) -> ClaimError:
    with pytest.raises(ClaimError) as info:
        load_claims(directory)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in the error message: {message}"
    return info.value


def test_invalid_yaml_names_the_file_and_the_block(tmp_path: Path) -> None:
    bad = "id: topic.broken\ntitle: [unclosed\nkind: exact identity\n"
    write_spec(tmp_path, topic=[block(claim_fields()), block(bad)])
    assert_claim_error(tmp_path, "family/topic.md", "#2", "YAML")


def test_a_block_that_is_not_a_mapping_is_an_error(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block("- just\n- a list\n")])
    assert_claim_error(tmp_path, "family/topic.md", "mapping")


def test_a_missing_required_field_names_file_claim_and_field(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(statement=None))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "statement")


def test_a_verdict_outside_the_enum_is_an_error(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(verdict="mostly true"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "verdict", "mostly true")


def test_an_unknown_field_is_an_error(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(verdcit="holds"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "verdcit")


def test_an_id_with_another_topic_prefix_is_an_error(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(id="masking.some-claim"))])
    assert_claim_error(tmp_path, "family/topic.md", "'masking.some-claim'", "'topic.'")


def test_a_duplicate_id_is_an_error_naming_both_places(tmp_path: Path) -> None:
    # Ids carry their file's topic and topics are unique, so a duplicate can only occur within one file.
    write_spec(tmp_path, aaa=[block(claim_fields(id="aaa.x"))],
               topic=[block(claim_fields()), block(claim_fields(title="Again the same id"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "already defined")


def test_a_topic_in_two_families_is_an_error_naming_both(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields())])
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "topic.md").write_text(
        "# topic\n\n## Heading\n\n" + block(claim_fields(id="topic.other")), encoding="utf-8")
    assert_claim_error(tmp_path, "second/topic.md", "'topic'", "'family'")


def test_property_modules_are_unique_across_families() -> None:
    homes: dict[str, set[str]] = {}
    for prop in load_properties().values():
        homes.setdefault(prop.module, set()).add(prop.family)
    shared = {module: families for module, families in homes.items() if len(families) > 1}
    assert not shared, f"property modules defined in several families: {shared}"


def test_an_unknown_source_document_is_an_error(tmp_path: Path) -> None:
    sources = [{"document": "999_0123456789abcdef.txt", "section": "Nowhere"}]
    write_spec(tmp_path, topic=[block(claim_fields(sources=sources))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "999_0123456789abcdef.txt")


def test_a_malformed_document_name_is_an_error(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(sources=[{"document": "notes.txt", "section": "S"}]))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "notes.txt")


def test_a_statistical_claim_needs_a_false_alarm_bound(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(kind="statistical"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "false_alarm")
    write_spec(tmp_path, topic=[block(claim_fields(kind="statistical", false_alarm="1e-6 per run"))])
    assert load_claims(tmp_path)["topic.some-claim"].false_alarm == "1e-6 per run"


@pytest.mark.parametrize("verdict", ["imprecise", "false as stated"])
def test_a_refuted_claim_needs_as_written_and_corrected(tmp_path: Path, verdict: str) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(verdict=verdict, as_written="what they wrote"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "corrected")
    write_spec(tmp_path, topic=[block(claim_fields(verdict=verdict, corrected="y = y"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "as_written")


def test_a_not_checkable_claim_needs_a_reason(tmp_path: Path) -> None:
    write_spec(tmp_path, topic=[block(claim_fields(verdict="not checkable", kind="not checkable"))])
    assert_claim_error(tmp_path, "family/topic.md", "'topic.some-claim'", "reason")


def test_an_unclosed_claim_block_is_an_error(tmp_path: Path) -> None:
    good = block(claim_fields())
    unclosed = "```yaml claim\n" + yaml.safe_dump(claim_fields(id="topic.lost"), sort_keys=False)
    write_spec(tmp_path, topic=[good, unclosed])
    assert_claim_error(tmp_path, "family/topic.md")


def test_the_error_names_the_offending_file_among_several(tmp_path: Path) -> None:
    write_spec(tmp_path, aaa=[block(claim_fields(id="aaa.fine"))],
               zzz=[block(claim_fields(id="zzz.broken", verdict="nope"))])
    error = assert_claim_error(tmp_path, "zzz.md", "'zzz.broken'")
    assert "aaa.md" not in str(error)


# -- claims against properties ---------------------------------------------------------


def fake(claim: str, name: str = "prop", expect: str = "hold") -> SimpleNamespace:
    return SimpleNamespace(claim=claim, qualname=f"topic.{name}", expect=expect)


@pytest.fixture
def small_spec(tmp_path: Path) -> dict[str, Claim]:
    refuted = {"as_written": "as they wrote it", "corrected": "y = y"}
    write_spec(tmp_path, topic=[
        block(claim_fields(id="topic.holds")),
        block(claim_fields(id="topic.false", verdict="false as stated", **refuted)),
        block(claim_fields(id="topic.imprecise", verdict="imprecise", **refuted)),
        block(claim_fields(id="topic.unknowable", verdict="not checkable", kind="not checkable", reason="no data")),
        block(claim_fields(id="topic.needs-data", kind="needs data", verdict="depends")),
    ])
    return load_claims(tmp_path)


def consistent(claims: dict[str, Claim]) -> list[SimpleNamespace]:
    return [fake("topic.holds", "a"), fake("topic.false", "b"), fake("topic.false", "c", "counterexample"),
            fake("topic.imprecise", "d"), fake("topic.imprecise", "e", "counterexample")]


def test_a_consistent_catalogue_has_no_problems(small_spec: dict[str, Claim]) -> None:
    assert check_consistency(small_spec, consistent(small_spec)) == []


def test_a_property_naming_an_unknown_claim_is_dangling(small_spec: dict[str, Claim]) -> None:
    problems = check_consistency(small_spec, [*consistent(small_spec), fake("topic.no-such-claim", "ghost")])
    assert len(problems) == 1
    assert "topic.ghost" in problems[0] and "topic.no-such-claim" in problems[0]


def test_a_checkable_claim_without_a_property_is_reported(small_spec: dict[str, Claim]) -> None:
    props = [p for p in consistent(small_spec) if p.claim != "topic.holds"]
    problems = check_consistency(small_spec, props)
    assert len(problems) == 1 and "'topic.holds'" in problems[0] and "no property" in problems[0]


def test_a_false_claim_without_a_counterexample_property_is_reported(small_spec: dict[str, Claim]) -> None:
    props = [p for p in consistent(small_spec) if not (p.claim == "topic.false" and p.expect == "counterexample")]
    problems = check_consistency(small_spec, props)
    assert len(problems) == 1 and "'topic.false'" in problems[0] and "refutation" in problems[0]


def test_an_imprecise_claim_whose_correction_is_unchecked_is_reported(small_spec: dict[str, Claim]) -> None:
    props = [p for p in consistent(small_spec) if not (p.claim == "topic.imprecise" and p.expect == "hold")]
    problems = check_consistency(small_spec, props)
    assert len(problems) == 1 and "'topic.imprecise'" in problems[0] and "correction" in problems[0]


def test_a_not_checkable_claim_with_a_property_is_reported(small_spec: dict[str, Claim]) -> None:
    problems = check_consistency(small_spec, [*consistent(small_spec), fake("topic.unknowable", "z")])
    assert len(problems) == 1 and "'topic.unknowable'" in problems[0] and "not checkable" in problems[0]


def test_the_shipped_claims_and_properties_agree(claims: dict[str, Claim]) -> None:
    """The gate keeping spec/ and properties/ in sync (``specformer claims --check``)."""
    problems = check_consistency(claims, load_properties().values())
    assert problems == [], "\n".join(problems)


def test_every_assertion_of_a_property_carries_a_message() -> None:
    """Properties are imported without pytest's assertion rewriting: a bare assert would fail silently."""
    import ast
    from pathlib import Path

    import specformer.properties

    bare = []
    for path in sorted(Path(specformer.properties.__file__).parent.glob("**/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assert) and node.msg is None:
                bare.append(f"{path.name}:{node.lineno}")
    assert bare == [], f"assertions without a message: {bare}"
