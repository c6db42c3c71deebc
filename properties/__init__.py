"""Hypothesis properties, one module per topic of the specification.

``strategies`` and ``tolerances`` are shared by all topics. Each property is tagged with
the claim it checks (:func:`specformer.property.claim_property`) and takes a
:class:`specformer.context.Context` first.
"""
