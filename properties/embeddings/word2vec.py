"""Properties of word2vec: the skip-gram objective, its softmax and its cost, negative sampling,
the noise distribution and CBOW's average (``spec/embeddings/word2vec.md``).

Expected values are written out here in float64: the softmax ``p(w_O | w_I)`` of 001, the
average log probability of 000, the negative-sampling loss of 001, ``f^e / sum f^e``, and
the mean of the context rows. Implementations are called through
``ctx.noise_distribution`` and ``ctx.cbow_hidden``. Properties with ``needs=()`` run the
documents' own code (002's ``SkipGram`` and ``negative_sampling_loss``, transcribed below)
and the reference's pair and example builders; the harness's tests swap the small
functions here for wrong ones to show each property can fail.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.flops import count_flops
from specformer.property import claim_property
from specformer.reference.embeddings.word2vec import cbow_examples, negative_sampling_loss, skipgram_pairs

from . import strategies as sf

F64 = torch.float64


class SkipGram(nn.Module):
    """002's simplified word2vec ("Skip-Gram Model, Architecture"), line for line, in float64."""

    def __init__(self, vocab_size: int, embed_dim: int, device: str | None = None) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, dtype=F64, device=device)
        self.output = nn.Linear(embed_dim, vocab_size, dtype=F64, device=device)

    def forward(self, center_word: torch.Tensor) -> torch.Tensor:
        embed = self.embedding(center_word)  # (B,) -> (B, d)
        return self.output(embed)  # (B, d) -> (B, V)


def _model(vocab: int, dim: int, seed: int) -> SkipGram:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return SkipGram(vocab, dim)


# --- the skip-gram objective ------------------------------------------------------------------


def log_p(centre: int, context: int, v: torch.Tensor, v_out: torch.Tensor) -> torch.Tensor:
    """001's ``log p(w_O | w_I) = v'_O . v_I - log sum_w exp(v'_w . v_I)``."""
    scores = v_out @ v[centre]  # (V, d) @ (d,) -> (V,)
    return scores[context] - torch.logsumexp(scores, dim=0)


def average_log_probability(tokens: list[int], window: int, v: torch.Tensor, v_out: torch.Tensor) -> torch.Tensor:
    """000's ``1/T sum_t sum_{-c <= j <= c, j != 0} log p(w_{t+j} | w_t)``, terms outside the text dropped."""
    total = torch.zeros((), dtype=F64)
    for t in range(len(tokens)):
        for j in range(-window, window + 1):
            if j != 0 and 0 <= t + j < len(tokens):
                total = total + log_p(tokens[t], tokens[t + j], v, v_out)
    return total / len(tokens)


def pairs(tokens: list[int], window: int) -> list[tuple[int, int]]:
    """The ``(centre, context)`` training pairs (the reference's builder)."""
    return skipgram_pairs(tokens, window)


@st.composite
def text_cases(draw: st.DrawFn) -> tuple[list[int], int, torch.Tensor, torch.Tensor]:
    """Token ids (length 1 to 12 over ``V <= 6``), a window ``c`` of 1 to 3, and tables ``v``, ``v'`` ``(V, d)``."""
    vocab, dim = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    tokens = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=12), label="tokens")
    return tokens, draw(st.integers(1, 3), label="c"), draw(sf.tables(vocab, dim)), draw(sf.tables(vocab, dim))


#: 002's example: "The quick brown fox jumps", window 1, as ids 0..4.
SENTENCE = ["the", "quick", "brown", "fox", "jumps"]


@claim_property("word2vec.skipgram-objective", needs=(), dtypes=("float64",))
@given(case=text_cases())
@example(case=([0, 1, 2, 3, 4], 1, torch.eye(5, 2, dtype=F64), torch.eye(5, 2, dtype=F64)))
def the_skipgram_objective_averages_log_p_over_the_window_pairs(ctx: Context, case) -> None:
    """000's objective is ``-1/T`` times the summed loss of the training pairs: every ``(w_t, w_{t+j})``
    with ``0 < |j| <= c`` inside the text, ``2cT - c(c+1)`` of them when ``T > c``; in 002's sentence with
    window 1 the centre "brown" has the pairs (brown, quick) and (brown, fox)."""
    tokens, window, v, v_out = case
    training = pairs(tokens, window)
    loss = sum((-log_p(c, o, v, v_out) for c, o in training), torch.zeros((), dtype=F64))
    ctx.assert_close(-loss / len(tokens), average_log_probability(tokens, window, v, v_out),
                     "average log probability against the pairs' summed loss", scale=8)
    t = len(tokens)
    expected = sum(min(window, i) + min(window, t - 1 - i) for i in range(t))
    assert len(training) == expected, f"{len(training)} pairs, the window allows {expected}"
    if t > window:
        assert expected == 2 * window * t - window * (window + 1), f"{expected} pairs is not 2cT - c(c+1)"
    if tokens == [0, 1, 2, 3, 4] and window == 1:
        named = [(SENTENCE[c], SENTENCE[o]) for c, o in training if SENTENCE[c] == "brown"]
        assert named == [("brown", "quick"), ("brown", "fox")], f"pairs of 'brown': {named}"


def code_loss(model: SkipGram, centre: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """002's training step: ``F.cross_entropy(model(center), context)``, per pair."""
    return F.cross_entropy(model(centre), context, reduction="none")


@claim_property("word2vec.softmax", needs=(), dtypes=("float64",))
@given(vocab=st.integers(2, 12), dim=st.integers(1, 6), data=st.data(), seed=sf.seeds())
def the_codes_cross_entropy_is_minus_log_of_the_softmax_with_a_bias(ctx: Context, vocab, dim, data, seed) -> None:
    """002's ``SkipGram`` with ``F.cross_entropy`` is ``-log p(w_O | w_I)``, 001's softmax with ``v`` the
    embedding rows and ``v'`` the output layer's rows, plus the output layer's bias ``b_w`` in every score."""
    model = _model(vocab, dim, seed)
    b = data.draw(st.integers(1, 4), label="B")
    centre, context = data.draw(sf.id_tensors(vocab, (b,))), data.draw(sf.id_tensors(vocab, (b,)))
    v, v_out, bias = (p.detach() for p in (model.embedding.weight, model.output.weight, model.output.bias))
    scores = v[centre] @ v_out.T + bias  # (B, d) @ (d, V) + (V,) -> (B, V)
    expected = -(scores.gather(1, context[:, None])[:, 0] - torch.logsumexp(scores, dim=1))  # (B,)
    ctx.assert_close(code_loss(model, centre, context).detach(), expected, "-log p(context | centre) with a bias")
    with torch.no_grad():
        model.output.bias.zero_()
    unbiased = torch.stack([-log_p(int(c), int(o), v, v_out) for c, o in zip(centre, context)])
    ctx.assert_close(code_loss(model, centre, context).detach(), unbiased, "-log p(context | centre), 001's softmax")


# --- the cost of the softmax ------------------------------------------------------------------


def softmax_flops(vocab: int, dim: int, batch: int) -> int:
    """FLOPs of 002's ``SkipGram`` forward for ``batch`` centre words (meta tensors: nothing allocated)."""
    model = SkipGram(vocab, dim, device="meta")
    with count_flops() as flops:
        model(torch.zeros(batch, dtype=torch.int64, device="meta"))
    return flops[0]


def negative_sampling_flops(vocab: int, dim: int, batch: int, k: int) -> int:
    """FLOPs of the negative-sampling scores: each centre vector against its ``1 + k`` output vectors."""
    out_table = torch.zeros(vocab, dim, dtype=F64, device="meta")
    with count_flops() as flops:
        hidden = torch.zeros(batch, dim, 1, dtype=F64, device="meta")  # (B, d, 1)
        chosen = out_table[torch.zeros(batch, 1 + k, dtype=torch.int64, device="meta")]  # (B, 1 + k, d)
        torch.bmm(chosen, hidden)  # (B, 1 + k, d) @ (B, d, 1) -> (B, 1 + k, 1)
    return flops[0]


@claim_property("word2vec.softmax-cost", needs=(), dtypes=("float64",), max_examples=20)
@given(vocab=st.sampled_from([1_000, 10_000, 50_000, 100_000, 3_000_000]), dim=st.sampled_from([100, 300]),
       batch=st.integers(1, 4), k=st.integers(1, 20))
@example(vocab=50_000, dim=300, batch=1, k=5)
def the_softmax_costs_2_v_d_flops_per_word_and_negative_sampling_2_k_plus_1_d(ctx: Context, vocab, dim, batch,
                                                                                k) -> None:
    """The output layer of 002's skip-gram costs ``2 V d`` FLOPs per centre word, linear in the vocabulary;
    the scores of negative sampling cost ``2 (k + 1) d``, whatever ``V``: ``V / (k + 1)`` times less
    (8,333 for 50,000 words and ``k = 5``)."""
    full = softmax_flops(vocab, dim, batch)
    assert full == 2 * batch * dim * vocab, f"the softmax layer costs {full} FLOPs, expected 2 B d V"
    sampled = negative_sampling_flops(vocab, dim, batch, k)
    assert sampled == 2 * batch * (k + 1) * dim, f"negative sampling costs {sampled} FLOPs, expected 2 B (k+1) d"
    assert full * (k + 1) == sampled * vocab, f"ratio {full / sampled:.1f}, expected V / (k + 1)"


# --- negative sampling: 001's formula and 002's code ------------------------------------------


def loss_001(centre: int, positive: int, negatives: list[int], v: torch.Tensor, v_out: torch.Tensor) -> torch.Tensor:
    """001's ``-log sigma(v'_O . v_I) - sum_i log sigma(-v'_i . v_I)``, one noise word per term."""
    loss = -F.logsigmoid(v_out[positive] @ v[centre])
    for w in negatives:
        loss = loss - F.logsigmoid(-(v_out[w] @ v[centre]))
    return loss


def code_002(center: int, positive: int, negatives: list[int], table: torch.Tensor) -> torch.Tensor:
    """002's ``negative_sampling_loss``, line for line; its ``embedding(...)`` looks up rows of ``table``."""
    def embedding(ids):
        return table[ids]

    center_embed = embedding(center)
    pos_embed = embedding(positive)
    pos_score = torch.dot(center_embed, pos_embed)
    pos_loss = -F.logsigmoid(pos_score)
    neg_embeds = embedding(torch.tensor(negatives))
    neg_scores = torch.matmul(neg_embeds, center_embed)
    neg_loss = -F.logsigmoid(-neg_scores).sum()
    return pos_loss + neg_loss


@st.composite
def sampling_cases(draw: st.DrawFn) -> tuple[int, int, list[int], torch.Tensor, torch.Tensor]:
    """A centre, a positive word, ``k`` noise words (1 to 5) and input and output tables ``(V, d)``."""
    vocab, dim = draw(st.integers(2, 8)), draw(st.integers(1, 4))
    word = st.integers(0, vocab - 1)
    negatives = draw(st.lists(word, min_size=1, max_size=5), label="negatives")
    return draw(word), draw(word), negatives, draw(sf.tables(vocab, dim)), draw(sf.tables(vocab, dim))


NS_EXAMPLE = (0, 1, [2], torch.tensor([[1.0], [1.0], [0.0]], dtype=F64), torch.tensor([[0.0], [2.0], [1.0]], dtype=F64))


def run_002(center: int, positive: int, negatives: list[int], v: torch.Tensor, v_out: torch.Tensor) -> torch.Tensor:
    """002's code handed word2vec's two tables: it has one ``embedding`` and reads only the input table."""
    return code_002(center, positive, negatives, v)


@claim_property("word2vec.negative-sampling", needs=(), dtypes=("float64",))
@given(case=sampling_cases())
@example(case=NS_EXAMPLE)
def the_codes_loss_is_001s_loss_with_one_table_for_both_roles(ctx: Context, case) -> None:
    """Corrected: 002's code equals 001's loss with ``v' = v`` (one table for input and output vectors); with
    word2vec's separate tables 001's loss is the reference's (batched) ``negative_sampling_loss``."""
    centre, positive, negatives, v, v_out = case
    ctx.assert_close(code_002(centre, positive, negatives, v), loss_001(centre, positive, negatives, v, v),
                     "002's code against 001's loss with v' = v")
    batched = negative_sampling_loss(v[[centre]], v_out[[positive]], v_out[negatives][None])[0]
    ctx.assert_close(batched, loss_001(centre, positive, negatives, v, v_out), "001's loss, batched and summed")


@claim_property("word2vec.negative-sampling", needs=(), expect="counterexample", dtypes=("float64",))
@given(case=sampling_cases())
@example(case=NS_EXAMPLE)
def the_codes_loss_is_001s_loss_as_written(ctx: Context, case) -> None:
    """As written: 002's ``negative_sampling_loss`` (one ``embedding`` table) is word2vec's loss of 001,
    whose input vectors ``v`` and output vectors ``v'`` are separate tables."""
    centre, positive, negatives, v, v_out = case
    ctx.assert_close(run_002(centre, positive, negatives, v, v_out), loss_001(centre, positive, negatives, v, v_out),
                     "002's code against 001's loss with separate input and output tables")


# --- the noise distribution ---------------------------------------------------------------------


def noise_formula(counts: torch.Tensor, exponent: float) -> torch.Tensor:
    """``f^e / sum f^e`` in float64."""
    weights = counts.to(F64).pow(exponent)
    return weights / weights.sum()


@claim_property("word2vec.noise-distribution", needs=("noise_distribution",))
@given(counts=sf.word_counts(), exponent=st.sampled_from([0.75, 0.75, 1.0, 0.5, 0.0, 0.25, 1.5]))
@example(counts=torch.tensor([1.0, 10.0, 100.0, 1000.0], dtype=F64), exponent=0.75)
def the_noise_distribution_is_the_count_to_the_three_quarters_normalised(ctx: Context, counts, exponent) -> None:
    """``P_n(w) = f(w)^e / sum_u f(u)^e``: 001's ``e = 3/4``, and ``e = 1`` (unigram) and ``0`` (uniform)."""
    counts = sf.fit_counts(counts, ctx.dtype)
    ctx.assert_close(ctx.noise_distribution(counts, exponent), noise_formula(counts, exponent),
                     f"P_n(w) with exponent {exponent}", scale=4)


@claim_property("word2vec.noise-distribution", needs=("noise_distribution",))
@given(counts=sf.word_counts(max_vocab=8))
@example(counts=torch.tensor([1.0, 16.0], dtype=F64))
def the_three_quarters_power_moves_probability_from_frequent_to_rare_words(ctx: Context, counts) -> None:
    """Relative to the unigram distribution, ``f^(3/4)`` lowers frequent words: for ``f_a >= 2 f_b``,
    ``P_n(a) / P_n(b) < f_a / f_b`` (it is ``(f_a / f_b)^(3/4)``, at most ``2^(-1/4)`` of that); the most
    frequent word loses share against the unigram distribution, the rarest gains."""
    counts = sf.fit_counts(counts, ctx.dtype)
    noise = ctx.noise_distribution(counts, 0.75)
    unigram = counts / counts.sum()
    for a in range(len(counts)):
        for b in range(len(counts)):
            if counts[a] >= 2 * counts[b]:
                raw = float(counts[a] / counts[b])  # (f_a / f_b)^(3/4) <= 2^(-1/4) f_a / f_b: a 16% margin
                assert noise[a] < raw * noise[b], (
                    f"P_n({a}) / P_n({b}) = {float(noise[a] / noise[b]):.6g} is not below f_a / f_b = {raw:g} "
                    f"(counts {counts[a]:g} and {counts[b]:g}; (f_a / f_b)^(3/4) = {raw ** 0.75:.6g})"
                )
    expected = noise_formula(counts, 0.75)
    top, rare = int(counts.argmax()), int(counts.argmin())
    resolvable = min(unigram[top] - expected[top], expected[rare] - unigram[rare]) > 10 * ctx.tol.rtol * unigram[top]
    if counts.max() >= 2 * counts.min() and resolvable:  # the shift exceeds the dtype's rounding
        assert noise[top] < unigram[top] and noise[rare] > unigram[rare], (
            f"most frequent word: {float(noise[top]):.6g} against unigram {float(unigram[top]):.6g}; "
            f"rarest: {float(noise[rare]):.6g} against {float(unigram[rare]):.6g}"
        )


# --- CBOW ------------------------------------------------------------------------------------


@claim_property("word2vec.cbow-average", needs=("cbow_hidden",))
@given(case=sf.context_cases())
@example(case=(torch.tensor([[0, 1, 1]]), torch.tensor([[3.0, 0.0], [0.0, 3.0]], dtype=F64)))
def cbows_hidden_vector_is_the_mean_of_the_context_rows(ctx: Context, case) -> None:
    """``h = (1/c) sum_j E[w_j]`` over the ``c`` context words (002's ``context_embeds.mean(dim=1)``), a
    repeated word counted each time."""
    context_ids, table = case
    expected = table[context_ids].sum(dim=1) / context_ids.shape[1]  # (B, c, d) -> (B, d)
    ctx.assert_close(ctx.cbow_hidden(context_ids, table), expected, "CBOW's hidden vector", scale=2)


@claim_property("word2vec.cbow-average", needs=("cbow_hidden",))
@given(case=sf.context_cases(), data=st.data())
def cbows_hidden_vector_ignores_the_order_of_the_context(ctx: Context, case, data) -> None:
    """A bag of words: permuting the context words leaves the hidden vector unchanged."""
    context_ids, table = case
    order = data.draw(sf.permutations_of(context_ids.shape[1]), label="order")
    ctx.assert_close(ctx.cbow_hidden(context_ids[:, order], table), ctx.cbow_hidden(context_ids, table),
                     "CBOW's hidden vector after permuting the context", scale=2)


# --- training examples ------------------------------------------------------------------------


def examples(tokens: list[int], window: int) -> tuple[int, int]:
    """The number of skip-gram pairs and of CBOW examples of a text (the reference's builders)."""
    return len(pairs(tokens, window)), len(cbow_examples(tokens, window))


@claim_property("word2vec.training-examples", needs=(), dtypes=("float64",))
@given(length=st.integers(2, 60), window=st.integers(1, 10))
@example(length=5, window=1)
def skipgram_makes_about_2c_examples_per_word_and_cbow_one(ctx: Context, length, window) -> None:
    """Each position of a text of ``T >= 2`` words is one CBOW example, and the centre of up to ``2c``
    skip-gram pairs: ``sum_t min(c, t) + min(c, T - 1 - t)`` pairs, ``2cT - c(c+1)`` when ``T > c``. Per
    epoch skip-gram evaluates its output layer ``2c - c(c+1)/T`` times as often as CBOW."""
    tokens = list(range(length))
    skipgram, cbow = examples(tokens, window)
    expected = sum(min(window, t) + min(window, length - 1 - t) for t in range(length))
    assert cbow == length, f"{cbow} CBOW examples for {length} words"
    assert skipgram == expected, f"{skipgram} skip-gram pairs, expected {expected}"
    if length > window:
        assert skipgram == 2 * window * length - window * (window + 1), f"{skipgram} pairs is not 2cT - c(c+1)"
        ratio = skipgram / cbow
        assert math.isclose(ratio, 2 * window - window * (window + 1) / length), f"ratio {ratio} is not 2c - c(c+1)/T"
