"""Hypothesis properties, one package per family, one module per topic of the specification.

``strategies`` and ``tolerances`` are shared by all families; each family package adds its
own strategies and formulas beside its topic modules. Each property is tagged with the
claim it checks (:func:`specformer.property.claim_property`) and takes a
:class:`specformer.context.Context` first.
"""
