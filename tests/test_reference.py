"""The reference implementation against hand-computed cases, and its error messages."""

from __future__ import annotations

import math

import pytest
import torch

from specformer.reference.attention.attention import check_qkv, scaled_dot_product_attention
from specformer.reference.attention.masks import apply_mask, causal_mask, check_mask, local_mask, padding_mask
from specformer.reference.attention.multihead import MultiHeadParams, merge_heads, multi_head_attention, split_heads
from specformer.reference.attention.scores import (
    SCORE_FUNCTIONS,
    additive_scores,
    cosine_scores,
    dot_product_scores,
    gaussian_scores,
    general_scores,
    scaled_dot_product_scores,
)
from specformer.reference.attention.softmax import softmax

F64 = torch.float64
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                                reason="CUDA is not available"))]


def t(data, device: str = "cpu") -> torch.Tensor:
    return torch.tensor(data, dtype=F64, device=device)


def close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    torch.testing.assert_close(actual.cpu(), expected.cpu().to(actual.dtype), rtol=1e-12, atol=1e-12)


def random(*shape: int, seed: int = 0, device: str = "cpu") -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64).to(device)


# -- hand-computed attention ------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_a_two_by_two_case_computed_by_hand(device: str) -> None:
    # Q = K = I_2, d_k = 2: scores are I / sqrt(2); each row's softmax puts
    # a = e^{1/sqrt 2} / (e^{1/sqrt 2} + 1) on its own key and 1 - a on the other.
    q = k = t([[[1.0, 0.0], [0.0, 1.0]]], device)
    v = t([[[1.0, 2.0], [3.0, 4.0]]], device)
    out, weights = scaled_dot_product_attention(q, k, v)
    a = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    assert out.device.type == device and weights.device.type == device
    close(weights, t([[[a, 1 - a], [1 - a, a]]]))
    close(out, t([[[a * 1 + (1 - a) * 3, a * 2 + (1 - a) * 4], [(1 - a) * 1 + a * 3, (1 - a) * 2 + a * 4]]]))


@pytest.mark.parametrize("device", DEVICES)
def test_a_one_by_two_case_with_unequal_scores(device: str) -> None:
    # q = (2, 0), keys (1, 0) and (0, 0), d_k = 2: scores 2/sqrt(2) = sqrt(2) and 0.
    q, k, v = t([[[2.0, 0.0]]], device), t([[[1.0, 0.0], [0.0, 0.0]]], device), t([[[10.0], [0.0]]], device)
    out, weights = scaled_dot_product_attention(q, k, v)
    w0 = 1 / (1 + math.exp(-math.sqrt(2)))
    close(weights, t([[[w0, 1 - w0]]]))
    close(out, t([[[10 * w0]]]))


def test_equal_scores_give_uniform_weights_and_the_mean_of_the_values() -> None:
    q, k, v = torch.zeros(2, 3, 4, dtype=F64), random(2, 5, 4), random(2, 5, 3, seed=1)
    out, weights = scaled_dot_product_attention(q, k, v)
    close(weights, torch.full((2, 3, 5), 0.2, dtype=F64))
    close(out, v.mean(dim=1, keepdim=True).expand(2, 3, 3))


def test_the_output_shape_is_t_q_by_d_v_and_extra_leading_axes_are_allowed() -> None:
    q, k, v = random(2, 3, 3, 4), random(2, 3, 5, 4, seed=1), random(2, 3, 5, 6, seed=2)
    out, weights = scaled_dot_product_attention(q, k, v)
    assert out.shape == (2, 3, 3, 6) and weights.shape == (2, 3, 3, 5)
    expected = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1) @ v
    close(out, expected)


def test_precomputed_scores_replace_the_dot_product() -> None:
    q, k, v = random(1, 2, 3), random(1, 4, 3, seed=1), random(1, 4, 2, seed=2)
    scores = t([[[0.0, math.log(3.0), -math.inf, 0.0], [1.0, 1.0, 1.0, 1.0]]])
    _, weights = scaled_dot_product_attention(q, k, v, scores=scores)
    close(weights, t([[[0.2, 0.6, 0.0, 0.2], [0.25, 0.25, 0.25, 0.25]]]))


# -- shape and type errors ---------------------------------------------------------------


def test_q_and_k_with_different_d_k_is_a_value_error_naming_the_shapes() -> None:
    with pytest.raises(ValueError, match=r"d_k.*\(1, 2, 3\).*\(1, 4, 5\)"):
        scaled_dot_product_attention(random(1, 2, 3), random(1, 4, 5), random(1, 4, 6))


def test_k_and_v_with_different_t_k_is_a_value_error_naming_the_shapes() -> None:
    with pytest.raises(ValueError, match=r"t_k.*\(1, 4, 3\).*\(1, 5, 6\)"):
        scaled_dot_product_attention(random(1, 2, 3), random(1, 4, 3), random(1, 5, 6))


def test_different_batch_axes_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="batch"):
        scaled_dot_product_attention(random(2, 2, 3), random(1, 4, 3), random(1, 4, 6))


@pytest.mark.parametrize(
    "q, k, v, error, fragment",
    [
        ([[1.0, 2.0]], None, None, TypeError, "torch.Tensor"),
        (torch.ones(3, dtype=F64), None, None, ValueError, "(..., t, d)"),
        (torch.ones(1, 2, 3, dtype=torch.int64), None, None, TypeError, "floating-point"),
        (torch.ones(1, 2, 3, dtype=torch.float32), None, None, TypeError, "share a dtype"),
    ],
)
def test_bad_inputs_are_clear_errors(q, k, v, error, fragment) -> None:
    k = random(1, 4, 3) if k is None else k
    v = random(1, 4, 2) if v is None else v
    with pytest.raises(error) as info:
        check_qkv(q, k, v)
    assert fragment in str(info.value)


# -- masks -------------------------------------------------------------------------------


def test_a_non_boolean_mask_is_a_type_error_stating_the_convention() -> None:
    q, k, v = random(1, 2, 3), random(1, 4, 3), random(1, 4, 2)
    for mask in (torch.ones(1, 2, 4), torch.ones(1, 2, 4, dtype=torch.int64)):
        with pytest.raises(TypeError) as info:
            scaled_dot_product_attention(q, k, v, mask)
        assert "boolean" in str(info.value) and "True = may attend" in str(info.value)


@pytest.mark.parametrize("shape", [(2, 3), (1, 2, 3), (1, 3, 4), (4,), (1, 1, 1, 2, 4),
                                   (3, 2, 4), (3, 1, 4)])
def test_a_mask_of_the_wrong_shape_is_a_value_error(shape: tuple[int, ...]) -> None:
    q, k, v = random(1, 2, 3), random(1, 4, 3), random(1, 4, 2)
    with pytest.raises(ValueError, match=r"mask"):
        scaled_dot_product_attention(q, k, v, torch.ones(shape, dtype=torch.bool))


@pytest.mark.parametrize("shape", [(2, 4), (1, 2, 4), (1, 1, 4)])
def test_masks_of_the_accepted_shapes_are_accepted(shape: tuple[int, ...]) -> None:
    check_mask(torch.ones(shape, dtype=torch.bool), (1,), 2, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_masked_keys_get_zero_weight_and_the_rest_renormalise(device: str) -> None:
    q, k, v = torch.zeros(1, 2, 3, device=device, dtype=F64), random(1, 4, 3, device=device), \
        random(1, 4, 2, seed=3, device=device)
    mask = torch.tensor([[[True, False, True, False], [False, False, False, True]]], device=device)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    close(weights, t([[[0.5, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0]]]))
    close(out[0, 1], v[0, 3])


@pytest.mark.parametrize("device", DEVICES)
def test_a_fully_masked_row_gets_zero_weights_and_zero_output(device: str) -> None:
    q, k, v = random(1, 3, 2, device=device), random(1, 3, 2, seed=1, device=device), \
        random(1, 3, 4, seed=2, device=device)
    mask = torch.tensor([[[True, True, False], [False, False, False], [True, True, True]]], device=device)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert not out.isnan().any() and not weights.isnan().any()
    close(weights[0, 1], torch.zeros(3, dtype=F64))
    close(out[0, 1], torch.zeros(4, dtype=F64))
    close(weights[0, [0, 2]].sum(-1), torch.ones(2, dtype=F64))
    expected = scaled_dot_product_attention(q[:, [0, 2]], k, v, mask[:, [0, 2]]).output
    close(out[:, [0, 2]], expected)


def test_softmax_of_a_row_of_minus_infinity_is_zero_and_otherwise_torch_softmax() -> None:
    scores = t([[-math.inf, -math.inf, -math.inf], [1.0, 2.0, -math.inf], [1000.0, 0.0, -1000.0]])
    result = softmax(scores)
    close(result[0], torch.zeros(3, dtype=F64))
    close(result[1:], torch.softmax(scores[1:], dim=-1))


def test_the_causal_mask_is_lower_triangular_and_top_left_aligned() -> None:
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    assert causal_mask(2, 3).tolist() == [[True, False, False], [True, True, False]]
    assert causal_mask(3, 2).tolist() == [[True, False], [True, True], [True, True]]
    assert causal_mask(3).dtype == torch.bool


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("t_q, t_k", [(2, 4), (4, 2), (3, 3)])
def test_causal_attention_is_masked_attention_with_the_top_left_triangle(device: str, t_q: int, t_k: int) -> None:
    q, k, v = random(2, t_q, 3, device=device), random(2, t_k, 3, seed=1, device=device), \
        random(2, t_k, 2, seed=2, device=device)
    out, weights = scaled_dot_product_attention(q, k, v, causal=True)
    tri = torch.ones(t_q, t_k, dtype=torch.bool).tril()
    assert (weights.cpu()[:, ~tri] == 0).all()
    close(out, scaled_dot_product_attention(q, k, v, tri.to(device)).output)


def test_causal_is_intersected_with_an_explicit_mask() -> None:
    q, k, v = random(1, 3, 2), random(1, 3, 2, seed=1), random(1, 3, 2, seed=2)
    mask = torch.tensor([[False, True, True]] * 3)
    _, weights = scaled_dot_product_attention(q, k, v, mask, causal=True)
    assert (weights[0, 0] == 0).all(), "query 0 may only see key 0, which the mask forbids"
    assert weights[0, 1].tolist()[0] == 0 and weights[0, 1, 1] == 1


def test_padding_mask_has_shape_b_1_t_k() -> None:
    mask = padding_mask(torch.tensor([2, 0, 3]), 3)
    assert mask.shape == (3, 1, 3) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [[True, True, False], [False, False, False], [True, True, True]]


def test_a_padding_mask_hides_the_padded_keys() -> None:
    q, k, v = random(2, 3, 2), random(2, 4, 2, seed=1), random(2, 4, 3, seed=2)
    out, weights = scaled_dot_product_attention(q, k, v, padding_mask(torch.tensor([2, 4]), 4))
    assert (weights[0, :, 2:] == 0).all()
    close(out[:1], scaled_dot_product_attention(q[:1], k[:1, :2], v[:1, :2]).output)


@pytest.mark.parametrize("lengths", [torch.tensor([1, 5]), torch.tensor([-1, 2]), torch.tensor([[1, 2]])])
def test_bad_padding_lengths_are_value_errors(lengths: torch.Tensor) -> None:
    with pytest.raises(ValueError, match="lengths"):
        padding_mask(lengths, 4)


def test_local_mask_is_a_band() -> None:
    assert local_mask(4, 1).tolist() == [
        [True, True, False, False], [True, True, True, False], [False, True, True, True], [False, False, True, True]]
    assert local_mask(3, 0).tolist() == torch.eye(3, dtype=torch.bool).tolist()
    assert local_mask(3, 5).all()
    with pytest.raises(ValueError, match="window"):
        local_mask(3, -1)


def test_apply_mask_fills_only_the_forbidden_positions() -> None:
    scores = t([[1.0, 2.0], [3.0, 4.0]])
    filled = apply_mask(scores, torch.tensor([[True, False], [False, True]]), fill=-7.0)
    assert filled.tolist() == [[1.0, -7.0], [-7.0, 4.0]]
    assert apply_mask(scores, None) is scores


# -- multi-head attention ----------------------------------------------------------------


def make_params(d_model: int = 6, h: int = 3, d_k: int = 2, d_v: int = 4, seed: int = 0) -> MultiHeadParams:
    return MultiHeadParams(random(d_model, h * d_k, seed=seed), random(d_model, h * d_k, seed=seed + 1),
                           random(d_model, h * d_v, seed=seed + 2), random(h * d_v, d_model, seed=seed + 3), h)


def per_head_loop(query, key, value, p: MultiHeadParams, mask=None) -> torch.Tensor:
    heads = []
    for i in range(p.h):
        qi = query @ p.w_q[:, i * p.d_k:(i + 1) * p.d_k]
        ki = key @ p.w_k[:, i * p.d_k:(i + 1) * p.d_k]
        vi = value @ p.w_v[:, i * p.d_v:(i + 1) * p.d_v]
        scores = qi @ ki.transpose(-2, -1) / math.sqrt(p.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, -math.inf)
        heads.append(torch.softmax(scores, dim=-1) @ vi)
    return torch.cat(heads, dim=-1) @ p.w_o


@pytest.mark.parametrize("device", DEVICES)
def test_multi_head_attention_equals_a_loop_over_heads(device: str) -> None:
    p = make_params().to(device)
    query, source = random(2, 3, 6, device=device), random(2, 5, 6, seed=9, device=device)
    out = multi_head_attention(query, source, source, p)
    assert out.shape == (2, 3, 6) and out.device.type == device
    close(out, per_head_loop(query.cpu(), source.cpu(), source.cpu(), p.to("cpu")))


def test_multi_head_attention_with_a_mask_equals_the_loop() -> None:
    p = make_params(d_model=4, h=2, d_k=2, d_v=2)
    query = random(2, 3, 4, seed=5)
    mask = causal_mask(3)[None].expand(2, 3, 3).clone()
    mask[1, 2, 0] = False
    close(multi_head_attention(query, query, query, p, mask), per_head_loop(query, query, query, p, mask))
    pad = padding_mask(torch.tensor([3, 1]), 3)
    close(multi_head_attention(query, query, query, p, pad), per_head_loop(query, query, query, p, pad))
    close(multi_head_attention(query, query, query, p, causal=True),
          per_head_loop(query, query, query, p, causal_mask(3)))


def test_multi_head_attention_rejects_inputs_of_the_wrong_width() -> None:
    p = make_params()
    with pytest.raises(ValueError, match="d_model=6"):
        multi_head_attention(random(1, 2, 5), random(1, 2, 6), random(1, 2, 6), p)
    with pytest.raises(ValueError, match="key and value"):
        multi_head_attention(random(1, 2, 6), random(1, 3, 6), random(1, 4, 6), p)


def test_multi_head_params_report_their_widths() -> None:
    p = make_params(d_model=6, h=3, d_k=2, d_v=4)
    assert (p.d_model, p.h, p.d_k, p.d_v) == (6, 3, 2, 4)
    moved = p.to(dtype=torch.float32)
    assert moved.w_q.dtype == torch.float32 and moved.h == 3 and p.w_q.dtype == F64


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(w_q=(6, 6), w_k=(6, 6), w_v=(6, 6), w_o=(6, 6), h=0), "h must be >= 1"),
        (dict(w_q=(6, 6), w_k=(6, 6), w_v=(6, 6), w_o=(6, 6), h=4), "must divide"),
        (dict(w_q=(6, 6), w_k=(6, 6), w_v=(6, 9), w_o=(9, 6), h=2), "must divide"),
        (dict(w_q=(6, 6), w_k=(6, 6), w_v=(6, 6), w_o=(4, 6), h=2), "w_o must have h*d_v=6 rows"),
        (dict(w_q=(6, 6), w_k=(6, 4), w_v=(6, 6), w_o=(6, 6), h=2), "w_q and w_k"),
        (dict(w_q=(6,), w_k=(6, 6), w_v=(6, 6), w_o=(6, 6), h=2), "w_q must be 2-D"),
    ],
)
def test_multi_head_params_validation(kwargs: dict, fragment: str) -> None:
    h = kwargs.pop("h")
    with pytest.raises(ValueError) as info:
        MultiHeadParams(**{name: torch.zeros(shape, dtype=F64) for name, shape in kwargs.items()}, h=h)
    assert fragment in str(info.value)


def test_split_heads_gives_head_i_the_contiguous_features_and_merge_inverts_it() -> None:
    x = torch.arange(2 * 3 * 6, dtype=F64).reshape(2, 3, 6)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 3, 2)
    for i in range(3):
        assert torch.equal(heads[:, i], x[..., 2 * i:2 * i + 2])
    assert torch.equal(merge_heads(heads), x)
    y = random(2, 4, 5, 3)
    assert torch.equal(split_heads(merge_heads(y), 4), y)


# -- score functions ---------------------------------------------------------------------


def test_dot_and_scaled_dot_scores() -> None:
    q, k = t([[[1.0, 2.0, 0.0, 0.0]]]), t([[[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]]])
    close(dot_product_scores(q, k), t([[[11.0, 0.0]]]))
    close(scaled_dot_product_scores(q, k), t([[[5.5, 0.0]]]))


def test_general_scores_are_bilinear() -> None:
    q, k, w = random(1, 2, 3), random(1, 4, 3, seed=1), random(3, 3, seed=2)
    expected = torch.stack([torch.stack([q[0, i] @ w @ k[0, j] for j in range(4)]) for i in range(2)])[None]
    close(general_scores(q, k, w), expected)


def test_additive_scores_follow_the_formula() -> None:
    q, k = random(2, 3, 2), random(2, 4, 2, seed=1)
    w, v = random(5, 4, seed=2), random(5, seed=3)
    scores = additive_scores(q, k, w, v)
    assert scores.shape == (2, 3, 4)
    for b in range(2):
        for i in range(3):
            for j in range(4):
                expected = v @ torch.tanh(w @ torch.cat([q[b, i], k[b, j]]))
                close(scores[b, i, j], expected)


def test_the_nearest_key_gets_the_highest_gaussian_score() -> None:
    q = t([[[0.0, 0.0], [5.0, 5.0]]])
    k = t([[[1.0, 1.0], [4.0, 4.0], [-3.0, 0.0]]])
    scores = gaussian_scores(q, k, sigma=2.0)
    assert scores.argmax(-1).tolist() == [[0, 1]]
    close(scores[0, 0], t([-2.0, -32.0, -9.0]) / 4.0)
    close(gaussian_scores(q, q).diagonal(dim1=-2, dim2=-1), torch.zeros(1, 2, dtype=F64))
    with pytest.raises(ValueError, match="sigma"):
        gaussian_scores(q, k, sigma=0.0)


def test_cosine_scores_lie_in_minus_one_one_and_zero_vectors_score_zero() -> None:
    q, k = random(2, 5, 3) * 100, random(2, 6, 3, seed=1) * 1e-3
    scores = cosine_scores(q, k)
    assert scores.min() >= -1 - 1e-12 and scores.max() <= 1 + 1e-12
    close(cosine_scores(t([[[2.0, 0.0]]]), t([[[3.0, 0.0], [-1.0, 0.0], [0.0, 5.0], [0.0, 0.0]]])),
          t([[[1.0, -1.0, 0.0, 0.0]]]))


def test_the_score_table_names_every_function() -> None:
    assert set(SCORE_FUNCTIONS) == {"dot", "scaled_dot", "general", "additive", "cosine", "gaussian"}
