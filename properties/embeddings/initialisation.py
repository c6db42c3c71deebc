"""Properties of a freshly initialised embedding table: its seed and its tails (``spec/embeddings/initialisation.md``).

The implementation is called through ``ctx.embedding_init(V, d, seed)`` (float64 rows only:
the operation is not told the device; float32 tables are asked for explicitly). Expected
values are written out here: the standard normal tail probabilities ``2 Phi(-t)`` from
``torch.special.ndtr`` and Bernstein's bound on a binomial count. The bulk of the
distribution (a Kolmogorov distance from N(0, 1)) is checked by
``onehot.default-initialisation``; a Kolmogorov distance hardly sees the tails (a normal cut
at 3 standard deviations is 0.0014 from N(0, 1)), so the counts beyond 1, 2, 3 and 4 are
checked here, in the table asked in float64 and in float32. The law is the standard normal
unless the implementation declares another (``embedding_init_law``: ``normal-1/d``, N(0, 1/d),
Flax's ``nn.Embed``); a declared law is judged as itself (:func:`declared_laws`). This module
does not check initialisers of other layers.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

from ..conventions import under_one_of
from . import strategies as sf

NEEDS = ("embedding_init",)
F64 = torch.float64

#: Entries per table for the tail counts.
SAMPLES = 2**18
#: The thresholds ``t``: the entries with ``|W| > t`` are counted.
THRESHOLDS = (1.0, 2.0, 3.0, 4.0)
#: Examples per run of the tail property (10 drawn, 1 explicit) and the false-alarm probability per run.
TAIL_EXAMPLES, RUN_FALSE_ALARM = 11, 1e-6
#: The dtypes each example's table is asked in: float64 and the protocol's default, float32.
TAIL_DTYPES = (torch.float64, torch.float32)
#: False-alarm probability of one count (two-sided): the run's, shared among every count of every example.
DELTA = RUN_FALSE_ALARM / (TAIL_EXAMPLES * len(TAIL_DTYPES) * len(THRESHOLDS))
#: The laws of ``embedding_init_law``: the standard deviation of an entry of a table of width ``d``.
LAWS = {"standard-normal": lambda dim: 1.0, "normal-1/d": lambda dim: 1 / math.sqrt(dim)}


def normal_tail(t: float) -> float:
    """``P(|Z| > t) = 2 Phi(-t)`` for a standard normal ``Z``."""
    return 2 * float(torch.special.ndtr(torch.tensor(-t, dtype=F64)))


def declared_laws(ctx: Context, dim: int) -> list[tuple[str, float]]:
    """The laws the implementation declares (``embedding_init_law``; undeclared, PyTorch's standard normal), each
    with the standard deviation of an entry of a table of width ``dim``."""
    return [(name, LAWS[name](dim)) for name in ctx.choices("embedding_init_law", tuple(LAWS))]


def bernstein_halfwidth(n: int, p: float, delta: float) -> float:
    """The ``u`` with ``P(|K - n p| >= u) <= delta`` for ``K ~ Binomial(n, p)`` by Bernstein's inequality,
    ``P(|K - n p| >= u) <= 2 exp(-u^2 / (2 (n p (1 - p) + u / 3)))``, solved for ``u``."""
    log_term = math.log(2 / delta)
    return log_term / 3 + math.sqrt((log_term / 3) ** 2 + 2 * n * p * (1 - p) * log_term)


# --- the seed ----------------------------------------------------------------------------------


@st.composite
def seed_cases(draw: st.DrawFn) -> tuple[int, int, int, int]:
    """``(V, d, seed, other seed)``: a table of 8 to 600 entries and two different seeds."""
    vocab, dim = draw(st.integers(1, 30), label="V"), draw(st.integers(1, 20), label="d")
    vocab = max(vocab, -(-8 // dim))  # at least 8 entries
    seed = draw(sf.seeds(), label="seed")
    other = draw(sf.seeds().filter(lambda s: s != seed), label="other seed")
    return vocab, dim, seed, other


@claim_property("initialisation.seeded-standard-normal", needs=NEEDS, dtypes=("float64",), max_examples=20)
@given(case=seed_cases())
@example(case=(50, 64, 0, 1))
def the_same_seed_gives_the_same_table_and_another_seed_another(ctx: Context, case) -> None:
    """``embedding_init(V, d, s)`` is a function of ``s``: asked twice with one seed it returns the same table,
    bit for bit; asked with another seed it returns a table that differs in at least half of its entries. Asked
    in float64 and in float32 (the protocol's default; on the CPU, as the operation is not told a device): the
    table comes in the dtype asked for, and the same seed gives the same float32 table twice. False alarm: two
    independent standard normal entries (float32 or finer) coincide with probability below ``2^-20``, so half
    of ``n >= 8`` entries coincide with probability below ``2^n 2^(-10 n) <= 2^-72``."""
    vocab, dim, seed, other = case
    first = ctx.embedding_init(vocab, dim, seed)
    again = ctx.embedding_init(vocab, dim, seed)
    assert torch.equal(first, again), (
        f"two tables ({vocab}, {dim}) for seed {seed} differ in {int((first != again).sum())} of "
        f"{first.numel()} entries"
    )
    different = ctx.embedding_init(vocab, dim, other)
    same = int((first == different).sum())
    assert 2 * same < first.numel(), (
        f"the tables ({vocab}, {dim}) for seeds {seed} and {other} agree in {same} of {first.numel()} entries"
    )
    single = ctx.embedding_init(vocab, dim, seed, torch.float32)
    assert torch.equal(single, ctx.embedding_init(vocab, dim, seed, torch.float32)), (
        f"two float32 tables ({vocab}, {dim}) for seed {seed} differ")


# --- the tails ---------------------------------------------------------------------------------


@st.composite
def tail_cases(draw: st.DrawFn) -> tuple[int, int, int]:
    """``(V, d, seed)`` with ``V d >= 2^18`` entries; ``d`` from 1 to 4096."""
    dim = draw(st.sampled_from([1, 2, 3, 16, 64, 300, 512, 4096]), label="d")
    return -(-SAMPLES // dim), dim, draw(sf.seeds(), label="seed")


@claim_property("initialisation.seeded-standard-normal", needs=NEEDS, dtypes=("float64",),
                max_examples=TAIL_EXAMPLES - 1)
@given(case=tail_cases())
@example(case=(512, 512, 0))
def the_entries_beyond_1_2_3_and_4_are_as_many_as_under_the_standard_normal(ctx: Context, case) -> None:
    """For each ``t`` in 1, 2, 3, 4 the number ``K_t`` of the ``n = V d >= 2^18`` entries with ``|W| > t sigma``
    lies within Bernstein's bound of ``n 2 Phi(-t)`` (the normal law's tails: 31.7%, 4.6%, 0.27%, 0.0063%), for
    the table asked in float64 and the table asked in float32 (the protocol's default, whose law is checked here
    and not only its seed). ``sigma`` is the standard deviation of the law the implementation declares
    (``embedding_init_law``): 1 for ``standard-normal`` (PyTorch's ``nn.Embedding``, and the default), ``1/sqrt d``
    for ``normal-1/d`` (Flax's ``nn.Embed``). This claim is about a random table being reproducible and normal out
    to its tails, which is as true of N(0, 1/d) as of N(0, 1): an implementation declaring N(0, 1/d) is judged by
    the law it declares, so a table of the wrong scale (N(0, 1/d^2) declared as N(0, 1/d), or N(0, 1/d) not
    declared) fails. False alarm: each count of the declared law misses its interval with probability at most
    ``delta = 1e-6 / 88``; 4 counts, 2 dtypes and at most 11 examples per run make at most ``1e-6`` per run. A
    uniform law of variance 1 has no entry beyond ``sqrt 3``, a normal cut at 3 none beyond 3, a Laplace law of
    variance 1 five times too many beyond 3."""
    vocab, dim, seed = case
    tables = {dtype: ctx.embedding_init(vocab, dim, seed, dtype).to(F64) for dtype in TAIL_DTYPES}

    def check(law: tuple[str, float]) -> None:
        name, sigma = law
        for dtype, table in tables.items():
            n = table.numel()
            magnitudes = (table / sigma).abs().flatten()  # (n,)
            for t in THRESHOLDS:
                p = normal_tail(t)
                count = int((magnitudes > t).sum())
                u = bernstein_halfwidth(n, p, DELTA)
                assert abs(count - n * p) < u, (
                    f"embedding_init({vocab}, {dim}, seed={seed}) in {dtype}: {count} of {n} entries beyond "
                    f"|{t:g} sigma|, {name} (sigma = {sigma:.4g}) gives {n * p:.1f} +- {u:.1f} (Bernstein, false "
                    f"alarm {DELTA:.2g})"
                )

    under_one_of(declared_laws(ctx, dim), check, label=lambda law: law[0])
