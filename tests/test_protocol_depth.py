"""The protocol and the properties reach each other: every operation is needed, and math rows say what they are.

* Every protocol operation is called by some property: an operation no property needs
  would let an implementation "provide" it unchecked.
* A property that calls no implementation (``needs=()``) says which of the three kinds of
  claim it checks (``about``): arithmetic on published numbers, a statement about the
  documents' own code, or a fact about a named library or shipped model. Anything else
  about what an implementation computes must call the implementation.
"""

from __future__ import annotations

from specformer.property import ABOUT, load_properties
from specformer.protocol import OPERATIONS


def test_every_protocol_operation_is_needed_by_some_property() -> None:
    needed = {op for prop in load_properties().values() for op in prop.needs}
    unknown = sorted(needed - set(OPERATIONS))
    assert not unknown, f"properties need operations the protocol does not declare: {unknown}"
    unused = sorted(set(OPERATIONS) - needed)
    assert not unused, f"protocol operations no property calls: {unused}"


def test_every_property_that_calls_no_implementation_says_what_it_is_about() -> None:
    unlabelled = sorted(q for q, prop in load_properties().items() if not prop.needs and prop.about not in ABOUT)
    assert not unlabelled, f"properties with needs=() and no about= label: {unlabelled}"


def test_a_property_about_the_mathematics_stands_beside_one_that_calls_the_implementation() -> None:
    props = load_properties().values()
    calling = {prop.claim for prop in props if prop.needs}
    alone = sorted(prop.qualname for prop in props if prop.about == "mathematics" and prop.claim not in calling)
    assert not alone, f"about='mathematics' on claims no property checks on an implementation: {alone}"


def test_about_is_refused_on_a_property_that_calls_an_implementation() -> None:
    import pytest
    from hypothesis import given, strategies as st

    from specformer.property import claim_property

    with pytest.raises(ValueError, match="call no implementation"):
        @claim_property("attention.scaled-dot-product", needs=("attention",), about="library")
        @given(st.just(0))
        def labelled(ctx, x) -> None:  # pragma: no cover - never registered
            assert x == 0, "unreachable"
    with pytest.raises(ValueError, match="about must be one of"):
        @claim_property("attention.scaled-dot-product", needs=(), about="vibes")
        @given(st.just(0))
        def unknown(ctx, x) -> None:  # pragma: no cover - never registered
            assert x == 0, "unreachable"


def test_every_declared_convention_is_read_by_some_property() -> None:
    """A convention no property reads would let an implementation declare it with no effect."""
    import re
    from pathlib import Path

    import specformer.checked
    import specformer.properties
    from specformer.protocol import CONVENTIONS

    folders = (Path(specformer.properties.__file__).parent, Path(specformer.checked.__file__).parent)
    source = "\n".join(p.read_text() for folder in folders for p in folder.rglob("*.py"))
    read = set(re.findall(r"(?:choices|require|supports|within)\((?:ctx, )?\"(\w+)\"", source))
    unread = sorted(set(CONVENTIONS) - read)
    assert not unread, f"conventions no property reads (choices, require, supports, within): {unread}"
