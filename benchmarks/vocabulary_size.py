"""Measure sequence length against vocabulary size at the sizes the documents call common (8,000 to 50,000).

Usage: ``python benchmarks/vocabulary_size.py [--seeds DIR] [--merges M ...] [--holdout K] [--out FILE]``

The property ``vocabulary.more_merges_give_fewer_tokens_per_word`` checks the trend on the
suite's small training text with up to 1,000 merges; a vocabulary of 8,000 to 50,000
subwords needs more text than that, so this script measures it on the 10 MB English corpus
of ``reference/tokenization/corpus.py``:

1. the corpus is split into documents at blank lines; every ``K``-th document (default 20)
   is held out, the rest is the training part;
2. the reference trainer (``train_bpe``, character level with the ``</w>`` marker) learns
   the largest number of merges asked for (default 50,000) from the training part's
   whitespace-separated word counts; smaller vocabularies are prefixes of its merges
   (training is deterministic, so a run with fewer merges learns exactly that prefix);
3. for each merge count, the held-out words are encoded in rank order (the reference's
   rule, ranks built once per count) and the script records the vocabulary size (base
   symbols + merges), held-out tokens per whitespace word and per character, against the
   held-out text's characters and whitespace words, and the word vocabulary's size and
   out-of-vocabulary rate for comparison.

Results go to ``benchmarks/results/vocabulary_size.json``. A measurement, never an
assertion; timings are recorded with the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path

from specformer.properties.tokenization.vocabulary import rank_order_lengths
from specformer.reference.tokenization.bpe import train_bpe
from specformer.reference.tokenization.corpus import build_corpus

DEFAULT_MERGES = (0, 1000, 2000, 4000, 8000, 16000, 32000, 50000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default=None, help="folder of seed documents to put first in the corpus")
    parser.add_argument("--merges", type=int, nargs="+", default=list(DEFAULT_MERGES))
    parser.add_argument("--holdout", type=int, default=20, help="hold out every K-th document")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "vocabulary_size.json"))
    args = parser.parse_args(argv)
    if args.holdout < 2 or min(args.merges) < 0:
        parser.error("--holdout must be >= 2 and merge counts >= 0")

    load_start = os.getloadavg()
    start = time.perf_counter()
    corpus = build_corpus(seeds=args.seeds)
    documents = corpus.text.split("\n\n")
    held = [d for i, d in enumerate(documents) if i % args.holdout == args.holdout - 1]
    train = [d for i, d in enumerate(documents) if i % args.holdout != args.holdout - 1]
    train_counts = Counter(word for d in train for word in d.split())
    held_counts = Counter(word for d in held for word in d.split())
    held_words = sum(held_counts.values())
    held_characters = sum(len(d) for d in held) + 2 * (len(held) - 1)
    build_seconds = time.perf_counter() - start

    start = time.perf_counter()
    merges = train_bpe(dict(train_counts), max(args.merges))
    train_seconds = time.perf_counter() - start
    base = len(set("".join(train_counts))) + 1  # characters of the training words and the marker

    rows = []
    for count in sorted(args.merges):
        lengths = rank_order_lengths(list(held_counts), merges[:count])
        tokens = sum(n * lengths[w] for w, n in held_counts.items())
        rows.append({
            "merges": min(count, len(merges)),
            "vocabulary": base + min(count, len(merges)),
            "held_out_tokens": tokens,
            "tokens_per_word": round(tokens / held_words, 4),
            "characters_per_token": round(held_characters / tokens, 4),
        })
        print(f"{rows[-1]['vocabulary']:>7} symbols: {rows[-1]['tokens_per_word']:.3f} tokens per word", file=sys.stderr)

    unknown = sum(n for w, n in held_counts.items() if w not in train_counts)
    result = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_start": load_start,
        "corpus": {"characters": len(corpus.text), "documents": len(documents), "seeds": args.seeds,
                   "build_and_split_seconds": round(build_seconds, 2)},
        "training": {"documents": len(train), "distinct_words": len(train_counts),
                     "words": sum(train_counts.values()), "base_symbols": base,
                     "merges_learned": len(merges), "train_seconds": round(train_seconds, 2)},
        "held_out": {"every": args.holdout, "documents": len(held), "characters": held_characters,
                     "words": held_words, "distinct_words": len(held_counts),
                     "words_outside_training_vocabulary": unknown,
                     "out_of_vocabulary_rate": round(unknown / held_words, 4)},
        "ladder": rows,
        "falls_monotonically": all(a["held_out_tokens"] > b["held_out_tokens"] for a, b in zip(rows, rows[1:])),
        "load_average_end": os.getloadavg(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
