"""Properties of word2vec: the skip-gram objective, its softmax and its cost, negative sampling,
the noise distribution and CBOW's average (``spec/embeddings/word2vec.md``).

Expected values are written out here in float64: the softmax ``p(w_O | w_I)`` of 001, the
average log probability of 000, the negative-sampling loss of 001, ``f^e / sum f^e``, and
the mean of the context rows, the window's pairs and contexts, and the optimum ``PMI - log k``
of the expected negative-sampling loss. Implementations are called through the checked
calls ``ctx.skipgram_pairs``, ``ctx.cbow_examples``, ``ctx.skipgram_softmax``,
``ctx.negative_sampling_loss``, ``ctx.noise_distribution`` and ``ctx.cbow_hidden``; the cost of
its calls is measured in its worker by the FLOPs of its matrix products and by the elements
of the tensors it creates. A declared ``negative_sampling_reduction`` (``mean``: 001's loss
over ``k + 1``) is undone before a comparison.
Properties with ``needs=()`` run the documents' own code (002's ``SkipGram`` and
``negative_sampling_loss``, transcribed below) and count FLOPs of the two output layers;
the harness's tests swap the small functions here for wrong ones to show each can fail.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from hypothesis import assume, example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.flops import count_flops
from specformer.property import claim_property
from specformer.protocol import NotApplicable
from specformer.reference.embeddings.word2vec import negative_sampling_loss

from . import strategies as sf
from ..conventions import under_one_of
from ..differences import first_difference

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


@st.composite
def text_cases(draw: st.DrawFn) -> tuple[list[int], int, torch.Tensor, torch.Tensor]:
    """Token ids (length 1 to 12 over ``V <= 6``), a window ``c`` of 1 to 3, and tables ``v``, ``v'`` ``(V, d)``."""
    vocab, dim = draw(st.integers(1, 6)), draw(st.integers(1, 4))
    tokens = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=12), label="tokens")
    return tokens, draw(st.integers(1, 3), label="c"), draw(sf.tables(vocab, dim)), draw(sf.tables(vocab, dim))


#: 002's example: "The quick brown fox jumps", window 1, as ids 0..4.
SENTENCE = ["the", "quick", "brown", "fox", "jumps"]


def window_pairs(tokens: list[int], window: int) -> list[tuple[int, int]]:
    """The ``(w_t, w_{t+j})``, ``0 < |j| <= c``, inside the text, written out here."""
    return [(tokens[t], tokens[t + j]) for t in range(len(tokens)) for j in range(-window, window + 1)
            if j != 0 and 0 <= t + j < len(tokens)]


@claim_property("word2vec.skipgram-objective", needs=("skipgram_pairs", "skipgram_softmax"))
@given(case=text_cases())
@example(case=([0, 1, 2, 3, 4], 1, torch.eye(5, 2, dtype=F64), torch.eye(5, 2, dtype=F64)))
def the_skipgram_objective_averages_log_p_over_the_window_pairs(ctx: Context, case) -> None:
    """000's objective is ``-1/T`` times the summed loss of the implementation's training pairs, each scored
    by its ``log p(w_O | w_I)``: the pairs are every ``(w_t, w_{t+j})`` with ``0 < |j| <= c`` inside the text
    (``2cT - c(c+1)`` of them when ``T > c``), in any order; in 002's sentence with window 1 the centre
    "brown" has the pairs (brown, quick) and (brown, fox)."""
    ctx.require("skipgram_window", "fixed")
    tokens, window, v, v_out = case
    training = ctx.skipgram_pairs(tokens, window)
    expected_pairs = window_pairs(tokens, window)
    assert sorted(training) == sorted(expected_pairs), (
        f"{len(training)} pairs {sorted(training)[:12]}, the window of {window} gives {sorted(expected_pairs)[:12]}"
    )
    probabilities = ctx.skipgram_softmax(torch.arange(v.shape[0]), v, v_out)  # (V, V): row = centre
    objective = sum((torch.log(probabilities[c, o]) for c, o in training), torch.zeros((), dtype=F64))
    ctx.assert_close(objective / len(tokens), average_log_probability(tokens, window, v, v_out),
                     "1/T sum of the pairs' log p against 000's average log probability", scale=8)
    if tokens == [0, 1, 2, 3, 4] and window == 1:
        named = sorted((SENTENCE[c], SENTENCE[o]) for c, o in training if SENTENCE[c] == "brown")
        assert named == [("brown", "fox"), ("brown", "quick")], f"pairs of 'brown': {named}"


@claim_property("word2vec.skipgram-objective", needs=("skipgram_pairs",))
@given(tokens=st.lists(st.integers(0, 5), min_size=1, max_size=12), window=st.integers(1, 3))
@example(tokens=[0, 1, 2, 3, 4], window=1)
def the_skipgram_pairs_are_each_word_with_every_neighbour_within_the_window(ctx: Context, tokens: list[int],
                                                                             window: int) -> None:
    """The terms of 000's objective without a softmax: the implementation's training pairs are every
    ``(w_t, w_{t+j})`` with ``0 < |j| <= c`` inside the text, in any order, as written out here from the text
    and the window (``2cT - c(c+1)`` of them when ``T > c``); in 002's sentence with window 1 the centre
    "brown" has the pairs (brown, quick) and (brown, fox)."""
    ctx.require("skipgram_window", "fixed")
    training = ctx.skipgram_pairs(tokens, window)
    expected = window_pairs(tokens, window)
    assert sorted(training) == sorted(expected), (
        f"window {window} over {tokens}: the pairs {first_difference(sorted(training), sorted(expected))}"
    )
    if len(tokens) > window:
        assert len(training) == 2 * window * len(tokens) - window * (window + 1), "not 2cT - c(c+1) pairs"
    if tokens == [0, 1, 2, 3, 4] and window == 1:
        named = sorted((SENTENCE[c], SENTENCE[o]) for c, o in training if SENTENCE[c] == "brown")
        assert named == [("brown", "fox"), ("brown", "quick")], f"pairs of 'brown': {named}"


@claim_property("word2vec.softmax", needs=("skipgram_softmax",))
@given(case=text_cases())
@example(case=([0], 1, torch.tensor([[1.0], [0.0]], dtype=F64), torch.tensor([[2.0], [-1.0]], dtype=F64)))
def the_skipgram_probability_is_the_softmax_of_the_output_scores(ctx: Context, case) -> None:
    """001's ``p(w_O | w_I) = exp(v'_O . v_I) / sum_w exp(v'_w . v_I)`` for every centre and every word of
    the vocabulary, with separate input vectors ``v`` and output vectors ``v'``."""
    tokens, _, v, v_out = case
    centres = torch.tensor(tokens)
    scores = v[centres] @ v_out.T  # (B, d) @ (d, V) -> (B, V)
    expected = torch.exp(scores - torch.logsumexp(scores, dim=1, keepdim=True))  # (B, V)
    ctx.assert_close(ctx.skipgram_softmax(centres, v, v_out), expected, "p(w | w_I)", scale=4)


#: The largest score drawn at large scale, per dtype: past ``log`` of the dtype's largest finite value, so that
#: a softmax that exponentiates the scores without subtracting their maximum overflows.
LARGE_SCORE = {"float32": 96.0, "float64": 768.0}


@claim_property("word2vec.softmax", needs=("skipgram_softmax",), dtypes=("float32", "float64"))
@given(case=text_cases())
@example(case=([0, 1], 1, torch.tensor([[1.0], [-1.0]], dtype=F64), torch.tensor([[3.0], [0.5]], dtype=F64)))
def the_skipgram_probability_stays_the_softmax_at_large_scores(ctx: Context, case) -> None:
    """001's ``p(w_O | w_I)`` at scores past the dtype's overflow of ``exp``: the output table is scaled by a power
    of two (exactly) until the largest score lies in ``[L, 2L)`` (``L = 96`` in float32, ``768`` in float64) and
    is positive; the softmax is still a distribution, equal to ``exp(s - logsumexp(s))`` computed in float64 from
    the inputs as the dtype holds them. Scores up to ``2L`` carry an absolute rounding error of about
    ``d eps 2L`` in the dtype, which moves each probability by that much relatively: the tolerance is widened 16
    times."""
    tokens, _, v, v_out = case
    centres = torch.tensor(tokens)
    held = [t.to(ctx.dtype).to(F64) for t in (v, v_out)]  # the tables as the dtype holds them
    scores = held[0][centres] @ held[1].T  # (B, d) @ (d, V) -> (B, V)
    largest = scores.abs().max()
    assume(float(largest) > 1e-3)
    if float(scores.max()) < float(largest):  # the largest magnitude is negative: flip it positive
        v_out, held[1], scores = -v_out, -held[1], -scores
    limit = LARGE_SCORE[str(ctx.dtype).removeprefix("torch.")]
    power = math.ceil(math.log2(limit / float(scores.max())))
    if float(scores.max()) * 2.0 ** power >= 2 * limit:
        power -= 1
    v_out, held[1], scores = (t * 2.0 ** power for t in (v_out, held[1], scores))  # exact: a power of two
    expected = torch.exp(scores - torch.logsumexp(scores, dim=1, keepdim=True))  # (B, V)
    ctx.assert_close(ctx.skipgram_softmax(centres, v, v_out), expected,
                     f"p(w | w_I) at scores up to {float(scores.max()):.4g}", scale=16)


def code_loss(model: SkipGram, centre: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
    """002's training step: ``F.cross_entropy(model(center), context)``, per pair."""
    return F.cross_entropy(model(centre), context, reduction="none")


@claim_property("word2vec.softmax", needs=(), about="documents-code", dtypes=("float64",))
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


@claim_property("word2vec.softmax-cost", needs=(), about="documents-code", dtypes=("float64",), max_examples=20)
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


def _counted(ctx: Context, call) -> int:
    """FLOPs ``FlopCounterMode`` counts in the implementation's worker during ``call()``."""
    with ctx.counting_flops() as counted:
        call()
    return counted[0]


@claim_property("word2vec.softmax-cost", needs=("skipgram_softmax", "negative_sampling_loss"), dtypes=("float32",),
                max_examples=10)
@given(vocab=st.integers(50, 120), dim=st.integers(1, 8), batch=st.integers(1, 3), k=st.integers(1, 5),
       seed=sf.seeds())
def the_implementations_softmax_grows_with_the_vocabulary_and_negative_sampling_does_not(
        ctx: Context, vocab, dim, batch, k, seed) -> None:
    """The implementation's full softmax for ``B`` centre words costs at least ``2 B V d`` FLOPs (every score
    ``v'_w . v_I``), while its negative-sampling loss costs the same for ``V`` and ``10 V`` words, and less than
    the softmax over ``10 V``."""
    g = torch.Generator().manual_seed(seed)
    centres, contexts = torch.randint(0, vocab, (batch,), generator=g), torch.randint(0, vocab, (batch,), generator=g)
    negatives = torch.randint(0, vocab, (batch, k), generator=g)
    costs = {}
    for size in (vocab, 10 * vocab):
        v, v_out = torch.randn(size, dim, generator=g, dtype=F64), torch.randn(size, dim, generator=g, dtype=F64)
        costs[size] = (_counted(ctx, lambda: ctx.skipgram_softmax(centres, v, v_out)),
                       _counted(ctx, lambda: ctx.negative_sampling_loss(centres, contexts, negatives, v, v_out)))
    if costs[vocab][0] == 0:
        raise NotApplicable(f"{ctx.impl_name}'s softmax runs in code FlopCounterMode cannot see: no FLOPs counted")
    for size, (full, sampled) in costs.items():
        assert full >= 2 * batch * size * dim, f"the softmax over {size} words costs {full} FLOPs, below 2 B V d"
    assert costs[vocab][1] == costs[10 * vocab][1], (
        f"negative sampling costs {costs[vocab][1]} FLOPs for {vocab} words and {costs[10 * vocab][1]} for "
        f"{10 * vocab}: it depends on the vocabulary"
    )
    assert costs[10 * vocab][1] < costs[10 * vocab][0], "negative sampling costs as much as the full softmax"


@claim_property("word2vec.softmax-cost", needs=("skipgram_softmax",), dtypes=("float32",), max_examples=10)
@given(vocab=st.integers(50, 120), dim=st.integers(1, 8), batch=st.integers(1, 3), seed=sf.seeds())
def the_implementations_full_softmax_costs_at_least_2_b_v_d_flops(ctx: Context, vocab, dim, batch, seed) -> None:
    """The full softmax alone: for ``B`` centre words the implementation's ``skipgram_softmax`` costs at least
    ``2 B V d`` FLOPs (every score ``v'_w . v_I``) over ``V`` and over ``10 V`` words, so its cost grows at
    least linearly with the vocabulary."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.randint(0, vocab, (batch,), generator=g)
    costs = {}
    for size in (vocab, 10 * vocab):
        v, v_out = torch.randn(size, dim, generator=g, dtype=F64), torch.randn(size, dim, generator=g, dtype=F64)
        costs[size] = _counted(ctx, lambda: ctx.skipgram_softmax(centres, v, v_out))
    if costs[vocab] == 0:
        raise NotApplicable(f"{ctx.impl_name}'s softmax runs in code FlopCounterMode cannot see: no FLOPs counted")
    for size, full in costs.items():
        assert full >= 2 * batch * size * dim, (
            f"the softmax of {batch} centre words over {size} words of width {dim} costs {full} FLOPs, below "
            f"2 B V d = {2 * batch * size * dim}"
        )


def _created(ctx: Context, call) -> int:
    """Elements of the tensors the implementation creates in its worker during ``call()`` (views add nothing)."""
    with ctx.counting_created() as counted:
        call()
    return counted[0]


@claim_property("word2vec.softmax-cost", needs=("negative_sampling_loss",), max_examples=10)
@given(vocab=st.integers(50, 120), dim=st.integers(1, 8), batch=st.integers(1, 3), k=st.integers(1, 5),
       seed=sf.seeds())
def negative_samplings_work_per_pair_does_not_grow_with_the_vocabulary(ctx: Context, vocab, dim, batch, k,
                                                                       seed) -> None:
    """Negative sampling scores each pair's true word and its ``k`` noise words, whatever the vocabulary: the
    elements of the tensors the implementation's ``negative_sampling_loss`` creates (elementwise work included,
    which a FLOP counter does not see) grow by the same amount from ``B`` to ``2B`` pairs over ``V`` words as
    over ``10 V`` words. Work done once per call, whatever the batch (a copy of a table), is not per pair."""
    g = torch.Generator().manual_seed(seed)
    centres, contexts = torch.randint(0, vocab, (batch,), generator=g), torch.randint(0, vocab, (batch,), generator=g)
    negatives = torch.randint(0, vocab, (batch, k), generator=g)
    doubled = [torch.cat([ids, ids]) for ids in (centres, contexts, negatives)]  # (2B,), (2B,), (2B, k)
    per_pair = {}
    for size in (vocab, 10 * vocab):
        v, v_out = torch.randn(size, dim, generator=g, dtype=F64), torch.randn(size, dim, generator=g, dtype=F64)
        once = _created(ctx, lambda: ctx.negative_sampling_loss(centres, contexts, negatives, v, v_out))
        twice = _created(ctx, lambda: ctx.negative_sampling_loss(*doubled, v, v_out))
        per_pair[size] = (once, twice, twice - once)
    assert per_pair[vocab][2] == per_pair[10 * vocab][2], (
        f"{batch} more pairs create {per_pair[vocab][2]} more elements over {vocab} words and "
        f"{per_pair[10 * vocab][2]} over {10 * vocab} (in all, for {batch} and {2 * batch} pairs: {per_pair}): "
        "the work per pair grows with the vocabulary"
    )


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


@claim_property("word2vec.negative-sampling", needs=(), about="documents-code", dtypes=("float64",))
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


#: The constant each ``negative_sampling_reduction`` puts in front of 001's loss of a pair with ``k`` noise words.
REDUCTIONS = {"sum": lambda k: 1.0, "mean": lambda k: 1.0 / (k + 1)}


def reduction_factors(ctx: Context, k: int) -> dict[str, float]:
    """The factors ``c`` of the reductions the implementation declares: its loss is ``c`` times 001's (``sum``:
    1, ``mean``: ``1 / (k + 1)``); undeclared, ``sum``."""
    return {name: REDUCTIONS[name](k) for name in ctx.choices("negative_sampling_reduction", tuple(REDUCTIONS))}


@st.composite
def sampling_batches(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of ``B`` from 2 to 4 pairs, each with its own centre and noise words: centres ``(B,)``, positive words
    ``(B,)``, ``k`` noise words per pair ``(B, k)`` (1 to 5; repeats within a row allowed) and tables ``(V, d)``.
    Rows differ in their centre and their first noise word, so a loss that reuses one row's words for the others
    shows."""
    vocab, dim = draw(st.integers(4, 8), label="V"), draw(st.integers(1, 4), label="d")
    b, k = draw(st.integers(2, 4), label="B"), draw(st.integers(1, 5), label="k")
    word = st.integers(0, vocab - 1)
    first_centre, first_noise = draw(word, label="first centre"), draw(word, label="first noise word")
    centres = torch.tensor([(first_centre + r) % vocab for r in range(b)])  # (B,), distinct
    positives = draw(sf.id_tensors(vocab, (b,)), label="positive words")
    negatives = draw(sf.id_tensors(vocab, (b, k)), label="noise words")
    negatives[:, 0] = torch.tensor([(first_noise + r) % vocab for r in range(b)])  # (B,), distinct per row
    return centres, positives, negatives, draw(sf.tables(vocab, dim)), draw(sf.tables(vocab, dim))


#: 001's loss at batch 2: NS_EXAMPLE's pair, and a second pair with other words.
NS_BATCH_EXAMPLE = (torch.tensor([0, 2]), torch.tensor([1, 0]), torch.tensor([[2, 2], [1, 0]]),
                    torch.tensor([[1.0], [1.0], [0.0]], dtype=F64), torch.tensor([[0.0], [2.0], [1.0]], dtype=F64))


@claim_property("word2vec.negative-sampling", needs=("negative_sampling_loss",))
@given(case=sampling_batches())
@example(case=NS_BATCH_EXAMPLE)
def the_negative_sampling_loss_is_001s_formula(ctx: Context, case) -> None:
    """001's ``-log sigma(v'_O . v_I) - sum_i log sigma(-v'_i . v_I)`` for each pair of a batch, with its own centre,
    true word and noise words, the noise words' terms summed (a repeated noise word counted each time), ``v`` the
    input table and ``v'`` the output table; times the constant the implementation declares
    (``negative_sampling_reduction``: 1, or ``1 / (k + 1)`` for the mean of the ``1 + k`` terms)."""
    centres, positives, negatives, v, v_out = case
    actual = ctx.negative_sampling_loss(centres, positives, negatives, v, v_out)
    expected = torch.stack([loss_001(int(c), int(o), n.tolist(), v, v_out)
                            for c, o, n in zip(centres, positives, negatives)])  # (B,)
    def check(reduction: tuple[str, float]) -> None:
        name, factor = reduction
        ctx.assert_close(actual, factor * expected, f"001's loss of each pair ({name} of the terms)", scale=4)

    under_one_of(list(reduction_factors(ctx, negatives.shape[1]).items()), check)


@claim_property("word2vec.negative-sampling", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",))
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


def window_contexts(tokens: list[int], window: int) -> list[tuple[list[int], int]]:
    """CBOW's ``(context, centre)`` examples written out here: the neighbours within ``c``, centre left out."""
    return [([tokens[j] for j in range(max(0, t - window), min(len(tokens), t + window + 1)) if j != t], tokens[t])
            for t in range(len(tokens)) if len(tokens) > 1]


def assert_cbow_examples_are_the_windows(cbow: list, tokens: list[int], window: int,
                                         centre_kept: tuple[str, ...]) -> None:
    """``cbow``, as sorted (context, centre) pairs, is the text's window contexts under one of the ``cbow_context``
    conventions in ``centre_kept`` (the first names the expected one in the message)."""
    got = sorted((sorted(context), centre) for context, centre in cbow)
    wants = {how: sorted((sorted(context + ([centre] if how == "with_centre" else [])), centre)
                         for context, centre in window_contexts(tokens, window)) for how in centre_kept}
    assert got in wants.values(), (
        f"CBOW examples against the window of {window} ({centre_kept[0]}): they "
        f"{first_difference(got, wants[centre_kept[0]])}"
    )


@claim_property("word2vec.training-examples", needs=("skipgram_pairs", "cbow_examples"))
@given(length=st.integers(2, 60), window=st.integers(1, 10), data=st.data())
@example(length=5, window=1, data=None)
def skipgram_makes_about_2c_examples_per_word_and_cbow_one(ctx: Context, length, window, data) -> None:
    """Each position of a text of ``T >= 2`` words is one CBOW example (its neighbours within ``c``, the centre
    left out), and the centre of up to ``2c`` skip-gram pairs: ``sum_t min(c, t) + min(c, T - 1 - t)`` pairs,
    ``2cT - c(c+1)`` when ``T > c``. Per epoch skip-gram evaluates its output layer ``2c - c(c+1)/T`` times as
    often as CBOW."""
    ctx.require("skipgram_window", "fixed")
    centre_kept = ctx.choices("cbow_context", ("without_centre", "with_centre"))
    vocab = length if data is None else data.draw(st.integers(1, length), label="V")
    tokens = list(range(length)) if data is None else data.draw(
        st.lists(st.integers(0, vocab - 1), min_size=length, max_size=length), label="tokens")
    skipgram = ctx.skipgram_pairs(tokens, window)
    cbow = ctx.cbow_examples(tokens, window)
    expected = sum(min(window, t) + min(window, length - 1 - t) for t in range(length))
    assert len(cbow) == length, f"{len(cbow)} CBOW examples for {length} words"
    assert len(skipgram) == expected, f"{len(skipgram)} skip-gram pairs, expected {expected}"
    assert sorted(skipgram) == sorted(window_pairs(tokens, window)), "the skip-gram pairs are not the window's"
    assert_cbow_examples_are_the_windows(cbow, tokens, window, centre_kept)
    if length > window:
        assert len(skipgram) == 2 * window * length - window * (window + 1), "not 2cT - c(c+1) pairs"
        ratio = len(skipgram) / len(cbow)
        assert math.isclose(ratio, 2 * window - window * (window + 1) / length), f"ratio {ratio} is not 2c - c(c+1)/T"


@claim_property("word2vec.training-examples", needs=("skipgram_pairs",))
@given(length=st.integers(2, 60), window=st.integers(1, 10))
@example(length=5, window=1)
def skipgram_pairs_each_position_with_up_to_2c_neighbours(ctx: Context, length: int, window: int) -> None:
    """Skip-gram alone, on a text of ``T`` distinct words (so each pair names its positions): position ``t`` is
    the centre of exactly ``min(c, t) + min(c, T - 1 - t)`` pairs, one per neighbour within ``c``, in all
    ``2cT - c(c+1)`` when ``T > c``; a text of one word gives none."""
    ctx.require("skipgram_window", "fixed")
    tokens = list(range(length))
    skipgram = ctx.skipgram_pairs(tokens, window)
    alone = ctx.skipgram_pairs(tokens[:1], window)
    assert list(alone) == [], f"a text of one word has no neighbour, so no skip-gram pair; got {alone}"
    per_centre = [sum(1 for centre, _ in skipgram if centre == t) for t in range(length)]
    expected = [min(window, t) + min(window, length - 1 - t) for t in range(length)]
    assert per_centre == expected, (
        f"pairs per centre position, window {window}, T = {length}: {first_difference(per_centre, expected)}"
    )
    assert sorted(skipgram) == sorted(window_pairs(tokens, window)), "the skip-gram pairs are not the window's"
    if length > window:
        assert len(skipgram) == 2 * window * length - window * (window + 1), "not 2cT - c(c+1) pairs"


@claim_property("word2vec.training-examples", needs=("cbow_examples",))
@given(length=st.integers(2, 60), window=st.integers(1, 10), data=st.data())
@example(length=5, window=1, data=None)
def cbow_makes_one_example_per_position(ctx: Context, length: int, window: int, data) -> None:
    """CBOW alone: a text of ``T >= 2`` words (ids drawn with repeats) gives exactly ``T`` examples, one per
    position, each the centre word with its neighbours within ``c`` (the centre left out, or kept where the
    implementation declares ``cbow_context = with_centre``), as written out here from the text and the window;
    a text of one word gives none."""
    centre_kept = ctx.choices("cbow_context", ("without_centre", "with_centre"))
    vocab = length if data is None else data.draw(st.integers(1, length), label="V")
    tokens = list(range(length)) if data is None else data.draw(
        st.lists(st.integers(0, vocab - 1), min_size=length, max_size=length), label="tokens")
    cbow = ctx.cbow_examples(tokens, window)
    assert len(cbow) == length, f"{len(cbow)} CBOW examples for {length} words"
    assert_cbow_examples_are_the_windows(cbow, tokens, window, centre_kept)
    alone = ctx.cbow_examples(tokens[:1], window)
    assert list(alone) == [], f"a text of one word has no neighbour, so no CBOW example; got {alone}"


#: 002's CBOW example: the context ["the", "quick", "fox"] around "brown" in "The quick brown fox jumps".
CBOW_CONTEXT = [0, 1, 3]


@claim_property("word2vec.cbow-example-context", needs=("cbow_examples",))
@given(window=st.integers(1, 6))
def the_context_of_brown_is_two_words_or_four(ctx: Context, window) -> None:
    """Corrected: in "The quick brown fox jumps" (ids 0..4) the implementation's CBOW context of "brown" (id 2)
    is [quick, fox] for window 1 and [the, quick, fox, jumps] for every window of 2 or more."""
    ctx.require("cbow_context", "without_centre")
    contexts = [sorted(context) for context, centre in ctx.cbow_examples([0, 1, 2, 3, 4], window) if centre == 2]
    expected = [[1, 3]] if window == 1 else [[0, 1, 3, 4]]
    assert contexts == expected, (
        f"window {window}: the context of 'brown' is {[[SENTENCE[i] for i in c] for c in contexts]}, "
        f"expected {[[SENTENCE[i] for i in c] for c in expected]}"
    )


@claim_property("word2vec.cbow-example-context", needs=("cbow_examples",), expect="counterexample")
@given(window=st.integers(1, 4))
def the_documents_cbow_context_comes_from_a_window(ctx: Context, window) -> None:
    """As written, 002's CBOW example predicts "brown" (id 2) from the context ["the", "quick", "fox"] of
    "The quick brown fox jumps" (ids 0..4): some window ``c`` gives that context. Window 1 gives
    [quick, fox], window 2 and more [the, quick, fox, jumps]: no window leaves out "jumps" and keeps "the"."""
    ctx.require("cbow_context", "without_centre")
    contexts = [sorted(context) for context, centre in ctx.cbow_examples([0, 1, 2, 3, 4], window) if centre == 2]
    assert contexts == [CBOW_CONTEXT], (
        f"window {window}: the context of 'brown' is {[[SENTENCE[i] for i in c] for c in contexts]}, "
        "not ['the', 'quick', 'fox']"
    )


# --- skip-gram with negative sampling factorises a shifted PMI matrix ---------------------------


@st.composite
def cooccurrence_tables(draw: st.DrawFn) -> torch.Tensor:
    """Whole co-occurrence counts ``#(w, c)`` ``(V, V)``, every entry from 1 to 50."""
    vocab = draw(st.integers(2, 4))
    values = draw(st.lists(st.integers(1, 50), min_size=vocab * vocab, max_size=vocab * vocab), label="counts")
    return torch.tensor(values, dtype=F64).reshape(vocab, vocab)  # (V * V,) -> (V, V)


def expected_sgns_loss(ctx: Context, counts: torch.Tensor, k: int, w: int, c: int,
                       centre: float) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The implementation's expected loss of the pair ``(w, c)`` at 601 scores ``x`` 0.01 apart around ``centre``.

    Returns the grid ``(P,)``, the losses ``#(w,c) l_+(x) + k #(w) #(c) / D l_-(x)`` ``(P,)`` and ``PMI(w, c)``.
    """
    total = counts.sum()
    a = counts[w, c]
    b = k * counts[w].sum() * counts[:, c].sum() / total
    pmi = math.log(float(a * total / (counts[w].sum() * counts[:, c].sum())))
    grid = torch.tensor([centre + STEP * i for i in range(-300, 301)], dtype=F64)  # (P,) scores x
    n = grid.shape[0]
    in_table = torch.cat([grid[:, None], torch.ones(1, 1, dtype=F64)])  # (P + 1, 1): row i is x_i
    out_table = torch.cat([torch.ones(1, 1, dtype=F64), torch.zeros(n, 1, dtype=F64)])  # (P + 1, 1): 1, then 0s
    centres = torch.arange(n)
    scored, unscored = torch.zeros(n, dtype=torch.int64), torch.ones(n, dtype=torch.int64)  # output rows 0 and 1
    # positive: the row scoring x, noise: the row scoring 0: l_+(x) + log 2; then the other way round; one noise
    # word, so a declared mean (over 1 + 1 terms) is undone by 2
    unreduce = 1.0 / next(iter(reduction_factors(ctx, 1).values()))
    positive = unreduce * ctx.negative_sampling_loss(centres, scored, unscored[:, None], in_table, out_table)
    negative = unreduce * ctx.negative_sampling_loss(centres, unscored, scored[:, None], in_table, out_table)
    positive, negative = positive - math.log(2.0), negative - math.log(2.0)
    return grid, a * positive + b * negative, pmi


#: The spacing of the scores at which the expected negative-sampling loss is evaluated.
STEP = 0.01


def pair_of(counts: torch.Tensor, data: st.DataObject | None) -> tuple[int, int]:
    if data is None:
        return 0, 1
    return (data.draw(st.integers(0, counts.shape[0] - 1), label="w"),
            data.draw(st.integers(0, counts.shape[0] - 1), label="c"))


@claim_property("word2vec.shifted-pmi", needs=("negative_sampling_loss",), dtypes=("float64",))
@given(counts=cooccurrence_tables(), k=st.integers(2, 15), data=st.data())
@example(counts=torch.tensor([[10.0, 2.0], [2.0, 10.0]], dtype=F64), k=5, data=None)
def sgns_is_optimal_at_pmi_minus_log_k(ctx: Context, counts, k, data) -> None:
    """Levy and Goldberg (2014): with ``k`` noise words from the unigram distribution, the expected
    negative-sampling loss of a pair ``(w, c)``, ``#(w,c) l_+(x) + k #(w) #(c) / D l_-(x)`` with the
    implementation's terms ``l_+(x) = -log sigma(x)`` and ``l_-(x) = -log sigma(-x)`` at the score
    ``x = v'_c . v_w``, is smallest at ``x = PMI(w, c) - log k``, not at ``log #(w, c)`` nor at ``PMI``."""
    w, c = pair_of(counts, data)
    total = counts.sum()
    optimum = math.log(float(counts[w, c] * total / (counts[w].sum() * counts[:, c].sum()))) - math.log(k)
    grid, expected, pmi = expected_sgns_loss(ctx, counts, k, w, c, optimum)
    best = float(grid[int(expected.argmin())])
    assert abs(best - optimum) <= STEP + 1e-9, (
        f"the expected loss is smallest at x = {best:.4f}, not at PMI - log k = {pmi:.4f} - {math.log(k):.4f} "
        f"= {optimum:.4f}"
    )
    for name, x in (("PMI", pmi), ("log #(w, c)", math.log(float(counts[w, c])))):
        if 3 * STEP < abs(x - optimum) < 300 * STEP:
            i = round((x - optimum) / STEP) + 300
            assert expected[i] > expected[300], f"the loss at {name} = {x:.4f} is not above the optimum's"


@claim_property("word2vec.shifted-pmi", needs=("negative_sampling_loss",), expect="counterexample",
                dtypes=("float64",))
@given(counts=cooccurrence_tables(), k=st.integers(2, 15), data=st.data())
@example(counts=torch.tensor([[10.0, 2.0], [2.0, 10.0]], dtype=F64), k=5, data=None)
def sgns_factorises_the_co_occurrence_matrix_as_written(ctx: Context, counts, k, data) -> None:
    """As written (001): the objective factorises the co-occurrence matrix, read as ``v_w . v'_c = log #(w, c)``
    at the optimum: the implementation's expected loss of the pair is smallest within 0.01 of ``log #(w, c)``."""
    w, c = pair_of(counts, data)
    target = math.log(float(counts[w, c]))
    grid, expected, pmi = expected_sgns_loss(ctx, counts, k, w, c, target)
    best = float(grid[int(expected.argmin())])
    assert abs(best - target) <= STEP + 1e-9, (
        f"the expected loss is smallest at x = {best:.4f} (PMI - log k = {pmi - math.log(k):.4f}), "
        f"not at log #(w, c) = {target:.4f}"
    )


# --- 001's gensim code ---------------------------------------------------------------------------


def gensim_corpus() -> list[list[str]]:
    """A small corpus: gensim's own ``common_texts`` and sentences with king, queen, man and woman."""
    from gensim.test.utils import common_texts

    royal = [["the", "king", "rules", "the", "land"], ["the", "queen", "rules", "the", "land"],
             ["a", "man", "walks", "in", "the", "park"], ["a", "woman", "walks", "in", "the", "park"],
             ["the", "king", "is", "a", "man"], ["the", "queen", "is", "a", "woman"]]
    return [list(s) for s in common_texts] + royal * 3 + [["hapax"]]


def analogy_written_out(vectors, positive: list[str], negative: list[str], topn: int) -> list[str]:
    """3CosAdd over gensim's unit vectors: the ``topn`` words nearest to ``sum positive - sum negative``."""
    import numpy as np

    unit = vectors.get_normed_vectors().astype(np.float64)  # (V, d)
    query = sum(unit[vectors.key_to_index[w]] for w in positive) - sum(unit[vectors.key_to_index[w]] for w in negative)
    query = query / np.linalg.norm(query)
    scores = unit @ query  # (V,)
    order = [vectors.index_to_key[i] for i in np.argsort(-scores, kind="stable")]
    return [w for w in order if w not in positive + negative][:topn]


def most_similar(vectors, positive: list[str], negative: list[str], topn: int) -> list[tuple[str, float]]:
    """gensim's ``KeyedVectors.most_similar``, as 001's ``analogy`` calls it."""
    return vectors.most_similar(positive=positive, negative=negative, topn=topn)


@claim_property("word2vec.gensim-api", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def gensims_word2vec_takes_001s_arguments_as_the_code_says(ctx: Context, _) -> None:
    """001's ``Word2Vec(sentences, vector_size=100, window=5, sg=1, negative=5, min_count=2)`` is skip-gram with
    five noise words from the 3/4-power table, no hierarchical softmax, window 5, words seen once left out; its
    ``most_similar(positive=[king, woman], negative=[man], topn=3)`` is 3CosAdd on the unit vectors, the query
    words excluded."""
    try:
        from gensim.models import Word2Vec
    except ImportError as exc:
        from specformer.optional import not_installed

        raise NotApplicable(not_installed(exc, "gensim is not installed")) from None
    model = Word2Vec(sentences=gensim_corpus(), vector_size=100, window=5, sg=1, negative=5, min_count=2, workers=1,
                     seed=1)
    assert (model.sg, model.negative, model.hs, model.window) == (1, 5, 0, 5), (
        f"sg {model.sg}, negative {model.negative}, hs {model.hs}, window {model.window}"
    )
    assert model.ns_exponent == 0.75, f"noise exponent {model.ns_exponent}"
    assert "hapax" not in model.wv.key_to_index and "king" in model.wv.key_to_index, "min_count=2 not applied"
    answer = most_similar(model.wv, ["king", "woman"], ["man"], 3)
    assert len(answer) == 3 and all(isinstance(w, str) and isinstance(c, float) for w, c in answer), answer
    words = [w for w, _ in answer]
    assert words == analogy_written_out(model.wv, ["king", "woman"], ["man"], 3), (
        f"most_similar gives {words}, 3CosAdd written out {analogy_written_out(model.wv, ['king', 'woman'], ['man'], 3)}"
    )
    assert [c for _, c in answer] == sorted((c for _, c in answer), reverse=True), "not best first"


# --- words in similar contexts --------------------------------------------------------------------

#: Two groups of words that share their contexts within the group and never across.
GROUPS = ((("king", "queen"), ("crown", "palace", "throne", "royal")),
          (("apple", "pear"), ("juice", "tree", "ripe", "sweet")))


def shared_context_corpus(seed: int) -> list[list[str]]:
    """200 sentences ``context word context``: each group's words between two of that group's contexts."""
    import random

    rng = random.Random(seed)
    return [[rng.choice(contexts), rng.choice(words), rng.choice(contexts)]
            for _ in range(100) for words, contexts in GROUPS]


def _crc32(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode("utf-8"))


@claim_property("word2vec.similar-contexts", needs=(), about="library", dtypes=("float64",), max_examples=20)
@given(corpus_seed=st.integers(0, 2**31 - 1), seed=st.integers(0, 2**31 - 1))
def words_sharing_contexts_end_up_closest(ctx: Context, corpus_seed, seed) -> None:
    """gensim's skip-gram with negative sampling, trained on a corpus where king and queen share contexts (and
    apple and pear others) but never meet, makes king closer to queen than to apple or pear, and apple closer
    to pear than to king or queen."""
    try:
        from gensim.models import Word2Vec
    except ImportError as exc:
        from specformer.optional import not_installed

        raise NotApplicable(not_installed(exc, "gensim is not installed")) from None
    model = Word2Vec(shared_context_corpus(corpus_seed), vector_size=16, window=2, sg=1, negative=5, min_count=1,
                     workers=1, seed=seed, epochs=50, sample=0, hashfxn=_crc32)
    cos = model.wv.similarity
    for (a, b), (u, w) in ((("king", "queen"), ("apple", "pear")), (("apple", "pear"), ("king", "queen"))):
        near, far = float(cos(a, b)), max(float(cos(a, u)), float(cos(a, w)))
        assert near > far, f"cos({a}, {b}) = {near:.3f} is not above cos({a}, {u} or {w}) = {far:.3f}"


# --- 000's "cat" examples of CBOW and skip-gram -------------------------------------------------

#: 000's sentence "The cat sat on the mat" as word ids 0..5 ("The" and "the" are different words), "cat" is id 1.
CAT_SENTENCE = ["The", "cat", "sat", "on", "the", "mat"]
CAT = 1
#: 000's skip-gram example: given "cat" the model predicts "The", "sat", "on" (ids 0, 2, 3).
CAT_SKIPGRAM = [0, 2, 3]
#: 000's CBOW example: "The ____ sat on the mat", the whole sentence but "cat" (ids 0, 2, 3, 4, 5).
CAT_CBOW = [0, 2, 3, 4, 5]


def cat_contexts(ctx: Context, window: int) -> tuple[list[int], list[list[int]]]:
    """The implementation's skip-gram context words of "cat" (sorted ids) and its CBOW contexts of "cat" (each
    sorted) under a fixed ``window``, in 000's sentence."""
    ids = list(range(len(CAT_SENTENCE)))
    skipgram = sorted(context for centre, context in ctx.skipgram_pairs(ids, window) if centre == CAT)
    cbow = [sorted(context) for context, centre in ctx.cbow_examples(ids, window) if centre == CAT]
    return skipgram, cbow


def named(ids: list[int]) -> list[str]:
    return [CAT_SENTENCE[i] for i in ids]


@claim_property("word2vec.cat-examples", needs=("skipgram_pairs", "cbow_examples"))
@given(window=st.integers(1, 7))
@example(window=2)
@example(window=4)
def the_cat_examples_need_window_2_for_skipgram_and_4_for_cbow(ctx: Context, window) -> None:
    """Corrected: in 000's "The cat sat on the mat" (ids 0..5) the implementation's skip-gram context of "cat"
    is exactly 000's {The, sat, on} for window 2 (and within ``window`` of position 1 for any window), and its
    CBOW context of "cat" is 000's "The _ sat on the mat" (all five other words) exactly for windows of 4 or
    more (four words lie to the right of "cat")."""
    ctx.require("skipgram_window", "fixed")
    ctx.require("cbow_context", "without_centre")
    skipgram, cbow = cat_contexts(ctx, window)
    within = [i for i in range(len(CAT_SENTENCE)) if i != CAT and abs(i - CAT) <= window]
    assert skipgram == within, f"window {window}: skip-gram pairs 'cat' with {named(skipgram)}, not {named(within)}"
    assert (skipgram == CAT_SKIPGRAM) == (window == 2), f"window {window}: 'cat' pairs with {named(skipgram)}"
    assert cbow == [within], f"window {window}: the CBOW context of 'cat' is {[named(c) for c in cbow]}"
    assert (cbow == [CAT_CBOW]) == (window >= 4), f"window {window}: CBOW context {[named(c) for c in cbow]}"


@claim_property("word2vec.cat-examples", needs=("skipgram_pairs", "cbow_examples"), expect="counterexample")
@given(window=st.integers(1, 7))
@example(window=2)
def one_window_gives_both_cat_examples_as_written(ctx: Context, window) -> None:
    """As written: one window gives both of 000's examples, skip-gram's "cat" predicting exactly "The", "sat",
    "on" and CBOW's "The _ sat on the mat". Window 2 gives the first, and CBOW the context [The, sat, on];
    only windows of 4 or more give the second, and then skip-gram pairs "cat" with all five words."""
    ctx.require("skipgram_window", "fixed")
    ctx.require("cbow_context", "without_centre")
    skipgram, cbow = cat_contexts(ctx, window)
    assert skipgram == CAT_SKIPGRAM and cbow == [CAT_CBOW], (
        f"window {window}: skip-gram pairs 'cat' with {named(skipgram)}, CBOW's context is "
        f"{[named(c) for c in cbow]}: not both of 000's examples")
