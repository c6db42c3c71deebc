"""The reference decoder-only stack: distributions, causality, weight sharing and the parameter count."""

from __future__ import annotations

import pytest
import torch

from specformer.properties.blocks.strategies import layer_weights
from specformer.reference.blocks.stack import DecoderOnlyWeights, decoder_only, parameter_count


def _model(tied: bool, d: int = 8, d_ff: int = 16, vocabulary: int = 11, layers: int = 2) -> DecoderOnlyWeights:
    g = torch.Generator().manual_seed(0)
    return DecoderOnlyWeights(
        embedding=torch.randn(vocabulary, d, generator=g, dtype=torch.float64) / d,
        layers=[layer_weights(n, d, d_ff) for n in range(layers)],
        gamma_f=torch.ones(d, dtype=torch.float64), beta_f=torch.zeros(d, dtype=torch.float64),
        b_out=torch.zeros(vocabulary, dtype=torch.float64),
        w_out=None if tied else torch.randn(d, vocabulary, generator=g, dtype=torch.float64),
    )


@pytest.mark.parametrize("norm_first", [True, False])
def test_each_position_gives_a_distribution_over_the_vocabulary(norm_first: bool) -> None:
    tokens = torch.tensor([[1, 4, 2, 9, 0], [3, 3, 3, 3, 3]])
    p = decoder_only(tokens, _model(tied=False), heads=2, norm_first=norm_first)
    assert p.shape == (2, 5, 11)
    assert bool((p >= 0).all())
    torch.testing.assert_close(p.sum(-1), torch.ones(2, 5, dtype=torch.float64))


def test_a_position_ignores_later_tokens() -> None:
    model = _model(tied=True)
    a = decoder_only(torch.tensor([[1, 4, 2, 9, 0]]), model, heads=2)
    b = decoder_only(torch.tensor([[1, 4, 2, 5, 7]]), model, heads=2)
    torch.testing.assert_close(a[:, :3], b[:, :3])
    assert not torch.allclose(a[:, 3:], b[:, 3:])


def test_the_parameter_count_counts_each_tensor_once() -> None:
    d, d_ff, vocabulary, layers = 8, 16, 11, 2
    per_layer = 4 * (d * d + d) + (d * d_ff + d_ff) + (d_ff * d + d) + 4 * d
    untied = parameter_count(_model(tied=False, d=d, d_ff=d_ff, vocabulary=vocabulary, layers=layers))
    assert untied == vocabulary * d + vocabulary + layers * per_layer + 2 * d + d * vocabulary
    tied = parameter_count(_model(tied=True, d=d, d_ff=d_ff, vocabulary=vocabulary, layers=layers))
    assert untied - tied == d * vocabulary  # sharing the output layer with the embedding saves one |V| x d matrix


def test_bad_tokens_are_rejected() -> None:
    model = _model(tied=True)
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 11\)"):
        decoder_only(torch.tensor([[1, 11]]), model, heads=2)
    with pytest.raises(ValueError, match="tokens must be int64"):
        decoder_only(torch.tensor([[1.0, 2.0]]), model, heads=2)
