"""specformer: a literate specification and conformance suite for the transformer.

Data flows one way: ``spec/`` (claims) -> ``properties/`` (Hypothesis properties) ->
report JSON -> ``docs/`` site. This package is the harness that joins them: the claim
registry (:mod:`specformer.claims`), the implementation protocol
(:mod:`specformer.protocol`), the shipped adapters, the pytest plugin, the report and
the command line.
"""

__version__ = "0.1.0"
