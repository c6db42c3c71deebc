"""The reference's static embeddings: one-hot lookup, similarity, word2vec, GloVe and fastText.

Hand-computed values, properties drawn with Hypothesis, the error messages, and (where
gensim is installed) agreement with gensim's n-grams, out-of-vocabulary vectors and
analogies. gensim is optional: those tests skip without it.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from specformer.reference.embeddings.fasttext import char_ngrams, compose, oov_vector, word_vector
from specformer.reference.embeddings.glove import (
    cooccurrence_counts,
    glove_loss,
    glove_loss_as_002_codes,
    glove_weight,
)
from specformer.reference.embeddings.onehot import lookup, lookup_via_one_hot, one_hot
from specformer.reference.embeddings.similarity import (
    analogy,
    analogy_ranking,
    cosine_similarity,
    dot_product,
    euclidean_distance,
    most_similar,
)
from specformer.reference.embeddings.word2vec import (
    build_vocab,
    cbow_context_mean,
    cbow_examples,
    compare_negative_sampling,
    negative_sampling_loss,
    negative_sampling_loss_as_002_codes,
    noise_distribution,
    sample_negatives,
    skipgram_pairs,
    skipgram_softmax_loss,
    softmax_loss,
    train_word2vec,
)

F64 = torch.float64
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                reason="CUDA is not available"))]
PROPERTY = settings(max_examples=40, deadline=None, derandomize=True)

CORPUS = [s.split() for s in [
    "the king rules the kingdom", "the queen rules the kingdom", "the man walks the dog",
    "the woman walks the dog", "a king is a royal man", "a queen is a royal woman",
    "the cat chases the mouse", "the dog chases the cat",
]]


def random(*shape: int, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64).to(device)


def gensim_or_skip():
    """The gensim package, or a clean skip when it (or one of its imports) is missing."""
    try:
        import gensim  # noqa: F401
        from gensim.models import fasttext
    except ImportError as error:
        pytest.skip(f"gensim is not installed ({error})")
    return fasttext


# --------------------------------------------------------------------------- one-hot


@PROPERTY
@given(vocab=st.integers(1, 12), dim=st.integers(1, 6), length=st.integers(0, 7), seed=st.integers(0, 2**16))
def test_lookup_equals_one_hot_times_table(vocab: int, dim: int, length: int, seed: int) -> None:
    table = random(vocab, dim, seed=seed)
    ids = torch.randint(vocab, (2, length), generator=torch.Generator().manual_seed(seed))
    rows = lookup(ids, table)
    assert rows.shape == (2, length, dim)
    torch.testing.assert_close(rows, one_hot(ids, vocab) @ table, rtol=0, atol=0)
    torch.testing.assert_close(lookup_via_one_hot(ids, table), rows, rtol=0, atol=0)
    torch.testing.assert_close(rows, torch.nn.functional.embedding(ids, table), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_one_hot_vectors_are_orthogonal_and_sqrt2_apart(device: str) -> None:
    vocab = 7
    e = one_hot(torch.arange(vocab, device=device), vocab)
    assert e.device.type == device and e.dtype == F64
    torch.testing.assert_close(e @ e.T, torch.eye(vocab, dtype=F64, device=device), rtol=0, atol=0)
    distances = euclidean_distance(e[:, None, :], e[None, :, :])  # (V, 1, V) against (1, V, V) -> (V, V)
    expected = math.sqrt(2) * (1 - torch.eye(vocab, dtype=F64, device=device))
    torch.testing.assert_close(distances, expected, rtol=0, atol=1e-15)
    assert torch.equal(lookup(torch.tensor([3], device=device), e), e[3:4])


def test_one_hot_errors() -> None:
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 3\)"):
        one_hot(torch.tensor([0, 3]), 3)
    with pytest.raises(ValueError, match="integer tensor"):
        one_hot(torch.tensor([0.0]), 3)
    with pytest.raises(ValueError, match="2-D"):
        lookup(torch.tensor([0]), torch.zeros(3))


# --------------------------------------------------------------------------- similarity


@PROPERTY
@given(dim=st.integers(1, 8), seed=st.integers(0, 2**16))
def test_for_unit_vectors_cosine_is_dot_and_squared_distance_is_2_minus_2cos(dim: int, seed: int) -> None:
    a, b = random(2, dim, seed=seed)
    a, b = a / a.norm(), b / b.norm()
    cos = cosine_similarity(a, b)
    torch.testing.assert_close(cos, dot_product(a, b), rtol=0, atol=1e-14)
    torch.testing.assert_close(euclidean_distance(a, b) ** 2, 2 - 2 * cos, rtol=0, atol=1e-14)


@PROPERTY
@given(dim=st.integers(1, 8), seed=st.integers(0, 2**16), scale=st.sampled_from([1e-200, 1e-3, 1.0, 1e200]))
def test_cosine_is_scale_invariant_bounded_and_matches_torch(dim: int, seed: int, scale: float) -> None:
    a, b = random(2, dim, seed=seed)
    expected = F.cosine_similarity(a, b, dim=0)
    cos = cosine_similarity(a * scale, b * scale)
    assert -1.0 <= float(cos) <= 1.0
    torch.testing.assert_close(cos, expected, rtol=0, atol=1e-14)


def test_hand_computed_similarities() -> None:
    a, b = torch.tensor([3.0, 4.0], dtype=F64), torch.tensor([4.0, 3.0], dtype=F64)
    assert float(dot_product(a, b)) == 24.0
    assert float(euclidean_distance(a, b)) == pytest.approx(math.sqrt(2), abs=1e-15)
    assert float(cosine_similarity(a, b)) == pytest.approx(24 / 25, abs=1e-15)


def test_zero_vector_and_mismatched_dimensions_raise() -> None:
    zero, v = torch.zeros(3, dtype=F64), torch.ones(3, dtype=F64)
    with pytest.raises(ValueError, match="zero vector"):
        cosine_similarity(zero, v)
    table = torch.eye(3, dtype=F64)
    table[1] = 0
    with pytest.raises(ValueError, match=r"the table has a zero vector at index \(1,\)"):
        most_similar(v, table, k=1)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        most_similar(torch.ones(2, dtype=F64), torch.eye(3, dtype=F64), k=1)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        cosine_similarity(v, torch.ones(4, dtype=F64))
    with pytest.raises(ValueError, match="mismatched dimensions"):
        dot_product(v, torch.ones(2, dtype=F64))
    with pytest.raises(ValueError, match="inf or NaN"):
        cosine_similarity(torch.tensor([math.nan, 1.0], dtype=F64), torch.ones(2, dtype=F64))


@pytest.mark.parametrize("device", DEVICES)
def test_most_similar_sorts_excludes_and_breaks_ties_by_index(device: str) -> None:
    table = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [-1.0, 0.0]], dtype=F64, device=device)
    indices, scores = most_similar(table[0], table, k=5)
    assert indices.tolist() == [0, 3, 2, 1, 4]
    torch.testing.assert_close(scores.cpu(), torch.tensor([1, 1, 1 / math.sqrt(2), 0, -1], dtype=F64))
    indices, _ = most_similar(table[0], table, k=2, exclude=[0])
    assert indices.tolist() == [3, 2]
    with pytest.raises(ValueError, match=r"k must lie in \[1, 4\]"):
        most_similar(table[0], table, k=5, exclude=[0])


def test_analogy_on_a_constructed_table() -> None:
    # axes: royalty, gender (+1 female), and a third feature for the distractors
    words = ["king", "queen", "man", "woman", "apple", "prince"]
    table = torch.tensor([[1.0, -1.0, 0.1], [1.0, 1.0, 0.1], [0.0, -1.0, 0.1], [0.0, 1.0, 0.1],
                          [0.0, 0.0, 1.0], [0.9, -1.0, 0.3]], dtype=F64)
    king, queen, man, woman = 0, 1, 2, 3
    assert analogy(man, king, woman, table) == queen  # man : king :: woman : queen
    assert analogy(man, king, woman, table, normalize=False) == queen
    indices, _ = analogy_ranking(man, king, woman, table, k=3)
    assert set(indices.tolist()).isdisjoint({man, king, woman}) and words[int(indices[0])] == "queen"
    with pytest.raises(ValueError, match="not a row"):
        analogy(0, 1, 6, table)


@settings(max_examples=10, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**16))
def test_analogy_is_gensims_most_similar_with_a_negative(seed: int) -> None:
    fasttext = gensim_or_skip()  # noqa: F841 - only the import check
    import numpy as np
    from gensim.models import KeyedVectors

    table = random(12, 5, seed=seed)
    keyed = KeyedVectors(5, dtype=np.float64)
    keyed.add_vectors([f"w{i}" for i in range(12)], table.numpy().copy())
    expected = keyed.most_similar(positive=["w1", "w2"], negative=["w0"], topn=3)
    indices, scores = analogy_ranking(0, 1, 2, table, k=3)
    assert [f"w{i}" for i in indices.tolist()] == [word for word, _ in expected]
    # gensim normalises the mean vector at float32 precision (matutils.unitvec): agreement to 1e-6
    torch.testing.assert_close(scores, torch.tensor([s for _, s in expected], dtype=F64), rtol=0, atol=1e-6)


# --------------------------------------------------------------------------- word2vec


def test_skipgram_pairs_of_the_day4_example() -> None:
    pairs = skipgram_pairs("The quick brown fox jumps".split(), window=1)
    assert [context for centre, context in pairs if centre == "brown"] == ["quick", "fox"]
    assert pairs[:3] == [("The", "quick"), ("quick", "The"), ("quick", "brown")]
    assert cbow_examples([1, 2, 3], window=1) == [([2], 1), ([1, 3], 2), ([2], 3)]


@PROPERTY
@given(length=st.integers(0, 20), window=st.integers(1, 5))
def test_skipgram_pair_count_and_symmetry(length: int, window: int) -> None:
    tokens = list(range(length))
    pairs = skipgram_pairs(tokens, window)
    assert len(pairs) == sum(2 * min(window, length - 1 - t) for t in range(length))
    if length >= window + 1:
        assert len(pairs) == 2 * window * length - window * (window + 1)
    assert sorted(pairs) == sorted((b, a) for a, b in pairs)  # a fixed window gives a symmetric multiset
    assert all(1 <= abs(a - b) <= window for a, b in pairs)


@PROPERTY
@given(counts=st.lists(st.integers(0, 1000), min_size=1, max_size=12).filter(any),
       exponent=st.sampled_from([0.0, 0.5, 0.75, 1.0, 2.0]))
def test_noise_distribution_sums_to_one_and_exponent_one_is_unigram(counts: list[int], exponent: float) -> None:
    f = torch.tensor(counts, dtype=F64)
    p = noise_distribution(f, exponent)
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-12) and bool((p >= 0).all())
    torch.testing.assert_close(noise_distribution(f, 1.0), f / f.sum(), rtol=0, atol=1e-15)
    torch.testing.assert_close(noise_distribution(f, 0.0), torch.full_like(f, 1 / len(counts)), rtol=0, atol=1e-15)


def test_three_quarters_raises_the_rarest_words_share() -> None:
    f = torch.tensor([1000.0, 100.0, 10.0, 1.0], dtype=F64)
    unigram, noise = noise_distribution(f, 1.0), noise_distribution(f, 0.75)
    assert noise[-1] > unigram[-1] and noise[0] < unigram[0]
    torch.testing.assert_close(noise, f**0.75 / (f**0.75).sum(), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="every count is zero"):
        noise_distribution(torch.zeros(3), 0.75)
    with pytest.raises(ValueError, match="non-negative"):
        noise_distribution(torch.tensor([1.0, -1.0]))


def test_sample_negatives_is_seeded_and_follows_the_distribution() -> None:
    noise = noise_distribution(torch.tensor([3.0, 1.0, 0.0, 4.0], dtype=F64), 1.0)
    draw = sample_negatives(noise, (200, 50), torch.Generator().manual_seed(1))
    assert torch.equal(draw, sample_negatives(noise, (200, 50), torch.Generator().manual_seed(1)))
    frequencies = torch.bincount(draw.flatten(), minlength=4).to(F64) / draw.numel()
    assert int((draw == 2).sum()) == 0
    torch.testing.assert_close(frequencies, noise, rtol=0, atol=0.02)


@pytest.mark.parametrize("device", DEVICES)
def test_cbow_averages_the_context(device: str) -> None:
    table = random(6, 4, seed=3, device=device)
    context = torch.tensor([[0, 1, 2, 3], [4, 5, 5, 0]], device=device)
    mean = cbow_context_mean(context, table)
    torch.testing.assert_close(mean, table[context].mean(dim=1), rtol=0, atol=1e-15)  # 002's .mean(dim=1)
    torch.testing.assert_close(mean[0], (table[0] + table[1] + table[2] + table[3]) / 4, rtol=0, atol=1e-15)
    mask = torch.tensor([[True, True, False, False], [True, False, False, False]], device=device)
    masked = cbow_context_mean(context, table, mask)
    torch.testing.assert_close(masked, torch.stack([(table[0] + table[1]) / 2, table[4]]), rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="no context word"):
        cbow_context_mean(context, table, torch.zeros_like(mask))


def test_softmax_loss_is_001s_formula() -> None:
    v, v_out = random(5, 3, seed=1), random(5, 3, seed=2)
    centre, context = 2, 4
    p = math.exp(float(v_out[context] @ v[centre])) / sum(math.exp(float(v_out[w] @ v[centre])) for w in range(5))
    loss = skipgram_softmax_loss(torch.tensor([centre]), torch.tensor([context]), v, v_out)
    assert float(loss[0]) == pytest.approx(-math.log(p), abs=1e-12)
    bias = random(5, seed=4)
    logits = v[[centre]] @ v_out.T + bias
    torch.testing.assert_close(softmax_loss(v[[centre]], torch.tensor([context]), v_out, bias),
                               F.cross_entropy(logits, torch.tensor([context]), reduction="none"))


def test_negative_sampling_hand_value_and_001_against_002() -> None:
    k = 4
    zero = torch.zeros(1, 3, dtype=F64)
    loss = negative_sampling_loss(zero, zero, torch.zeros(1, k, 3, dtype=F64))
    assert float(loss[0]) == pytest.approx((k + 1) * math.log(2), abs=1e-15)  # sigma(0) = 1/2 in every term

    v, v_out = random(6, 3, seed=5), random(6, 3, seed=6)
    tied = compare_negative_sampling(1, 2, [3, 4, 0], v, v)
    assert tied.agree and tied.loss_001 == pytest.approx(tied.loss_002, abs=1e-14)
    untied = compare_negative_sampling(1, 2, [3, 4, 0], v, v_out)
    assert not untied.agree  # same formula, but 002 looks the output vectors up in the input table
    by_hand = (-math.log(torch.sigmoid(v_out[2] @ v[1]))
               - sum(math.log(torch.sigmoid(-v_out[n] @ v[1])) for n in (3, 4, 0)))
    assert untied.loss_001 == pytest.approx(by_hand, abs=1e-12)
    assert float(negative_sampling_loss_as_002_codes(1, 2, [3, 4, 0], v_out)) == pytest.approx(
        float(negative_sampling_loss(v_out[[1]], v_out[[2]], v_out[[3, 4, 0]][None])[0]), abs=1e-14)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        negative_sampling_loss(zero, zero, torch.zeros(1, k, 2, dtype=F64))


@pytest.mark.parametrize("architecture", ["skipgram", "cbow"])
def test_trainer_reduces_its_loss_and_is_seeded(architecture: str) -> None:
    model = train_word2vec(CORPUS, architecture=architecture, dim=8, window=2, epochs=20, lr=0.1, seed=0)
    assert len(model.losses) == 20 and model.input_vectors.shape == (len(model.vocab), 8)
    # output vectors start at zero: every term is log 2 at first, 1 + 5 terms less the negatives that were skipped
    assert 3.0 < model.losses[0] <= 6 * math.log(2)
    assert sum(model.losses[-3:]) / 3 < 0.75 * model.losses[0]
    again = train_word2vec(CORPUS, architecture=architecture, dim=8, window=2, epochs=20, lr=0.1, seed=0)
    assert torch.equal(model.input_vectors, again.input_vectors)
    assert model.vector("the").shape == (8,)


def test_trainer_with_the_full_softmax_reduces_its_loss() -> None:
    model = train_word2vec(CORPUS, loss="softmax", dim=8, epochs=12, lr=0.1)
    assert model.losses[0] == pytest.approx(math.log(len(model.vocab)), rel=0.01)  # uniform at the start
    assert model.losses[-1] < 0.8 * model.losses[0]


def test_vocabulary_and_trainer_errors() -> None:
    vocab = build_vocab([["b", "a", "b"], ["c"]])
    assert vocab.words == ("b", "a", "c") and vocab.counts == (2, 1, 1)
    assert vocab.encode(["c", "b"]) == [2, 0]
    with pytest.raises(ValueError, match="unknown word 'zebra'"):
        vocab.id("zebra")
    with pytest.raises(ValueError, match="unknown word 'zebra'"):
        vocab.encode(["a", "zebra"])
    for empty in ([], [[]], [[], []]):
        with pytest.raises(ValueError, match="the corpus is empty"):
            build_vocab(empty)
        with pytest.raises(ValueError, match="the corpus is empty"):
            train_word2vec(empty)
    with pytest.raises(ValueError, match="empty after min_count=100"):
        build_vocab(CORPUS, min_count=100)
    with pytest.raises(ValueError, match="no training pairs"):
        train_word2vec([["alone"], ["again"]])
    with pytest.raises(ValueError, match="not a string"):
        build_vocab("the king")
    with pytest.raises(ValueError, match="architecture"):
        train_word2vec(CORPUS, architecture="glove")


# --------------------------------------------------------------------------- GloVe


@PROPERTY
@given(xs=st.lists(st.floats(0, 1e6, allow_nan=False), min_size=2, max_size=20))
def test_glove_weight_is_capped_at_one_and_monotone(xs: list[float]) -> None:
    x = torch.tensor(sorted(xs), dtype=F64)
    f = glove_weight(x)
    assert bool((f <= 1).all()) and bool((f >= 0).all())
    assert bool((f[1:] >= f[:-1]).all())
    torch.testing.assert_close(f, torch.minimum(torch.ones_like(x), (x / 100) ** 0.75), rtol=0, atol=0)


def test_glove_weight_values() -> None:
    f = glove_weight(torch.tensor([0.0, 1.0, 50.0, 100.0, 1e4], dtype=F64))
    expected = torch.tensor([0.0, 0.01**0.75, 0.5**0.75, 1.0, 1.0], dtype=F64)
    torch.testing.assert_close(f, expected, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="non-negative"):
        glove_weight(torch.tensor([-1.0]))


def test_cooccurrence_is_symmetric_with_harmonic_weights() -> None:
    x = cooccurrence_counts([[0, 1, 2, 0]], vocab_size=3, window=2)
    expected = torch.tensor([[0.0, 1.0 + 1 / 2, 1.0 + 1 / 2],
                             [1.0 + 1 / 2, 0.0, 1.0],
                             [1.0 + 1 / 2, 1.0, 0.0]], dtype=F64)
    torch.testing.assert_close(x, expected, rtol=0, atol=1e-15)
    uniform = cooccurrence_counts([[0, 1, 2, 0], [2, 2]], vocab_size=3, window=3, weighting="uniform")
    assert torch.equal(uniform, uniform.T) and float(uniform[0, 0]) == 2.0 and float(uniform[2, 2]) == 2.0
    assert float(uniform.sum()) == 2 * (6 + 1)  # 6 pairs in the first sentence, 1 in the second, both directions
    with pytest.raises(ValueError, match="the corpus is empty"):
        cooccurrence_counts([[], []], vocab_size=3, window=2)


def test_glove_loss_matches_its_formula_and_002s_tied_form() -> None:
    x = cooccurrence_counts([[0, 1, 2, 3, 1, 0, 2]], vocab_size=4, window=3)
    w, w_tilde, b, b_tilde = random(4, 3, seed=7), random(4, 3, seed=8), random(4, seed=9), random(4, seed=10)
    by_hand = sum(min(1.0, (float(x[i, j]) / 100) ** 0.75)
                  * (float(w[i] @ w_tilde[j] + b[i] + b_tilde[j]) - math.log(float(x[i, j]))) ** 2
                  for i in range(4) for j in range(4) if x[i, j] > 0)
    assert float(glove_loss(x, w, w_tilde, b, b_tilde)) == pytest.approx(by_hand, abs=1e-12)
    assert float(glove_loss(x, w, w, b, b)) == pytest.approx(float(glove_loss_as_002_codes(w, b, x)), abs=1e-12)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        glove_loss(x, w, random(4, 2), b, b_tilde)


# --------------------------------------------------------------------------- fastText


def test_character_ngrams_of_the_documents_examples() -> None:
    assert char_ngrams("where", 3, 3) == ["<wh", "whe", "her", "ere", "re>"]
    assert char_ngrams("apple", 3, 3) == ["<ap", "app", "ppl", "ple", "le>"]
    grams = char_ngrams("where")  # 3..6
    assert len(grams) == 5 + 4 + 3 + 2 and "<where" in grams and "<where>" not in grams
    assert "<the>" in char_ngrams("the")  # the whole marked word fits within max_n
    assert char_ngrams("banana", 3, 3).count("ana") == 2


@PROPERTY
@given(word=st.text(min_size=0, max_size=10), min_n=st.integers(1, 4), extra=st.integers(0, 4))
def test_character_ngram_count(word: str, min_n: int, extra: int) -> None:
    max_n = min_n + extra
    length = len(word) + 2
    grams = char_ngrams(word, min_n, max_n)
    assert len(grams) == sum(length - n + 1 for n in range(min_n, min(max_n, length) + 1))
    assert all(g in f"<{word}>" and min_n <= len(g) <= max_n for g in grams)


@PROPERTY
@given(word=st.text(st.characters(codec="utf-8"), max_size=10))
def test_character_ngrams_equal_gensims_compute_ngrams(word: str) -> None:
    fasttext = gensim_or_skip()
    assert char_ngrams(word, 3, 6) == fasttext.compute_ngrams(word, 3, 6)
    assert char_ngrams(word, 3, 3) == fasttext.compute_ngrams(word, 3, 3)


def test_oov_vector_is_gensims_mean_not_the_sum() -> None:
    fasttext = gensim_or_skip()
    import numpy as np

    model = fasttext.FastText(CORPUS, vector_size=8, window=2, min_count=1, min_n=3, max_n=6, bucket=1000,
                              epochs=3, seed=1, workers=1)
    keyed = model.wv
    table = torch.tensor(np.array(keyed.vectors_ngrams), dtype=F64)
    for word in ["kingly", "walker", "banana"]:
        assert word not in keyed.key_to_index
        index = {g: fasttext.ft_hash_bytes(g.encode("utf-8")) % keyed.bucket for g in char_ngrams(word)}
        expected = torch.tensor(np.array(keyed[word]), dtype=F64)
        mean = oov_vector(word, index, table, combine="mean")
        torch.testing.assert_close(mean, expected, rtol=0, atol=1e-6)
        total = oov_vector(word, index, table, combine="sum")
        torch.testing.assert_close(total / len(char_ngrams(word)), expected, rtol=0, atol=1e-6)
        assert not torch.allclose(total, expected, atol=1e-6)
    word_table = torch.tensor(np.array(keyed.vectors_vocab), dtype=F64)
    for word in ["king", "the"]:
        index = {g: fasttext.ft_hash_bytes(g.encode("utf-8")) % keyed.bucket for g in char_ngrams(word)}
        vector = word_vector(word, index, table, word_index=keyed.key_to_index, word_table=word_table)
        torch.testing.assert_close(vector, torch.tensor(np.array(keyed[word]), dtype=F64), rtol=0, atol=1e-6)


def test_the_three_compositions() -> None:
    own = torch.tensor([1.0, 0.0], dtype=F64)
    grams = torch.tensor([[2.0, 0.0], [0.0, 4.0], [1.0, 2.0]], dtype=F64)
    torch.testing.assert_close(compose(own, grams, "mean"), torch.tensor([1.0, 1.5], dtype=F64))
    torch.testing.assert_close(compose(own, grams, "sum"), torch.tensor([4.0, 6.0], dtype=F64))
    torch.testing.assert_close(compose(own, grams, "word_plus_mean"), torch.tensor([2.0, 2.0], dtype=F64))
    torch.testing.assert_close(compose(None, grams, "mean"), compose(None, grams, "word_plus_mean"))
    with pytest.raises(ValueError, match="unknown combine"):
        compose(own, grams, "max")


def test_fasttext_errors() -> None:
    index, table = {"<ab": 0}, torch.ones(1, 2, dtype=F64)
    with pytest.raises(ValueError, match="unknown word 'xyz'"):
        oov_vector("xyz", index, table)
    with pytest.raises(ValueError, match="mismatched dimensions"):
        word_vector("ab", index, table, word_index={"ab": 0}, word_table=torch.ones(1, 3, dtype=F64))
    with pytest.raises(ValueError, match="min_n"):
        char_ngrams("ab", 4, 3)


def test_lookup_gradient_accumulates_repeated_ids_and_leaves_other_rows_zero() -> None:
    from specformer.reference.embeddings.onehot import lookup_gradient

    table = torch.zeros(4, 2, dtype=torch.float64)
    ids = torch.tensor([[1, 1], [3, 1]])
    upstream = torch.arange(8, dtype=torch.float64).reshape(2, 2, 2)  # (B, t, d)
    gradient = lookup_gradient(ids, table, upstream)
    expected = torch.tensor([[0.0, 0.0], [0 + 2 + 6, 1 + 3 + 7], [0.0, 0.0], [4.0, 5.0]], dtype=torch.float64)
    torch.testing.assert_close(gradient, expected, rtol=0, atol=0)
    auto = table.clone().requires_grad_(True)
    (auto[ids] * upstream).sum().backward()
    torch.testing.assert_close(gradient, auto.grad, rtol=0, atol=0)
    with pytest.raises(ValueError, match="upstream must have shape"):
        lookup_gradient(ids, table, upstream[0])


def test_initial_table_is_seeded_standard_normal_and_tied_logits_score_against_the_table() -> None:
    from specformer.reference.embeddings.onehot import initial_table, tied_logits

    first, second = initial_table(200, 50, 3), initial_table(200, 50, 3)
    assert torch.equal(first, second) and first.dtype == torch.float32
    assert not torch.equal(first, initial_table(200, 50, 4))
    assert abs(float(first.double().mean())) < 0.02 and abs(float(first.double().std()) - 1) < 0.02
    with pytest.raises(ValueError, match="at least one row"):
        initial_table(0, 3, 0)
    table = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)
    torch.testing.assert_close(tied_logits(table[[2]], table), torch.tensor([[1.0, 2.0, 2.0]], dtype=torch.float64))
    with pytest.raises(ValueError, match="hidden must be"):
        tied_logits(torch.ones(1, 3, dtype=torch.float64), table)


def test_skipgram_probabilities_are_the_softmax_of_the_output_scores() -> None:
    from specformer.reference.embeddings.word2vec import skipgram_probabilities, skipgram_softmax_loss

    g = torch.Generator().manual_seed(0)
    v, v_out = torch.randn(5, 3, generator=g, dtype=torch.float64), torch.randn(5, 3, generator=g, dtype=torch.float64)
    centres = torch.tensor([0, 4, 4])
    p = skipgram_probabilities(centres, v, v_out)
    torch.testing.assert_close(p.sum(-1), torch.ones(3, dtype=torch.float64))
    contexts = torch.tensor([1, 2, 3])
    torch.testing.assert_close(-p[torch.arange(3), contexts].log(), skipgram_softmax_loss(centres, contexts, v, v_out))
    with pytest.raises(ValueError, match="differ in width"):
        skipgram_probabilities(centres, v, v_out[:, :2])
