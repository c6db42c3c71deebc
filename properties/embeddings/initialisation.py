"""Properties of a freshly initialised embedding table: its seed and its tails (``spec/embeddings/initialisation.md``).

The implementation is called through ``ctx.embedding_init(V, d, seed)`` (float64 rows only:
the operation is not told the device). Expected values are written out here: the standard
normal tail probabilities ``2 Phi(-t)`` from ``torch.special.ndtr`` and Bernstein's bound on
a binomial count. The bulk of the distribution (a Kolmogorov distance from N(0, 1)) is
checked by ``onehot.default-initialisation``; a Kolmogorov distance hardly sees the tails
(a normal cut at 3 standard deviations is 0.0014 from N(0, 1)), so the counts beyond
1, 2, 3 and 4 are checked here. This module does not check initialisers of other layers.
"""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from specformer.context import Context
from specformer.property import claim_property

from . import strategies as sf

NEEDS = ("embedding_init",)
F64 = torch.float64

#: Entries per table for the tail counts.
SAMPLES = 2**18
#: The thresholds ``t``: the entries with ``|W| > t`` are counted.
THRESHOLDS = (1.0, 2.0, 3.0, 4.0)
#: Examples per run of the tail property (10 drawn, 1 explicit) and the false-alarm probability per run.
TAIL_EXAMPLES, RUN_FALSE_ALARM = 11, 1e-6
#: False-alarm probability of one count (two-sided): the run's, shared among every count of every example.
DELTA = RUN_FALSE_ALARM / (TAIL_EXAMPLES * len(THRESHOLDS))


def normal_tail(t: float) -> float:
    """``P(|Z| > t) = 2 Phi(-t)`` for a standard normal ``Z``."""
    return 2 * float(torch.special.ndtr(torch.tensor(-t, dtype=F64)))


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
    """For each ``t`` in 1, 2, 3, 4 the number ``K_t`` of the ``n = V d >= 2^18`` entries with ``|W| > t`` lies
    within Bernstein's bound of ``n 2 Phi(-t)`` (the standard normal's tails: 31.7%, 4.6%, 0.27%, 0.0063%).
    False alarm: each count misses its interval with probability at most ``delta = 1e-6 / 44``; 4 counts and at
    most 11 examples per run make at most ``1e-6`` per run. A uniform law of variance 1 has no entry beyond
    ``sqrt 3``, a normal cut at 3 none beyond 3, a Laplace law of variance 1 five times too many beyond 3."""
    vocab, dim, seed = case
    table = ctx.embedding_init(vocab, dim, seed)
    n = table.numel()
    magnitudes = table.abs().flatten()  # (n,)
    for t in THRESHOLDS:
        p = normal_tail(t)
        count = int((magnitudes > t).sum())
        u = bernstein_halfwidth(n, p, DELTA)
        assert abs(count - n * p) < u, (
            f"embedding_init({vocab}, {dim}, seed={seed}): {count} of {n} entries beyond |{t:g}|, N(0, 1) gives "
            f"{n * p:.1f} +- {u:.1f} (Bernstein, false alarm {DELTA:.2g})"
        )
