"""Adapters: the shipped implementations, each exposing the protocol's operations.

``BUILTIN`` maps the short names accepted by ``--impl`` to ``module:attribute``: PyTorch's
own attention (``torch-sdpa``, ``torch-mha``) and building blocks (``torch-nn``), the reference, and attention written by
others (Hugging Face ``transformers``' BERT, GPT-2 and Llama attention, Llama's rotary
embedding, BLOOM's ALiBi, ``x-transformers``' attention, ALiBi and rotary embedding,
``rotary-embedding-torch``), which
need the ``thirdparty`` extra. ``deviations.toml`` beside this module lists the shipped
adapters' known deviations (:mod:`specformer.deviations`); ``specformer run`` applies it
to these implementations only.
"""

from importlib.util import find_spec

BUILTIN: dict[str, str] = {
    "reference": "specformer.adapters.reference:implementation",
    "torch-sdpa": "specformer.adapters.torch_sdpa:implementation",
    "torch-mha": "specformer.adapters.torch_mha:implementation",
    "torch-nn": "specformer.adapters.torch_nn:implementation",
    "hf-bert": "specformer.adapters.hf_bert:implementation",
    "hf-gpt2": "specformer.adapters.hf_gpt2:implementation",
    "hf-llama": "specformer.adapters.hf_llama:implementation",
    "x-transformers": "specformer.adapters.xtransformers_attention:implementation",
    "hf-bloom": "specformer.adapters.hf_bloom:implementation",
    "rotary-embedding-torch": "specformer.adapters.rotary_embedding_torch:implementation",
}

#: The package each third-party adapter needs (installed with the ``thirdparty`` extra).
THIRD_PARTY: dict[str, str] = {
    "hf-bert": "transformers",
    "hf-gpt2": "transformers",
    "hf-llama": "transformers",
    "x-transformers": "x_transformers",
    "hf-bloom": "transformers",
    "rotary-embedding-torch": "rotary_embedding_torch",
}

#: What ``specformer run`` checks when no ``--impl`` is given: every built-in implementation
#: whose library is installed (looked up, not imported).
DEFAULT_IMPLEMENTATIONS: tuple[str, ...] = tuple(
    name for name in BUILTIN if name not in THIRD_PARTY or find_spec(THIRD_PARTY[name]) is not None
)
