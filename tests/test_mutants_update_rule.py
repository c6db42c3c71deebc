"""Every property of ``properties/embeddings/update_rule.py`` passes the reference's trainers, correct ones at
other rates, batch sizes and vocabulary orders, and gensim's, and catches CBOW trained in skip-gram's place
(averaging or summing the context) and a FastText trainer that leaves a seen word's own row out; an Adam
skip-gram trainer is judged only when it does not declare the adaptive optimiser it uses."""

from __future__ import annotations

from unittest import mock

import pytest

import torch

from conftest import assert_caught, run_row
from mutants import Mutant, declaring
from specformer.adapters.reference import implementation as reference
from specformer.properties.embeddings import training, update_rule
from specformer.reference.embeddings.fasttext import char_ngrams
from specformer.reference.embeddings import fasttext_training, word2vec

STEPS = "update_rule.skipgram_steps_each_word_on_its_own_pair_not_on_a_shared_context_mean"
OWN_ROW = "update_rule.fasttext_words_without_ngrams_train_on_their_own_rows"


def _trainer(architecture="skipgram", lr=0.1, batch_size=16, reverse=False, summed=False):
    """The reference's word2vec trainer started from ``initial`` and ``initial_output``: skip-gram (right) or
    CBOW (wrong; its context's mean, or its sum with ``summed``), at rate ``lr`` in batches of ``batch_size``,
    the vocabulary listed in reverse with ``reverse``."""

    def train_skipgram(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu", initial=None,
                       initial_output=None):
        words = list(word2vec.build_vocab(sentences, min_count).words)
        tables = [None if given is None else torch.tensor([given[w] for w in words], dtype=torch.float64)
                  for given in (initial, initial_output)]  # (V, dim) each
        mean = word2vec.cbow_context_mean

        def total(ids, table, mask=None):  # the context's sum: the mean times the number of words
            return mean(ids, table, mask) * (ids.shape[1] if mask is None else mask.sum(1, keepdim=True))

        with mock.patch.object(word2vec, "cbow_context_mean", total if summed else mean):
            model = word2vec.train_word2vec(sentences, architecture=architecture, dim=dim, window=window,
                                            negative=negative, epochs=epochs, min_count=min_count, seed=seed, lr=lr,
                                            batch_size=batch_size, dtype=torch.float32, initial=tables[0],
                                            initial_output=tables[1])
        if reverse:
            return words[::-1], model.input_vectors.flip(0).to(device)  # (V, d), rows in the reversed order
        return words, model.input_vectors.to(device)

    return train_skipgram


def _adam_step(loss, tables, lr):
    """Adam (0.9, 0.999) in place of the SGD step, its moments kept per table."""
    grads = torch.autograd.grad(loss, tables)
    with torch.no_grad():
        for table, grad in zip(tables, grads):
            m, v, t = _ADAM.setdefault(id(table), (torch.zeros_like(table), torch.zeros_like(table), 0))
            m, v, t = 0.9 * m + 0.1 * grad, 0.999 * v + 0.001 * grad**2, t + 1
            _ADAM[id(table)] = (m, v, t)
            table -= 0.01 * (m / (1 - 0.9**t)) / ((v / (1 - 0.999**t)).sqrt() + 1e-8)
    return float(loss)


_ADAM: dict[int, tuple[torch.Tensor, torch.Tensor, int]] = {}


def _adam_skipgram(*args, **kwargs):
    """Skip-gram trained by Adam at 0.01, one pair a step: right, but its steps follow the gradients' signs."""
    _ADAM.clear()
    with mock.patch.object(word2vec, "sgd_step", _adam_step):
        return _trainer(batch_size=1)(*args, **kwargs)


@pytest.mark.parametrize("mutant", [Mutant("cbow-for-skipgram", train_skipgram=_trainer("cbow")),
                                    Mutant("cbow-summed-for-skipgram", train_skipgram=_trainer("cbow", summed=True)),
                                    Mutant("cbow-one-example-a-step", train_skipgram=_trainer("cbow", lr=0.025,
                                                                                                batch_size=1))],
                         ids=lambda m: m.name)
def test_cbow_trained_in_skipgrams_place_is_caught(mutant) -> None:
    row = assert_caught(STEPS, mutant, "float32")
    assert "CBOW" in row.message and "ratio of 1.000" in row.message, row.message


@pytest.mark.parametrize("lr, batch_size, reverse", [(0.1, 16, False), (0.025, 1, True), (0.3, 1, False),
                                                     (1.0, 1, True), (0.01, 4, False)])
def test_skipgram_passes_at_any_rate_batch_and_order(lr, batch_size, reverse) -> None:
    right = Mutant(f"skipgram-{lr}-{batch_size}", train_skipgram=_trainer(lr=lr, batch_size=batch_size,
                                                                          reverse=reverse))
    row = run_row(STEPS, right, "float32", profile="mutants")
    assert row.outcome == "pass" and row.examples_checked > 0, (lr, batch_size, row.outcome, row.message)


def test_the_shipped_skipgram_trainers_pass() -> None:
    assert run_row(STEPS, reference, "float32").outcome == "pass"
    pytest.importorskip("gensim")
    from specformer.adapters.gensim_parts import implementation as gensim

    row = run_row(STEPS, gensim, "float32", profile="mutants")
    assert row.outcome == "pass", (row.outcome, row.message)


def test_an_adaptive_optimiser_is_judged_only_when_undeclared() -> None:
    undeclared = Mutant("skipgram-adam", train_skipgram=_adam_skipgram)
    assert run_row(STEPS, undeclared, "float32", profile="mutants").outcome == "fail"
    declared = declaring(Mutant("skipgram-adam-declared", train_skipgram=_adam_skipgram),
                         skipgram_optimizer="adaptive")
    row = run_row(STEPS, declared, "float32", profile="mutants")
    assert row.outcome == "not-applicable" and "skipgram_optimizer" in row.message, (row.outcome, row.message)


def test_a_trainer_without_initial_output_is_not_applicable() -> None:
    def written_for_version_4(sentences, dim, window, negative, epochs, seed, min_count=1, *, device="cpu",
                              initial=None):
        return reference.train_skipgram(sentences, dim, window, negative, epochs, seed, min_count, device=device,
                                        initial=initial)

    row = run_row(STEPS, Mutant("skipgram-v4", train_skipgram=written_for_version_4), "float32", profile="mutants")
    assert row.outcome == "not-applicable" and "initial_output" in row.message, (row.outcome, row.message)


def test_the_triple_start_scores_plus_and_minus_four_and_nothing_else_along_the_triples() -> None:
    start = update_rule.triple_start(5)
    assert start == update_rule.triple_start(5) and start != update_rule.triple_start(6)
    assert len({w for t in start.triples for w in t}) == 3 * update_rule.TRIPLES
    for k, (x, y, z) in enumerate(start.triples):
        out = torch.tensor(start.initial_output[y])
        assert float(out @ torch.tensor(start.initial[x])) == -4.0 and float(out @ torch.tensor(start.initial[z])) == 4.0
        others = [w for w in start.initial if w != y]
        assert all(start.initial_output[w][k] == 0.0 for w in others)
        assert all(start.initial[w][k] == 0.0 for w in start.initial if w not in (x, z))


# --- FastText's own row ----------------------------------------------------------------------------------

def _ngrams_only_fasttext(sentences, queries, dim, window, negative, epochs, seed, min_n=3, max_n=6, *,
                          device="cpu"):
    """Wrong: a seen word's own row is left out, in training and in its vector: the mean of its n-grams' rows
    (zero for a word with none)."""
    real = fasttext_training._composition_ids

    def composition(vocab, ngram_index, lo, hi):
        ids, mask = real(vocab, ngram_index, lo, hi)  # (V, 1 + G_max) each; column 0 is the own row
        mask[:, 0] = False
        return ids, mask

    def mean(ids, table, mask):  # zero for an empty composition
        vectors = table[ids] * mask[..., None].to(table.dtype)  # (B, C) -> (B, C, d)
        return vectors.sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp(min=1).to(table.dtype)

    with mock.patch.object(fasttext_training, "_composition_ids", composition), \
            mock.patch.object(fasttext_training, "cbow_context_mean", mean):
        model = fasttext_training.train_fasttext(sentences, dim=dim, window=window, negative=negative, epochs=epochs,
                                                 min_n=min_n, max_n=max_n, seed=seed)
    rows = [[r for r in model.rows(q) if r >= len(model.vocab)] for q in queries]
    return torch.stack([model.input_table[r].mean(dim=0) if r else torch.zeros(dim) for r in rows]).to(device)


def test_no_word_of_the_group_corpora_has_an_ngram_of_the_own_row_length() -> None:
    for seed in range(200):
        words = {w for sentence in training.group_corpus(seed).sentences for w in sentence}
        assert max(len(w) for w in words) + 2 < update_rule.LONGER_THAN_ANY_WORD, seed  # with "<" and ">"
        assert not any(char_ngrams(w, update_rule.LONGER_THAN_ANY_WORD, update_rule.LONGER_THAN_ANY_WORD)
                       for w in words), seed


def test_a_fasttext_trainer_without_the_own_row_is_caught() -> None:
    row = assert_caught(OWN_ROW, Mutant("fasttext-ngrams-only", train_fasttext=_ngrams_only_fasttext), "float32")
    assert "zero" in row.message, row.message


def test_the_shipped_fasttext_trainers_pass() -> None:
    import importlib
    import importlib.util

    assert run_row(OWN_ROW, reference, "float32").outcome == "pass"
    for library, module in (("gensim", "gensim_parts"), ("fasttext", "fasttext_bindings")):
        if importlib.util.find_spec(library) is None:
            continue
        adapter = importlib.import_module(f"specformer.adapters.{module}")
        row = run_row(OWN_ROW, adapter.implementation, "float32", profile="mutants")
        assert row.outcome == "pass", (module, row.outcome, row.message)


def test_every_update_rule_property_is_covered(properties) -> None:
    mine = {q for q, p in properties.items() if p.module == "update_rule"}
    assert mine == {STEPS, OWN_ROW}, sorted(mine)
