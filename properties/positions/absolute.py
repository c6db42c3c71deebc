"""Properties of absolute position encodings other than the sinusoid: learned tables, binary
codes, and what adding a position vector to the token embeddings does
(``spec/positions/absolute.md``).

Expected values are written here in float64: the bits of a position (``(pos >> i) & 1``),
the sinusoidal formula of :mod:`.sinusoidal`, and single-head self-attention
``softmax(X W_Q (X W_K)^T / sqrt(d)) X W_V``. Implementations are called through
``ctx.positional_encoding(kind, ...)``, learned tables through ``ctx.learned_positions`` and
the input sum through ``ctx.input_embedding``. Properties with ``needs=()`` check the web
notes' (002) learned-embedding code and PyTorch's ``nn.Embedding`` themselves.
"""

from __future__ import annotations

import math

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol import NotApplicable

from . import strategies as sf
from .sinusoidal import encoding

NEEDS = ("positional_encoding",)


def pos(*values: int) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


# -- learned tables (002's code) -----------------------------------------------------------


class TransformerEmbedding(nn.Module):
    """The web notes' (002) learned positional embedding, line for line (float64 tables)."""

    def __init__(self, vocab_size: int, embed_dim: int, max_len: int = 512) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, embed_dim, dtype=torch.float64)
        self.position_embedding = nn.Embedding(max_len, embed_dim, dtype=torch.float64)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        batch_size, seq_len = tokens.shape
        token_embeds = self.token_embedding(tokens)
        positions = torch.arange(seq_len, device=tokens.device).unsqueeze(0)
        pos_embeds = self.position_embedding(positions)
        return token_embeds + pos_embeds


@st.composite
def learned_cases(draw: st.DrawFn) -> tuple[int, int, int, torch.Tensor, int]:
    """``vocab, d, max_len``, tokens ``(B, seq_len)`` with ``seq_len <= max_len``, and a seed."""
    vocab, d, max_len = draw(st.integers(1, 20)), draw(st.integers(1, 8)), draw(st.integers(1, 64))
    b, seq_len = draw(st.integers(1, 3)), draw(st.integers(1, max_len))
    tokens = torch.tensor(draw(st.lists(st.integers(0, vocab - 1), min_size=b * seq_len, max_size=b * seq_len)))
    return vocab, d, max_len, tokens.reshape(b, seq_len), draw(sf.seeds())  # (B * seq_len,) -> (B, seq_len)


@claim_property("absolute.learned-table-length", needs=(), about="documents-code", dtypes=("float64",))
@given(case=learned_cases(), extra=st.integers(1, 64))
@example(case=(10, 4, 512, torch.zeros(1, 512, dtype=torch.int64), 0), extra=1)
def a_learned_table_has_no_row_past_its_length(ctx: Context, case, extra) -> None:
    """002's ``TransformerEmbedding``: sequences up to ``max_len`` work; one of ``max_len + extra``
    tokens raises ``IndexError`` (``nn.Embedding(max_len, d)`` has rows ``0 .. max_len - 1`` only)."""
    vocab, d, max_len, tokens, seed = case
    torch.manual_seed(seed)
    module = TransformerEmbedding(vocab, d, max_len)
    shape = tuple(module(tokens).shape)
    assert shape == (*tokens.shape, d), f"a sequence that fits gives shape {shape}, expected {(*tokens.shape, d)}"
    longer = torch.zeros(tokens.shape[0], max_len + extra, dtype=torch.int64)
    try:
        module(longer)
    except IndexError as exc:
        assert "index out of range" in str(exc), f"unexpected IndexError: {exc}"
    else:
        raise AssertionError(f"a sequence of {max_len + extra} tokens went through a table of {max_len} positions")


@claim_property("absolute.added-to-embeddings", needs=(), about="documents-code", dtypes=("float64",))
@given(case=learned_cases())
@example(case=(3, 2, 4, torch.tensor([[0, 1, 2], [2, 2, 0]]), 0))
def the_position_row_is_added_to_every_token_embedding(ctx: Context, case) -> None:
    """``x[b, t] = E[token[b, t]] + P[t]``: the same position row for every sequence of the batch,
    the sum of two ``d``-vectors, and ``x[b, t] - P[t]`` gives back the token embedding."""
    vocab, d, max_len, tokens, seed = case
    torch.manual_seed(seed)
    module = TransformerEmbedding(vocab, d, max_len)
    out = module(tokens).detach()
    table, positions = module.token_embedding.weight.detach(), module.position_embedding.weight.detach()
    seq_len = tokens.shape[1]
    expected = table[tokens] + positions[:seq_len][None]  # (B, seq_len, d) + (1, seq_len, d)
    ctx.assert_close(out, expected, "TransformerEmbedding(tokens) vs E[token] + P[t]")
    ctx.assert_close(out - positions[:seq_len][None], table[tokens], "x - P[t] vs E[token]", scale=4)


@st.composite
def table_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """A table ``(n_max, d)`` (``n_max`` up to 64, ``d`` up to 64) from a seed and 1 to 64 positions in it."""
    n_max, d = draw(sf.dimension(1, 64), label="n_max"), draw(sf.dimension(1, 64), label="d")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    table = 2 * torch.rand(n_max, d, generator=g, dtype=torch.float64) - 1  # (n_max, d) in [-1, 1]
    t = draw(sf.dimension(1, 64), label="t")
    positions = draw(st.lists(st.integers(0, n_max - 1), min_size=t, max_size=t))
    return table, torch.tensor(positions, dtype=torch.int64)


def outside_position(n_max: int, outside: int) -> int:
    """``n_max + outside`` for ``outside >= 0`` (past the table), ``outside`` itself for ``outside < 0``."""
    return n_max + outside if outside >= 0 else outside


@claim_property("absolute.learned-table-length", needs=("learned_positions",))
@given(case=table_cases(), outside=st.one_of(st.integers(0, 64), st.integers(-64, -1)), at=st.integers(0, 64))
@example(case=(torch.eye(4, dtype=torch.float64), pos(0, 3, 1)), outside=0, at=3)
@example(case=(torch.eye(4, dtype=torch.float64), pos(0, 3, 1)), outside=-1, at=1)
def the_implementations_table_has_rows_up_to_its_length_only(ctx: Context, case, outside, at) -> None:
    """Positions ``0 .. n_max - 1`` give the table's rows ``P[pos]``; the same positions with one position
    outside the table put in among them (``n_max + k``, or a negative one: ``-1`` is not the last row)
    raise, with any exception (no row, no wrap-around, no clamping, no zeros)."""
    table, positions = case
    rows = ctx.learned_positions(positions, table)
    ctx.assert_close(rows, table[positions], "learned position rows vs P[pos]")
    wrong = outside_position(table.shape[0], outside)
    at = min(at, len(positions))
    asked = torch.cat([positions[:at], pos(wrong), positions[at:]])
    refused = ctx.learned_positions_refused(asked, table)
    assert refused is not None, (
        f"position {wrong} (at index {at} of {asked.tolist()[:8]}{'...' if len(asked) > 8 else ''}) of a table "
        f"of {table.shape[0]} rows gave a row instead of raising")


@claim_property("absolute.learned-table-length", needs=("learned_positions",))
@given(case=table_cases())
@example(case=(torch.tensor([[1 + 2.0**-40, -(2.0**-1074)], [1 / 3, 3.0e4]], dtype=torch.float64), pos(1, 0, 1)))
def a_lookup_returns_the_tables_rows_bit_for_bit(ctx: Context, case) -> None:
    """A second reading, without a tolerance: looking a position up computes nothing, so every row comes back
    exactly as the table holds it in the dtype under test (every bit of the value, subnormals included; a
    zero's sign is not compared, so a product with a one-hot matrix in the table's dtype is a lookup too);
    a lookup through another precision, or a one-hot product that rounds, is not one."""
    table, positions = case
    rows = ctx.learned_positions(positions, table)
    held = table.to(ctx.dtype)  # what the implementation was given
    expected = held[positions].to(torch.float64)  # (t, d): exact in float64
    same = rows == expected
    if not same.all():
        r, c = (int(x) for x in (~same).nonzero()[0])
        raise AssertionError(f"row {r} (position {int(positions[r])}), feature {c}: got {float(rows[r, c])!r}, the "
                             f"table holds {float(expected[r, c])!r} in {ctx.dtype}")


@st.composite
def input_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Tokens ``(B, t)`` (``B`` 1..4, ``t`` 1..64), a token table ``(V, d)`` (``V`` 1..50, ``d`` 1..64)
    and a position table ``(n_max, d)`` with ``t <= n_max <= t + 8``."""
    vocab, d = draw(sf.dimension(1, 50), label="V"), draw(sf.dimension(1, 64), label="d")
    b, t = draw(sf.dimension(1, 4), label="B"), draw(sf.dimension(1, 64), label="t")
    n_max = t + draw(sf.dimension(0, 8), label="extra rows")
    g = torch.Generator().manual_seed(draw(sf.seeds()))
    tokens = torch.randint(0, vocab, (b, t), generator=g)
    token_table = 2 * torch.rand(vocab, d, generator=g, dtype=torch.float64) - 1  # (V, d)
    position_table = 2 * torch.rand(n_max, d, generator=g, dtype=torch.float64) - 1  # (n_max, d)
    return tokens, token_table, position_table


@claim_property("absolute.added-to-embeddings", needs=("input_embedding",))
@given(case=input_cases(), scale=st.booleans())
@example(case=(torch.tensor([[0, 1, 2], [2, 2, 0]]), torch.eye(3, dtype=torch.float64),
               torch.arange(12, dtype=torch.float64).reshape(4, 3)), scale=False)
def the_implementations_input_is_the_token_row_plus_the_position_row(ctx: Context, case, scale) -> None:
    """``x[b, i] = E[tokens[b, i]] s + P[i]`` (``s = sqrt(d)`` when asked, else 1): the same position row
    for every sequence of the batch, and ``x - P[i]`` gives the (scaled) token embedding back."""
    tokens, token_table, position_table = case
    scale = sf.within(ctx, "embedding_scale", scale, (False, True))
    x = ctx.input_embedding(tokens, token_table, position_table, scale=scale)
    s = math.sqrt(token_table.shape[1]) if scale else 1.0
    t = tokens.shape[1]
    expected = token_table[tokens] * s + position_table[:t][None]  # (B, t, d) + (1, t, d)
    what = "E[token] * sqrt(d) + P[i]" if scale else "E[token] + P[i]"
    ctx.assert_close(x, expected, f"input embedding vs {what}", scale=2)
    ctx.assert_close(x - position_table[:t][None], token_table[tokens] * s, "x - P[i] vs the token embedding",
                     scale=8)


@claim_property("absolute.added-to-embeddings", needs=("input_embedding",))
@given(case=input_cases(), scale=st.booleans())
@example(case=(torch.tensor([[1, 0]]), torch.eye(4, dtype=torch.float64)[:2], torch.ones(3, 4, dtype=torch.float64)),
         scale=True)
def each_summand_of_the_input_comes_from_its_own_table(ctx: Context, case, scale) -> None:
    """A second reading, one table at a time: with a zero token table the input is the position rows alone,
    ``x[b, i] = P[i]`` for every sequence of the batch (never scaled); with a zero position table it is the
    token rows alone, ``x[b, i] = s E[tokens[b, i]]`` (``s = sqrt(d)`` when asked, else 1)."""
    tokens, token_table, position_table = case
    scale = sf.within(ctx, "embedding_scale", scale, (False, True))
    b, t = tokens.shape
    s = math.sqrt(token_table.shape[1]) if scale else 1.0
    positions_only = ctx.input_embedding(tokens, torch.zeros_like(token_table), position_table, scale=scale)
    ctx.assert_close(positions_only, position_table[:t][None].expand(b, -1, -1),
                     "the input with a zero token table vs P[i]")
    tokens_only = ctx.input_embedding(tokens, token_table, torch.zeros_like(position_table), scale=scale)
    ctx.assert_close(tokens_only, token_table[tokens] * s,
                     f"the input with a zero position table vs E[token]{' * sqrt(d)' if scale else ''}", scale=2)


# -- deterministic encodings ---------------------------------------------------------------


@claim_property("absolute.deterministic", needs=NEEDS)
@given(positions=sf.positions(max_position=255), d_model=sf.dimension(4, 8).map(lambda n: 2 * n),
       kind=st.sampled_from(["sinusoidal", "binary"]))
@example(positions=pos(0, 1, 2, 3), d_model=8, kind="sinusoidal")
def an_encoding_depends_on_the_position_alone(ctx: Context, positions, d_model, kind) -> None:
    """The same call twice gives identical encodings, in one process and in another (another
    ``PYTHONHASHSEED``), and a position's row is the same alone or among other positions (no parameters,
    no randomness, no dependence on ``t``)."""
    kind = sf.within(ctx, "encoding_kind", kind, ("sinusoidal", "binary"))
    first = ctx.positional_encoding(kind, positions, d_model)
    again = ctx.positional_encoding(kind, positions, d_model)
    assert torch.equal(first, again), f"two identical {kind} calls disagree by {(first - again).abs().max():.3g}"
    with ctx.in_another_process():
        elsewhere = ctx.positional_encoding(kind, positions, d_model)
    assert torch.equal(first, elsewhere), (
        f"the same {kind} call in another process disagrees by {(first - elsewhere).abs().max():.3g}")
    for j in range(len(positions)):
        alone = ctx.positional_encoding(kind, positions[j:j + 1], d_model)[0]
        ctx.assert_close(alone, first[j], f"{kind} row of position {int(positions[j])} alone vs among others")


# -- binary encodings ----------------------------------------------------------------------


def bits(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """``(t, d_model)`` float64 bits, least significant first."""
    return torch.tensor([[(int(p) >> i) & 1 for i in range(d_model)] for p in positions], dtype=torch.float64)


@st.composite
def binary_cases(draw: st.DrawFn) -> tuple[torch.Tensor, int]:
    """``d_model`` in 1..40 and positions below ``2**d_model``: all of them when there are at most 256."""
    d_model = draw(sf.dimension(1, 40))
    if 2**d_model <= 256:
        return torch.arange(2**d_model), d_model
    t = draw(sf.dimension(1, 16))
    values = draw(st.lists(st.integers(0, 2**d_model - 1), min_size=t, max_size=t, unique=True))
    return torch.tensor(values, dtype=torch.int64), d_model


@claim_property("absolute.bits-distinct", needs=NEEDS)
@given(case=binary_cases())
@example(case=(torch.arange(8), 3))
def binary_encodings_are_the_bits_and_distinct_below_two_to_the_d(ctx: Context, case) -> None:
    """Feature ``i`` of ``pos`` is bit ``i`` (0 or 1); the ``2**d`` positions ``0 .. 2**d - 1`` get
    pairwise distinct encodings."""
    positions, d_model = case
    actual = ctx.positional_encoding("binary", positions, d_model)
    expected = bits(positions, d_model)
    assert torch.equal(actual, expected), (
        f"binary encodings differ from the bits at {tuple(int(i) for i in (actual != expected).nonzero()[0])}, "
        f"d_model={d_model}")
    rows = {tuple(r) for r in actual.tolist()}
    assert len(rows) == len(positions), f"{len(positions)} positions get only {len(rows)} distinct encodings"


@claim_property("absolute.bits-distinct", needs=NEEDS)
@given(d_model=sf.dimension(1, 40), data=st.data())
@example(d_model=4, data=None)
def a_power_of_two_sets_one_feature_and_the_first_feature_flips_every_step(ctx: Context, d_model, data) -> None:
    """A second check of the bit order, without the bit formula: position ``2^i`` is the unit vector ``e_i``
    (only feature ``i`` is 1), and feature 0 alternates ``0, 1, 0, 1`` over consecutive positions."""
    i = d_model - 1 if data is None else data.draw(st.integers(0, d_model - 1), label="bit")
    start = 0 if data is None else data.draw(st.integers(0, 2**d_model - 4 if d_model >= 2 else 0), label="start")
    one_hot = ctx.positional_encoding("binary", pos(2**i), d_model)[0]
    assert one_hot.tolist() == [1.0 if f == i else 0.0 for f in range(d_model)], (
        f"position 2^{i} = {2**i} encodes as {one_hot.tolist()}, expected only feature {i} set")
    run = torch.arange(start, min(start + 4, 2**d_model), dtype=torch.int64)
    first = ctx.positional_encoding("binary", run, d_model)[:, 0]
    assert first.tolist() == [float(p % 2) for p in run.tolist()], (
        f"feature 0 over positions {run.tolist()} is {first.tolist()}, expected the parities")


@claim_property("absolute.bits-distinct", needs=NEEDS)
@given(d_model=sf.dimension(1, 40), data=st.data())
@example(d_model=3, data=None)
def positions_past_two_to_the_d_are_refused_or_wrap_around(ctx: Context, d_model, data) -> None:
    """Past the last position the bits tell apart: a position ``p >= 2^d`` (up to ``2^(d+3)``) is refused with a
    ValueError, or encoded as its ``d`` lowest bits, those of ``p mod 2^d`` (a clamp to ``2^d - 1``, or bits
    read past ``d``, is neither)."""
    top = 2 ** (d_model + 3) - 1
    past = [2**d_model + 1, top] if data is None else data.draw(sf.dimension(1, 8).flatmap(
        lambda n: st.lists(st.integers(2**d_model, top), min_size=n, max_size=n)), label="positions past 2^d")
    answer = ctx.answer_or_refusal("positional_encoding", lambda: ctx.positional_encoding(
        "binary", torch.tensor(past, dtype=torch.int64), d_model))
    if isinstance(answer, str):
        return
    expected = bits(torch.tensor([p % 2**d_model for p in past]), d_model)
    assert torch.equal(answer, expected), (
        f"d_model={d_model}: positions {past} encode as {answer.tolist()}, neither refused (ValueError) nor their "
        f"{d_model} lowest bits {expected.tolist()}")


def linear_residual(before: torch.Tensor, after: torch.Tensor) -> float:
    """``min_A ||before A - after||_F^2`` (least squares in float64)."""
    solution = torch.linalg.lstsq(before, after, driver="gelsd").solution
    return float((before @ solution - after).square().sum())


@st.composite
def shifts(draw: st.DrawFn) -> tuple[int, int]:
    """``d_model`` in 2..8 and an offset ``k`` in ``1 .. 2**d - 1``."""
    d_model = draw(sf.dimension(2, 8))
    return d_model, draw(st.integers(1, 2**d_model - 1))


@claim_property("absolute.bits-not-relative", needs=NEEDS)
@given(case=shifts())
@example(case=(3, 1))
def no_linear_map_shifts_binary_encodings(ctx: Context, case) -> None:
    """For every offset ``k``, no matrix ``A`` gives ``bits(pos + k) = A bits(pos)`` for all
    ``pos = 0 .. 2**d - 1 - k``: the least-squares residual is at least ``popcount(k)`` (row
    ``pos = 0`` alone: ``A 0 = 0 != bits(k)``) and equals the residual of the true bits."""
    d_model, k = case
    positions = torch.arange(2**d_model - k)
    before = ctx.positional_encoding("binary", positions, d_model)
    after = ctx.positional_encoding("binary", positions + k, d_model)
    residual = linear_residual(before, after)
    floor = bin(k).count("1")
    assert residual >= floor - 1e-9, (
        f"d_model={d_model}, k={k}: a linear map shifts the encodings with squared residual {residual:.3g} "
        f"< popcount(k) = {floor}")
    expected = linear_residual(bits(positions, d_model), bits(positions + k, d_model))
    assert math.isclose(residual, expected, rel_tol=1e-6, abs_tol=1e-6), (
        f"d_model={d_model}, k={k}: residual {residual:.6g}, the bits give {expected:.6g}")


# -- adding positions breaks permutation equivariance --------------------------------------


def self_attention(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``softmax(X W_Q (X W_K)^T / sqrt(d)) X W_V`` for ``x (t, d)``, ``w (3, d, d)``, float64."""
    q, k, v = x @ w[0], x @ w[1], x @ w[2]
    return torch.softmax(q @ k.T / math.sqrt(x.shape[-1]), dim=-1) @ v


@st.composite
def shuffled_sentences(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token embeddings ``X (t, d)``, projections ``(3, d, d)`` from a seeded normal generator
    (never degenerate), and a permutation of the ``t`` tokens that moves at least one."""
    t, d = draw(sf.dimension(2, 6)), draw(sf.even_widths(8))
    x = draw(sf.tensors((t, d), 1.0))
    generator = torch.Generator().manual_seed(draw(sf.seeds()))
    w = torch.randn(3, d, d, generator=generator, dtype=torch.float64) / math.sqrt(d)
    perm = draw(sf.permutations_of(t))
    assume(not torch.equal(perm, torch.arange(t)))
    return x, w, perm


#: A difference smaller than this is not counted as order information (examples skipped).
VISIBLE = 1e-3


@claim_property("absolute.adding-breaks-equivariance", needs=NEEDS)
@given(case=shuffled_sentences())
@example(case=(torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64),
               torch.eye(2, dtype=torch.float64).expand(3, 2, 2).clone(), torch.tensor([1, 0])))
def adding_positions_makes_self_attention_see_the_order(ctx: Context, case) -> None:
    """Without positions ``SA(PX) = P SA(X)``; with ``X + PE`` the shuffled sentence's output is no
    longer the shuffled output: ``SA(PX + PE) != P SA(X + PE)``, by as much as the formula says."""
    x, w, perm = case
    t, d = x.shape
    positions = torch.arange(t)
    assert torch.allclose(self_attention(x[perm], w), self_attention(x, w)[perm]), "equivariance without positions"
    formula_pe = encoding(positions, d)
    gap = (self_attention(x[perm] + formula_pe, w) - self_attention(x + formula_pe, w)[perm]).abs().max().item()
    assume(gap > VISIBLE)
    pe = ctx.positional_encoding("sinusoidal", positions, d)
    got = (self_attention(x[perm] + pe, w) - self_attention(x + pe, w)[perm]).abs().max().item()
    assert got > gap / 2, (f"with the implementation's encodings added, SA(PX + PE) and P SA(X + PE) differ by "
                           f"only {got:.3g} (the formula's encodings: {gap:.3g})")


# -- the documents' own comparison, and the models 001 names ------------------------------------------

#: The slides' table (004, "Learning Position Embeddings"): row -> (development perplexity, test BLEU).
POSITION_TABLE = {"sinusoidal": (4.92, 25.8), "learned": (4.92, 25.7)}


@claim_property("absolute.learned-performs-better", needs=(), about="published-numbers", expect="counterexample",
                dtypes=("float64",), max_examples=2)
@given(measure=st.sampled_from(["PPL", "BLEU"]))
def learned_embeddings_perform_better_as_written(ctx: Context, measure) -> None:
    """As written (000): the learned table performs better: lower perplexity or higher BLEU than the sinusoid."""
    (ppl_s, bleu_s), (ppl_l, bleu_l) = POSITION_TABLE["sinusoidal"], POSITION_TABLE["learned"]
    if measure == "PPL":
        assert ppl_l < ppl_s, f"development perplexity: learned {ppl_l} is not lower than sinusoidal {ppl_s}"
    else:
        assert bleu_l > bleu_s, f"test BLEU: learned {bleu_l} is not higher than sinusoidal {bleu_s}"


@claim_property("absolute.learned-performs-better", needs=(), about="published-numbers", dtypes=("float64",),
                max_examples=2)
@given(measure=st.sampled_from(["PPL", "BLEU"]))
def learned_and_sinusoidal_are_equal_within_a_tenth_of_a_bleu_point(ctx: Context, measure) -> None:
    """Corrected: equal perplexity, and BLEU within 0.1 (the sinusoidal row the higher)."""
    (ppl_s, bleu_s), (ppl_l, bleu_l) = POSITION_TABLE["sinusoidal"], POSITION_TABLE["learned"]
    if measure == "PPL":
        assert ppl_l == ppl_s, f"perplexities differ: {ppl_l} vs {ppl_s}"
    else:
        assert abs(bleu_l - bleu_s) <= 0.1 + 1e-12 and bleu_s >= bleu_l, f"BLEU {bleu_l} vs {bleu_s}"


@claim_property("absolute.modern-models", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def gpt2_holds_a_learned_table_and_llama_rotary_embeddings(ctx: Context, _) -> None:
    """``GPT2Model()`` holds ``wpe``, an ``nn.Embedding(n_positions, n_embd)``; ``LlamaModel()`` holds no
    position parameter and a rotary module with ``inv_freq = rope_theta^(-2i/d)`` (both on the meta device)."""
    transformers = pytest_free_import("transformers")
    with torch.device("meta"):
        gpt2 = transformers.GPT2Model(transformers.GPT2Config(bos_token_id=None, eos_token_id=None))
        config = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                          num_attention_heads=2, num_key_value_heads=2, vocab_size=32,
                                          bos_token_id=None, eos_token_id=None)
        llama = transformers.LlamaModel(config)
    wpe = getattr(gpt2, "wpe", None)
    assert isinstance(wpe, nn.Embedding), f"GPT2Model has no learned position table (wpe: {type(wpe).__name__})"
    assert tuple(wpe.weight.shape) == (gpt2.config.n_positions, gpt2.config.n_embd), tuple(wpe.weight.shape)
    positional = [n for n, _ in llama.named_parameters()
                  if any(part in ("wpe", "wte_pos", "embed_positions", "position_embeddings") for part in n.split("."))]
    assert not positional, f"LlamaModel holds position parameters {positional}"
    rotary = getattr(llama, "rotary_emb", None)
    assert rotary is not None and hasattr(rotary, "inv_freq"), "LlamaModel has no rotary embedding module"
    d = config.hidden_size // config.num_attention_heads
    theta = getattr(config, "rope_theta", None) or config.rope_parameters["rope_theta"]
    with torch.device("cpu"):
        fresh = type(rotary)(config=config)
    expected = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    assert torch.allclose(fresh.inv_freq.double(), expected, rtol=1e-6), f"inv_freq {fresh.inv_freq.tolist()}"


def pytest_free_import(name: str):  # noqa: ANN201 - a module
    """The module ``name``; where it is not installed the row is not applicable, naming the package and
    the extra that brings it (it never passes having checked nothing)."""
    import importlib

    from specformer.optional import missing_message

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        raise NotApplicable(missing_message(exc.name) or str(exc)) from None
