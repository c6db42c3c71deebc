"""The attention family's conventions and the shipped attention adapters' declarations.

A declared implementation must answer inside its declaration: one that answers only for
``d_k = 1`` errors on the formula property, and the properties ask only for what the
shipped adapters declare.
"""

from __future__ import annotations

import pytest

from conftest import run_row
from specformer.adapters.reference import ReferenceImplementation
from specformer.adapters.torch_mha import TorchMultiheadAttention
from specformer.adapters.torch_sdpa import TorchSDPA
from specformer.protocol import Capabilities, NotApplicable, declared_capabilities
from specformer.protocol.attention import CONVENTIONS, FAMILY


class AnswersOnlyForOneFeature(ReferenceImplementation):
    """Declares every attention convention, then refuses every example with ``d_k != 1``."""

    name = "answers-only-for-d_k-1"
    capabilities = Capabilities()

    def attention(self, q, k, v, mask=None, *, causal=False):
        if q.shape[-1] != 1:
            raise NotApplicable("this implementation answers only for d_k = 1")
        return super().attention(q, k, v, mask, causal=causal)


@pytest.mark.parametrize("qualname", ["attention.output_matches_the_formula",
                                      "masking.masked_keys_get_exactly_zero_weight"])
def test_refusing_inside_the_declaration_is_an_error(qualname: str) -> None:
    row = run_row(qualname, AnswersOnlyForOneFeature())
    assert row.outcome == "error", f"{row.outcome}: {row.message}"
    assert "refused an example inside its declared domain" in row.message


def test_the_family_registers_its_conventions() -> None:
    assert FAMILY.conventions is CONVENTIONS or dict(FAMILY.conventions) == CONVENTIONS
    assert set(CONVENTIONS) == {"separate_key_value", "value_width", "key_width", "returns_weights", "causal_alignment"}
    assert CONVENTIONS["causal_alignment"].default == ("top-left",)  # the protocol's; another is declared
    for convention in CONVENTIONS.values():
        assert convention.doc and len(convention.values) >= 2


def test_the_shipped_attention_adapters_declare_their_restrictions() -> None:
    mha = declared_capabilities(TorchMultiheadAttention())
    assert mha is not None and not mha.supports("value_width", "free") and mha.supports("value_width", "d_model_over_h")
    assert mha.supports("separate_key_value", True)  # nn.MultiheadAttention takes key and value apart
    assert declared_capabilities(TorchSDPA()) is not None


@pytest.mark.parametrize("qualname", ["attention.output_matches_the_formula",
                                      "multihead.output_is_the_concatenation_of_the_heads_times_w_o",
                                      "multihead.cross_attention_output_has_t_q_rows_and_matches_the_formula"])
def test_torch_mha_answers_every_example_the_properties_draw(qualname: str) -> None:
    """Declared, so a refusal would be an error: the properties draw within torch-mha's declaration."""
    row = run_row(qualname, TorchMultiheadAttention(), "float32")
    assert row.outcome == "pass", f"{row.outcome}: {row.message}"
    assert row.examples_out_of_domain == 0
