"""specformer: a literate specification and conformance suite for the transformer.

Data flows one way: ``spec/`` (claims) -> ``properties/`` (Hypothesis properties) ->
report JSON -> ``docs/`` site. This package is the harness that joins them: the claim
registry (:mod:`specformer.claims`), the implementation protocol
(:mod:`specformer.protocol`), the shipped adapters, the pytest plugin, the report and
the command line.
"""

__version__ = "0.1.0"


def _map_source_tree() -> None:
    """In a source checkout, let ``specformer.spec/reference/properties`` find their folders.

    Installed, those folders live inside this package (``pyproject.toml`` maps them). Run
    from a checkout (``python -m pytest``, ``python -m mkdocs`` at the repository root), the
    checkout's ``specformer/`` folder is imported instead and its siblings must be found
    beside it; adding the repository root to this package's search path does that.
    """
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "reference" / "__init__.py").is_file():
        if str(root) not in __path__:
            __path__.append(str(root))


_map_source_tree()
