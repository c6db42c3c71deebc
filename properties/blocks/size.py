"""Model sizes: the slides' parameter table and embedding arithmetic (``spec/blocks/size.md``).

The slides list the base and big transformer at 65 and 213 million parameters and price
the embeddings of a one-million-word vocabulary at ``3 x 10^6 x 512``. The counts here are
PyTorch's own modules (``torch.nn.Transformer``, ``nn.Embedding``, ``nn.Linear``; built on
the ``meta`` device, so no memory is allocated) against closed-form formulas written out
in this module. Nothing here calls an implementation under test.
"""

from __future__ import annotations

import warnings

import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property

#: The slides' table (004, "Vocabulary Size"): name -> (N, d_model, d_ff, h, millions of parameters).
TABLE = {"base": (6, 512, 2048, 8, 65), "big": (6, 1024, 4096, 16, 213)}
#: The shared source-target BPE vocabulary of the original paper's English-German runs.
PAPER_VOCABULARY = 37_000


def stack_parameters(n: int, d_model: int, d_ff: int) -> int:
    """Parameters of an ``n + n``-layer encoder-decoder without embeddings, biases and LayerNorms included.

    Per attention: four ``d x d`` projections with biases, ``4 d^2 + 4 d``; per FFN:
    ``2 d d_ff + d_ff + d``; per LayerNorm: ``2 d`` (gain and bias). An encoder layer has one
    attention, one FFN and two LayerNorms; a decoder layer two attentions, one FFN and three
    LayerNorms; each stack ends with a LayerNorm.
    """
    attention = 4 * d_model * d_model + 4 * d_model
    ffn = 2 * d_model * d_ff + d_ff + d_model
    norm = 2 * d_model
    encoder = attention + ffn + 2 * norm
    decoder = 2 * attention + ffn + 3 * norm
    return n * (encoder + decoder) + 2 * norm


def torch_transformer_parameters(n: int, d_model: int, d_ff: int, h: int) -> int:
    """What ``torch.nn.Transformer`` holds for that configuration (built on the meta device)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested-tensor advice for batch_first=False
        model = nn.Transformer(d_model=d_model, nhead=h, num_encoder_layers=n, num_decoder_layers=n,
                               dim_feedforward=d_ff, device="meta")
    return sum(p.numel() for p in model.parameters())


def model_parameters(name: str, vocabulary: int) -> int:
    """The table's model with one tied ``vocabulary x d_model`` matrix (embeddings and output layer)."""
    n, d_model, d_ff, _, _ = TABLE[name]
    return stack_parameters(n, d_model, d_ff) + vocabulary * d_model


@claim_property("size.base-big-parameters", needs=(), dtypes=("float64",), max_examples=20)
@given(n=st.integers(1, 3), h=st.integers(1, 4), head_width=st.integers(1, 8), d_ff=st.integers(1, 64))
@example(n=6, h=8, head_width=64, d_ff=2048)
@example(n=6, h=16, head_width=64, d_ff=4096)
def the_stack_has_the_closed_form_count_and_the_paper_vocabulary_gives_the_table_within_3_percent(
        ctx: Context, n, h, head_width, d_ff) -> None:
    """Corrected: PyTorch's encoder-decoder holds :func:`stack_parameters`; with one tied matrix of the
    paper's 37,000-token vocabulary the table's models come to 63.1M and 214.3M, within 3% of 65M and 213M."""
    d_model = h * head_width
    counted = torch_transformer_parameters(n, d_model, d_ff, h)
    assert counted == stack_parameters(n, d_model, d_ff), (
        f"nn.Transformer(N={n}, d_model={d_model}, d_ff={d_ff}, h={h}) holds {counted}, "
        f"the closed form gives {stack_parameters(n, d_model, d_ff)}"
    )
    for name, (_, _, _, _, millions) in TABLE.items():
        total = model_parameters(name, PAPER_VOCABULARY)
        assert abs(total / 1e6 - millions) <= 0.03 * millions, (
            f"{name}: {total / 1e6:.2f}M parameters with V = {PAPER_VOCABULARY}, not within 3% of {millions}M"
        )


def fitting_vocabularies(name: str) -> range:
    """The vocabulary sizes ``|V| >= 0`` for which the model is within half a million of the table's figure."""
    n, d_model, d_ff, _, millions = TABLE[name]
    stack = stack_parameters(n, d_model, d_ff)
    low = -(-(millions * 10**6 - 500_000 - stack) // d_model)  # ceil
    high = (millions * 10**6 + 500_000 - stack) // d_model  # floor
    return range(max(low, 0), max(high + 1, 0))


@claim_property("size.base-big-parameters", needs=(), expect="counterexample", dtypes=("float64",), max_examples=5)
@given(limit=st.integers(50_000, 10**7))
@example(limit=200_000)
def one_vocabulary_gives_both_table_counts_as_written(ctx: Context, limit) -> None:
    """As written: some tied vocabulary ``|V| <= limit`` gives both the table's 65M and 213M (to the nearest million)."""
    fits = {name: fitting_vocabularies(name) for name in TABLE}
    both = range(max(r.start for r in fits.values()), min(min(r.stop for r in fits.values()), limit + 1))
    assert len(both) > 0, (
        "no vocabulary gives both: "
        + ", ".join(f"{name} rounds to the table's {TABLE[name][4]}M only for {r.start} <= |V| <= {r.stop - 1}"
                    for name, r in fits.items())
    )


@claim_property("size.embedding-arithmetic", needs=(), dtypes=("float64",), max_examples=10)
@given(vocabulary=st.sampled_from([10**6, 37_000, 50_000]), d_model=st.sampled_from([512, 1024]))
@example(vocabulary=10**6, d_model=512)
def three_vocabulary_matrices_hold_three_v_d_parameters(ctx: Context, vocabulary, d_model) -> None:
    """Source and target embeddings and the output projection: ``3 |V| d_model`` (1.536e9 for 10^6 x 512)."""
    matrices = [nn.Embedding(vocabulary, d_model, device="meta"), nn.Embedding(vocabulary, d_model, device="meta"),
                nn.Linear(d_model, vocabulary, bias=False, device="meta")]
    counted = sum(p.numel() for m in matrices for p in m.parameters())
    assert counted == 3 * vocabulary * d_model, f"{counted} parameters, expected 3 |V| d_model = {3 * vocabulary * d_model}"
    if (vocabulary, d_model) == (10**6, 512):
        assert abs(counted - 1.5e9) / 1.5e9 < 0.025, f"{counted:.4g} is not about 1.5e9"
        base = model_parameters("base", PAPER_VOCABULARY)
        assert counted > 20 * base, f"{counted:.4g} is not over 20 times the base model's {base:.4g}"
