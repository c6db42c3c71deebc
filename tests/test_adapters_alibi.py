"""The positions operations of the third-party adapters: BLOOM's ALiBi (``hf-bloom``) and
x-transformers' ALiBi and rotary embeddings (``x-transformers``).

Each adapter must give what its library computes, converted only in shape: the pins here
record where the libraries depart from the paper and the protocol (BLOOM's ``+m j``,
x-transformers' bottom-right alignment and float32 frequencies), so a conversion that hid
them would be caught. The parameter counts behind ``alibi.fixed-slopes`` and
``alibi.no-position-embeddings`` are taken on the libraries themselves. Expected values
are written here from the paper's formulas, not taken from the reference. Tests of a
library that is not installed are skipped.
"""

from __future__ import annotations

import importlib
import math
import warnings
from typing import Any

import pytest
import torch

from specformer.protocol import NotApplicable, provided_operations

F64 = torch.float64


def _module(name: str, package: str) -> Any:
    with warnings.catch_warnings():  # x-transformers' import warns about torch.jit.script
        warnings.simplefilter("ignore", DeprecationWarning)
        pytest.importorskip(package)
        return importlib.import_module(name)


@pytest.fixture
def bloom() -> Any:
    return _module("specformer.adapters.hf_bloom", "transformers").implementation


@pytest.fixture
def xt() -> Any:
    return _module("specformer.adapters.xtransformers_attention", "x_transformers").implementation


def paper_slopes(h: int) -> torch.Tensor:
    n = 2 ** math.floor(math.log2(h))
    slopes = [2.0 ** (-8.0 * k / n) for k in range(1, n + 1)]
    slopes += [2.0 ** (-4.0 * (2 * l - 1) / n) for l in range(1, h - n + 1)]
    return torch.tensor(slopes, dtype=F64)


def grid(t_q: int, t_k: int, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.arange(t_q, dtype=F64)[:, None] + offset, torch.arange(t_k, dtype=F64)[None, :]


def slopes_of_causal(bias: torch.Tensor) -> torch.Tensor:
    r = bias.shape[-1] - 1
    return (bias[:, r, r] - bias[:, r, 0]) / r


# -- BLOOM ---------------------------------------------------------------------------------------


def test_bloom_provides_alibi_its_attention_and_its_parameter_count(bloom: Any) -> None:
    assert bloom.name == "hf-bloom"
    assert provided_operations(bloom) == {"alibi_bias", "alibi_attention", "count_parameters"}


@pytest.mark.parametrize("h", [1, 3, 8])
def test_bloom_attention_is_the_papers_alibi_attention_under_the_causal_mask(bloom: Any, h: int) -> None:
    g = torch.Generator().manual_seed(h)
    q, k, v = (torch.randn(2, h, 7, 4, generator=g, dtype=F64) for _ in range(3))
    i, j = grid(7, 7)
    scores = q @ k.transpose(-2, -1) / 2.0 - paper_slopes(h)[:, None, None] * (i - j).abs()
    expected = torch.softmax(scores.masked_fill(j > i, float("-inf")), -1) @ v
    # float32 softmax inside BloomAttention, whatever the dtype (listed in deviations.toml)
    torch.testing.assert_close(bloom.alibi_attention(q, k, v, causal=True), expected, rtol=1e-5, atol=1e-6)
    got32 = bloom.alibi_attention(q.float(), k.float(), v.float(), causal=True)
    assert got32.dtype == torch.float32
    torch.testing.assert_close(got32.double(), expected, rtol=1e-5, atol=1e-5)


def test_bloom_attention_is_causal_only_and_square_only(bloom: Any) -> None:
    q = torch.zeros(1, 2, 3, 4, dtype=F64)
    with pytest.raises(NotApplicable, match="causal only"):
        bloom.alibi_attention(q, q, q, causal=False)
    with pytest.raises(NotApplicable, match="t_q = t_k"):
        bloom.alibi_attention(q, torch.zeros(1, 2, 5, 4, dtype=F64), torch.zeros(1, 2, 5, 4, dtype=F64), causal=True)


def test_bloom_counts_its_own_layout_only(bloom: Any) -> None:
    from specformer.protocol.blocks import ModelConfig
    from specformer.reference.blocks.size import count_parameters

    config = ModelConfig(100, 16, 2, 64, 2, positions="alibi", final_norm=True, embedding_norm=True)
    assert bloom.count_parameters(config) == count_parameters(config) == 8224
    with pytest.raises(NotApplicable, match="fixed"):
        bloom.count_parameters(ModelConfig(100, 16, 2, 64, 2, positions="learned", final_norm=True,
                                           embedding_norm=True))


def test_bloom_adds_plus_m_j_the_same_for_every_query(bloom: Any) -> None:
    bias = bloom.alibi_bias(2, 3, 4, dtype=F64, device="cpu")
    _, j = grid(3, 4)
    torch.testing.assert_close(bias, (paper_slopes(2)[:, None, None] * j).expand(2, 3, 4))


def test_bloom_causal_bias_is_masked_top_left_and_gives_the_papers_weights(bloom: Any) -> None:
    h, t = 4, 6
    bias = bloom.alibi_bias(h, t, t, causal=True, dtype=F64, device="cpu")
    i, j = grid(t, t)
    assert torch.equal(torch.isneginf(bias), (j > i).expand(h, t, t))
    scores = torch.randn(h, t, t, generator=torch.Generator().manual_seed(0), dtype=F64)
    paper = (-paper_slopes(h)[:, None, None] * (i - j)).masked_fill(j > i, float("-inf"))
    torch.testing.assert_close(torch.softmax(scores + bias, -1), torch.softmax(scores + paper, -1),
                               rtol=1e-6, atol=1e-9)
    assert not torch.allclose(bias.nan_to_num(neginf=0.0), paper.nan_to_num(neginf=0.0)), "BLOOM's form differs"


@pytest.mark.parametrize("h", [1, 2, 3, 5, 8, 12, 16, 24, 64, 112, 128])
def test_bloom_slopes_are_the_papers_to_float32_precision(bloom: Any, h: int) -> None:
    slopes = slopes_of_causal(bloom.alibi_bias(h, 3, 3, causal=True, dtype=F64, device="cpu"))
    torch.testing.assert_close(slopes, paper_slopes(h), rtol=1e-6, atol=0)


def test_bloom_computes_its_slopes_in_float32_whatever_the_dtype(bloom: Any) -> None:
    slopes = slopes_of_causal(bloom.alibi_bias(128, 2, 2, causal=True, dtype=F64, device="cpu"))
    error = ((slopes - paper_slopes(128)).abs() / paper_slopes(128)).max().item()
    assert 1e-7 < error < 1e-6, f"relative error {error:.3g}"
    assert torch.equal(slopes, slopes.float().double()), "every slope is a float32 value"


def test_bloom_has_no_position_parameters() -> None:
    transformers = _module("transformers", "transformers")
    model = transformers.BloomModel(transformers.BloomConfig(vocab_size=50, hidden_size=16, n_layer=1, n_head=2))
    names = [name for name, _ in model.named_parameters()]
    assert not [n for n in names if any(word in n for word in ("position", "wpe", "alibi", "slope"))], names
    counts = []
    for n_positions in (16, 32):  # GPT-2's learned table grows by n_embd per position
        config = transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=n_positions,
                                         bos_token_id=0, eos_token_id=0)
        counts.append(sum(p.numel() for p in transformers.GPT2Model(config).parameters()))
    assert counts[1] - counts[0] == 16 * 16


@pytest.mark.parametrize("args", [(0, 2, 2), (2, 0, 2), (2, 2, 0)])
def test_bloom_refuses_empty_sizes(bloom: Any, args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match="positive"):
        bloom.alibi_bias(*args, dtype=F64, device="cpu")


# -- x-transformers: ALiBi --------------------------------------------------------------------------


def test_xtransformers_provides_the_attention_and_positions_operations(xt: Any) -> None:
    assert provided_operations(xt) == {"attention", "multihead_attention", "alibi_bias", "rotary"}


@pytest.mark.parametrize("causal", [False, True])
def test_xtransformers_alibi_is_the_papers_for_square_inputs(xt: Any, causal: bool) -> None:
    h, t = 12, 5
    bias = xt.alibi_bias(h, t, t, causal=causal, dtype=F64, device="cpu")
    i, j = grid(t, t)
    expected = -paper_slopes(h)[:, None, None] * (i - j).abs()
    if causal:
        expected = expected.masked_fill(j > i, float("-inf"))
    torch.testing.assert_close(bias, expected, rtol=1e-7, atol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_xtransformers_alibi_places_the_queries_at_the_end_of_the_keys(xt: Any, causal: bool) -> None:
    h, t_q, t_k = 2, 2, 5
    bias = xt.alibi_bias(h, t_q, t_k, causal=causal, dtype=F64, device="cpu")
    i, j = grid(t_q, t_k, offset=t_k - t_q)  # query i at position i + t_k - t_q
    expected = -paper_slopes(h)[:, None, None] * (i - j).abs()
    if causal:
        expected = expected.masked_fill(j > i, float("-inf"))
    torch.testing.assert_close(bias, expected, rtol=1e-7, atol=0)


def test_xtransformers_alibi_has_no_parameters_and_does_not_save_its_slopes() -> None:
    library = _module("x_transformers.x_transformers", "x_transformers")
    module = library.AlibiPositionalBias(heads=8, total_heads=8)
    assert list(module.parameters()) == []
    assert module.state_dict() == {}, "the slopes are a non-persistent buffer"
    torch.testing.assert_close(module.slopes.flatten().double(), paper_slopes(8), rtol=0, atol=0)


def test_xtransformers_decoder_with_alibi_counts_like_one_without_positions() -> None:
    library = _module("x_transformers", "x_transformers")

    def count(alibi: bool, **wrapper: Any) -> int:
        model = library.TransformerWrapper(num_tokens=50, max_seq_len=64, **wrapper,
                                           attn_layers=library.Decoder(dim=16, depth=1, heads=2, alibi_pos_bias=alibi))
        return sum(p.numel() for p in model.parameters())

    with_alibi, without = count(True, use_abs_pos_emb=False), count(False, use_abs_pos_emb=False)
    learned = count(False, use_abs_pos_emb=True)
    assert with_alibi == without
    assert learned - with_alibi == 64 * 16
    # the library's default keeps its learned absolute positions next to ALiBi (alibi_pos_bias does not turn
    # them off, unlike rotary or T5 biases): switching ALiBi on alone does not make the model smaller
    assert count(True) == learned


# -- x-transformers: rotary --------------------------------------------------------------------------


def rotary_formula(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """Interleaved pairs ``(2i, 2i+1)`` rotated by ``pos base^(-2i/d)``, in float64."""
    d = x.shape[-1]
    theta = positions.to(F64)[:, None] * base ** (-torch.arange(0, d, 2, dtype=F64) / d)  # (t, d/2)
    a, b = x[..., 0::2], x[..., 1::2]
    out = torch.stack([a * theta.cos() - b * theta.sin(), a * theta.sin() + b * theta.cos()], dim=-1)
    return out.reshape(x.shape)  # (B, t, d/2, 2) -> (B, t, d)


@pytest.mark.parametrize("base", [10000.0, 500.0])
def test_xtransformers_rotary_rotates_interleaved_pairs(xt: Any, base: float) -> None:
    x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(1), dtype=F64)
    positions = torch.tensor([0, 1, 7, 30])
    torch.testing.assert_close(xt.rotary(x, positions, base=base), rotary_formula(x, positions, base),
                               rtol=1e-6, atol=1e-6)
    out32 = xt.rotary(x.float(), positions, base=base)
    assert out32.dtype == torch.float32
    torch.testing.assert_close(out32.double(), rotary_formula(x, positions, base), rtol=1e-5, atol=1e-5)


def test_xtransformers_rotary_frequencies_keep_float32_rounding_in_float64(xt: Any) -> None:
    x = torch.randn(1, 2, 8, generator=torch.Generator().manual_seed(2), dtype=F64)
    positions = torch.tensor([2000, 2047])
    error = (xt.rotary(x, positions) - rotary_formula(x, positions, 10000.0)).abs().max().item()
    assert 1e-9 < error < 1e-3, f"error {error:.3g}"


def test_xtransformers_rotary_has_no_half_pairing(xt: Any) -> None:
    x = torch.zeros(1, 2, 4, dtype=F64)
    with pytest.raises(NotApplicable, match="interleaved"):
        xt.rotary(x, torch.arange(2), pairing="half")


def test_xtransformers_rotary_refuses_an_odd_width(xt: Any) -> None:
    with pytest.raises(ValueError, match="even"):
        xt.rotary(torch.zeros(1, 2, 3, dtype=F64), torch.arange(2))
