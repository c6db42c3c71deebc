"""Properties of one-hot vectors and the embedding lookup (``spec/embeddings/onehot.md``).

Expected values are written out here in float64: one-hot vectors as ``ids[..., None] ==
arange(V)``, the lookup as their product with the table, distances and Gram matrices from
them, the gradient ``one_hot(ids)^T G``, and a Kolmogorov distance from N(0, 1).
Implementations are called through ``ctx.embedding_lookup``, ``ctx.lookup_gradient``,
``ctx.embedding_init`` and ``ctx.tied_logits``. Properties with ``needs=()`` check the
documents' arithmetic and PyTorch's own ``nn.Embedding`` (freezing a pre-trained table),
built by the small functions below so that the harness's tests can swap them.
"""

from __future__ import annotations

import math
from collections import Counter

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st
from torch import nn

from specformer.context import Context
from specformer.property import claim_property

from ..conventions import under_one_of
from . import strategies as sf
from .initialisation import declared_laws

NEEDS = ("embedding_lookup",)
F64 = torch.float64

#: 002 ("Why Embeddings?"): a 50,000-token vocabulary, 512-dimensional embeddings, "100x smaller".
DOCUMENT_VOCAB, DOCUMENT_DIM, DOCUMENT_RATIO = 50_000, 512, 100
#: 002 ("Summary"): "50K vocab x 4096 dim = 200M parameters".
SUMMARY_VOCAB, SUMMARY_DIM, SUMMARY_PARAMETERS = 50_000, 4096, 200_000_000


def one_hot_formula(ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """``(..., V)`` float64: 1 at each id, 0 elsewhere."""
    return (ids[..., None] == torch.arange(vocab)).to(F64)  # (..., 1) == (V,) -> (..., V)


def significant(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant figures."""
    return round(x, digits - 1 - math.floor(math.log10(abs(x))))


# --- one-hot vectors --------------------------------------------------------------------------


@claim_property("onehot.orthogonal-equidistant", needs=NEEDS)
@given(vocab=st.integers(1, 12), order=st.data())
@example(vocab=3, order=None)
def one_hot_vectors_are_orthogonal_unit_vectors_all_sqrt_2_apart(ctx: Context, vocab, order) -> None:
    """Looking every id up in the identity table gives one-hot rows: one entry 1, the rest 0; pairwise
    dot products 0, norms 1, and every two distinct rows ``sqrt(2)`` apart."""
    ids = torch.arange(vocab) if order is None else order.draw(sf.permutations_of(vocab), label="ids")
    rows = ctx.embedding_lookup(ids, torch.eye(vocab, dtype=F64))  # (V, V)
    ctx.assert_close(rows, one_hot_formula(ids, vocab), "the lookup of each id in the identity table")
    ctx.assert_close((rows != 0).sum(-1).to(F64), torch.ones(vocab, dtype=F64), "non-zero entries per one-hot row")
    same = (ids[:, None] == ids[None, :]).to(F64)  # (V, V): 1 on the diagonal only
    ctx.assert_close(rows @ rows.T, same, "dot products of one-hot vectors")
    ctx.assert_close(torch.cdist(rows, rows), math.sqrt(2) * (1 - same), "distances between one-hot vectors")


# --- the lookup -------------------------------------------------------------------------------


@claim_property("onehot.lookup-is-one-hot-product", needs=NEEDS)
@given(case=sf.lookup_cases())
@example(case=(torch.tensor([2, 0], dtype=torch.int64), torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=F64)))
def looking_up_a_row_is_multiplying_its_one_hot_vector_by_the_table(ctx: Context, case) -> None:
    """``lookup(ids, E) = one_hot(ids) @ E``: row ``i`` of ``E`` for id ``i``, for ids of any shape."""
    ids, table = case
    expected = one_hot_formula(ids, table.shape[0]) @ table  # (..., V) @ (V, d) -> (..., d)
    ctx.assert_close(ctx.embedding_lookup(ids, table), expected, "lookup(ids, E) against one_hot(ids) @ E")


# --- the documents' numbers -------------------------------------------------------------------


def dimensions(vocab: int, dim: int) -> tuple[int, int, int]:
    """The width of a one-hot vector, its non-zero entries, and the width of an embedding (PyTorch's own)."""
    one_hot = F.one_hot(torch.tensor(vocab - 1), vocab)
    embedding = nn.Embedding(vocab, dim, device="meta")
    return one_hot.shape[-1], int(one_hot.count_nonzero()), embedding.embedding_dim


@claim_property("onehot.hundred-times-smaller", needs=(), about="published-numbers", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def a_512_wide_embedding_is_97_7_times_narrower_than_a_50000_wide_one_hot_vector(ctx: Context, _) -> None:
    """Corrected: ``50,000 / 512 = 97.66``, within 3% of 100 and 100 only to one significant figure; the
    one-hot vector has one non-zero entry, so "smaller" counts widths, not stored numbers."""
    width, nonzero, dim = dimensions(DOCUMENT_VOCAB, DOCUMENT_DIM)
    ratio = width / dim
    assert ratio == 50_000 / 512, f"one-hot width {width} / embedding width {dim} = {ratio}"
    assert abs(ratio - DOCUMENT_RATIO) <= 0.03 * DOCUMENT_RATIO, f"{ratio:.2f} is not within 3% of {DOCUMENT_RATIO}"
    assert significant(ratio, 1) == DOCUMENT_RATIO, f"{ratio:.2f} does not round to {DOCUMENT_RATIO}"
    assert nonzero == 1, f"a one-hot vector has {nonzero} non-zero entries"


@claim_property("onehot.hundred-times-smaller", needs=(), about="published-numbers", expect="counterexample", dtypes=("float64",),
                max_examples=1)
@given(st.just(None))
def a_512_wide_embedding_is_100_times_narrower_as_written(ctx: Context, _) -> None:
    """As written: the 512-dimensional embedding is 100 times smaller than the 50,000-dimensional one-hot
    vector (to the two significant figures the figure is written with)."""
    width, _, dim = dimensions(DOCUMENT_VOCAB, DOCUMENT_DIM)
    assert significant(width / dim, 2) == DOCUMENT_RATIO, (
        f"{width} / {dim} = {width / dim:.4g}, which is {significant(width / dim, 2):g} to two significant figures"
    )


@claim_property("onehot.embedding-parameters", needs=(), about="published-numbers", dtypes=("float64",), max_examples=1)
@given(st.just(None))
def a_50k_by_4096_table_holds_204_8_million_parameters(ctx: Context, _) -> None:
    """``nn.Embedding(50000, 4096)`` holds ``204,800,000`` parameters: 200M to two significant figures."""
    table = nn.Embedding(SUMMARY_VOCAB, SUMMARY_DIM, device="meta")
    count = sum(p.numel() for p in table.parameters())
    assert count == 204_800_000, f"{count} parameters"
    assert significant(count, 2) == SUMMARY_PARAMETERS, (
        f"{count} parameters is {significant(count, 2):.3g} to two significant figures, not {SUMMARY_PARAMETERS:.3g}"
    )


# --- PyTorch's nn.Embedding -------------------------------------------------------------------

#: Samples per table for the initialisation test (DKW bound below).
SAMPLES = 2**18
#: False-alarm probability per example; at most 11 examples per run (10 drawn, 1 explicit): <= 5.5e-7.
DELTA = 5e-8


def default_table(ctx: Context, vocab: int, dim: int, seed: int) -> torch.Tensor:
    """The implementation's freshly initialised ``(vocab, dim)`` table for ``seed`` (``nn.Embedding``'s, for
    torch-embedding), as float64."""
    return ctx.embedding_init(vocab, dim, seed)


def ks_distance_from_normal(x: torch.Tensor) -> float:
    """``sup_t |F_n(t) - Phi(t)|`` for the sample ``x`` against the standard normal."""
    values = x.flatten().sort().values  # (n,)
    n = values.numel()
    cdf = torch.special.ndtr(values)  # (n,)
    above = torch.arange(1, n + 1, dtype=F64) / n - cdf
    below = cdf - torch.arange(0, n, dtype=F64) / n
    return float(torch.maximum(above, below).max())


@st.composite
def init_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(V, d, seed)`` with ``V d >= 2^18`` samples; ``d`` from 1 to 4096 (002's and the summary's widths
    among them)."""
    dim = draw(st.sampled_from([1, 2, 3, 16, 64, 300, 512, 4096]), label="d")
    return -(-SAMPLES // dim), dim, draw(sf.seeds(), label="seed")


@claim_property("onehot.default-initialisation", needs=("embedding_init",), dtypes=("float64",), max_examples=10)
@given(case=init_cases())
@example(case=(512, 512, 0))
def nn_embedding_starts_from_standard_normal_entries(ctx: Context, case) -> None:
    """Corrected: the implementation's embedding table (``nn.Embedding(V, d)``'s) starts from N(0, 1) entries:
    the Kolmogorov distance of the ``V d`` entries from the standard normal CDF stays below the DKW bound
    ``sqrt(ln(2/delta) / (2n))``.

    The claim is PyTorch's default, and an implementation that declares nothing is held to it. An
    implementation may declare another law (``embedding_init_law``: ``normal-1/d``, Flax's ``nn.Embed``); it is
    then judged by the law it declares, its entries divided by ``1/sqrt d`` compared with N(0, 1), rather than
    made not applicable: the document's sentence is about what an embedding layer starts from, and a declared
    law that the table does not follow (N(0, 1/d^2) declared as N(0, 1/d)) must still fail. The row says which
    law it checked; PyTorch's fact is the row of ``torch-embedding``, which declares nothing."""
    vocab, dim, seed = case
    table = default_table(ctx, vocab, dim, seed)
    n = table.numel()
    bound = math.sqrt(math.log(2 / DELTA) / (2 * n))

    def check(law: tuple[str, float]) -> None:
        name, sigma = law
        distance = ks_distance_from_normal(table / sigma)
        assert distance <= bound, (
            f"embedding_init({vocab}, {dim}) entries over sigma = {sigma:.4g} ({name}) are {distance:.4f} from "
            f"N(0, 1) in Kolmogorov distance (bound {bound:.4f} for n = {n})"
        )

    under_one_of(declared_laws(ctx, dim), check, label=lambda law: law[0])


@claim_property("onehot.default-initialisation", needs=("embedding_init",), expect="counterexample", dtypes=("float64",),
                max_examples=10)
@given(case=init_cases())
@example(case=(512, 512, 0))
def nn_embedding_starts_uniform_within_one_over_sqrt_d_as_written(ctx: Context, case) -> None:
    """As written: the default initialisation is Uniform(-1/sqrt(d), 1/sqrt(d)), so no entry lies beyond 1/sqrt(d)."""
    vocab, dim, seed = case
    table = default_table(ctx, vocab, dim, seed)
    limit = 1 / math.sqrt(dim)
    outside = float((table.abs() > limit).to(F64).mean())
    normal = 2 * float(torch.special.ndtr(torch.tensor(-limit)))  # P(|x| > limit) under N(0, 1)
    assert outside == 0, (
        f"nn.Embedding({vocab}, {dim}): {outside:.1%} of the entries lie beyond 1/sqrt(d) = {limit:.4g} "
        f"(largest {float(table.abs().max()):.3f}); N(0, 1) puts {normal:.1%} there"
    )


@st.composite
def tying_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A table ``E (V, d)``, centre ids ``(B,)`` and the upstream gradient of the logits ``(B, V)``."""
    vocab, dim, b = draw(st.integers(2, 12)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    return (draw(sf.tables(vocab, dim, 2.0)), draw(sf.id_tensors(vocab, (b,)), label="centre"),
            draw(sf.tensors((b, vocab), 1.0), label="dL/dlogits"))


@claim_property("onehot.weight-tying", needs=("embedding_lookup", "tied_logits", "lookup_gradient"))
@given(case=tying_cases())
def a_tied_output_layer_shares_the_embedding_matrix(ctx: Context, case) -> None:
    """An output layer tied to the embedding ``E`` scores the looked-up rows against ``E`` itself, logits
    ``E[c] E^T`` (no second ``(V, d)`` matrix to store), and the shared matrix's gradient is the sum of its
    two uses: the lookup's ``one_hot(c)^T (G E)`` plus the output layer's ``G^T E[c]``."""
    table, centre, upstream = case
    hidden = ctx.embedding_lookup(centre, table)  # (B, d)
    logits = ctx.tied_logits(hidden, table)  # (B, V)
    ctx.assert_close(logits, table[centre] @ table.T, "tied logits E[c] E^T", scale=4)
    input_side = ctx.lookup_gradient(centre, table, upstream @ table)  # dL/dh = G E: (B, V) @ (V, d) -> (B, d)
    shared = table.clone().requires_grad_(True)
    (((shared[centre] @ shared.T) * upstream).sum()).backward()  # both uses of one matrix, float64
    output_side = upstream.T @ table[centre]  # (V, B) @ (B, d) -> (V, d)
    ctx.assert_close(input_side + output_side, shared.grad, "gradient of the shared matrix", scale=8)


@st.composite
def retying_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, int, torch.Tensor]:
    """A table ``E (V, d)``, hidden vectors ``(B, d)``, a word ``w`` and a change ``delta (d,)`` of its row."""
    vocab, dim, b = draw(st.integers(2, 12), label="V"), draw(st.integers(1, 6), label="d"), draw(st.integers(1, 4))
    return (draw(sf.tables(vocab, dim, 2.0)), draw(sf.tensors((b, dim), 2.0), label="hidden"),
            draw(st.integers(0, vocab - 1), label="w"), draw(sf.tensors((dim,), 2.0), label="delta"))


@claim_property("onehot.weight-tying", needs=("tied_logits",))
@given(case=retying_cases())
@example(case=(torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.0, 1.0]], dtype=F64), torch.tensor([[1.0, 1.0]], dtype=F64), 1,
               torch.tensor([0.5, -2.0], dtype=F64)))
def each_words_output_vector_is_its_embedding_row(ctx: Context, case) -> None:
    """Tying makes word ``w``'s output vector row ``w`` of the embedding table itself: scoring the table's own rows
    gives a symmetric matrix whose diagonal holds the rows' squared norms ``|E_w|^2`` (each word scored against
    itself), and changing row ``w`` by ``delta`` changes the scores of word ``w`` only, each by ``h . delta``."""
    table, hidden, w, delta = case
    gram = ctx.tied_logits(table, table)  # (V, V): row i scores E_i against every row
    ctx.assert_close(gram.T, gram, "the scores of the table's own rows, transposed", scale=4)
    ctx.assert_close(torch.diagonal(gram), table.square().sum(-1), "each word's score against itself, |E_w|^2",
                     scale=4)
    moved = table.clone()
    moved[w] += delta
    change = ctx.tied_logits(hidden, moved) - ctx.tied_logits(hidden, table)  # (B, V)
    expected = torch.zeros_like(change)
    expected[:, w] = hidden @ delta  # (B, d) @ (d,) -> (B,)
    ctx.assert_close(change, expected, f"the change of the scores when row {w} of the table moves", scale=8)


def freeze(embedding: nn.Embedding) -> None:
    """002's option 1: ``embedding.weight.requires_grad = False``."""
    embedding.weight.requires_grad = False


@st.composite
def pretrained_cases(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """A pre-trained table ``(V, d)``, ids ``(B,)``, targets ``(B,)`` and a seed."""
    vocab, dim, b = draw(st.integers(2, 10)), draw(st.integers(1, 6)), draw(st.integers(1, 4))
    return (draw(sf.tables(vocab, dim)), draw(sf.id_tensors(vocab, (b,))), draw(sf.id_tensors(vocab, (b,))),
            draw(sf.seeds()))


def _train_step(pretrained: torch.Tensor, ids: torch.Tensor, targets: torch.Tensor, seed: int,
                frozen: bool) -> tuple[nn.Embedding, nn.Linear, torch.Tensor]:
    """002's pattern: load the table into ``nn.Embedding`` (frozen or not), one SGD step of a classifier on it."""
    vocab, dim = pretrained.shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        embedding = nn.Embedding(vocab, dim, dtype=F64)
        head = nn.Linear(dim, vocab, dtype=F64)
    embedding.weight.data = pretrained.clone()
    if frozen:
        freeze(embedding)
    looked_up = embedding(ids).detach().clone()
    optimizer = torch.optim.SGD([*embedding.parameters(), *head.parameters()], lr=0.5, momentum=0.9,
                                weight_decay=0.01)
    F.cross_entropy(head(embedding(ids)), targets).backward()
    optimizer.step()
    return embedding, head, looked_up


@claim_property("onehot.freezing", needs=(), about="library", dtypes=("float64",))
@given(case=pretrained_cases())
def a_frozen_pretrained_table_stays_as_loaded_and_a_fine_tuned_one_moves(ctx: Context, case) -> None:
    """After ``weight.data = pretrained`` the lookup returns the pre-trained rows; with ``requires_grad =
    False`` a training step (SGD with momentum and weight decay) leaves them exactly, gradient ``None``;
    with ``requires_grad = True`` the rows looked up move."""
    pretrained, ids, targets, seed = case
    frozen, head, looked_up = _train_step(pretrained, ids, targets, seed, frozen=True)
    ctx.assert_close(looked_up, pretrained[ids], "rows looked up from the loaded table")
    assert frozen.weight.grad is None, "a frozen table received a gradient"
    assert torch.equal(frozen.weight.detach(), pretrained), "a training step changed the frozen table"
    assert head.weight.grad is not None, "the layer after the frozen table was not trained"
    tuned, _, _ = _train_step(pretrained, ids, targets, seed, frozen=False)
    moved = (tuned.weight.detach() != pretrained).any(-1)  # (V,)
    assert bool(moved[ids].all()), f"fine-tuning left looked-up rows {ids[~moved[ids]].tolist()} unchanged"


@claim_property("onehot.backpropagation", needs=("lookup_gradient",))
@given(case=sf.lookup_cases(), data=st.data())
@example(case=(torch.tensor([1, 1, 0]), torch.zeros(3, 2, dtype=F64)), data=None)
def the_gradient_of_a_lookup_is_the_one_hot_transpose_times_the_upstream_gradient(ctx: Context, case, data) -> None:
    """``d loss / d E = one_hot(ids)^T G``: only the rows looked up get a gradient, and a repeated id gets
    the sum of its upstream gradients (the lookup is the linear map ``one_hot(ids) @ E``)."""
    ids, table = case
    shape = (*ids.shape, table.shape[1])
    upstream = (torch.arange(1, 1 + math.prod(shape), dtype=F64).reshape(shape) if data is None
                else data.draw(sf.tensors(shape), label="upstream gradient"))  # (..., d)
    one_hot = one_hot_formula(ids, table.shape[0]).reshape(-1, table.shape[0])  # (..., V) -> (n, V)
    expected = one_hot.T @ upstream.reshape(-1, table.shape[1])  # (V, n) @ (n, d) -> (V, d)
    ctx.assert_close(ctx.lookup_gradient(ids, table, upstream), expected, "gradient of the table", scale=4)


@claim_property("onehot.freezing", needs=(), about="library", dtypes=("float64",), max_examples=10)
@given(case=pretrained_cases())
def a_float64_array_through_weight_data_makes_the_table_float64_and_the_next_layer_raise(ctx: Context, case) -> None:
    """002's ``embedding.weight.data = torch.tensor(pretrained)`` with ``pretrained`` a numpy float64 array
    (what ``np.loadtxt`` and gensim's float64 vectors give) replaces the float32 table by a float64 one: the
    lookup returns float64 rows and the next float32 layer raises a dtype error, frozen or not; converting
    first (``torch.tensor(pretrained, dtype=torch.float32)`` or ``weight.data.copy_(...)``) keeps float32."""
    import numpy as np

    pretrained, ids, _, seed = case
    array = pretrained.numpy().astype(np.float64)
    vocab, dim = array.shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        embedding, head = nn.Embedding(vocab, dim), nn.Linear(dim, 2)  # float32, PyTorch's default
    embedding.weight.data = torch.tensor(array)  # 002's line
    freeze(embedding)
    assert embedding.weight.dtype == torch.float64, f"the table is {embedding.weight.dtype} after weight.data ="
    try:
        head(embedding(ids))
    except RuntimeError as exc:
        assert "dtype" in str(exc) or "Double" in str(exc) or "Float" in str(exc), f"another error: {exc}"
    else:
        raise AssertionError("a float32 layer took the float64 rows of the replaced table")
    converted = nn.Embedding(vocab, dim)
    converted.weight.data.copy_(torch.tensor(array))  # copy_ converts into the table's own dtype
    assert converted.weight.dtype == torch.float32 and head(converted(ids)).dtype == torch.float32, (
        "weight.data.copy_ did not keep the float32 table"
    )


# --- how wide the embeddings of modern language models are --------------------------------------

#: Published widths above 12,288: (model, d_model, source).
PUBLISHED_WIDE = {
    "PaLM 540B": (18_432, "Chowdhery et al. 2022, PaLM, Table 1"),
    "Llama 3.1 405B": (16_384, "Llama Team 2024, The Llama 3 Herd of Models, Table 3"),
}
#: 002's range for modern LLMs.
LLM_WIDTHS = range(4096, 12_289)


def library_llm_widths() -> dict[str, int]:
    """``hidden_size`` of the installed transformers configuration classes' defaults for decoder-only language
    models, by the published model each default describes (the classes' docstrings name it)."""
    from transformers import Gemma2Config, GemmaConfig, LlamaConfig, MistralConfig, Phi3Config

    return {"LLaMA-2-7B": LlamaConfig().hidden_size, "Mistral-7B": MistralConfig().hidden_size,
            "Gemma-7B": GemmaConfig().hidden_size, "Gemma-2-2B": Gemma2Config().hidden_size,
            "Phi-3-mini": Phi3Config().hidden_size}


def llm_widths() -> dict[str, int]:
    """Every width the two claims below look at: the library defaults and the published wide models."""
    return {**library_llm_widths(), **{name: d for name, (d, _) in PUBLISHED_WIDE.items()}}


@claim_property("onehot.modern-llm-widths", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(data=st.data())
def modern_llm_widths_span_2304_to_18432(ctx: Context, data) -> None:
    """Corrected: published modern language models' widths reach below 4096 (transformers' defaults for Gemma-7B
    and Phi-3-mini, 3072, and Gemma-2-2B, 2304) and above 12,288 (Llama 3.1 405B, 16,384; PaLM 540B, 18,432),
    and 4096 (LLaMA-2-7B, Mistral-7B) is inside 002's range: the range is a middle, not a bound."""
    widths = llm_widths()
    below = {n: d for n, d in widths.items() if d < LLM_WIDTHS.start}
    above = {n: d for n, d in widths.items() if d >= LLM_WIDTHS.stop}
    assert {"Gemma-7B", "Phi-3-mini", "Gemma-2-2B"} <= set(below), f"widths below 4096: {below}"
    assert set(above) == set(PUBLISHED_WIDE), f"widths above 12,288: {above}"
    assert widths["LLaMA-2-7B"] == widths["Mistral-7B"] == 4096, widths


@claim_property("onehot.modern-llm-widths", needs=(), about="library", dtypes=("float64",), max_examples=1,
                expect="counterexample")
@given(data=st.data())
def every_modern_llm_is_4096_to_12288_wide_as_written(ctx: Context, data) -> None:
    """As written: modern language models have 4096 to 12,288 dimensions."""
    outside = {n: d for n, d in llm_widths().items() if d not in LLM_WIDTHS}
    assert not outside, f"outside 4096-12,288: {outside}"


# --- onehot.typical-dimensions ------------------------------------------------------------------

#: The documents' ranges: static word vectors and the embeddings of models.
STATIC_WIDTHS, MODEL_WIDTHS = range(50, 301), range(512, 12_289)
#: Published widths that no installed default gives: model -> (d_model, source).
PUBLISHED_MODEL_WIDTHS = {
    "BERT-large": (1024, "Devlin et al. 2019, BERT, section 3"),
    "GPT-3 175B": (12_288, "Brown et al. 2020, Language Models are Few-Shot Learners, Table 2.1"),
}


def library_static_widths() -> dict[str, int]:
    """The default ``vector_size`` of the installed gensim's Word2Vec and FastText."""
    import inspect

    from gensim.models import FastText, Word2Vec

    return {f"gensim {cls.__name__}": inspect.signature(cls.__init__).parameters["vector_size"].default
            for cls in (Word2Vec, FastText)}


def library_model_widths() -> dict[str, int]:
    """The widths of the installed transformers configuration classes' defaults, by the model they describe."""
    from transformers import BertConfig, GPT2Config, T5Config

    return {"BERT-base": BertConfig().hidden_size, "GPT-2 small": GPT2Config().n_embd, "T5-small": T5Config().d_model}


@claim_property("onehot.typical-dimensions", needs=(), about="library", dtypes=("float64",), max_examples=1)
@given(data=st.data())
def the_named_widths_are_50_to_300_for_word_vectors_and_512_to_12288_for_models(ctx: Context, data) -> None:
    """gensim's default word2vec and FastText widths (100) lie in 50-300; transformers' default BERT-base, GPT-2 and
    T5 widths (768, 768, 512) and the published BERT-large (1024) and GPT-3 (12,288) lie in 512-12,288, with
    002's numbers for BERT (768, 1024) and GPT-3 (12,288) exactly."""
    static = library_static_widths()
    models = {**library_model_widths(), **{n: d for n, (d, _) in PUBLISHED_MODEL_WIDTHS.items()}}
    assert all(d in STATIC_WIDTHS for d in static.values()), f"static widths outside 50-300: {static}"
    assert all(d in MODEL_WIDTHS for d in models.values()), f"model widths outside 512-12,288: {models}"
    assert (models["BERT-base"], models["BERT-large"], models["GPT-3 175B"]) == (768, 1024, 12_288), models
