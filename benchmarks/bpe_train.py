"""Time the reference BPE trainers: naive against incremental, incremental against ``tokenizers``.

Usage: ``python benchmarks/bpe_train.py [--seeds DIR] [--naive-chars N] [--naive-merges M]
[--merges M] [--repeat R] [--out FILE]``

1. Builds the English corpus of ``reference/tokenization/corpus.py`` (at least 10 MB of
   installed text; ``--seeds`` adds the teaching documents).
2. (a) Naive against incremental trainer (``train_bpe_naive``, ``train_bpe``) on the first
   ``N`` characters of the corpus with ``M`` merges: both must learn the same merges (the
   script exits 1 if they do not); the speed ratio, in wall and CPU time.
3. (b) Incremental trainer against Hugging Face ``tokenizers``' ``BpeTrainer`` on the whole
   corpus, both from raw text to merges (pre-tokenisation and word counting included).
   ``tokenizers`` runs in a subprocess with ``RAYON_NUM_THREADS=1`` and ``RAYON_RS_NUM_CPUS=1``:
   one thread, like Python. Same pre-tokenisation: a whitespace split (``WhitespaceSplit``;
   the script counts the characters on which Python's and Rust's whitespace differ). Same
   initial split: ``tokenizers`` glues the end-of-word suffix to the last character
   (``l o w</w>``) where the documents add a separate ``</w>`` symbol, so the reference is
   timed both ways, and the merges are compared on Hugging Face's split
   (``train_on_sequences``). ``vocab_size`` is the initial alphabet plus ``--merges``. The
   two tie rules differ (``tokenizers`` prefers the pair of older token ids), so the merges
   are compared: the length of the identical prefix, the first disagreement with both
   pairs' counts at that point, and the share of merges both lists contain.
4. (c) Memory of the incremental trainer on the whole corpus, in fresh subprocesses that
   load the word counts and train: the ``tracemalloc`` peak of the training call (Python
   allocations only) and the peak resident set size, next to the peak before training;
   and the ``tokenizers`` subprocess's peak. Peaks are Linux's ``VmHWM``; ``ru_maxrss`` is
   recorded too, but a child inherits its parent's value (see ``_PEAK_MEMORY``).

Results go to ``benchmarks/results/bpe_train.json``. Timings are the best of ``--repeat`` runs
(the naive trainer runs once, the incremental one at least five times in (a)); the
machine's load average is recorded, since the machine may be shared. This is a
measurement, never an assertion beyond the merges check of (a).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from specformer.reference.tokenization.bpe import (
    END_OF_WORD,
    _apply_merges,
    train_bpe,
    train_bpe_naive,
    train_on_sequences,
    word_counts,
)
from specformer.reference.tokenization.corpus import build_corpus

#: Peak memory of the current process, for the children below. ``ru_maxrss`` is what the
#: operating system reports, but on Linux a child started from this process inherits this
#: process's peak as its own starting value (it survives ``exec``), so it cannot show less
#: than the parent held; ``VmHWM`` in ``/proc/self/status`` is the peak of the child's own
#: address space only (Linux; ``None`` elsewhere).
_PEAK_MEMORY = r"""
import resource

def peak_memory():
    vm_hwm = None
    try:
        with open("/proc/self/status") as status:
            vm_hwm = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        pass
    return {"vm_hwm_kib": vm_hwm, "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
"""

#: Run by ``python -c`` with one rayon thread: train tokenizers' BPE on a text file, print JSON.
_TOKENIZERS_CHILD = _PEAK_MEMORY + r"""
import json, sys, time
from tokenizers import Tokenizer, __version__, models, pre_tokenizers, trainers

path, vocab_size, suffix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
text = open(path, encoding="utf-8").read()

def chunks(size=1 << 20):  # about 1 MB each, cut after a newline: no word is split
    start = 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end

before = peak_memory()
tokenizer = Tokenizer(models.BPE(end_of_word_suffix=suffix))
tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, show_progress=False,
                              special_tokens=[], end_of_word_suffix=suffix)
wall, cpu = time.perf_counter(), time.process_time()
tokenizer.train_from_iterator(chunks(), trainer)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
merges = json.loads(tokenizer.to_str())["model"]["merges"]
merges = [list(m) if not isinstance(m, str) else m.split(" ", 1) for m in merges]
json.dump({"seconds": wall, "cpu_seconds": cpu, "version": __version__, "merges": merges,
           "vocab_size": tokenizer.get_vocab_size(), "memory_before": before, "memory": peak_memory()},
          sys.stdout)
"""

#: Run by ``python -c``: train the reference trainer on word counts (a JSON file) and report its memory.
_MEMORY_CHILD = _PEAK_MEMORY + r"""
import json, sys, time, tracemalloc
from specformer.reference.tokenization.bpe import train_bpe

path, merges, traced = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "traced"
words = json.load(open(path, encoding="utf-8"))  # the word counts: far smaller than the text and its split
before = peak_memory()
if traced:
    tracemalloc.start()
start = time.perf_counter()
learned = train_bpe(words, merges)
seconds = time.perf_counter() - start
peak = tracemalloc.get_traced_memory()[1] if traced else None
json.dump({"merges": len(learned), "seconds": seconds, "tracemalloc_peak_bytes": peak,
           "memory_before": before, "memory": peak_memory()}, sys.stdout)
"""

#: Characters that Python's ``str.split()`` treats as whitespace and Rust's ``char::is_whitespace`` does not.
_PYTHON_ONLY_WHITESPACE = "\x1c\x1d\x1e\x1f"


def timed(function, *args):
    """``(result, wall seconds, CPU seconds)`` of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def prefix(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, cut back to the last whitespace (no split word)."""
    if len(text) <= chars:
        return text
    cut = max(text.rfind(" ", 0, chars), text.rfind("\n", 0, chars))
    return text[:cut if cut > 0 else chars]


def hugging_face_split(words: Counter[str]) -> dict[tuple[str, ...], int]:
    """Each word as ``tokenizers`` starts it: its characters, the suffix glued to the last one."""
    return {(*word[:-1], word[-1] + END_OF_WORD): count for word, count in words.items() if word}


def initial_vocabulary(words: Counter[str]) -> int:
    """Size of ``tokenizers``' starting vocabulary: every character, plus each final character + suffix."""
    characters = set("".join(words))
    finals = {word[-1] + END_OF_WORD for word in words if word}
    return len(characters) + len(finals)


def pair_counts_after(sequences: dict[tuple[str, ...], int], merges: list[tuple[str, str]]) -> Counter:
    """Adjacent-pair counts once ``merges`` are applied to every word (lowest rank first, as encoding does).

    The same split as training reached after these merges, except in the rare case where
    one symbol string is made by two different merges.
    """
    ranks: dict[tuple[str, str], int] = {}
    for rank, pair in enumerate(merges):
        ranks.setdefault(pair, rank)
    counts: Counter = Counter()
    for symbols, weight in sequences.items():
        symbols = _apply_merges(list(symbols), ranks)  # encoding's rule: lowest rank first
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += weight
    return counts


def compare_merges(ours: list[tuple[str, str]], theirs: list[tuple[str, str]],
                   sequences: dict[tuple[str, ...], int]) -> dict:
    """Identical prefix, first disagreement (with both pairs' counts there) and overlap of two merge lists."""
    same = 0
    while same < min(len(ours), len(theirs)) and ours[same] == theirs[same]:
        same += 1
    result: dict = {"ours": len(ours), "theirs": len(theirs), "identical_prefix": same,
                    "common_fraction": len(set(ours) & set(theirs)) / max(len(ours), len(theirs), 1)}
    if same < min(len(ours), len(theirs)):
        counts = pair_counts_after(sequences, ours[:same])
        result["first_disagreement"] = {
            "index": same, "ours": list(ours[same]), "theirs": list(theirs[same]),
            "ours_count": counts[ours[same]], "theirs_count": counts[theirs[same]],
            "tie": counts[ours[same]] == counts[theirs[same]],
        }
    return result


def run_child(code: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``python -c code args`` and parse the JSON it prints."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"child failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="/work/shared/seeds",
                        help="folder of *.txt documents to put first in the corpus ('' for none)")
    parser.add_argument("--naive-chars", type=int, default=1_000_000, help="corpus prefix for (a)")
    parser.add_argument("--naive-merges", type=int, default=200, help="merges for (a)")
    parser.add_argument("--merges", type=int, default=10_000, help="merges for (b) and (c)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each timing in (b); the best counts")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "bpe_train.json"))
    args = parser.parse_args()
    seeds = args.seeds if args.seeds and Path(args.seeds).is_dir() else None
    results: dict = {
        "python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
    }

    # ------------------------------------------------------------------ corpus
    corpus, wall, _ = timed(lambda: build_corpus(seeds=seeds))
    text = corpus.text
    results["corpus"] = {
        "bytes": corpus.size_bytes, "characters": len(text), "build_seconds": wall, "seeds": seeds,
        "sources": {name: {"documents": s.documents, "bytes": s.bytes} for name, s in corpus.sources.items()},
    }
    print(f"corpus: {corpus.size_bytes / 1e6:.2f} MB in {wall:.1f} s "
          + ", ".join(f"{name} {s.bytes / 1e6:.2f} MB" for name, s in corpus.sources.items()), flush=True)

    # ------------------------------------------------------------------ (a) naive vs incremental
    subset = prefix(text, args.naive_chars)
    words = word_counts(subset)
    naive, naive_wall, naive_cpu = timed(train_bpe_naive, words, args.naive_merges)
    fast_runs = [timed(train_bpe, words, args.naive_merges) for _ in range(max(args.repeat, 5))]
    fast = fast_runs[0][0]
    fast_wall = min(run[1] for run in fast_runs)
    fast_cpu = min(run[2] for run in fast_runs)
    same = all(run[0] == naive for run in fast_runs)
    results["naive_vs_incremental"] = {
        "characters": len(subset), "bytes": len(subset.encode("utf-8")), "distinct_words": len(words),
        "merges_asked": args.naive_merges, "merges_learned": len(naive), "same_merges": same,
        "naive_seconds": naive_wall, "naive_cpu_seconds": naive_cpu,
        "incremental_seconds": fast_wall, "incremental_cpu_seconds": fast_cpu,
        "speedup": naive_wall / fast_wall, "speedup_cpu": naive_cpu / fast_cpu,
    }
    print(f"(a) {len(subset.encode()) / 1e6:.2f} MB, {args.naive_merges} merges: naive {naive_wall:.1f} s, "
          f"incremental {fast_wall:.3f} s, x{naive_wall / fast_wall:.0f} (CPU x{naive_cpu / fast_cpu:.0f}), "
          f"same merges: {same}", flush=True)

    # ------------------------------------------------------------------ (b) incremental vs tokenizers
    all_words = word_counts(text)
    hf_sequences = hugging_face_split(all_words)
    vocab_size = initial_vocabulary(all_words) + args.merges
    child_env = {**os.environ, "RAYON_NUM_THREADS": "1", "RAYON_RS_NUM_CPUS": "1"}
    ours_documents, ours_hf, theirs = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "corpus.txt"
        path.write_text(text, encoding="utf-8")
        for _ in range(args.repeat):  # interleaved, so that both see the same load
            counted, count_wall, count_cpu = timed(word_counts, text)
            merges_documents, wall, cpu = timed(train_bpe, counted, args.merges)
            ours_documents.append((count_wall + wall, count_cpu + cpu, count_wall))
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            merges_hf_split = train_on_sequences(hugging_face_split(word_counts(text)), args.merges)
            ours_hf.append((time.perf_counter() - start_wall, time.process_time() - start_cpu))
            theirs.append(run_child(_TOKENIZERS_CHILD, [str(path), str(vocab_size), END_OF_WORD], child_env))
        root = str(Path(__file__).resolve().parent.parent)  # the checkout, for specformer.reference
        memory_env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        counts_path = Path(folder) / "words.json"
        counts_path.write_text(json.dumps(all_words), encoding="utf-8")
        memory = run_child(_MEMORY_CHILD, [str(counts_path), str(args.merges), "plain"], memory_env)
        traced = run_child(_MEMORY_CHILD, [str(counts_path), str(args.merges), "traced"], memory_env)

    their_merges = [tuple(pair) for pair in theirs[0]["merges"]]
    best_ours = min(run[0] for run in ours_hf)
    best_theirs = min(run["seconds"] for run in theirs)
    results["incremental_vs_tokenizers"] = {
        "merges_asked": args.merges, "vocab_size": vocab_size,
        "distinct_words": len(all_words), "words": sum(all_words.values()),
        "python_only_whitespace_characters": sum(text.count(c) for c in _PYTHON_ONLY_WHITESPACE),
        "reference_documents_split": {
            "seconds": min(run[0] for run in ours_documents), "cpu_seconds": min(run[1] for run in ours_documents),
            "word_count_seconds": min(run[2] for run in ours_documents), "merges": len(merges_documents),
            "runs": [run[0] for run in ours_documents],
        },
        "reference_hugging_face_split": {
            "seconds": best_ours, "cpu_seconds": min(run[1] for run in ours_hf), "merges": len(merges_hf_split),
            "runs": [run[0] for run in ours_hf],
        },
        "tokenizers": {
            "version": theirs[0]["version"], "seconds": best_theirs,
            "cpu_seconds": min(run["cpu_seconds"] for run in theirs), "merges": len(their_merges),
            "vocab_size": theirs[0]["vocab_size"], "runs": [run["seconds"] for run in theirs],
            "env": {"RAYON_NUM_THREADS": "1", "RAYON_RS_NUM_CPUS": "1"},
        },
        "time_ratio_reference_over_tokenizers": best_ours / best_theirs,
        "agreement": compare_merges(merges_hf_split, their_merges, hf_sequences),
    }
    agreement = results["incremental_vs_tokenizers"]["agreement"]
    print(f"(b) {args.merges} merges on {corpus.size_bytes / 1e6:.1f} MB: reference {best_ours:.2f} s "
          f"(documents' split {results['incremental_vs_tokenizers']['reference_documents_split']['seconds']:.2f} s), "
          f"tokenizers {best_theirs:.2f} s, ratio {best_ours / best_theirs:.2f}; identical prefix "
          f"{agreement['identical_prefix']}, common {agreement['common_fraction']:.1%}", flush=True)

    # ------------------------------------------------------------------ (c) memory
    results["memory"] = {
        "merges": args.merges,
        "tracemalloc_peak_bytes": traced["tracemalloc_peak_bytes"],
        "reference_peak_kib": memory["memory"]["vm_hwm_kib"],
        "reference_peak_kib_before_training": memory["memory_before"]["vm_hwm_kib"],
        "reference_ru_maxrss_kib": memory["memory"]["ru_maxrss_kib"],
        "tokenizers_peak_kib": max(run["memory"]["vm_hwm_kib"] or 0 for run in theirs) or None,
        "tokenizers_peak_kib_before_training": theirs[0]["memory_before"]["vm_hwm_kib"],
        "tokenizers_ru_maxrss_kib": max(run["memory"]["ru_maxrss_kib"] for run in theirs),
        "parent_ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "note": "fresh subprocesses: the reference's loads the word counts (JSON) and trains, "
                "tokenizers' reads the corpus text and trains. *_peak_kib is VmHWM, the peak resident "
                "set of the child's own address space; ru_maxrss includes the peak inherited from "
                "this script (Linux carries it across exec), so it is at least parent_ru_maxrss_kib "
                "at the time of the start. tracemalloc counts the Python allocations made during the "
                "train_bpe call only.",
    }
    peak, before = results["memory"]["reference_peak_kib"], results["memory"]["reference_peak_kib_before_training"]
    their_peak = results["memory"]["tokenizers_peak_kib"]
    print(f"(c) tracemalloc peak {traced['tracemalloc_peak_bytes'] / 2**20:.0f} MiB; peak resident "
          f"{(peak or 0) / 1024:.0f} MiB ({(before or 0) / 1024:.0f} MiB before training); "
          f"tokenizers {(their_peak or 0) / 1024:.0f} MiB", flush=True)

    results["load_average_end"] = os.getloadavg()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
