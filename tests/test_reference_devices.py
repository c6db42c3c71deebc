"""The reference answers on the device under test, and in half precision without overflow.

This machine has no GPU, so the CUDA report's failures of the reference are caught here
another way:

* the device: an operation whose inputs are plain numbers (no tensor to take a device
  from) must be told the device; the protocol says so for each of them, the checked
  call passes it, and the reference builds its result there. The ``meta`` device stands in
  for a GPU: it is not the CPU, so a result built by ``torch.tensor``/``torch.zeros``
  without ``device=`` and never moved comes back on the wrong device, as
  ``glove_cooccurrence``'s did on CUDA (the protocol gave it no device);
* half precision: the CUDA rows the reference failed in float16 and bfloat16 are run here
  on the CPU in the same dtype (``run_row`` with that dtype), which reproduced each of them
  before the fix.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch

from conftest import run_row
from specformer.context import Context
from specformer.property import load_properties
from specformer.protocol import OPERATIONS
from specformer.runner.devices import DEVICE_DTYPES

#: Operations with no tensor input that may leave out ``device``, and why.
NO_DEVICE = {
    "token_vectors": "a contextual model's vectors keep the model's own device and dtype (the protocol says so)",
    "embedding_init": "its properties run in float64 only, a dtype no CUDA row runs (checked below)",
}


def _takes_a_tensor(annotation: Any) -> bool:
    text = str(annotation)
    return any(word in text for word in ("Tensor", "Params", "Config"))


def _without_tensor_inputs() -> dict[str, inspect.Signature]:
    """The protocol's operations that return a tensor but receive none: they cannot see the device."""
    found = {}
    for name, operation in OPERATIONS.items():
        signature = inspect.signature(getattr(operation.protocol, name))
        parameters = [p for p in signature.parameters.values() if p.name != "self"]
        if "Tensor" in str(signature.return_annotation) and not any(_takes_a_tensor(p.annotation)
                                                                     for p in parameters):
            found[name] = signature
    return found


def test_an_operation_without_tensor_inputs_is_told_the_device() -> None:
    operations = _without_tensor_inputs()
    assert {"glove_cooccurrence", "alibi_bias"} <= set(operations), sorted(operations)
    missing = [name for name, signature in operations.items()
               if "device" not in signature.parameters and name not in NO_DEVICE]
    assert not missing, f"these operations build a tensor from plain numbers but are not told the device: {missing}"


def test_the_operations_left_without_a_device_never_run_on_cuda() -> None:
    cuda = set(DEVICE_DTYPES["cuda"])
    for prop in load_properties().values():
        if "embedding_init" in prop.needs:
            assert prop.dtypes and not cuda & set(prop.dtypes), (
                f"{prop.qualname} calls embedding_init, which is not told the device, in a CUDA dtype")


class _Recorder:
    """A backend that keeps the request and answers nothing (the call then fails, as intended)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def call(self, request: dict[str, Any], what: str, deadline: float) -> dict[str, Any]:
        self.requests.append(request)
        return {"status": "raised", "type": "Stop", "message": "recorded"}


@pytest.mark.parametrize(("op", "args"), [
    ("glove_cooccurrence", ([0, 1, 2], 3, 1)),
    ("alibi_bias", (2, 3, 4)),
])
def test_the_checked_call_passes_the_device_under_test(op: str, args: tuple) -> None:
    backend = _Recorder()
    ctx = Context(backend, "recorder", "cuda", "float16")  # no GPU needed: nothing runs
    with pytest.raises(Exception, match="recorded"):
        getattr(ctx, op)(*args)
    (request,) = backend.requests
    assert request["kwargs"].get("device") == "cuda" and request["kwargs"].get("dtype") == torch.float16


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_the_reference_builds_its_result_on_the_device_it_is_given(dtype: torch.dtype) -> None:
    from specformer.adapters.reference import implementation as reference

    counts = reference.glove_cooccurrence([0, 1, 2, 0], 3, 2, dtype=dtype, device="meta")
    bias = reference.alibi_bias(2, 3, 4, causal=True, dtype=dtype, device="meta")
    for name, result in (("glove_cooccurrence", counts), ("alibi_bias", bias)):
        assert result.device.type == "meta" and result.dtype == dtype, (name, result.device, result.dtype)


def test_glove_counts_in_half_precision_are_the_float64_counts_rounded_once() -> None:
    from specformer.reference.embeddings.glove import cooccurrence_counts

    text = [[0, 1, 2, 0, 1, 2, 0, 0, 1] * 30]  # the sums of 1/d reach 140
    exact = cooccurrence_counts(text, 3, 4)
    for dtype in (torch.float16, torch.bfloat16):
        assert torch.equal(cooccurrence_counts(text, 3, 4, dtype=dtype), exact.to(dtype))


def test_scores_in_float16_do_not_overflow_before_the_division() -> None:
    """The CUDA counterexample: ``q . k`` near 67,000 overflows float16, ``q . k / sqrt(50)`` does not."""
    from specformer.reference.attention.scores import SCORE_FUNCTIONS

    g = torch.Generator().manual_seed(0)
    q = (torch.rand((3, 7, 50), generator=g, dtype=torch.float64) * 2 - 1) * 10.0
    exact = SCORE_FUNCTIONS["scaled_dot"](40 * q, q)
    assert exact.abs().max() < torch.finfo(torch.float16).max < (40 * q @ q.transpose(-2, -1)).abs().max()
    for kind in ("scaled_dot", "dot", "general", "gaussian", "cosine"):
        params = {"w": torch.eye(50, dtype=torch.float64)} if kind == "general" else {}
        half = SCORE_FUNCTIONS[kind]((40 * q).half(), q.half(), **{k: v.half() for k, v in params.items()})
        assert half.dtype == torch.float16
        if kind in ("scaled_dot", "cosine"):  # scores inside float16's range come back finite
            assert torch.isfinite(half).all(), kind
    q16, k16 = (40 * q).half(), q.half()
    rounded_once = SCORE_FUNCTIONS["scaled_dot"](q16.double(), k16.double()).half()  # the float16 inputs' exact score
    assert torch.allclose(SCORE_FUNCTIONS["scaled_dot"](q16, k16).double(), rounded_once.double(), rtol=2**-10, atol=0)


def test_the_noise_distribution_in_float16_has_no_nan() -> None:
    from specformer.reference.embeddings.word2vec import noise_distribution

    counts = torch.tensor([2048.0, 1.0, 700.0], dtype=torch.float16)  # 2048^1.5 = 92,682 > 65,504
    for exponent in (0.0, 0.75, 1.0, 1.5):
        p = noise_distribution(counts, exponent)
        expected = counts.double().pow(exponent) / counts.double().pow(exponent).sum()
        assert p.dtype == torch.float16 and torch.allclose(p.double(), expected, rtol=1e-3, atol=1e-6), exponent


#: The reference's rows of the CUDA report (H100, 2026-11-27) that failed in half precision, run here in
#: their dtype on the CPU. The first two failed here as on CUDA before the fix (inf scores, NaN
#: probabilities); the GloVe rows failed on CUDA by their device only (tested above) and are run here for
#: their half-precision counts.
HALF_PRECISION_ROWS = [
    ("attention_scores.scaled_dot_scores_are_unbounded_and_only_their_softmax_lies_in_the_unit_interval", "float16"),
    ("word2vec.the_noise_distribution_is_the_count_to_the_three_quarters_normalised", "float16"),
    ("glove.co_occurrence_counts_of_a_symmetric_window_are_symmetric", "float16"),
    ("glove.co_occurrence_counts_of_a_symmetric_window_are_symmetric", "bfloat16"),
    ("glove.an_epoch_over_x_touches_at_most_the_windows_pairs", "float16"),
    ("glove.an_epoch_over_x_touches_at_most_the_windows_pairs", "bfloat16"),
]


@pytest.mark.parametrize(("qualname", "dtype"), HALF_PRECISION_ROWS,
                         ids=[f"{q.split('.')[1][:40]}-{d}" for q, d in HALF_PRECISION_ROWS])
def test_the_reference_passes_its_cuda_half_precision_rows_on_the_cpu(qualname: str, dtype: str) -> None:
    from specformer.adapters.reference import implementation as reference

    row = run_row(qualname, reference, dtype)
    assert row.outcome == "pass", (row.outcome, row.message)
