"""Adapters: the shipped implementations, each exposing the protocol's operations.

``BUILTIN`` maps the short names accepted by ``--impl`` to ``module:attribute``.
``deviations.toml`` beside this module lists the shipped adapters' known deviations
(:mod:`specformer.deviations`); ``specformer run`` applies it to these implementations only.
"""

BUILTIN: dict[str, str] = {
    "reference": "specformer.adapters.reference:implementation",
    "torch-sdpa": "specformer.adapters.torch_sdpa:implementation",
    "torch-mha": "specformer.adapters.torch_mha:implementation",
}

#: What ``specformer run`` checks when no ``--impl`` is given.
DEFAULT_IMPLEMENTATIONS: tuple[str, ...] = ("reference", "torch-sdpa", "torch-mha")
