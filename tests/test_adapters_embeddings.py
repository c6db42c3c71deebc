"""The embeddings family's adapters: torch-embedding and gensim against the reference.

PyTorch's ``nn.Embedding``, ``nn.EmbeddingBag(mode="mean")`` and ``F.cosine_similarity``
must agree with the reference to rounding in float64 and to ~1e-6 in float32; gensim's
n-grams must equal the reference's, its negative-sampling table must be the formula to
within its quantisation ``1 / (2^31 - 1)``, and its CBOW forward pass must give the mean
of the context rows. What each library does outside the protocol's domain (a zero
vector, counts gensim cannot hold) is pinned too. The gensim tests are skipped without
gensim; a missing gensim must give an ImportError that names it.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from conftest import run_row
from specformer.adapters.torch_embedding import implementation as torch_embedding
from specformer.protocol import NotApplicable, provided_operations
from specformer.reference.embeddings.fasttext import char_ngrams
from specformer.reference.embeddings.onehot import lookup
from specformer.reference.embeddings.similarity import cosine_similarity
from specformer.reference.embeddings.word2vec import cbow_context_mean, noise_distribution

F64 = torch.float64
EXACT = {"rtol": 1e-12, "atol": 1e-12}
FLOAT32 = {"rtol": 1e-5, "atol": 1e-6}
QUANTUM = 1 / (2**31 - 1)
HAS_GENSIM = importlib.util.find_spec("gensim") is not None
needs_gensim = pytest.mark.skipif(not HAS_GENSIM, reason="gensim is not installed")


def _inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    table = torch.randn(7, 5, generator=g, dtype=F64)
    ids = torch.randint(0, 7, (3, 4), generator=g)
    a, b = torch.randn(6, 5, generator=g, dtype=F64), torch.randn(6, 5, generator=g, dtype=F64)
    return table, ids, a, b


def test_torch_embedding_provides_lookup_cosine_cbow_gradient_init_tying_and_distance() -> None:
    assert provided_operations(torch_embedding) == {"embedding_lookup", "cosine_similarity", "cbow_hidden",
                                                    "lookup_gradient", "embedding_init", "tied_logits",
                                                    "euclidean_distance"}


@pytest.mark.parametrize("seed", range(3))
def test_torch_embeddings_gradient_tying_and_distance_agree_with_the_reference(seed: int) -> None:
    from specformer.reference.embeddings.onehot import lookup_gradient, tied_logits
    from specformer.reference.embeddings.similarity import euclidean_distance

    table, ids, a, b = _inputs(seed)
    upstream = torch.randn(*ids.shape, table.shape[1], generator=torch.Generator().manual_seed(seed), dtype=F64)
    torch.testing.assert_close(torch_embedding.lookup_gradient(ids, table, upstream),
                               lookup_gradient(ids, table, upstream), **EXACT)
    torch.testing.assert_close(torch_embedding.tied_logits(a, table), tied_logits(a, table), **EXACT)
    torch.testing.assert_close(torch_embedding.euclidean_distance(a, b), euclidean_distance(a, b), **EXACT)


def test_torch_embeddings_initial_table_is_nn_embeddings_and_leaves_the_global_generator_alone() -> None:
    from torch import nn

    state = torch.random.get_rng_state()
    table = torch_embedding.embedding_init(300, 7, 5, dtype=torch.float64)
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(5)
    assert torch.equal(table, nn.Embedding(300, 7, dtype=torch.float64).weight.detach())
    assert abs(float(table.std()) - 1.0) < 0.05  # N(0, 1), not Uniform(-1/sqrt(7), 1/sqrt(7)) (std 0.22)


def test_pairwise_distances_default_eps_is_why_the_adapter_passes_zero() -> None:
    a, b = torch.tensor([[1.0, 2.0]], dtype=F64), torch.tensor([[1.0, 2.0]], dtype=F64)
    assert float(torch.nn.functional.pairwise_distance(a, b)) == pytest.approx(2**0.5 * 1e-6)
    assert float(torch_embedding.euclidean_distance(a, b)) == 0.0


@pytest.mark.parametrize(("qualname", "dtype"), [
    ("onehot.the_gradient_of_a_lookup_is_the_one_hot_transpose_times_the_upstream_gradient", "float32"),
    ("onehot.a_tied_output_layer_shares_the_embedding_matrix", "float64"),
    ("onehot.nn_embedding_starts_from_standard_normal_entries", "float64"),
    ("similarity.cosine_ignores_the_lengths_that_move_the_euclidean_distance", "float64"),
])
def test_torch_embedding_passes_the_properties_of_its_new_operations(qualname: str, dtype: str) -> None:
    row = run_row(qualname, torch_embedding, dtype)
    assert row.outcome == "pass", row.message


@pytest.mark.parametrize("seed", range(3))
def test_torch_embedding_agrees_with_the_reference(seed: int) -> None:
    table, ids, a, b = _inputs(seed)
    torch.testing.assert_close(torch_embedding.embedding_lookup(ids, table), lookup(ids, table), **EXACT)
    torch.testing.assert_close(torch_embedding.embedding_lookup(ids[0, 0], table), table[ids[0, 0]], **EXACT)
    torch.testing.assert_close(torch_embedding.cosine_similarity(a, b), cosine_similarity(a, b), **EXACT)
    torch.testing.assert_close(torch_embedding.cbow_hidden(ids, table), cbow_context_mean(ids, table), **EXACT)
    f32 = torch_embedding.cbow_hidden(ids, table.float())
    assert f32.dtype == torch.float32
    torch.testing.assert_close(f32.double(), cbow_context_mean(ids, table), **FLOAT32)
    torch.testing.assert_close(torch_embedding.cosine_similarity(a.float(), b.float()).double(),
                               cosine_similarity(a, b), **FLOAT32)


def test_torch_cosine_gives_zero_for_a_zero_vector_where_the_reference_raises() -> None:
    a, b = torch.zeros(1, 3, dtype=F64), torch.ones(1, 3, dtype=F64)
    assert float(torch_embedding.cosine_similarity(a, b)[0]) == 0.0
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity(a, b)


def test_torch_embedding_declares_the_norm_clamp_pytorch_applies() -> None:
    """The declared ``cosine_norm_clamp`` is the eps PyTorch uses: parallel rows of norm ``eps / 2`` and 1 get
    ``(eps / 2) / eps = 0.5`` (the formula gives 1), rows of norm ``2 eps`` and 1 the formula's 1."""
    (eps,) = torch_embedding.capabilities.conventions["cosine_norm_clamp"]
    one = torch.tensor([[1.0, 0.0]], dtype=F64)
    assert float(torch_embedding.cosine_similarity(torch.tensor([[eps / 2, 0.0]], dtype=F64), one)[0]) == \
        pytest.approx(0.5, rel=1e-12)
    assert float(torch_embedding.cosine_similarity(torch.tensor([[2 * eps, 0.0]], dtype=F64), one)[0]) == \
        pytest.approx(1.0, rel=1e-12)


def test_torch_cosine_in_float16_loses_its_clamp_and_gives_nan_for_a_zero_vector() -> None:
    """The float16 deviation ``deviations.toml`` lists: eps = 1e-8 rounds to 0 in float16, so 0/0 = NaN; bfloat16
    holds 1e-8 and gives the clamped 0."""
    assert float(torch.tensor(1e-8, dtype=torch.float16)) == 0.0
    a, b = torch.zeros(1, 3), torch.ones(1, 3)
    assert torch.isnan(torch_embedding.cosine_similarity(a.half(), b.half())).all()
    assert float(torch_embedding.cosine_similarity(a.bfloat16(), b.bfloat16())[0]) == 0.0


def test_torch_embedding_does_not_modify_the_table() -> None:
    table, ids, _, _ = _inputs(7)
    before = table.clone()
    torch_embedding.embedding_lookup(ids, table)
    torch_embedding.cbow_hidden(ids, table)
    assert torch.equal(table, before)


# -- gensim -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gensim():
    """The gensim adapter (skipped without gensim)."""
    pytest.importorskip("gensim")
    from specformer.adapters.gensim_parts import implementation

    return implementation


@needs_gensim
def test_gensim_provides_ngrams_noise_cbow_and_fasttext_vectors(gensim) -> None:
    assert provided_operations(gensim) == {"char_ngrams", "noise_distribution", "cbow_hidden", "fasttext_vector",
                                           "train_skipgram", "train_fasttext"}


@needs_gensim
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_gensims_fasttext_vectors_average_the_word_and_its_ngrams(gensim, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    grams = sorted(set(char_ngrams("cat", 3, 6)) | set(char_ngrams("dog", 3, 6)))
    rows = torch.randn(len(grams), 4, generator=g, dtype=F64)
    own = torch.randn(1, 4, generator=g, dtype=F64)
    cat = rows[[grams.index(x) for x in char_ngrams("cat", 3, 6)]]  # (n, 4)
    dog = rows[[grams.index(x) for x in char_ngrams("dog", 3, 6)]]
    known = gensim.fasttext_vector("cat", ["cat"], own.to(dtype), grams, rows.to(dtype), 3, 6)
    unseen = gensim.fasttext_vector("dog", ["cat"], own.to(dtype), grams, rows.to(dtype), 3, 6)
    tol = EXACT if dtype == F64 else FLOAT32
    torch.testing.assert_close(known.double(), (own[0] + cat.sum(0)) / (len(cat) + 1), **tol)
    torch.testing.assert_close(unseen.double(), dog.mean(0), **FLOAT32)  # gensim sums an unseen word's in float32


@needs_gensim
@pytest.mark.parametrize("word", ["where", "apple", "banana", "", "a", "e\u0301\U0001F600x", "\u6f22\u5b57", "<>"])
@pytest.mark.parametrize(("min_n", "max_n"), [(3, 3), (3, 6), (1, 2), (2, 7)])
def test_gensim_ngrams_are_the_references(gensim, word: str, min_n: int, max_n: int) -> None:
    assert sorted(gensim.char_ngrams(word, min_n, max_n)) == sorted(char_ngrams(word, min_n, max_n))


@needs_gensim
def test_gensims_hashed_ngrams_leave_out_the_lone_markers() -> None:
    """A library fact the spec records: the n-grams gensim hashes (like fastText's C++) skip "<" and ">" alone."""
    from gensim.models.fasttext import compute_ngrams, compute_ngrams_bytes

    plain = compute_ngrams("where", 1, 2)
    hashed = [g.decode("utf-8") for g in compute_ngrams_bytes("where", 1, 2)]
    assert sorted(plain) == sorted([*hashed, "<", ">"])


@needs_gensim
@pytest.mark.parametrize("exponent", [0.75, 1.0, 0.0, 0.5])
def test_gensims_noise_table_is_the_formula_within_its_quantum(gensim, exponent: float) -> None:
    counts = torch.tensor([1.0, 10.0, 100.0, 1000.0, 5.0, 5.0, 10**6], dtype=F64)
    got = gensim.noise_distribution(counts, exponent)
    assert got.dtype == F64
    assert float((got - noise_distribution(counts, exponent)).abs().max()) <= QUANTUM
    f32 = gensim.noise_distribution(counts.float(), exponent)
    assert f32.dtype == torch.float32
    torch.testing.assert_close(f32.double(), noise_distribution(counts, exponent), **FLOAT32)


@needs_gensim
@pytest.mark.parametrize("counts", [[0.0, 1.0], [1.5, 2.0]])
def test_gensim_holds_whole_counts_of_at_least_one_only(gensim, counts: list[float]) -> None:
    with pytest.raises(NotApplicable, match="whole counts of at least 1"):
        gensim.noise_distribution(torch.tensor(counts, dtype=F64))


@needs_gensim
def test_gensims_defaults_are_the_documents() -> None:
    from gensim.models import FastText, Word2Vec

    for model in (Word2Vec(), FastText()):
        assert (model.ns_exponent, model.cbow_mean) == (0.75, 1)
    assert (FastText().wv.min_n, FastText().wv.max_n) == (3, 6)


@needs_gensim
@pytest.mark.parametrize("seed", range(3))
def test_gensims_cbow_forward_pass_averages_the_context(gensim, seed: int) -> None:
    table, ids, _, _ = _inputs(seed)
    torch.testing.assert_close(gensim.cbow_hidden(ids, table), cbow_context_mean(ids, table), **EXACT)
    f32 = gensim.cbow_hidden(ids, table.float())
    assert f32.dtype == torch.float32
    torch.testing.assert_close(f32.double(), cbow_context_mean(ids, table), **FLOAT32)
    narrow = torch.randn(2, 9, dtype=F64, generator=torch.Generator().manual_seed(seed))  # d + 1 > V
    torch.testing.assert_close(gensim.cbow_hidden(torch.tensor([[1, 1, 0]]), narrow),
                               cbow_context_mean(torch.tensor([[1, 1, 0]]), narrow), **EXACT)


@needs_gensim
def test_gensims_cbow_is_not_applicable_to_huge_entries(gensim) -> None:
    with pytest.raises(NotApplicable, match="entries up to"):
        gensim.cbow_hidden(torch.tensor([[0]]), torch.full((1, 2), 100.0, dtype=F64))


@needs_gensim
@pytest.mark.parametrize(("qualname", "dtype"), [
    ("word2vec.the_noise_distribution_is_the_count_to_the_three_quarters_normalised", "float64"),
    ("word2vec.the_three_quarters_power_moves_probability_from_frequent_to_rare_words", "float64"),
    ("word2vec.cbows_hidden_vector_is_the_mean_of_the_context_rows", "float32"),
    ("fasttext.the_ngrams_are_the_substrings_of_the_marked_word", "float64"),
    ("fasttext.the_implementation_composes_with_one_of_the_three_readings", "float64"),
    ("fasttext.an_unseen_word_gets_the_vector_of_its_ngrams", "float32"),
])
def test_gensim_passes_the_properties(gensim, qualname: str, dtype: str) -> None:
    row = run_row(qualname, gensim, dtype)
    assert row.outcome == "pass", row.message


def test_a_missing_gensim_is_named(monkeypatch) -> None:
    from specformer.adapters.gensim_parts import implementation

    for module in ("gensim", "gensim.models", "gensim.models.fasttext", "gensim.models.word2vec"):
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match="the gensim adapter needs the 'gensim' package"):
        implementation.char_ngrams("where")
    with pytest.raises(ImportError, match="'gensim'"):
        implementation.noise_distribution(torch.ones(2, dtype=F64))
