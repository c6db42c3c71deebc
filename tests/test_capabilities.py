"""Declared capabilities: rows outside a declaration are not applicable at once; inside it, an answer is owed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import run_row
from specformer.checked import base as context_module
from specformer.context import Context, LocalBackend
from specformer.protocol import (CONVENTIONS, OPERATIONS, Capabilities, CapabilityError, Convention, NotApplicable,
                                 declared_capabilities, provided_operations)
from specformer.protocol.capabilities import OutsideDeclaration
from specformer.adapters.reference import ReferenceImplementation

FORMULA = "attention.output_matches_the_formula"


class OnlyOneWideKeys(ReferenceImplementation):
    """Answers only when d_k = 1 and refuses every other example: it must not pass the formula property."""

    name = "only-d_k-1"
    capabilities = Capabilities()

    def attention(self, q, k, v, mask=None, *, causal=False):
        if q.shape[-1] != 1:
            raise NotApplicable("only d_k = 1")
        return super().attention(q, k, v, mask, causal=causal)


class Float64Only(ReferenceImplementation):
    name = "float64-only"
    capabilities = Capabilities(dtypes={"float64"}, devices={"cpu"})


class NoMultiHead(ReferenceImplementation):
    name = "no-multihead"
    capabilities = Capabilities(operations={"attention"})


def test_refusing_examples_inside_the_declared_domain_is_an_error() -> None:
    row = run_row(FORMULA, OnlyOneWideKeys())
    assert row.outcome == "error", row
    assert "refused an example inside its declared domain" in row.message
    assert "only d_k = 1" in row.message


class UndeclaredOnlyOneWideKeys(OnlyOneWideKeys):
    """The same refusals with no declaration at all: declaring nothing declares everything."""

    name = "undeclared-only-d_k-1"
    capabilities = None  # neither its parent's nor the reference's declaration


def test_an_undeclared_implementation_owes_an_answer_to_every_example() -> None:
    """Once 20 examples checked and 73 refused made a pass; now the first refusal is an error."""
    assert declared_capabilities(UndeclaredOnlyOneWideKeys()) is None
    row = run_row(FORMULA, UndeclaredOnlyOneWideKeys())
    assert row.outcome == "error" and not row.as_expected, row
    assert "refused an example inside its declared domain" in row.message and "only d_k = 1" in row.message
    assert row.examples_out_of_domain == 0


def test_a_dtype_outside_the_declaration_is_not_applicable_without_drawing_examples() -> None:
    row = run_row(FORMULA, Float64Only(), dtype="float32")
    assert row.outcome == "not-applicable"
    assert "declares dtypes float64, not float32" in row.message
    assert row.examples_generated == 0
    assert run_row(FORMULA, Float64Only(), dtype="float64").outcome == "pass"


def test_declared_operations_narrow_what_the_object_provides() -> None:
    provided = provided_operations(NoMultiHead())
    assert "attention" in provided and "multihead_attention" not in provided
    row = run_row("multihead.output_is_the_concatenation_of_the_heads_times_w_o", NoMultiHead())
    assert row.outcome == "not-applicable" and "multihead_attention" in row.message


@pytest.fixture()
def test_convention(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(CONVENTIONS, "test_pairing", Convention(("interleaved", "half"), "for this test"))
    assert context_module.CONVENTIONS is CONVENTIONS
    return "test_pairing"


def _context(capabilities: Capabilities | None) -> Context:
    return Context(LocalBackend(ReferenceImplementation()), "x", "cpu", "float64", capabilities=capabilities)


def test_choices_keep_the_declared_values_in_order(test_convention: str) -> None:
    assert _context(None).choices(test_convention, ("half", "interleaved")) == ("half", "interleaved")
    declared = Capabilities(conventions={test_convention: {"half"}})
    assert _context(declared).choices(test_convention, ("interleaved", "half")) == ("half",)
    assert _context(declared).require(test_convention, "half") == "half"
    assert _context(declared).supports(test_convention, "half")
    assert not _context(declared).supports(test_convention, "interleaved")
    with pytest.raises(OutsideDeclaration, match="declares test_pairing in {'half'}"):
        _context(declared).require(test_convention, "interleaved")


def test_choices_refuse_unknown_conventions_and_values(test_convention: str) -> None:
    with pytest.raises(KeyError, match="no convention 'test_pairin'"):
        _context(None).choices("test_pairin", ("half",))
    with pytest.raises(ValueError, match="not values of convention"):
        _context(None).choices(test_convention, ("diagonal",))


def test_a_malformed_declaration_names_the_problem(test_convention: str) -> None:
    with pytest.raises(CapabilityError, match="did you mean 'float64'"):
        Capabilities(dtypes={"float46"})
    with pytest.raises(CapabilityError, match="did you mean 'cuda'"):
        Capabilities(devices={"cdua"})
    with pytest.raises(CapabilityError, match="must be a set"):
        Capabilities(dtypes="float64")
    with pytest.raises(CapabilityError, match="only str, bool, int and float"):
        Capabilities(conventions={test_convention: {("half",)}})
    with pytest.raises(CapabilityError, match="did you mean 'attention'"):
        Capabilities(operations={"atention"}).validate(OPERATIONS, CONVENTIONS)
    with pytest.raises(CapabilityError, match="no convention"):
        Capabilities(conventions={"pairingg": {"half"}}).validate(OPERATIONS, CONVENTIONS)
    with pytest.raises(CapabilityError, match="the protocol's values"):
        Capabilities(conventions={test_convention: {"diagonal"}}).validate(OPERATIONS, CONVENTIONS)

    class Declares:
        name = "declares"
        capabilities = {"dtypes": ["float32"], "colours": ["red"]}

    with pytest.raises(CapabilityError, match="must be a dict of operations"):
        declared_capabilities(Declares())


def test_the_declaration_crosses_as_plain_data(test_convention: str) -> None:
    declared = Capabilities(operations={"attention"}, dtypes={"float32", "float64"},
                            conventions={test_convention: {"half"}})
    plain = declared.to_plain()
    assert json.loads(json.dumps(plain)) == plain
    assert Capabilities.from_plain(plain) == declared


WORKER_IMPL = '''
from specformer.adapters.reference import ReferenceImplementation
from specformer.protocol import Capabilities

class Mine(ReferenceImplementation):
    name = "mine-float64"
    capabilities = Capabilities(dtypes={"float64"})

class Broken(ReferenceImplementation):
    name = "broken-declaration"
    capabilities = Capabilities(operations={"atention"})

implementation = Mine()
broken = Broken()
'''


def test_a_worker_reports_the_declaration_and_refuses_a_malformed_one(tmp_path: Path) -> None:
    source = tmp_path / "mine.py"
    source.write_text(WORKER_IMPL)
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "specformer", "run", "--impl", str(source),
                           "--impl", f"{source}:broken", "--claims", "attention.scaled-dot-product",
                           "--report", str(report)], capture_output=True, text=True, timeout=1800)
    data = json.loads(report.read_text())
    by_name = {i["name"]: i for i in data["implementations"]}
    assert by_name["mine-float64"]["capabilities"]["dtypes"] == ["float64"]
    broken = [i for i in data["implementations"] if i["status"] == "load-error"]
    assert len(broken) == 1 and "did you mean 'attention'" in broken[0]["message"], broken
    rows = [r for r in data["rows"] if r["implementation"] == "mine-float64"]
    assert {r["dtype"]: r["outcome"] for r in rows} == {"float32": "not-applicable", "float64": "pass"}, done.stdout
    assert done.returncode == 1  # a load error fails the run


class _CentreInContext:
    """A CBOW whose context keeps the centre word (a legitimate convention only when declared)."""

    name = "centre-in-context"

    def skipgram_pairs(self, ids, window):
        return ReferenceImplementation().skipgram_pairs(ids, window)

    def cbow_examples(self, ids, window):
        return [(sorted(context + [centre]), centre) for context, centre in ReferenceImplementation().cbow_examples(ids, window)]


class _DeclaresCentreInContext(_CentreInContext):
    name = "declares-centre-in-context"
    capabilities = Capabilities(conventions={"cbow_context": frozenset({"with_centre"})})


TRAINING_EXAMPLES = "word2vec.skipgram_makes_about_2c_examples_per_word_and_cbow_one"


def test_an_undeclared_convention_about_what_the_implementation_does_is_the_documents_value() -> None:
    """cbow_context defaults to the documents' without_centre: a CBOW that keeps the centre word and
    declares nothing fails; declaring with_centre makes the same code pass."""
    assert CONVENTIONS["cbow_context"].default == ("without_centre",)
    assert CONVENTIONS["skipgram_window"].default == ("fixed",)
    assert CONVENTIONS["composition"].default is None  # the documents disagree: every value
    assert CONVENTIONS["tokenizer_kind"].default is None  # what the caller asks for: every value
    undeclared = run_row(TRAINING_EXAMPLES, _CentreInContext())
    assert undeclared.outcome == "fail", (undeclared.outcome, undeclared.message)
    assert run_row(TRAINING_EXAMPLES, _DeclaresCentreInContext()).outcome == "pass"
    assert run_row(TRAINING_EXAMPLES, ReferenceImplementation()).outcome == "pass"


class _CausalOnlyAlibi:
    """A correct ALiBi that exists only with the causal mask, and says so."""

    name = "causal-only-alibi"
    capabilities = Capabilities(conventions={"alibi_causal": frozenset({True})})

    def alibi_bias(self, h, t_q, t_k, *, causal=False, dtype=torch.float32, device="cpu"):
        assert causal, "asked for the bias without the causal mask, against the declaration"
        return ReferenceImplementation().alibi_bias(h, t_q, t_k, causal=True, dtype=dtype, device=device)

    def alibi_attention(self, q, k, v, *, causal=False):
        assert causal, "asked for attention without the causal mask, against the declaration"
        return ReferenceImplementation().alibi_attention(q, k, v, causal=True)


def test_a_causal_only_alibi_is_never_asked_for_the_symmetric_bias() -> None:
    """Declared conventions bind every property: each ALiBi row passes or is not applicable, none errs."""
    from specformer.property import load_properties

    alibi = [q for q, p in load_properties().items() if p.claim.startswith("alibi.") and set(p.needs) & {
        "alibi_bias", "alibi_attention"}]
    assert len(alibi) >= 5
    outcomes = {q: run_row(q, _CausalOnlyAlibi()) for q in alibi}
    wrong = {q: (r.outcome, r.message[:200]) for q, r in outcomes.items()
             if r.outcome not in ("pass", "refuted", "not-applicable")}
    assert not wrong, wrong
    assert sum(r.outcome in ("pass", "refuted") for r in outcomes.values()) >= 3, outcomes
