"""Model sizes: the slides' parameter table and embedding arithmetic (``spec/blocks/size.md``).

The slides list the base and big transformer at 65 and 213 million parameters and price
the embeddings of a one-million-word vocabulary at ``3 x 10^6 x 512``. The refutation is
arithmetic on the table's published numbers. The properties that call an implementation ask it, through
``ctx.count_parameters(config)``, for the size of a model built from a
:class:`~specformer.protocol.blocks.ModelConfig` drawn in one of the layouts of
:data:`LAYOUTS` (the original encoder-decoder, GPT-2, BERT, BLOOM), and compare it with
:func:`closed_form`, written out here.
"""

from __future__ import annotations

import dataclasses

from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property
from specformer.protocol.blocks import MODEL_LAYOUTS, ModelConfig

COUNT = ("count_parameters",)

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


def model_parameters(name: str, vocabulary: int) -> int:
    """The table's model with one tied ``vocabulary x d_model`` matrix (embeddings and output layer)."""
    n, d_model, d_ff, _, _ = TABLE[name]
    return stack_parameters(n, d_model, d_ff) + vocabulary * d_model


def closed_form_parts(c: ModelConfig) -> dict[str, int]:
    """The parameter count of ``c`` part by part, each part's term of :func:`closed_form` (zero parts left out)."""
    d = c.d_model
    attention = 4 * d * d + 4 * d
    ffn = 2 * d * c.d_ff + c.d_ff + d
    encoder, decoder = attention + ffn + 2 * 2 * d, 2 * attention + ffn + 3 * 2 * d
    tables = 2 if (c.encoder_layers and c.decoder_layers and not c.shared_embeddings) else 1
    stacks = (c.encoder_layers > 0) + (c.decoder_layers > 0)
    parts = {
        f"{c.encoder_layers} encoder layers of {encoder}": c.encoder_layers * encoder,
        f"{c.decoder_layers} decoder layers of {decoder}": c.decoder_layers * decoder,
        f"{tables} token table{'s' if tables > 1 else ''} of {c.vocab_size} x {d}": tables * c.vocab_size * d,
        f"the learned position table of {c.max_len} x {d}": c.max_len * d if c.positions == "learned" else 0,
        f"{c.token_types} token-type rows of {d}": c.token_types * d,
        f"the embedding LayerNorm (2 x {d})": 2 * d if c.embedding_norm else 0,
        f"{stacks} final LayerNorm{'s' if stacks > 1 else ''} (2 x {d} each)": 2 * d * stacks if c.final_norm else 0,
        f"the output layer of {d} x {c.vocab_size}": c.vocab_size * d if (c.output_layer and not c.tied_output) else 0,
    }
    return {name: n for name, n in parts.items() if n}


def closed_form(c: ModelConfig) -> int:
    """The parameter count of ``c``, term by term (:func:`closed_form_parts`; :func:`stack_parameters` for the layers)."""
    return sum(closed_form_parts(c).values())


def count_breakdown(c: ModelConfig, counted: int) -> str:
    """The closed form's parts and, where the difference from ``counted`` is one part (or a multiple of the
    width ``d_model``), what it most likely is: for a failure message."""
    parts = closed_form_parts(c)
    lines = [f"{counted} parameters, the closed form gives {sum(parts.values())}: "
             + " + ".join(f"{n} ({name})" for name, n in parts.items())]
    difference = counted - sum(parts.values())
    same = [name for name, n in parts.items() if n == abs(difference)]
    if same:
        lines.append(f"the difference, {difference:+d}, is {' or '.join(same)}: "
                     f"{'counted twice' if difference > 0 else 'left out'}?")
    elif difference % c.d_model == 0:
        lines.append(f"the difference, {difference:+d}, is {difference // c.d_model} rows of d_model = {c.d_model}")
    return "; ".join(lines)


#: The layouts configurations are drawn in: what each fixes (the rest is drawn).
LAYOUTS: dict[str, dict[str, object]] = {
    "encoder-decoder": {"embedding_norm": False, "token_types": 0},
    "gpt-2": {"decoder_layers": 0, "positions": "learned", "final_norm": True, "embedding_norm": False,
              "token_types": 0},
    "bert": {"decoder_layers": 0, "positions": "learned", "final_norm": False, "embedding_norm": True,
             "output_layer": False},
    "bloom": {"decoder_layers": 0, "positions": "alibi", "final_norm": True, "embedding_norm": True,
              "token_types": 0, "tied_output": True},
}


def conforms(config: ModelConfig, layout: str) -> bool:
    """Whether ``config`` has every field ``layout`` fixes (BERT: some token types; BLOOM: ``d_ff = 4 d_model``)."""
    fixed = all(getattr(config, name) == value for name, value in LAYOUTS[layout].items())
    if layout == "bert":
        return fixed and config.token_types >= 1
    if layout == "bloom":
        return fixed and config.d_ff == 4 * config.d_model
    return fixed


def in_declared_layout(ctx: Context, config: ModelConfig, layouts: tuple[str, ...] = MODEL_LAYOUTS) -> ModelConfig:
    """``config`` if it conforms to a layout among ``layouts`` the implementation declares, else ``config``
    moved into the first such layout (its fixed fields set); not applicable at once if it declares none."""
    declared = ctx.choices("model_layout", layouts)
    if any(conforms(config, layout) for layout in declared):
        return config
    layout = declared[0]
    moved = dataclasses.replace(config, **LAYOUTS[layout])  # type: ignore[arg-type]
    if layout == "bert":
        moved = dataclasses.replace(moved, token_types=max(1, moved.token_types))
    if layout == "bloom":
        moved = dataclasses.replace(moved, d_ff=4 * moved.d_model)
    return moved


@st.composite
def model_configs(draw: st.DrawFn, layouts: tuple[str, ...] = tuple(LAYOUTS), **fixed: object) -> ModelConfig:
    """A configuration in one of ``layouts``: ``h <= 8`` heads of width ``<= 16``, ``d_ff <= 256``,
    ``<= 3`` layers per stack (no decoder at all in one draw of four), vocabularies up to 50,000 and tables
    up to 2048 positions; ``fixed`` fields override the draw."""
    layout = draw(st.sampled_from(layouts), label="layout")
    heads = draw(st.integers(1, 8), label="heads")
    d_model = heads * draw(st.integers(1, 16), label="d_k")
    fields: dict[str, object] = {
        "vocab_size": draw(st.integers(1, 50_000), label="vocab_size"), "d_model": d_model, "heads": heads,
        "d_ff": 4 * d_model if layout == "bloom" else draw(st.integers(1, 256), label="d_ff"),
        "encoder_layers": draw(st.integers(1, 3), label="encoder_layers"),
        "decoder_layers": draw(st.integers(0, 3), label="decoder_layers"),  # 0: an encoder alone
        "positions": draw(st.sampled_from(("none", "sinusoidal", "learned", "rope", "alibi")), label="positions"),
        "max_len": draw(st.integers(1, 2048), label="max_len"),
        "shared_embeddings": draw(st.booleans(), label="shared"), "tied_output": draw(st.booleans(), label="tied"),
        "output_layer": draw(st.booleans(), label="output_layer"), "final_norm": draw(st.booleans(), label="final"),
        "token_types": draw(st.integers(1, 3), label="token_types"),
    }
    fields.update(LAYOUTS[layout])
    fields.update(fixed)
    return ModelConfig(**fields)  # type: ignore[arg-type]


def table_config(name: str, vocabulary: int = PAPER_VOCABULARY) -> ModelConfig:
    """The slides' table model: ``N + N`` layers, one tied shared vocabulary matrix, each stack ending in a LayerNorm."""
    n, d_model, d_ff, h, _ = TABLE[name]
    return ModelConfig(vocabulary, d_model, h, d_ff, encoder_layers=n, decoder_layers=n, final_norm=True)


@claim_property("size.base-big-parameters", needs=COUNT, dtypes=("float64",), max_examples=30)
@given(config=model_configs())
@example(config=table_config("base"))
@example(config=table_config("big"))
# every optional part at once: two unshared token tables, an output layer of its own, a learned position
# table, token types and final norms (a random draw meets two unshared tables in about one example of ten)
@example(config=ModelConfig(1000, 64, 4, 256, encoder_layers=2, decoder_layers=1, positions="learned", max_len=128,
                            shared_embeddings=False, tied_output=False, final_norm=True, token_types=2))
def an_implementations_model_has_the_closed_form_count(ctx: Context, config) -> None:
    """The implementation's model of ``config`` holds :func:`closed_form` parameters; the table's two
    models with the paper's 37,000-token tied vocabulary come to within 3% of 65M and 213M."""
    config = in_declared_layout(ctx, config)
    counted = ctx.count_parameters(config)
    assert counted == closed_form(config), f"{config}: {count_breakdown(config, counted)}"
    for name, (_, _, _, _, millions) in TABLE.items():
        if config == table_config(name):
            assert abs(counted / 1e6 - millions) <= 0.03 * millions, (
                f"{name}: {counted / 1e6:.2f}M parameters with V = {PAPER_VOCABULARY}, not within 3% of {millions}M")


def fitting_vocabularies(name: str) -> range:
    """The vocabulary sizes ``|V| >= 0`` for which the model is within half a million of the table's figure."""
    n, d_model, d_ff, _, millions = TABLE[name]
    stack = stack_parameters(n, d_model, d_ff)
    low = -(-(millions * 10**6 - 500_000 - stack) // d_model)  # ceil
    high = (millions * 10**6 + 500_000 - stack) // d_model  # floor
    return range(max(low, 0), max(high + 1, 0))


@claim_property("size.base-big-parameters", needs=(), about="published-numbers", expect="counterexample", dtypes=("float64",), max_examples=5)
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


@claim_property("size.embedding-arithmetic", needs=COUNT, dtypes=("float64",), max_examples=20)
@given(config=model_configs(("encoder-decoder",), final_norm=True), shared=st.booleans(),
       more=st.integers(1, 10**6))
@example(config=ModelConfig(1, 512, 8, 2048, 6, 6, final_norm=True), shared=False, more=10**6 - 1)
def an_implementations_vocabulary_matrices_hold_three_v_d_parameters(ctx: Context, config, shared, more) -> None:
    """Separate source and target embeddings and an untied output layer: the implementation's count grows
    by ``3 d_model`` per vocabulary entry (``3 |V| d_model``; 1.536e9 for ``10^6 x 512``); one shared, tied
    matrix: by ``d_model``."""
    ctx.require("model_layout", "encoder-decoder")
    config = dataclasses.replace(config, decoder_layers=max(config.decoder_layers, 1))  # two stacks: two embeddings
    small = dataclasses.replace(config, shared_embeddings=shared, tied_output=shared, output_layer=True)
    large = dataclasses.replace(small, vocab_size=small.vocab_size + more)
    grown = ctx.count_parameters(large) - ctx.count_parameters(small)
    matrices = 1 if shared else 3
    assert grown == matrices * more * config.d_model, (
        f"{more} more vocabulary entries add {grown} parameters, expected {matrices} x {more} x {config.d_model} "
        f"({'one shared, tied matrix' if shared else 'two embeddings and an output layer'})")
    if not shared and (large.vocab_size, config.d_model) == (10**6, 512):
        embeddings = grown + 3 * config.d_model  # the V = 1 model's three rows
        assert abs(embeddings - 1.5e9) / 1.5e9 < 0.025, f"{embeddings:.4g} is not about 1.5e9"
        base = model_parameters("base", PAPER_VOCABULARY)
        assert embeddings > 20 * base, f"{embeddings:.4g} is not over 20 times the base model's {base:.4g}"


# --- size.embedding-table-share -----------------------------------------------------------------

#: The slide's own case of a large vocabulary: one million words, separate source and target embeddings and an
#: untied output layer (three matrices).
SLIDE_VOCABULARY = 10**6
#: The base model's feed-forward and attention parameters: ``2N (2 d d_ff + d_ff + d)`` and ``3N (4 d^2 + 4 d)``.
BASE_FFN, BASE_ATTENTION = 25_196_544, 18_911_232


def parameter_parts(config: ModelConfig) -> dict[str, int]:
    """The reference's parameters of ``config`` (:func:`specformer.reference.blocks.size.parameter_shapes`) summed
    by part: ``vocabulary`` (token tables and output layer), ``ffn`` (``W_1``, ``b_1``, ``W_2``, ``b_2`` of every
    layer), ``attention`` (every projection and bias), ``other`` (LayerNorms, positions)."""
    import math

    from specformer.reference.blocks.size import parameter_shapes

    parts = {"vocabulary": 0, "ffn": 0, "attention": 0, "other": 0}
    for name, shape in parameter_shapes(config).items():
        key = name.rsplit(".", 1)[-1]
        if name in ("embedding", "target_embedding", "w_out"):
            part = "vocabulary"
        elif key in ("w_1", "b_1", "w_2", "b_2"):
            part = "ffn"
        elif key[:2] in ("w_", "b_", "wc", "bc"):
            part = "attention"
        else:
            part = "other"
        parts[part] += math.prod(shape)
    return parts


def base_config(vocabulary: int, shared: bool) -> ModelConfig:
    """The table's base model with ``vocabulary`` words: one shared, tied matrix, or three separate matrices."""
    n, d_model, d_ff, h, _ = TABLE["base"]
    return ModelConfig(vocabulary, d_model, h, d_ff, encoder_layers=n, decoder_layers=n, final_norm=True,
                       shared_embeddings=shared, tied_output=shared, output_layer=True)


@claim_property("size.embedding-table-share", needs=(), about="published-numbers", dtypes=("float64",),
                max_examples=20)
@given(vocabulary=st.integers(1000, 2 * 10**6), shared=st.booleans())
@example(vocabulary=PAPER_VOCABULARY, shared=True)
@example(vocabulary=SLIDE_VOCABULARY, shared=False)
@example(vocabulary=49_212, shared=True)
@example(vocabulary=49_213, shared=True)
def the_table_is_the_largest_part_only_past_a_vocabulary_of_49212_words(ctx: Context, vocabulary, shared) -> None:
    """The base model's vocabulary matrices (``m |V| d_model``, ``m = 1`` shared and tied, ``3`` otherwise) are
    its largest part, above the feed-forward layers (25,196,544) and the attention layers (18,911,232), exactly
    when ``m |V| d_model`` exceeds the feed-forward layers' count: ``|V| >= 49,213`` tied (at 49,212 the two are
    equal), ``|V| >= 16,405`` with three matrices (at 16,404 equal). At the paper's 37,000-token tied
    vocabulary the table holds 18,944,000 of 63.1M, less than the feed-forward layers; at the slide's million
    words and three matrices it holds 1.536e9, 97% of the model. Every count is the reference's
    (``parameter_shapes``), summed by part."""
    parts = parameter_parts(base_config(vocabulary, shared))
    matrices = 1 if shared else 3
    d_model = TABLE["base"][1]
    assert parts["vocabulary"] == matrices * vocabulary * d_model, parts
    assert (parts["ffn"], parts["attention"]) == (BASE_FFN, BASE_ATTENTION), parts
    threshold = parts["ffn"] // (matrices * d_model) + 1  # the least |V| with m |V| d > FFN
    largest = all(parts["vocabulary"] > n for part, n in parts.items() if part != "vocabulary")  # integers: exact
    assert largest == (vocabulary >= threshold), (
        f"|V| = {vocabulary}, {matrices} matrices: the table is {'' if largest else 'not '}the largest part "
        f"({parts}); it should be exactly from |V| = {threshold}")
    if (vocabulary, shared) == (PAPER_VOCABULARY, True):
        total = sum(parts.values())
        assert parts["vocabulary"] < parts["ffn"] and abs(total / 1e6 - 63.1) < 0.05, (
            f"at the paper's vocabulary: {parts}, {total} in all")
    if (vocabulary, shared) == (SLIDE_VOCABULARY, False):
        assert parts["vocabulary"] > 0.97 * sum(parts.values()), parts


# --- size.sota-65m ------------------------------------------------------------------------------

#: BLEU on newstest2014 (Vaswani et al. 2017, "Attention Is All You Need", Table 2): the base transformer (65M
#: parameters) and the best earlier model, single or ensemble, by language pair.
BLEU = {
    "English-German": {"transformer base": 27.3, "best earlier (ConvS2S ensemble)": 26.36},
    "English-French": {"transformer base": 38.1, "best earlier (ConvS2S ensemble)": 41.29},
}
#: The best earlier single models of the same table, English-French (MoE) and English-German (MoE).
BEST_EARLIER_SINGLE = {"English-German": 26.03, "English-French": 40.56}


@claim_property("size.sota-65m", needs=(), about="published-numbers", dtypes=("float64",), max_examples=2)
@given(data=st.data())
def the_base_model_is_state_of_the_art_in_english_german_only(ctx: Context, data) -> None:
    """Corrected: the base model's 27.3 BLEU beats every earlier English-German result of the paper's table
    (ensembles included: 26.36), and its 38.1 on English-French beats none (the best earlier ensemble 41.29, the
    best single model 40.56); the big model is needed there."""
    de, fr = BLEU["English-German"], BLEU["English-French"]
    base_de, best_de = de["transformer base"], de["best earlier (ConvS2S ensemble)"]
    base_fr, best_fr = fr["transformer base"], fr["best earlier (ConvS2S ensemble)"]
    assert base_de > best_de and base_de > BEST_EARLIER_SINGLE["English-German"], de
    assert base_fr < best_fr and base_fr < BEST_EARLIER_SINGLE["English-French"], fr


@claim_property("size.sota-65m", needs=(), about="published-numbers", expect="counterexample", dtypes=("float64",),
                max_examples=4)
@given(pair=st.sampled_from(sorted(BLEU)))
def the_base_model_is_state_of_the_art_in_translation_as_written(ctx: Context, pair) -> None:
    """As written: the 65M-parameter base model achieved the state of the art in translation, in each of the
    paper's language pairs."""
    scores = BLEU[pair]
    base, best = scores["transformer base"], scores["best earlier (ConvS2S ensemble)"]
    assert base > best, f"{pair}: the base model's {base} BLEU is below the best earlier {best}"
