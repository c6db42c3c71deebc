"""Every property of ``properties/attention/multihead.py`` catches at least one wrong implementation.

Math-level properties (``needs=()``) have no implementation to mutate: their tests feed
the property a wrong table row or a wrong library and check that it objects.
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import assert_caught, run_row
from mutants import (
    MHA_CAUSAL_WHEN_SELF,
    MHA_FULL_WIDTH_HEADS,
    MHA_MASK_FIRST_HEAD,
    MHA_MASK_TILED,
    MHA_MERGE_WITHOUT_TRANSPOSE,
    MHA_NO_W_O,
    MHA_SCALE_BY_D_MODEL,
    MHA_SCALE_BY_D_V,
    MHA_SELF_ONLY,
    MHA_SOFTMAX_OVER_QUERIES,
    MHA_STRIDED_HEADS,
    MHA_STRIDED_SPLIT,
    MHA_VALUES_AT_D_MODEL_OVER_H,
    MHA_VALUES_FROM_KEYS,
    MHA_W_O_PER_HEAD,
    MHA_W_O_TRANSPOSED,
    SOFTMAX_WRONG_AXIS,
    Mutant,
    attention_with,
    multihead_with,
)
from specformer.adapters.reference import ReferenceImplementation
from specformer.adapters.reference import implementation as reference
from specformer.adapters.torch_mha import implementation as torch_mha
from specformer.context import Context
from specformer.protocol import Capabilities
from specformer.properties.attention import multihead

CONCAT = "multihead.output_is_the_concatenation_of_the_heads_times_w_o"
SINGLE = "multihead.one_head_is_attention_of_the_projections_times_w_o"
PERMUTATION = "multihead.permuting_the_heads_leaves_the_output_unchanged"
TABLE = "multihead.the_documents_models_have_d_k_and_d_v_equal_to_d_model_over_h"
HEAD_WIDTH = "multihead.with_d_k_equal_to_d_model_over_h_the_concat_has_width_d_model"
ANY_D_V = "multihead.with_any_d_v_the_output_matches_the_formula_and_w_o_has_h_d_v_rows"
AS_WRITTEN = "multihead.the_concat_has_width_d_model_as_written"
COST = "multihead.h_heads_of_width_d_over_h_cost_the_flops_of_one_head_of_width_d"
PARAMETERS = "multihead.the_projections_have_four_d_model_squared_parameters_for_every_h"
CROSS = "multihead.cross_attention_output_has_t_q_rows_and_matches_the_formula"
ONE_HEAD_CROSS = "multihead.one_head_cross_attention_has_a_row_per_target_position"
SELF = "multihead.self_attention_is_cross_attention_with_the_query_as_source"
ROWS = "multihead.changing_query_row_i_changes_only_output_row_i"
KEY_VALUE = "multihead.keys_and_values_from_different_sequences_enter_each_head_apart"

CAUGHT = [
    (CONCAT, MHA_STRIDED_HEADS),
    (CONCAT, MHA_STRIDED_SPLIT),
    (CONCAT, MHA_NO_W_O),
    (CONCAT, MHA_W_O_TRANSPOSED),
    (CONCAT, MHA_W_O_PER_HEAD),
    (CONCAT, MHA_SCALE_BY_D_MODEL),
    (CONCAT, MHA_MASK_TILED),
    (CONCAT, MHA_MASK_FIRST_HEAD),
    (SINGLE, MHA_NO_W_O),
    (SINGLE, MHA_W_O_TRANSPOSED),
    (PERMUTATION, MHA_STRIDED_HEADS),
    (PERMUTATION, MHA_MASK_FIRST_HEAD),
    (PERMUTATION, MHA_W_O_PER_HEAD),
    (HEAD_WIDTH, MHA_MERGE_WITHOUT_TRANSPOSE),
    (HEAD_WIDTH, MHA_STRIDED_SPLIT),
    (ANY_D_V, MHA_VALUES_AT_D_MODEL_OVER_H),
    (ANY_D_V, MHA_SCALE_BY_D_V),
    (COST, MHA_FULL_WIDTH_HEADS),
    (CROSS, MHA_SELF_ONLY),
    (ONE_HEAD_CROSS, SOFTMAX_WRONG_AXIS),
    (SELF, MHA_CAUSAL_WHEN_SELF),
    (ROWS, MHA_SOFTMAX_OVER_QUERIES),
    (KEY_VALUE, MHA_VALUES_FROM_KEYS),
]


@pytest.mark.parametrize(("qualname", "mutant"), CAUGHT, ids=[f"{q.split('.')[1]}-{m.name}" for q, m in CAUGHT])
def test_property_catches_mutant(qualname, mutant):
    row = assert_caught(qualname, mutant)
    assert row.message


@pytest.mark.parametrize("qualname", [CONCAT, SINGLE, PERMUTATION, HEAD_WIDTH, ANY_D_V, COST, CROSS,
                                      ONE_HEAD_CROSS, SELF, ROWS, KEY_VALUE])
def test_reference_passes(qualname):
    row = run_row(qualname, reference)
    assert row.outcome == "pass", row.message


@pytest.mark.parametrize("qualname", [CONCAT, CROSS, SELF])
def test_only_separate_keys_and_values_catch_values_taken_from_the_keys(qualname):
    # Every other multi-head property passes the same sequence as key and value.
    assert run_row(qualname, MHA_VALUES_FROM_KEYS).outcome == "pass"


def test_torch_mha_takes_keys_and_values_apart():
    assert run_row(KEY_VALUE, torch_mha).outcome == "pass"


def test_single_head_cannot_tell_sqrt_d_model_from_sqrt_d_k():
    # With h = 1, d_k = d_model: the wrong scale is right there, and only CONCAT catches it.
    assert run_row(SINGLE, MHA_SCALE_BY_D_MODEL).outcome == "pass"


def test_full_width_heads_compute_the_right_output():
    # The cost mutant is wrong in FLOPs only: the formula properties accept it.
    assert run_row(CONCAT, MHA_FULL_WIDTH_HEADS).outcome == "pass"


def test_torch_module_is_not_applicable_with_a_free_value_width():
    """torch-mha declares value_width d_model / h: the row is not applicable at once, no example drawn."""
    row = run_row(ANY_D_V, torch_mha)
    assert row.outcome == "not-applicable"
    assert "value_width" in row.message and "'free'" in row.message, row.message
    assert row.examples_checked == 0 and row.examples_generated <= 1, row  # stopped at the first call of the test


def test_flop_counter_blindness_is_not_applicable():
    row = run_row(COST, torch_mha)
    assert row.outcome == "not-applicable"
    assert "FlopCounterMode cannot see" in row.message


def test_documents_table_passes_and_a_wrong_row_fails():
    assert run_row(TABLE, None).outcome == "pass"
    ctx = Context(None, "math", "cpu", "float64")
    check = multihead.the_documents_models_have_d_k_and_d_v_equal_to_d_model_over_h.hypothesis.inner_test
    with pytest.raises(AssertionError, match="d_model/h"):
        check(ctx, ("wrong", 512, 8, 32, 64))


def test_concat_width_as_written_is_refuted_but_holds_at_d_v_equal_d_model_over_h():
    from specformer.context import LocalBackend

    row = run_row(AS_WRITTEN, reference)
    assert row.outcome == "refuted", row.message
    assert "h d_v = 6" in row.message
    check = multihead.the_concat_has_width_d_model_as_written.hypothesis.inner_test
    check(Context(LocalBackend(reference), "reference", "cpu", "float64"), h=2, head_width=2, d_v=2)  # no error


def _heads_as_wide_as_the_queries(q, k, v, mask=None, *, causal=False):
    out, weights = attention_with()(q, k, v, mask, causal=causal)
    width = q.shape[-1]  # the claim as written: every head as wide as d_model / h, whatever d_v
    return torch.nn.functional.pad(out, (0, max(0, width - out.shape[-1])))[..., :width], weights


def test_concat_width_as_written_catches_heads_that_ignore_d_v():
    assert_caught(AS_WRITTEN, Mutant("head-width-d_k", _heads_as_wide_as_the_queries))


def test_parameter_count_objects_to_a_module_with_biases(monkeypatch):
    assert run_row(PARAMETERS, None).outcome == "pass"
    module = torch.nn.MultiheadAttention
    monkeypatch.setattr(torch.nn, "MultiheadAttention", lambda d, h, bias=False: module(d, h, bias=True))
    check = multihead.the_projections_have_four_d_model_squared_parameters_for_every_h.hypothesis.inner_test
    with pytest.raises(AssertionError, match="not 4 d_model"):
        check(Context(None, "math", "cpu", "float64"), h=2, head_width=2)


# -- multihead.typical-head-count ---------------------------------------------------------------
HEADS_CORRECTED = "multihead.models_up_to_width_1024_with_heads_of_64_have_8_to_16_heads_and_wider_ones_more"
HEADS_AS_WRITTEN = "multihead.published_transformers_use_8_to_16_heads_as_written"


def test_head_counts_hold_corrected_and_are_refuted_as_written():
    assert run_row(HEADS_CORRECTED, None).outcome == "pass"
    row = run_row(HEADS_AS_WRITTEN, None)
    assert row.outcome == "refuted", row.message


def test_a_mis_stated_head_count_fails_the_corrected_statement(monkeypatch):
    table = dict(multihead.PUBLISHED_CONFIGURATIONS)
    table["GPT-3 175B"] = (12288, 16, 768)  # a wide model with few, wide heads: contradicts the corrected rule
    monkeypatch.setattr(multihead, "PUBLISHED_CONFIGURATIONS", table)
    row = run_row(HEADS_CORRECTED, None)
    assert row.outcome == "fail" and "GPT-3" in row.message, f"{row.outcome}, {row.message}"


def test_a_table_row_that_disagrees_with_the_library_default_fails(monkeypatch):
    table = dict(multihead.PUBLISHED_CONFIGURATIONS)
    table["BERT-base"] = (768, 16, 48)  # BertConfig() has 12 heads
    monkeypatch.setattr(multihead, "PUBLISHED_CONFIGURATIONS", table)
    row = run_row(HEADS_CORRECTED, None)
    assert row.outcome == "fail" and "BERT-base" in row.message, f"{row.outcome}, {row.message}"


def test_a_table_of_only_typical_models_leaves_nothing_to_refute(monkeypatch):
    table = {m: c for m, c in multihead.PUBLISHED_CONFIGURATIONS.items() if c[1] in multihead.TYPICAL_HEADS}
    monkeypatch.setattr(multihead, "PUBLISHED_CONFIGURATIONS", table)
    assert run_row(HEADS_AS_WRITTEN, None).outcome == "fail"


# -- multihead.concat-heads at d_k != d_model / h ------------------------------------------------
FREE_KEY_WIDTH = "multihead.each_head_scales_by_its_own_d_k_when_d_k_is_not_d_model_over_h"
#: Computes the scale from d_model // h (as code with one ``head_dim`` does) while splitting at d_k.
MHA_SCALE_BY_D_MODEL_OVER_H = Mutant("mha-scale-by-sqrt-d_model-over-h", multihead_attention=multihead_with(
    scale=lambda p: math.sqrt(p.d_model // p.h)))


def test_a_head_scaled_by_sqrt_d_model_over_h_is_caught() -> None:
    """Where d_k = d_model / h (every other multi-head property's draws) the two scales agree."""
    assert_caught(FREE_KEY_WIDTH, MHA_SCALE_BY_D_MODEL_OVER_H)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_reference_passes_with_a_free_key_width(dtype: str) -> None:
    row = run_row(FREE_KEY_WIDTH, reference, dtype)
    assert row.outcome == "pass", f"{row.outcome}, {row.message}"


def test_a_declared_d_model_over_h_implementation_is_not_applicable_at_once() -> None:
    row = run_row(FREE_KEY_WIDTH, torch_mha, "float32")
    assert row.outcome == "not-applicable" and row.examples_checked == 0, f"{row.outcome}, {row.message}"
    narrow = ReferenceImplementation()
    narrow.capabilities = Capabilities(conventions={"key_width": {"d_model_over_h"}})
    row = run_row(FREE_KEY_WIDTH, narrow, "float32")
    assert row.outcome == "not-applicable" and "key_width" in row.message, f"{row.outcome}, {row.message}"
