"""Every property of ``properties/embeddings/initialisation.py`` catches a wrong initialiser.

Mutants replace ``embedding_init``: one that ignores its seed, one that draws from the
unseeded global generator, and three laws of variance 1 that are not the standard normal
(uniform, a normal cut at 3, Laplace). The reference and ``torch-embedding`` pass.
"""

from __future__ import annotations

import math

import pytest
import torch

from conftest import run_row
from mutants import Mutant, declaring
from specformer.properties.embeddings import initialisation

SEED = "initialisation.the_same_seed_gives_the_same_table_and_another_seed_another"
TAILS = "initialisation.the_entries_beyond_1_2_3_and_4_are_as_many_as_under_the_standard_normal"
ONEHOT_KS = "onehot.nn_embedding_starts_from_standard_normal_entries"


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


def _ignores_seed(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: standard normal, but always drawn with seed 0."""
    return torch.randn(vocab, dim, generator=_seeded(0), dtype=torch.float64).to(dtype)


def _unseeded(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: standard normal from the global generator, never seeded (a forgotten ``manual_seed``)."""
    return torch.randn(vocab, dim, dtype=torch.float64).to(dtype)


def _uniform_unit_variance(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: Uniform(-sqrt 3, sqrt 3), mean 0 and variance 1 like N(0, 1)."""
    u = torch.rand(vocab, dim, generator=_seeded(seed), dtype=torch.float64)
    return ((2 * u - 1) * math.sqrt(3)).to(dtype)


def _cut_at_three(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: PyTorch's ``trunc_normal_(mean=0, std=1, a=-3, b=3)``, a normal law cut at 3."""
    table = torch.empty(vocab, dim, dtype=torch.float64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.nn.init.trunc_normal_(table, 0.0, 1.0, -3.0, 3.0)
    return table.to(dtype)


def _laplace_unit_variance(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: Laplace with scale 1/sqrt 2 (variance 1): heavier tails than N(0, 1)."""
    u = torch.rand(vocab, dim, generator=_seeded(seed), dtype=torch.float64) - 0.5
    return (-u.sign() * torch.log1p(-2 * u.abs()) / math.sqrt(2)).to(dtype)


def _always_float64(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong: seeded standard normal, but always in float64, whatever dtype is asked for."""
    return torch.randn(vocab, dim, generator=_seeded(seed), dtype=torch.float64)


IGNORES_SEED = Mutant("init-ignores-the-seed", embedding_init=_ignores_seed)
UNSEEDED = Mutant("init-from-the-unseeded-global-generator", embedding_init=_unseeded)
UNIFORM = Mutant("init-uniform-with-variance-1", embedding_init=_uniform_unit_variance)
CUT = Mutant("init-normal-cut-at-3", embedding_init=_cut_at_three)
LAPLACE = Mutant("init-laplace-with-variance-1", embedding_init=_laplace_unit_variance)
ALWAYS_FLOAT64 = Mutant("init-ignores-the-dtype", embedding_init=_always_float64)

CASES = [(SEED, IGNORES_SEED), (SEED, UNSEEDED), (TAILS, UNIFORM), (TAILS, CUT), (TAILS, LAPLACE)]


@pytest.mark.parametrize(("qualname", "mutant"), CASES, ids=[f"{q.split('.', 1)[1]}-{m.name}" for q, m in CASES])
def test_property_catches_mutant(qualname: str, mutant: Mutant) -> None:
    row = run_row(qualname, mutant, profile="mutants")
    assert row.outcome == "fail" and row.message, (qualname, mutant.name, row.outcome, row.message)


def test_each_wrong_law_keeps_the_seed() -> None:
    """The tail mutants are reproducible and seed-dependent: only their law is wrong."""
    for mutant in (UNIFORM, CUT, LAPLACE):
        assert run_row(SEED, mutant).outcome == "pass", mutant.name


def test_the_seed_mutants_keep_the_law() -> None:
    """The seed mutants draw standard normal entries: only their seed is wrong."""
    for mutant in (IGNORES_SEED, UNSEEDED):
        assert run_row(TAILS, mutant).outcome == "pass", mutant.name


def test_a_normal_cut_at_three_passes_the_kolmogorov_distance_and_not_the_tails() -> None:
    """Why the tails are checked apart: the cut normal is within the DKW bound of the bulk property."""
    assert run_row(ONEHOT_KS, CUT).outcome == "pass"
    row = run_row(TAILS, CUT)
    assert row.outcome == "fail" and "entries beyond" in row.message, row.message


def test_an_initialiser_that_ignores_the_dtype_is_caught() -> None:
    row = run_row(SEED, ALWAYS_FLOAT64)
    assert row.outcome == "error" and "dtype torch.float64, expected torch.float32" in row.message, (
        row.outcome, row.message)


@pytest.mark.parametrize("name", ["reference", "torch-embedding"])
def test_correct_initialisers_pass(name: str) -> None:
    if name == "reference":
        from specformer.adapters.reference import implementation
    else:
        from specformer.adapters.torch_embedding import implementation
    for qualname in (SEED, TAILS):
        row = run_row(qualname, implementation)
        assert row.outcome == "pass", (name, qualname, row.message)


def _normal_over_d(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Right under ``normal-1/d``: N(0, 1/d), Flax's ``nn.Embed`` default, drawn in the dtype asked for."""
    return torch.randn(vocab, dim, generator=_seeded(seed), dtype=dtype) / math.sqrt(dim)


def _normal_over_d_squared(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong under ``normal-1/d``: N(0, 1/d^2), a standard deviation of 1/d instead of 1/sqrt d."""
    return torch.randn(vocab, dim, generator=_seeded(seed), dtype=dtype) / dim


def _float32_uniform(vocab: int, dim: int, seed: int, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Wrong in float32 only: seeded standard normal in float64, Uniform(-sqrt 3, sqrt 3) in float32."""
    if dtype == torch.float64:
        return torch.randn(vocab, dim, generator=_seeded(seed), dtype=torch.float64)
    return _uniform_unit_variance(vocab, dim, seed, dtype=dtype)


def test_a_declared_normal_over_d_passes_on_its_own_law() -> None:
    for qualname in (SEED, TAILS, ONEHOT_KS):
        mutant = declaring(Mutant("init-normal-1/d-declared", embedding_init=_normal_over_d),
                           embedding_init_law="normal-1/d")
        row = run_row(qualname, mutant)
        assert row.outcome == "pass", (qualname, row.outcome, row.message)


@pytest.mark.parametrize("qualname", [TAILS, ONEHOT_KS])
def test_an_undeclared_normal_over_d_fails(qualname: str) -> None:
    row = run_row(qualname, Mutant("init-normal-1/d-undeclared", embedding_init=_normal_over_d), profile="mutants")
    assert row.outcome == "fail" and "standard-normal" in row.message, (row.outcome, row.message)


@pytest.mark.parametrize("qualname", [TAILS, ONEHOT_KS])
def test_a_wrong_scale_declared_as_normal_over_d_fails(qualname: str) -> None:
    mutant = declaring(Mutant("init-normal-1/d^2-declared", embedding_init=_normal_over_d_squared),
                       embedding_init_law="normal-1/d")
    row = run_row(qualname, mutant, profile="mutants")
    assert row.outcome == "fail" and "normal-1/d" in row.message, (row.outcome, row.message)


def test_a_law_wrong_only_in_float32_is_caught() -> None:
    mutant = Mutant("init-uniform-in-float32", embedding_init=_float32_uniform)
    row = run_row(TAILS, mutant, profile="mutants")
    assert row.outcome == "fail" and "float32" in row.message, (row.outcome, row.message)
    assert run_row(SEED, mutant).outcome == "pass"


def test_the_false_alarm_is_what_the_spec_states() -> None:
    assert initialisation.DELTA * initialisation.TAIL_EXAMPLES * len(initialisation.TAIL_DTYPES) * len(
        initialisation.THRESHOLDS) <= 1e-6
    n = initialisation.SAMPLES
    p = initialisation.normal_tail(3.0)
    u = initialisation.bernstein_halfwidth(n, p, initialisation.DELTA)
    assert abs(n * p - 707.7) < 0.1 and 169 < u < 171
    # Bernstein's bound at the half-width is the false-alarm probability asked for
    bound = 2 * math.exp(-u * u / (2 * (n * p * (1 - p) + u / 3)))
    assert math.isclose(bound, initialisation.DELTA, rel_tol=1e-9)


def test_every_initialisation_property_is_covered(properties) -> None:
    mine = {q for q, p in properties.items() if p.module == "initialisation"}
    assert mine == {SEED, TAILS}
