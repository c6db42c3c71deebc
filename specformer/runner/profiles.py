"""Hypothesis profiles of the suite, chosen explicitly (never from the ``CI`` variable).

* ``quick``: a handful of examples, for editing loops;
* ``ci``: derandomized (the same examples on every run and machine, so a reproduction
  command reproduces), no example database, no deadline, ``print_blob``;
* ``thorough``: many random examples, for hunting; it skips the hand-picked ``@example``
  cases, so every refutation must be found by Hypothesis's own search.

Derandomized must mean the same examples wherever the suite runs. Recent Hypothesis
releases also draw, now and then, constants collected from every module loaded from
outside site-packages: an editable checkout of specformer feeds its own source's strings
and numbers into the examples, a wheel install does not, and neither does a run that has
imported one module more. :func:`pin_example_generation` (applied on import) turns that
source of examples off, so that the examples depend on the profile, the seed, the
strategies and the Hypothesis version only.

A property may lower ``max_examples`` for itself (statistical properties draw thousands
of samples per example); it never raises it.

Each profile also sets the fewest examples that must be *checked* (inside the
implementation's domain) for a row to pass: :data:`MIN_CHECKED`, half of the profile's
examples (capped by a property's own ``max_examples``). A row that passes on fewer,
because the implementation refused the rest, is *inconclusive*.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

_COMMON = dict(
    deadline=None,
    # No Phase.explain: after shrinking it re-runs the test ~100 times to annotate lines,
    # which costs more than the rest of a failing row and tells little about tensors.
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.differing_executors],
)

# Every setting that Hypothesis's own CI profile changes is given here explicitly:
# ``settings(...)`` inherits the *current* default profile, which is that CI profile
# (derandomized) whenever the ``CI`` variable is set.
PROFILES: dict[str, settings] = {
    "quick": settings(max_examples=10, derandomize=False, database=None, print_blob=False, **_COMMON),
    "ci": settings(max_examples=20, derandomize=True, database=None, print_blob=True, **_COMMON),
    "thorough": settings(max_examples=400, derandomize=False, database=None, print_blob=False,
                         **{**_COMMON, "phases": [Phase.reuse, Phase.generate, Phase.target, Phase.shrink]}),
}


def pin_example_generation() -> bool:
    """Stop Hypothesis from drawing constants collected from the loaded local modules (module doc);
    whether there was such a source to stop (Hypothesis releases without it need nothing)."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - a Hypothesis laid out otherwise
        return False
    collect = getattr(providers, "_get_local_constants", None)
    empty = getattr(providers, "Constants", None)
    if collect is None or empty is None:
        return False
    if not getattr(collect, "_specformer_pinned", False):
        nothing = empty()

        def no_local_constants() -> object:
            return nothing

        no_local_constants._specformer_pinned = True  # type: ignore[attr-defined]
        providers._get_local_constants = no_local_constants
    return True


pin_example_generation()


def profile_settings(name: str, max_examples: int | None = None) -> settings:
    """The settings of profile ``name``, with ``max_examples`` capped if given."""
    try:
        base = PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}") from None
    if max_examples is not None and max_examples < base.max_examples:
        return settings(base, max_examples=max_examples)
    return base




#: Profile name -> whether its rows draw their sizes from a few plans (the shape budget of
#: :mod:`specformer.properties.strategies`: jitted code compiles a few times per row); other
#: profiles (the harness's own) follow ``ci``.
SHAPE_BUDGET: dict[str, bool] = {"quick": True, "ci": True, "thorough": False}


def shape_budgeted(name: str) -> bool:
    """Whether rows of profile ``name`` take their sizes from the shape plans."""
    return SHAPE_BUDGET.get(name, SHAPE_BUDGET["ci"])


#: Profile name -> the fewest checked examples a passing row needs (see the module doc).
MIN_CHECKED: dict[str, int] = {"quick": 5, "ci": 10, "thorough": 100}


def min_checked(name: str, max_examples: int | None = None) -> int:
    """The minimum of checked examples for a row of profile ``name`` (capped by ``max_examples``)."""
    floor = MIN_CHECKED.get(name, MIN_CHECKED["ci"])
    return min(floor, max_examples) if max_examples is not None else floor


#: Profile name -> how many examples a failing row may try after its first failure, as a
#: multiple of the row's example count (see :mod:`specformer.runner.shrinking`): a failing row then
#: costs at most about twice a passing one.
SHRINK_BUDGET: dict[str, float] = {"quick": 1.0, "ci": 1.0, "thorough": 0.5}
