"""Every property of ``properties/embeddings/similarity.py`` catches a wrong cosine similarity."""

from __future__ import annotations

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import similarity


def _cos(a, b):
    return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))


DOT = Mutant("cosine-without-normalising", cosine_similarity=lambda a, b: (a * b).sum(-1))
BATCH_NORMS = Mutant("cosine-over-batch-norms", cosine_similarity=lambda a, b: (a * b).sum(-1) / (a.norm() * b.norm()))
DISTANCE = Mutant("cosine-distance", cosine_similarity=lambda a, b: 1 - _cos(a, b))
ANGLE = Mutant("angle-instead-of-cosine", cosine_similarity=lambda a, b: torch.arccos(_cos(a, b).clamp(-1, 1)))
FIRST_NORM_ONLY = Mutant("normalises-a-only", cosine_similarity=lambda a, b: (a * b).sum(-1) / a.norm(dim=-1))

FORMULA = "similarity.cosine_similarity_is_the_dot_product_over_the_norms"
UNIT = "similarity.for_unit_vectors_cosine_is_the_dot_product_and_fixes_the_distance"
MAGNITUDE = "similarity.cosine_ignores_the_lengths_that_move_the_euclidean_distance"
ZERO = "similarity.libraries_disagree_on_a_zero_vector"

CASES = [
    (FORMULA, DOT), (FORMULA, BATCH_NORMS), (FORMULA, DISTANCE),
    (UNIT, DISTANCE), (UNIT, ANGLE), (UNIT, BATCH_NORMS),
    (MAGNITUDE, DOT), (MAGNITUDE, FIRST_NORM_ONLY),
]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_reference_and_torch_pass(dtype: str) -> None:
    from specformer.adapters.reference import implementation as reference
    from specformer.adapters.torch_embedding import implementation as torch_embedding

    for impl in (reference, torch_embedding):
        for qualname in (FORMULA, UNIT, MAGNITUDE):
            row = run_row(qualname, impl, dtype)
            assert row.outcome == "pass", (impl.name, qualname, row.message)


def test_a_cosine_without_the_clamp_is_caught(monkeypatch) -> None:
    assert run_row(ZERO, None).outcome == "pass"
    monkeypatch.setattr(similarity, "torch_cosine", _cos)  # 0/0 = NaN at a zero vector
    row = run_row(ZERO, None)
    assert row.outcome == "fail" and "cos(0, b) is not 0" in row.message, row


def test_a_reference_that_answers_for_a_zero_vector_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(similarity, "reference_cosine", lambda a, b: torch.zeros(a.shape[0], dtype=a.dtype))
    row = run_row(ZERO, None)
    assert row.outcome == "fail" and "reference returned a value" in row.message, row


def test_every_similarity_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {ZERO}
    mine = {q for q, p in properties.items() if p.module == "similarity"}
    assert mine <= covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_rejects_bad_input() -> None:
    from specformer.reference.embeddings.similarity import cosine_similarity

    a = torch.tensor([[1.0, 2.0], [0.0, 0.0]], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"b has a zero vector at index \(1,\)"):
        cosine_similarity(a[[0, 0]], a)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        cosine_similarity(a, torch.ones(2, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="floating-point"):
        cosine_similarity(torch.ones(2, 2, dtype=torch.int64), a)
    with pytest.raises(ValueError, match="inf or NaN"):
        cosine_similarity(torch.full((1, 2), float("nan"), dtype=torch.float64), a[:1])
