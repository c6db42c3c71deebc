"""Properties of scaled dot-product attention (``spec/attention/attention.md``).

Each property states the mathematics and compares the implementation against the
float64 formulas of :mod:`.expected`. Refutations (``expect="counterexample"``) state a
claim exactly as the documents write it; Hypothesis must break it.

Score functions, the Nadaraya-Watson example and cost counts are in
:mod:`.attention_scores`.
"""

from __future__ import annotations

import math

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.reference.attention.masks import causal_mask

from . import strategies as sf
from .expected import attention_formula, attention_formula_in


def _within_rows(weights: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Boolean ``(B, t_q, t_k)``: entries of the weights that are not masked."""
    return torch.ones_like(weights, dtype=torch.bool) if mask is None else mask.expand(weights.shape)


@claim_property("attention.scaled-dot-product")
@given(case=sf.attention_cases(masked=None))
def output_matches_the_formula(ctx: Context, case) -> None:
    """``Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V``, with and without masks, with and without weights."""
    output, weights = attention_formula(case.q, case.k, case.v, case.mask)
    in_dtype = lambda i: lambda dtype: attention_formula_in(dtype, case.q, case.k, case.v, case.mask)[i]  # noqa: E731
    for path, result in ctx.attention_paths(case.q, case.k, case.v, case.mask):
        ctx.assert_close(result.output, output, "attention output" + path, same_dtype=in_dtype(0))
        if result.weights is not None:
            ctx.assert_close(result.weights, weights, "attention weights" + path, same_dtype=in_dtype(1))


@claim_property("attention.weights-sum-to-one")
@given(case=sf.attention_cases(masked=None))
def rows_of_the_weights_sum_to_one(ctx: Context, case) -> None:
    """Every row of ``A`` sums to 1 (every row keeps at least one key)."""
    weights = ctx.weights(case.q, case.k, case.v, case.mask)
    ctx.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64), "row sums of A",
                     scale=weights.shape[-1])


@claim_property("attention.weights-in-open-interval")
@given(case=sf.attention_cases(masked=None, bound=20.0))
def weights_lie_in_the_closed_unit_interval(ctx: Context, case) -> None:
    """Corrected: ``0 <= A_ij <= 1``, with exactly 0 at masked keys."""
    weights = ctx.weights(case.q, case.k, case.v, case.mask)
    assert weights.min() >= 0.0, f"a weight is negative: {weights.min().item():.3g}"
    assert weights.max() <= 1.0 + ctx.tol.atol, f"a weight exceeds 1: {weights.max().item():.9g}"
    if case.mask is not None:
        masked = weights.masked_select(~case.mask.expand(weights.shape))
        assert (masked == 0).all(), f"a masked key has weight {masked.abs().max().item():.3g}, expected exactly 0"


#: A one-key row: its single weight is exactly 1, whatever the scores.
ONE_KEY = sf.AttentionCase(torch.zeros(1, 1, 1), torch.zeros(1, 1, 1), torch.ones(1, 1, 1))
#: Two tokens, one feature, identity projections: swapping them swaps the outputs.
TWO_TOKENS = (torch.tensor([[[0.0], [1.0]]]), torch.ones(3, 1, 1), torch.tensor([1, 0]))


@claim_property("attention.weights-in-open-interval", expect="counterexample")
@example(case=ONE_KEY)
@given(case=sf.attention_cases(masked=None, bound=20.0))
def weights_lie_strictly_between_zero_and_one_as_written(ctx: Context, case) -> None:
    """As written: every ``A_ij`` is in the open interval (0, 1)."""
    weights = ctx.weights(case.q, case.k, case.v, case.mask)
    assert ((weights > 0) & (weights < 1)).all(), (
        f"weights reach the boundary: min {weights.min().item():.3g}, max {weights.max().item():.9g}"
    )


@claim_property("attention.output-is-weights-times-values")
@given(case=sf.attention_cases(masked=None))
def output_is_the_weights_times_the_values(ctx: Context, case) -> None:
    """``O = A V`` with the implementation's own weights."""
    ctx.require("returns_weights", True)  # declared hidden: not applicable at once, before any call
    result = ctx.attention(case.q, case.k, case.v, case.mask)
    if result.weights is None:
        ctx.weights(case.q, case.k, case.v, case.mask)  # marks the example not applicable
    ctx.assert_close(result.output, result.weights @ case.v, "output vs A V", scale=case.k.shape[1])


@claim_property("attention.convex-combination")
@given(case=sf.attention_cases(masked=None), directions=sf.tensors((4, 64), 1.0))
def output_rows_lie_in_the_convex_hull_of_the_values(ctx: Context, case, directions) -> None:
    """For every direction u: ``min_j u.v_j <= u.o_i <= max_j u.v_j`` over the allowed keys j."""
    output = ctx.attention(case.q, case.k, case.v, case.mask).output  # (B, t_q, d_v)
    u = directions[:, : case.v.shape[-1]]  # (4, d_v)
    proj_out = output @ u.T  # (B, t_q, 4)
    proj_v = (case.v @ u.T)[:, None, :, :]  # (B, 1, t_k, 4)
    allowed = _within_rows(torch.ones(output.shape[0], output.shape[1], case.k.shape[1]), case.mask)[..., None]
    hi = proj_v.masked_fill(~allowed, float("-inf")).amax(dim=2)  # (B, t_q, 4)
    lo = proj_v.masked_fill(~allowed, float("inf")).amin(dim=2)
    slack = ctx.tol.atol * 10 + ctx.tol.rtol * 10 * proj_v.abs().amax()
    assert (proj_out <= hi + slack).all() and (proj_out >= lo - slack).all(), (
        "an output row lies outside the convex hull of the allowed value rows"
    )


def _self_attention_inputs(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``Q, K, V = X W^Q, X W^K, X W^V`` with the three projections stacked in ``w`` (3, d, d)."""
    return x @ w[0], x @ w[1], x @ w[2]


@st.composite
def self_attention_cases(draw, max_t=5, max_d=4):
    """A sequence X (B, t, d), projections (3, d, d) and a permutation of the t positions.

    One example in four is realistic: batch 3-4, length and width 7-64.
    """
    large = draw(sf.realistic())
    b, t, d = (draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, 2, max_t, "t")),
               draw(sf.sizes(large, 1, max_d, "d")))
    return draw(sf.tensors((b, t, d))), draw(sf.tensors((3, d, d), sf.projection_bound(d))), draw(sf.permutations_of(t))


@claim_property("attention.permutation-equivariance")
@given(case=self_attention_cases())
def self_attention_is_permutation_equivariant(ctx: Context, case) -> None:
    """``SA(P X) = P SA(X)``: permuting the positions permutes the outputs the same way."""
    x, w, perm = case
    out = ctx.attention(*_self_attention_inputs(x, w)).output
    out_perm = ctx.attention(*_self_attention_inputs(x[:, perm], w)).output
    ctx.assert_close(out_perm, out[:, perm], "SA(PX) vs P SA(X)", scale=x.shape[1])


@claim_property("attention.no-word-order")
@given(case=self_attention_cases())
def causal_self_attention_depends_on_the_word_order(ctx: Context, case) -> None:
    """Causal: swapping tokens 1 and 2 gives ``SA(PX)_1 - (P SA(X))_1 = -A_21 (v_1 - v_2) != 0``.

    With ``causal=True`` the first output is the first token's own value, so after the
    swap it is ``v_2``, while the second output of the unswapped sequence mixes
    ``v_1`` and ``v_2``: ``SA(PX) != P SA(X)``, the order is seen.
    """
    x, w, _ = case
    t = x.shape[1]
    perm = torch.tensor([1, 0, *range(2, t)])  # swap the first two positions
    v = x @ w[2]  # (B, t, d)
    a_21 = attention_formula(*_self_attention_inputs(x, w), causal_mask(t))[1][:, 1, 0]  # (B,)
    expected = -a_21[:, None] * (v[:, 0] - v[:, 1])  # (B, d): SA(PX)_1 - SA(X)_2
    assume(bool((expected.norm(dim=-1) > 0.1).all()))  # the two tokens' values differ visibly
    out = ctx.attention(*_self_attention_inputs(x, w), causal=True).output
    out_perm = ctx.attention(*_self_attention_inputs(x[:, perm], w), causal=True).output
    ctx.assert_close(out_perm[:, 0] - out[:, 1], expected, "causal SA(PX)_1 - (P SA(X))_1 after swapping tokens 1, 2",
                     scale=t)


@claim_property("attention.permutation-invariance")
@given(case=self_attention_cases())
def pooled_self_attention_is_permutation_invariant(ctx: Context, case) -> None:
    """Corrected: what is invariant is the multiset of output rows, e.g. their mean."""
    x, w, perm = case
    pooled = ctx.attention(*_self_attention_inputs(x, w)).output.mean(dim=1)
    pooled_perm = ctx.attention(*_self_attention_inputs(x[:, perm], w)).output.mean(dim=1)
    ctx.assert_close(pooled_perm, pooled, "mean over positions of SA(PX) vs SA(X)", scale=x.shape[1])


@claim_property("attention.permutation-invariance", expect="counterexample")
@example(case=TWO_TOKENS)
@given(case=self_attention_cases())
def self_attention_is_permutation_invariant_as_written(ctx: Context, case) -> None:
    """As written: shuffling the words gives the same results, ``SA(P X) = SA(X)``."""
    x, w, perm = case
    out = ctx.attention(*_self_attention_inputs(x, w)).output
    out_perm = ctx.attention(*_self_attention_inputs(x[:, perm], w)).output
    ctx.assert_close(out_perm, out, "SA(PX) vs SA(X)", scale=x.shape[1])


@claim_property("attention.key-value-permutation-invariance")
@given(case=sf.attention_cases(), data=st.data())
def permuting_keys_and_values_together_changes_nothing(ctx: Context, case, data) -> None:
    """``Attention(Q, P K, P V) = Attention(Q, K, V)``."""
    perm = data.draw(sf.permutations_of(case.k.shape[1]), label="perm")
    out = ctx.attention(case.q, case.k, case.v).output
    out_perm = ctx.attention(case.q, case.k[:, perm], case.v[:, perm]).output
    ctx.assert_close(out_perm, out, "Attention(Q, PK, PV) vs Attention(Q, K, V)", scale=case.k.shape[1])


@claim_property("attention.key-value-permutation-invariance")
@given(case=sf.attention_cases(), data=st.data())
def the_weights_columns_follow_the_keys(ctx: Context, case, data) -> None:
    """The weights are what is equivariant: ``A(Q, P K, P V) = A(Q, K, V) P^T`` (column ``j`` moves with key ``j``)."""
    perm = data.draw(sf.permutations_of(case.k.shape[1]), label="perm")
    weights = ctx.weights(case.q, case.k, case.v)
    weights_perm = ctx.weights(case.q, case.k[:, perm], case.v[:, perm])
    ctx.assert_close(weights_perm, weights[:, :, perm], "A(Q, PK, PV) vs A(Q, K, V) P^T")


@claim_property("attention.key-value-permutation-invariance", expect="counterexample")
@given(case=sf.attention_cases(self_attention=True), data=st.data())
def the_output_is_reordered_with_the_columns_of_a_and_the_rows_of_v_as_written(ctx: Context, case, data) -> None:
    """As written (the admonition): the elements of ``V' = A V`` are equivariant to reordering the columns of ``A``
    and the rows of ``V``, i.e. ``Attention(Q, P K, P V) = P Attention(Q, K, V)`` (``t_q = t_k``)."""
    perm = data.draw(sf.permutations_of(case.k.shape[1]), label="perm")
    out = ctx.attention(case.q, case.k, case.v).output
    out_perm = ctx.attention(case.q, case.k[:, perm], case.v[:, perm]).output
    ctx.assert_close(out_perm, out[:, perm], "Attention(Q, PK, PV) vs P Attention(Q, K, V)", scale=case.k.shape[1])


#: The slides' rearranged sentences (004, Definition & Properties; Permutation Equivariance Revisited).
SLIDE_SENTENCES = ((("I", "am", "Sam"), ("Sam", "I", "am")),
                   (("only", "I", "love", "you"), ("I", "only", "love", "you"), ("I", "love", "only", "you")))


@st.composite
def bag_of_words_cases(draw: st.DrawFn):
    """One of the slides' groups of sentences, an embedding per word ``(B, n_words, d)`` and projections ``(3, d, d)``."""
    sentences = draw(st.sampled_from(SLIDE_SENTENCES))
    large = draw(sf.realistic())
    b, d = draw(sf.sizes(large, 1, 2, "batch")), draw(sf.sizes(large, 1, 4, "d"))
    words = sorted(set(sentences[0]))
    return sentences, words, draw(sf.tensors((b, len(words), d))), draw(sf.tensors((3, d, d), sf.projection_bound(d)))


@claim_property("attention.bag-of-words")
@given(case=bag_of_words_cases())
def rearranged_sentences_give_every_word_the_same_output(ctx: Context, case) -> None:
    """Without positions, each word of "I am Sam" gets the same output in "Sam I am", and the mean over positions is equal."""
    sentences, words, table, w = case
    outputs = []
    for sentence in sentences:
        ids = torch.tensor([words.index(word) for word in sentence])
        x = table[:, ids]  # (B, t, d): the sentence's token representations, no positions
        out = ctx.attention(*_self_attention_inputs(x, w)).output  # (B, t, d)
        outputs.append({word: out[:, i] for i, word in enumerate(sentence)})  # word -> (B, d)
    first = " ".join(sentences[0])
    for sentence, by_word in zip(sentences[1:], outputs[1:]):
        for word in words:
            ctx.assert_close(by_word[word], outputs[0][word],
                             f"output of {word!r} in {' '.join(sentence)!r} vs in {first!r}", scale=len(words))
        mean = torch.stack(list(by_word.values())).mean(0)
        ctx.assert_close(mean, torch.stack(list(outputs[0].values())).mean(0),
                         f"mean output of {' '.join(sentence)!r} vs {first!r}", scale=len(words))


@claim_property("attention.linear-in-values")
@given(case=sf.attention_cases(masked=None), data=st.data(), a=sf.bounded_floats(), b=sf.bounded_floats())
def attention_is_linear_in_the_values(ctx: Context, case, data, a, b) -> None:
    """``Attention(Q, K, a V_1 + b V_2) = a Attention(Q, K, V_1) + b Attention(Q, K, V_2)``."""
    v2 = data.draw(sf.tensors(tuple(case.v.shape)), label="v2")
    combined = ctx.attention(case.q, case.k, a * case.v + b * v2, case.mask).output
    separate = (a * ctx.attention(case.q, case.k, case.v, case.mask).output
                + b * ctx.attention(case.q, case.k, v2, case.mask).output)
    ctx.assert_close(combined, separate, "Attention(aV1 + bV2) vs a Attention(V1) + b Attention(V2)",
                     scale=4 * case.k.shape[1])


@claim_property("attention.linear-map")
@given(case=sf.attention_cases(masked=None), data=st.data())
def weights_do_not_depend_on_the_values(ctx: Context, case, data) -> None:
    """Corrected: for fixed Q and K, ``A`` does not depend on V, so the map ``V -> A V`` is linear."""
    v2 = data.draw(sf.tensors(tuple(case.v.shape)), label="v2")
    ctx.assert_close(ctx.weights(case.q, case.k, v2, case.mask), ctx.weights(case.q, case.k, case.v, case.mask),
                     "A computed with V_2 vs A computed with V_1")


@claim_property("attention.linear-map", expect="counterexample")
@example(case=TWO_TOKENS, c=2.0)
@given(case=self_attention_cases(), c=sf.bounded_floats())
def self_attention_is_linear_in_its_input_as_written(ctx: Context, case, c) -> None:
    """As written: self-attention is a linear map of its input, so ``SA(c X) = c SA(X)``."""
    x, w, _ = case
    scaled = ctx.attention(*_self_attention_inputs(c * x, w)).output
    ctx.assert_close(scaled, c * ctx.attention(*_self_attention_inputs(x, w)).output, "SA(cX) vs c SA(X)",
                     scale=x.shape[1])


@claim_property("attention.weights-shape")
@given(case=sf.attention_cases(masked=None))
def weights_are_t_q_by_t_k_and_output_t_q_by_d_v(ctx: Context, case) -> None:
    """Corrected: ``A`` is ``t_q x t_k`` and ``O = A V`` is ``t_q x d_v``, for cross-attention too."""
    b, t_q, t_k, _, d_v = case.shape
    result = ctx.attention(case.q, case.k, case.v, case.mask)  # the context checks both shapes
    assert result.output.shape == (b, t_q, d_v), f"output shape {tuple(result.output.shape)}"
    if result.weights is not None:
        assert result.weights.shape == (b, t_q, t_k), f"weights shape {tuple(result.weights.shape)}"


#: Two queries attending over three keys: the weights are 2 x 3.
CROSS = sf.AttentionCase(torch.zeros(1, 2, 1), torch.zeros(1, 3, 1), torch.ones(1, 3, 1))


@claim_property("attention.weights-shape", expect="counterexample")
@example(case=CROSS)
@given(case=sf.attention_cases())
def weights_are_square_as_written(ctx: Context, case) -> None:
    """As written: ``A`` is a square ``t_V x t_V`` matrix."""
    weights = ctx.weights(case.q, case.k, case.v)
    assert weights.shape[-1] == weights.shape[-2], f"A is {weights.shape[-2]} x {weights.shape[-1]}"


@claim_property("attention.not-symmetric", expect="counterexample")
@example(case=(torch.tensor([[[0.0], [1.0]]]), torch.ones(3, 1, 1), torch.tensor([0, 1])))
@given(case=self_attention_cases())
def self_attention_weights_are_symmetric_as_written(ctx: Context, case) -> None:
    """The converse, to be refuted: self-attention weights are symmetric, ``A = A^T`` (even with ``W^Q = W^K``)."""
    x, w, _ = case
    w = torch.stack([w[0], w[0], w[2]])  # W^K = W^Q: symmetric scores, still not symmetric weights
    weights = ctx.weights(*_self_attention_inputs(x, w))
    ctx.assert_close(weights, weights.transpose(-2, -1), "A vs A^T")


@st.composite
def query_and_two_keys(draw, equal_norms: bool):
    """A query and two keys ``(1, 1, d)``, ``(1, 2, d)``; with ``equal_norms`` the keys share a length."""
    d = draw(sf.sizes(draw(sf.realistic()), 2, 5, "d"))
    q = draw(sf.tensors((1, 1, d)))
    k = draw(sf.tensors((1, 2, d)))
    if equal_norms:
        norms = k.norm(dim=-1, keepdim=True)  # (1, 2, 1)
        assume(bool((norms > 0.1).all()))  # a direction to keep: no clamping, which would leave a length unequal
        k = k / norms * draw(st.floats(0.5, 2.0))
    else:  # key lengths spread over a factor 25 each, as in trained models (no counterexample built in)
        k = k * torch.tensor([draw(st.floats(0.2, 5.0)), draw(st.floats(0.2, 5.0))], dtype=torch.float64)[None, :, None]
    return q, k


def _cosines(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(q.expand_as(k), k, dim=-1)[0]  # (2,)


@claim_property("attention.similarity-ranking")
@given(case=query_and_two_keys(equal_norms=True))
def with_equal_key_norms_weights_rank_keys_by_cosine(ctx: Context, case) -> None:
    """Corrected: for keys of one length, the more aligned key (larger cosine) gets the larger weight."""
    q, k = case
    cos = _cosines(q, k)
    gap = q.norm() * k[0, 0].norm() * (cos[0] - cos[1]).abs() / math.sqrt(q.shape[-1])  # |s_0 - s_1|
    assume(gap > 0.05)  # weights apart by >= 1.2%, visible in every dtype
    weights = ctx.weights(q, k, torch.zeros(1, 2, 1))[0, 0]
    assert (weights[0] > weights[1]) == (cos[0] > cos[1]), (
        f"weights {weights.tolist()} do not rank the keys like their cosines {cos.tolist()}"
    )


@claim_property("attention.similarity-ranking", expect="counterexample")
@example(case=(torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[1.0, 0.0], [3.0, 3.0]]])))
@given(case=query_and_two_keys(equal_norms=False))
def more_aligned_keys_get_more_weight_as_written(ctx: Context, case) -> None:
    """As written: vectors pointing in more similar directions score higher, whatever their lengths."""
    q, k = case
    cos = _cosines(q, k)
    assume((cos[0] - cos[1]).abs() > 0.05)
    weights = ctx.weights(q, k, torch.zeros(1, 2, 1))[0, 0]
    assert (weights[0] > weights[1]) == (cos[0] > cos[1]), (
        f"key {int(cos.argmax())} is more aligned (cosines {cos.tolist()}) but gets less weight {weights.tolist()}"
    )


@claim_property("attention.fully-connected")
@given(case=sf.attention_cases(bound=1.0), i=st.integers(0, 63), j=st.integers(0, 63), delta=st.floats(0.5, 2.0))
def every_output_row_depends_on_every_value_row(ctx: Context, case, i, j, delta) -> None:
    """Unmasked, moderate scores: ``A_ij > 0`` and moving ``v_j`` by ``delta`` moves ``o_i`` by ``A_ij delta``."""
    i, j = i % case.q.shape[1], j % case.k.shape[1]
    result = ctx.attention(case.q, case.k, case.v)
    weights = attention_formula(case.q, case.k, case.v)[1]
    v2 = case.v.clone()
    v2[:, j] += delta
    moved = ctx.attention(case.q, case.k, v2).output[:, i] - result.output[:, i]  # (B, d_v)
    assert (weights[:, i, j] > 0).all(), f"the formula's A_{i}{j} underflowed to 0 at these moderate scores"
    ctx.assert_close(moved, (weights[:, i, j, None] * delta).expand_as(moved), f"change of o_{i} when v_{j} moves",
                     scale=4)
    if result.weights is not None:
        assert (result.weights > 0).all(), f"a weight is 0 although every score is within [-6, 6]"


@claim_property("attention.row-independence")
@given(case=sf.attention_cases(masked=None), data=st.data())
def each_output_row_depends_only_on_its_own_query(ctx: Context, case, data) -> None:
    """``Attention(Q, K, V)_I = Attention(Q_I, K, V)`` for any subset I of query rows."""
    t_q = case.q.shape[1]
    rows = torch.tensor(sorted(data.draw(st.sets(st.integers(0, t_q - 1), min_size=1), label="rows")))
    full = ctx.attention(case.q, case.k, case.v, case.mask).output
    mask = None if case.mask is None else case.mask[:, rows]
    part = ctx.attention(case.q[:, rows], case.k, case.v, mask).output
    ctx.assert_close(part, full[:, rows], "Attention(Q_I, K, V) vs Attention(Q, K, V)_I")


@claim_property("attention.length-flexible")
@given(x=sf.tensors((1, 6, 3)), w=sf.tensors((3, 3, 3), 1.0), lengths=st.lists(st.integers(1, 6), min_size=2,
       max_size=3, unique=True), other=sf.tensors((1, 6, 3)))
def one_set_of_parameters_serves_every_length_and_weights_follow_content(ctx: Context, x, w, lengths, other) -> None:
    """The same ``W^Q, W^K, W^V`` apply to any length t; the weights change when the content changes."""
    ctx.require("returns_weights", True)  # declared hidden: not applicable at once, before any call
    for t in lengths:
        result = ctx.attention(*_self_attention_inputs(x[:, :t], w))
        ctx.assert_close(result.output, attention_formula(*_self_attention_inputs(x[:, :t], w))[0],
                         f"self-attention at length {t}")
    t = max(lengths)
    before = attention_formula(*_self_attention_inputs(x[:, :t], w))[1]
    after = attention_formula(*_self_attention_inputs(other[:, :t], w))[1]
    assume((before - after).abs().max() > 1e-3)  # content that moves the weights at all
    a_before = ctx.weights(*_self_attention_inputs(x[:, :t], w))
    a_after = ctx.weights(*_self_attention_inputs(other[:, :t], w))
    assert (a_before - a_after).abs().max() > 1e-4, "the weights did not change with the content"


SLIDE_A = torch.tensor([[0.6, 0.1, 0.3], [0.3, 0.5, 0.2], [0.2, 0.1, 0.7]], dtype=torch.float64)
SLIDE_V = torch.tensor([[2.0, 1.0], [-0.5, 2.0], [-1.0, -0.5]], dtype=torch.float64)
SLIDE_AV = torch.tensor([[0.85, 0.65], [0.15, 1.2], [-0.35, 0.05]], dtype=torch.float64)


@claim_property("attention.slide-example")
@example(shift=0.0)
@given(shift=sf.bounded_floats())
def the_slides_weights_give_the_slides_output(ctx: Context, shift) -> None:
    """The slide's ``A`` and ``V`` give ``A V = [[0.85, 0.65], [0.15, 1.2], [-0.35, 0.05]]``.

    ``A`` is realised as scores ``log A + c`` (softmax ignores a constant ``c`` per row):
    ``q_i = sqrt(3) (log A_i + c)`` against the identity keys ``K = I_3``.
    """
    q = (SLIDE_A.log() + shift)[None] * math.sqrt(3)  # (1, 3, 3): scores q K^T / sqrt(3) = log A + c
    k = torch.eye(3, dtype=torch.float64)[None]  # (1, 3, 3)
    result = ctx.attention(q, k, SLIDE_V[None])
    ctx.assert_close(result.output[0], SLIDE_AV, "A V for the slide's example", scale=4)
    if result.weights is not None:
        ctx.assert_close(result.weights[0], SLIDE_A, "weights realised from log A", scale=4)
